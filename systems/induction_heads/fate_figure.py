"""The picture of the induction-head fate map (:class:`~gradflow.systems.induction_heads.fate.ICLFateMap`).

Six panels over the grid of doubly-stochastic shares ``ρ`` (columns) × init scales ``σ``
(rows):

(a, b, c) the transition step of the transformer, the minimal model and the reduction (median
    over seeds, each model in its own steps; colour by value), each cell labelled with its
    stage order
    (``U`` uniform, ``1`` unigram, ``2`` bigram); in (b) and (c) a red ``×`` marks a cell whose
    stage order or final stage differs from the transformer's;
(d) the transition step against ``ρ`` relative to each model's own at the smallest share, one
    line per model and scale (the minimal model's wide and pale, so that the reduction's shows
    on it where they coincide): the reduction agrees with the transformer where the lines
    slope the same way;
(e) the transition-step ratio reduction/transformer, a red ``×`` where the two respond to
    ``ρ`` in opposite ways (the ``ρ-response`` comparison);
(f) at the middle scale, the time each model spends in the uniform and in the unigram stage,
    relative to its own transition at the smallest share.

A panel with nothing to draw (no run reached bigram, so no transition to compare) says so in
words.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from .fate import ICLFateMap

__all__ = ["SIZE", "draw"]

SIZE = (16.0, 9.5)
LETTERS = {"uniform": "U", "unigram": "1", "bigram": "2"}
COLORS = {"transformer": "tab:blue", "minimal": "tab:orange", "reduced": "tab:green"}
TITLES = {
    "transformer": "(a) transformer (AdamW): transition step",
    "minimal": "(b) minimal model (SGD): transition step",
    "reduced": "(c) (a, b, v) reduction: transition step",
}


def draw(result: ICLFateMap, fig: Figure) -> None:
    """The six panels (module docstring) on ``fig``."""
    axes = fig.subplots(2, 3)
    for ax, model in zip(axes[0], ("transformer", "minimal", "reduced")):
        _grid_panel(ax, result, model)
    _response_panel(axes[1, 0], result)
    _ratio_panel(axes[1, 1], result)
    _stage_panel(axes[1, 2], result)
    c = result.config
    share = result.agreement()
    seeds = f"{c.seeds} seed{'s' if c.seeds > 1 else ''} a cell"
    fig.suptitle(
        f"Induction-head fate map, k = {c.k}, T = {c.T}, {seeds}: agreement "
        + ", ".join(f"{g} {100 * v:.0f} %" for g, v in share.items())
        + "\n(a)–(c): each cell's stage order (U uniform, 1 unigram, 2 bigram) and median "
        "transition step; a red × in (b), (c): its stage order differs from the transformer's",
        fontsize=11,
    )


def _mismatched(result: ICLFateMap, group: str) -> np.ndarray:
    """Per (σ, ρ) the number of seeds whose comparison in ``group`` disagrees."""
    c = result.config
    out = np.zeros((len(c.scales), len(c.shares)), dtype=int)
    for cell in result.cells():
        if cell.group == group and not cell.agree:
            out[c.scales.index(cell.coords["sigma"]), c.shares.index(cell.coords["rho"])] += 1
    return out


def _cross(ax: Any, marks: np.ndarray) -> None:
    rows, cols = np.nonzero(marks)
    if rows.size:
        ax.plot(cols + 0.35, rows - 0.3, "x", color="red", ms=11, mew=2.5, ls="none")


def _heat(ax: Any, values: np.ndarray, result: ICLFateMap, label: str) -> None:
    """``values`` (σ rows, ρ columns) as colours, with a colour bar labelled ``label`` (each cell
    also carries its number), a cell without a value light grey."""
    import matplotlib

    c = result.config
    shown = np.ma.masked_invalid(values)
    cmap = matplotlib.colormaps["viridis"].with_extremes(bad="lightgrey")
    image = ax.imshow(shown, cmap=cmap, origin="lower", aspect="auto")
    ax.get_figure().colorbar(image, ax=ax, label=label, location="bottom", shrink=0.8)
    ax.set_xticks(range(len(c.shares)), [f"{r:g}" for r in c.shares])
    ax.set_yticks(range(len(c.scales)), [f"{s:g}" for s in c.scales])
    ax.set_xlabel("doubly-stochastic share ρ")
    ax.set_ylabel("init scale σ")


def _grid_panel(ax: Any, result: ICLFateMap, model: str) -> None:
    c = result.config
    t = result.transitions(model)
    median = np.array([[_median(t[i, j]) for j in range(t.shape[1])] for i in range(t.shape[0])])
    _heat(ax, median, result, "median transition step (training steps)")
    for i, sigma in enumerate(c.scales):
        for j, rho in enumerate(c.shares):
            order = result.stages(model, rho, sigma, 0).order
            text = "→".join(LETTERS[m] for m in order)
            settled = np.isfinite(median[i, j])
            value = f"{median[i, j]:g}" if settled else "no bigram"
            ax.text(
                j,
                i,
                f"{text}\n{value}",
                ha="center",
                va="center",
                color=_ink(median, i, j),
                fontsize=10,
            )
    if model != "transformer":
        _cross(ax, _mismatched(result, f"{model} vs transformer"))
    ax.set_title(TITLES[model])


def _empty(ax: Any, words: str) -> None:
    """Say in the middle of ``ax`` why it has nothing to draw."""
    ax.text(0.5, 0.5, words, ha="center", va="center", transform=ax.transAxes, fontsize=11)
    ax.set_xticks([])
    ax.set_yticks([])


def _response_panel(ax: Any, result: ICLFateMap) -> None:
    c = result.config
    styles = ("-", "--", ":", "-.")
    ax.set_title("(d) response of the transition to ρ")
    if not any(np.isfinite(result.transitions(model)).any() for model in COLORS):
        _empty(ax, "no run reached bigram:\nno transition to compare")
        return
    for model in ("transformer", "minimal", "reduced"):
        t = np.array([[_median(row) for row in per] for per in result.transitions(model)])
        for i, sigma in enumerate(c.scales):
            ax.plot(
                c.shares,
                t[i] / t[i, 0],
                styles[i % len(styles)],
                marker="o",
                color=COLORS[model],
                lw=4 if model == "minimal" else 1.5,
                alpha=0.45 if model == "minimal" else 1.0,
                label=f"{model}, σ = {sigma:g}",
            )
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set_xlabel("doubly-stochastic share ρ")
    ax.set_ylabel(f"transition / transition at ρ = {c.shares[0]:g}")
    ax.legend(fontsize=7, ncol=2)


def _ratio_panel(ax: Any, result: ICLFateMap) -> None:
    c = result.config
    if not result.ratios("reduced")["runs"]:
        ax.set_title("(e) transition ratio reduction / transformer")
        _empty(ax, "no cell where both the reduction\nand the transformer reached bigram")
        return
    ratio = result.transitions("reduced") / result.transitions("transformer")
    median = np.array(
        [[_median(ratio[i, j]) for j in range(len(c.shares))] for i in range(len(c.scales))]
    )
    _heat(ax, median, result, "transition ratio reduction / transformer (no unit)")
    for i in range(len(c.scales)):
        for j in range(len(c.shares)):
            if np.isfinite(median[i, j]):
                ax.text(
                    j, i, f"{median[i, j]:.3f}", ha="center", va="center", color=_ink(median, i, j)
                )
    _cross(ax, _mismatched(result, "ρ-response"))
    r = result.ratios("reduced")
    ax.set_title(
        f"(e) transition ratio reduction / transformer\n(median {r['median']:.3g}, "
        f"range {r['min']:.3g}–{r['max']:.3g}; × ρ-response differs)"
    )


def _stage_panel(ax: Any, result: ICLFateMap) -> None:
    c = result.config
    sigma = c.scales[len(c.scales) // 2]
    labels, uniform, unigram, colors = [], [], [], []
    for model in ("transformer", "minimal", "reduced"):
        ref = result.stages(model, c.shares[0], sigma, 0).transition_step
        for rho in c.shares:
            st = result.stages(model, rho, sigma, 0)
            scale = ref if ref else np.nan
            u = st.uniform_time if st.uniform_time is not None else np.nan
            g = st.unigram_time if st.unigram_time is not None else np.nan
            labels.append(f"{model}, ρ = {rho:g}")
            uniform.append(u / scale)
            unigram.append(g / scale)
            colors.append(COLORS[model])
    ax.set_title(f"(f) time in the uniform and unigram stages, σ = {sigma:g}")
    if not (np.isfinite(uniform).any() or np.isfinite(unigram).any()):
        _empty(ax, f"no model reached bigram at ρ = {c.shares[0]:g}:\nno transition to scale by")
        return
    y = np.arange(len(labels))
    ax.barh(y, np.nan_to_num(uniform), color="tab:gray", label="uniform stage")
    ax.barh(
        y,
        np.nan_to_num(unigram),
        left=np.nan_to_num(uniform),
        color="tab:orange",
        alpha=0.7,
        label="unigram stage",
    )
    total = np.nan_to_num(uniform) + np.nan_to_num(unigram)
    ax.set_xlim(0, 1.45 * max(float(total.max()), 1e-9))  # room for the legend on the right
    ax.set_yticks(y, labels, fontsize=8)
    for tick, color in zip(ax.get_yticklabels(), colors):
        tick.set_color(color)
    ax.invert_yaxis()
    ax.set_xlabel(f"steps / the model's own transition at ρ = {c.shares[0]:g}")
    ax.legend(fontsize=8, loc="upper right")


def _ink(values: np.ndarray, i: int, j: int) -> str:
    """Black on the bright upper part of viridis and on grey (no value), white elsewhere."""
    finite = values[np.isfinite(values)]
    if not np.isfinite(values[i, j]) or finite.size == 0:
        return "k"
    span = finite.max() - finite.min()
    return "k" if span > 0 and (values[i, j] - finite.min()) / span > 0.6 else "w"


def _median(values: np.ndarray) -> float:
    finite = np.asarray(values, float)[np.isfinite(values)]
    return float(np.median(finite)) if finite.size else float("nan")
