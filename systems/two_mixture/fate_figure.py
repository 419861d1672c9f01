"""The picture of the two-mixture fate map: one row of three panels per ``K``, lettered row by
row ((a)–(c) for the first ``K``, (d)–(f) for the second, …), and a key below to the agreement
grids' marks.

(a) The attention's escape time against ``ω`` (log axis): the infinite-width reduced dynamics
(black), the linear escape's prediction ``t*_lin`` (dashed), the full runs of each width
(markers, light to dark with ``m``).  (b) The agreement grid: columns ``ω``, rows the widths of
each group; the colour is ``log₂`` of the full run's stage time over the limit's (the escape
time with the attention trained, the hard-fit time with it frozen), the text the ratio, or
``L`` and the final hard losses of the full run and the limit where the full run never reached
the stage; a disagreement is boxed and carries its reason's initial.  (c) The hard samples' loss
against time at the middle ``ω``: the limit and the widest full run, attention trained (solid) and
frozen (dashed).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from .fate import MixtureFate

__all__ = ["SIZE", "draw_fate"]

RATIO_RANGE = 2.0
"""The colour scale of the agreement grid spans ``log₂ ratio ∈ [-RATIO_RANGE, RATIO_RANGE]``."""
LIMIT_COLOR = "black"
FULL_CMAP = "viridis"
"""Widths are coloured along this map (0.15 … 0.85), away from the black of the limit."""
REASON_WORDS = {
    "assumption": "the finite initialization is far from the limit's",
    "slow-corner": "one run reached the stage so late that the other's horizon ran out",
    "unexplained": "no mechanism identified",
}
"""A disagreement's reason, in words, for the key below the picture."""


def SIZE(rows: int) -> tuple[float, float]:  # noqa: N802 - the figures' name for a size
    """Inches of a picture with ``rows`` values of ``K``."""
    return (16.0, 0.6 + 4.6 * rows)


def draw_fate(result: MixtureFate, fig: Figure) -> None:
    """Draw the map on ``fig``: one row of three panels per ``K`` (module docstring), lettered
    row by row, and a key below to the marks of the agreement grids."""
    config = result.config
    grid = fig.add_gridspec(len(config.ks), 3)
    reasons: set[str] = set()
    for row, K in enumerate(config.ks):
        a, b, c = (f"({chr(ord('a') + 3 * row + col)})" for col in range(3))
        _escape_panel(fig.add_subplot(grid[row, 0]), result, K, a)
        reasons |= _grid_panel(fig, fig.add_subplot(grid[row, 1]), result, K, b)
        _loss_panel(fig.add_subplot(grid[row, 2]), result, K, c)
    _key(fig, reasons)
    fig.suptitle(
        f"Two-mixture (reconstruction), {config.neurons} neurons: full transformer of width m "
        f"against the m → ∞ reduced dynamics (descent η = {config.lr:g})"
    )


def _width_colors(widths: tuple[int, ...]) -> dict[int, Any]:
    from matplotlib import colormaps

    cmap = colormaps[FULL_CMAP]
    shades = np.linspace(0.15, 0.85, len(widths)) if len(widths) > 1 else [0.5]
    return {m: cmap(s) for m, s in zip(sorted(widths), shades)}


def _escape_panel(ax: Any, result: MixtureFate, K: int, letter: str) -> None:
    config, law = result.config, result.escape_law(K)
    omegas = np.asarray(config.omegas)
    runs = [(r, s) for r, s in zip(result.runs, result.stages) if r["K"] == K and r["attention"]]
    limit = [
        next(s.t_escape for r, s in runs if r["kind"] == "limit" and r["omega"] == w)
        for w in omegas
    ]
    ax.semilogx(omegas, limit, "o-", color=LIMIT_COLOR, label="m → ∞ limit")
    ax.semilogx(
        omegas,
        law["t_escape_linear"],
        "--",
        color=LIMIT_COLOR,
        lw=1,
        label=f"linear escape t*_lin (slope {_num(law['slope_predicted'])})",
    )
    for m, color in _width_colors(config.widths).items():
        times = [
            next(
                s.t_escape
                for r, s in runs
                if r["kind"] == "full" and r["m"] == m and r["omega"] == w
            )
            for w in omegas
        ]
        ax.semilogx(omegas, times, "s", color=color, ms=5, label=f"full, m = {m}")
    ax.set_xlabel("initialization scale ω")
    ax.set_ylabel("escape time (flow time)")
    ax.set_title(
        f"{letter} K = {K}: max |B| ≥ {config.escape_level:g}; slope in ln(1/ω): "
        f"predicted {_num(law['slope_predicted'])}, limit {_num(law['slope_limit'])}",
        fontsize=9,
    )
    ax.legend(fontsize=7)


def _grid_panel(fig: Figure, ax: Any, result: MixtureFate, K: int, letter: str) -> set[str]:
    """The agreement grid of ``K``; returns the reasons of the boxed cells."""
    config = result.config
    reasons = set()
    omegas, widths = list(config.omegas), sorted(config.widths)
    cells = {
        (c.group, c.coords["m"], c.coords["omega"]): c
        for c in result.cells()
        if c.coords["K"] == K and c.coords.get("seed", config.seed) == config.seed
    }
    stages = {
        (r["kind"], r["group"], r["m"], r["omega"]): s
        for r, s in zip(result.runs, result.stages)
        if r["K"] == K and result.first_draw(r)
    }
    rows = [(g, m) for g in ("joint", "attention frozen") for m in widths]
    values = np.full((len(rows), len(omegas)), np.nan)
    for i, (group, m) in enumerate(rows):
        key = "t_escape" if group == "joint" else "t_fit"
        for j, w in enumerate(omegas):
            full_run, limit_run = (
                stages["full", group, m, w],
                stages["limit", group, config.particles, w],
            )
            full, limit = getattr(full_run, key), getattr(limit_run, key)
            with np.errstate(divide="ignore"):  # an escape at t = 0 is off the scale
                values[i, j] = np.clip(np.log2(full / limit), -RATIO_RANGE, RATIO_RANGE)
            cell = cells[group, m, w]
            text = (
                f"{full / limit:.2f}"
                if np.isfinite(values[i, j])
                else _missing(full, full_run, limit_run)
            )
            if not cell.agree:
                text += f" {cell.reason[0].upper()}"
                reasons.add(cell.reason)
                ax.add_patch(_box(j, i))
            ax.text(j, i, text, ha="center", va="center", fontsize=7)
    from matplotlib import colormaps

    image = ax.imshow(
        np.ma.masked_invalid(values),
        cmap=colormaps["RdBu_r"].with_extremes(bad="0.85"),
        vmin=-RATIO_RANGE,
        vmax=RATIO_RANGE,
        aspect="auto",
    )
    ax.set_xticks(range(len(omegas)), [f"{w:g}" for w in omegas])
    ax.set_yticks(
        range(len(rows)),
        [f"{'joint' if g == 'joint' else 'frozen'}, m = {m}" for g, m in rows],
        fontsize=7,
    )
    ax.axhline(len(widths) - 0.5, color="k", lw=1)
    ax.set_xlabel("ω")
    share = {g: 100 * v for g, v in _agreement(result, K).items()}
    draws = (
        f"\nseed {config.seed} shown, agreement over {config.seeds} seeds"
        if config.seeds > 1
        else ""
    )
    ax.set_title(
        f"{letter} full/limit time (escape; frozen: hard fit); agree: joint "
        f"{share['joint']:.0f} %, frozen {share['attention frozen']:.0f} %{draws}",
        fontsize=9,
    )
    fig.colorbar(image, ax=ax, label="log₂ (full time / limit time), no unit", shrink=0.9)
    return reasons


def _key(fig: Figure, reasons: set[str]) -> None:
    """Below the panels: what the agreement grids' boxes, letters and ``L`` texts mean (the
    reasons' letters only for the reasons drawn)."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Rectangle

    handles = [
        Rectangle((0, 0), 1, 1, fill=False, lw=1.8, ec="black"),
        Line2D([], [], ls="none"),
    ]
    labels = [
        "boxed: the full run disagrees with the m → ∞ limit",
        "L a/b: the full run never reached the stage; hard-sample loss at the end, full/limit "
        "(nats)",
    ]
    for reason in sorted(reasons):
        handles.append(Line2D([], [], ls="none"))
        labels.append(f"{reason[0].upper()}: reason {reason} ({REASON_WORDS.get(reason, '')})")
    fig.legend(
        handles,
        labels,
        loc="outside lower center",
        ncol=2,
        fontsize=8,
        frameon=False,
        handlelength=1.2,
    )


def _missing(full: float, run: Any, limit: Any) -> str:
    """The text of a grid cell without a ratio: the final hard losses of the full run and the
    limit where the full run never reached the stage, else its time over the limit's ``—``."""
    return (
        f"L {run.hard_loss:.3f}/{limit.hard_loss:.3f}" if not np.isfinite(full) else f"{full:.0f}/—"
    )


def _agreement(result: MixtureFate, K: int) -> dict[str, float]:
    cells = [c for c in result.cells() if c.coords["K"] == K]
    return {
        g: float(np.mean([c.agree for c in cells if c.group == g]))
        for g in ("joint", "attention frozen")
    }


def _box(j: int, i: int) -> Any:
    from matplotlib.patches import Rectangle

    return Rectangle((j - 0.48, i - 0.48), 0.96, 0.96, fill=False, lw=1.8, ec="black")


def _loss_panel(ax: Any, result: MixtureFate, K: int, letter: str) -> None:
    config = result.config
    omega = config.omegas[len(config.omegas) // 2]
    m_top = max(config.widths)
    colors = _width_colors(config.widths)
    for run, rec in zip(result.runs, result.records):
        if run["K"] != K or run["omega"] != omega or run["kind"] == "full" and run["m"] != m_top:
            continue
        if not result.first_draw(run):
            continue
        loss = result.losses(run, rec)[0]
        limit = run["kind"] == "limit"
        ax.semilogy(
            result.ts,
            loss,
            "-" if run["attention"] else "--",
            color=LIMIT_COLOR if limit else colors[m_top],
            lw=1.5 if limit else 1.2,
            label=f"{'m → ∞' if limit else f'full m = {m_top}'}, "
            f"{'attention trained' if run['attention'] else 'attention frozen'}",
        )
    ax.axhline(np.log(2), color="0.5", lw=0.8, label="ln 2 (f = 0)")
    ax.axhline(config.fit_level, color="0.5", lw=0.8, ls=":", label="fit level")
    ax.set_xlabel("flow time t")
    ax.set_ylabel("hard-sample loss (nats)")
    ax.set_title(f"{letter} K = {K}, ω = {omega:g}: loss on the hard samples (ε = −y)", fontsize=9)
    ax.legend(fontsize=7)


def _num(value: float | None) -> str:
    return "—" if value is None or not np.isfinite(value) else f"{value:.0f}"
