"""The fate map of any model with a full model: reduced prediction against full run.

For a model that declares its full model (``ReducedModel(..., full=FullModel(embed, loss))``):
a registered model, an installed plugin's or ``FILE.py:FACTORY`` (``gradflow fate --model
SPEC``), over a grid of reduced starts ``θ0`` on the model's plane (the other parameters 0):

- the **reduced prediction**: the attractor the reduced gradient flow from ``θ0`` reaches, in
  the Euclidean metric and in the metric the embedding induces (``G = JᵀJ``), by the engine's
  basin map (:func:`gradflow.basins`) over the model's critical sets;
- the **full outcome**: the gradient flow of the full loss from ``W0 = embed(θ0)`` (plus
  Gaussian noise of standard deviation ``σ`` on every weight), integrated to a steady state
  (:func:`gradflow.flow_endpoints`, Tsit5), then read in reduced terms: its endpoint ``W``
  projected onto the family (:meth:`gradflow.FullModel.projection`: the model's ``project``, or
  least squares from ``θ0``) and the projection assigned to the reduced attractor it lies on
  (the attractor index of the same critical sets; ``no attractor`` where it lies on none); a
  run that did not reach a steady state is named by its status (``not_converged``,
  ``diverged``).  The distance from the family, ``‖W − embed(project W)‖``, is reported for
  every run at its start and end; it is no evidence by itself (where the family is not
  invariant every run that moves leaves it).

Outcomes name an attractor by kind and id (``"global_min #0"``), so two components of one set
are different outcomes.  Each run that disagrees with a prediction is flown again, recorded
(:func:`gradflow.flow`), for its evidence: ``rise``, how far the reduced loss of its projection
climbed after its least value on the path (a reduced gradient flow never raises its loss, in
any metric), and ``end_gradient``, the reduced gradient at its projected end in units of the
reduced gradient scale (a full run that stops where the reduced gradient is not zero ended at a
point the reduced flow cannot end at).  A disagreement gets the first reason that holds
(:data:`~gradflow.systems.fate.REASONS`): ``slow-corner`` (the full run did not finish),
``metric`` (the other metric's prediction is the full outcome), ``off-reduction`` (its rise
exceeds :data:`RISE_SHARE` of the reduced loss scale, or its end gradient exceeds
:data:`END_GRADIENT`: the reduced dynamics do not describe the run), ``unexplained``.  A run
that did not finish is not flown again.  Where the family is invariant (the full gradient on
it is tangent to it) and ``σ = 0``, the full flow is the reduced flow in the induced metric, so
the induced prediction agrees in every cell.

The cells (one per metric, one per ``(σ, seed)``) go through :func:`gradflow.run_cells`:
resumable from a checkpoint, runnable on Dask.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .fate import FateCell, FateResult, plane_cells, run_columns
from .fate_markers import cell_edges
from .plane_fate_config import ModelFateConfig

__all__ = [
    "END_GRADIENT",
    "METRICS",
    "RISE_SHARE",
    "FullRuns",
    "ModelFateConfig",
    "ModelFateMap",
    "ReducedPrediction",
    "fate_map",
]

METRICS = ("euclidean", "induced")
"""The metrics of the reduced predictions."""
RISE_SHARE = 0.01
"""A run's projection climbed the reduced loss when that loss rose, after its least value on the
path, by more than this share of the reduced loss scale (:func:`gradflow.loss_scales`)."""
END_GRADIENT = 1e-3
"""A run ended where the reduced flow cannot when the reduced gradient at its projected end
exceeds this share of the reduced gradient scale (the full runs stop at ``gtol``, 10⁻⁶ of the
full loss's)."""
EVIDENCE = ("rise", "end_gradient")
"""The evidence of a disagreeing run (module docstring); ``nan`` for the runs that agree and
those that did not finish."""
SLOW = ("not_converged", "non_smooth")
"""Outcomes of a run that did not finish (reason ``slow-corner``, not replayed)."""


@functools.cache
def _setup(config: ModelFateConfig) -> tuple[Any, Any, Any, Any]:
    """The bound model, the region of starts, the critical sets and their attractor index (one
    per process and configuration)."""
    import gradflow as gf
    from gradflow.systems.model_specs import load_model

    model = load_model(config.model)
    if model.full is None:
        raise gf.GradflowError(f"model {config.model!r} declares no full model")
    bound = model.bind(**config.values())
    region = gf.Region.of(bound, config.grid, config.box)
    critical = gf.critical_sets(bound, box=region.search_box(bound))
    flat = region.points().reshape(-1, bound.dim)
    center = 0.5 * (flat.min(axis=0) + flat.max(axis=0))
    index = gf.AttractorIndex(bound, critical, critical.box, center=center)
    return bound, region, critical, index


def _name(attractor: Any) -> str:
    return f"{attractor.kind} #{attractor.id}"


@dataclass(frozen=True)
class ReducedPrediction:
    """A cell of the map: the reduced model's predictions in one metric."""

    config: ModelFateConfig
    metric: str


def reduced_prediction(cell: ReducedPrediction) -> dict[str, np.ndarray]:
    """``{"labels": (ny, nx) strings}``: per start, the attractor its reduced flow reaches in
    ``cell.metric`` (its basin map, in float64 only: a fate map's grid is small), or why
    none."""
    import gradflow as gf

    bound, region, critical, _ = _setup(cell.config)
    found = gf.basins(
        bound,
        region=region,
        critical=critical,
        metric=cell.metric,
        progress=False,
        float32_first=False,
    )
    names = [_name(a) for a in found.attractors]
    labels = [
        names[i] if i >= 0 else gf.LABELS[code]
        for i, code in zip(found.attractor_ids.ravel(), found.labels.ravel())
    ]
    return {"labels": np.asarray(labels).reshape(found.labels.shape)}


@dataclass(frozen=True)
class FullRuns:
    """A cell of the map: the full runs from every start at noise ``σ`` (draw ``seed``)."""

    config: ModelFateConfig
    sigma: float
    seed: int


def _full_landscape(cell: FullRuns) -> tuple[Any, Any, np.ndarray, Any]:
    """The full loss as a landscape over flat weights, in the reduced loss's scales (so that a
    full run's ``t_max`` and ``gtol`` are the reduced runs'), the reduced starts ``(n, dim)``,
    the full starts ``embed(θ0)`` plus the cell's noise ``(n, W)`` and the unflattening of a
    weight vector (one per process and cell)."""
    import jax
    import jax.numpy as jnp
    from jax.flatten_util import ravel_pytree

    import gradflow as gf

    bound, region, _, _ = _setup(cell.config)
    full, h = bound.model.full, bound.h
    thetas = jnp.asarray(region.points().reshape(-1, bound.dim))
    flat0, unravel = ravel_pytree(full.embed(thetas[0], h))
    base = np.asarray(jax.vmap(lambda t: ravel_pytree(full.embed(t, h))[0])(thetas))
    noise = np.random.default_rng([cell.seed, cell.config.grid]).standard_normal(base.shape)
    names = tuple(f"W{i}" for i in range(flat0.size))
    scales = gf.loss_scales(bound)
    land = gf.JaxLandscape(
        lambda w, args: full.loss(unravel(w), args),
        names,
        h,
        f"full model of {bound.name}",
        scales=(scales.length, scales.gradient),
    )
    return land, thetas, base + cell.sigma * noise, unravel


def _options(config: ModelFateConfig) -> Any:
    """The full runs' flow options."""
    import gradflow as gf

    return gf.FlowOptions(solver="Tsit5", stop=gf.StopRule(gtol=config.gtol, t_max=config.t_max))


def run_evidence(cell: FullRuns, runs: np.ndarray) -> dict[str, np.ndarray]:
    """The evidence (:data:`EVIDENCE`) of the runs ``runs`` (indices into the cell's flattened
    grid), each flown again and recorded: ``rise`` in units of the reduced loss scale,
    ``end_gradient`` in units of the reduced gradient scale; shape ``(len(runs),)`` each."""
    import jax
    import jax.numpy as jnp

    import gradflow as gf

    bound = _setup(cell.config)[0]
    full, h = bound.model.full, bound.h
    land, thetas, starts, unravel = _full_landscape(cell)
    scales = gf.loss_scales(bound)
    project = jax.jit(jax.vmap(lambda w, t: full.projection(unravel(w), h, t), in_axes=(0, None)))
    out = {k: np.full(len(runs), np.nan) for k in EVIDENCE}
    for n, k in enumerate(runs):
        path = gf.flow(land, starts[k], _options(cell.config))
        projected = np.asarray(project(jnp.asarray(path.thetas), thetas[k]))
        heights = np.asarray(bound.loss(projected))
        out["rise"][n] = (heights[-1] - heights.min()) / scales.loss
        out["end_gradient"][n] = np.linalg.norm(bound.grad(projected[-1:])) / scales.gradient
    return out


def full_runs(cell: FullRuns) -> dict[str, np.ndarray]:
    """Integrate the full gradient flow from every start (module docstring): per run its
    outcome, status, flow time, final full loss, projected endpoint ``(dim,)`` and distance
    from the family at the start and the end (weight units)."""
    import jax
    import jax.numpy as jnp

    import gradflow as gf

    bound, _, _, index = _setup(cell.config)
    full, h = bound.model.full, bound.h
    land, thetas, starts, unravel = _full_landscape(cell)
    ends = gf.flow_endpoints(land, starts, _options(cell.config), progress=False)

    @jax.jit
    @jax.vmap
    def read(w: jax.Array, theta: jax.Array) -> tuple[jax.Array, jax.Array]:
        params = unravel(w)
        return full.projection(params, h, theta), full.family_distance(params, h, theta)

    _, off_start = (np.asarray(v) for v in read(jnp.asarray(starts), thetas))
    projected, off_end = (np.asarray(v) for v in read(jnp.asarray(ends.endpoints), thetas))
    ids = index.match(projected)
    outcomes = []
    for status, i in zip(ends.status, ids):
        if status != gf.Outcome.CONVERGED:
            outcomes.append(str(gf.Outcome(int(status))))
        else:
            outcomes.append(_name(index.attractors[i]) if i >= 0 else "no attractor")
    return {
        "full": np.asarray(outcomes),
        "status": np.asarray(ends.status, dtype=int),
        "times": np.asarray(ends.times),
        "losses": np.asarray(land.loss(ends.endpoints)),
        "projected": projected,
        "off_start": off_start,
        "off_end": off_end,
    }


@dataclass(frozen=True)
class ModelFateMap(FateResult):
    """Full outcomes on the grid of starts against the reduced predictions.

    Attributes:
        config: what was run.
        params: the reduced model's parameter names (the order of ``projected``'s last axis).
        plane: the two parameters on the grid's axes, x first.
        xs, ys: the grid's coordinates, shapes ``(nx,)`` and ``(ny,)``.
        runs: ``(σ, seed)`` per batch of runs, in the order of the arrays' first axis.
        full: full outcomes (strings), shape ``(R, ny, nx)`` (row = y).
        status: the full runs' :class:`gradflow.Outcome` codes, shape ``(R, ny, nx)``.
        times: flow time at which each run stopped, shape ``(R, ny, nx)``.
        losses: final full loss, shape ``(R, ny, nx)``.
        projected: final weights projected to reduced coordinates, shape ``(R, ny, nx, dim)``.
        off_start, off_end: distance of the weights from the family at the start and the end,
            weight units, shape ``(R, ny, nx)``.
        reduced: per metric the predicted outcome per start, strings of shape ``(ny, nx)``.
        attractors: the reduced attractors the outcomes name, JSON-ready.
        evidence: per key of :data:`EVIDENCE`, shape ``(R, ny, nx)``, ``nan`` where the run
            agrees with both predictions (not recorded).
    """

    config: ModelFateConfig
    params: tuple[str, ...]
    plane: tuple[str, str]
    xs: np.ndarray
    ys: np.ndarray
    runs: tuple[tuple[float, int], ...]
    full: np.ndarray
    status: np.ndarray
    times: np.ndarray
    losses: np.ndarray
    projected: np.ndarray
    off_start: np.ndarray
    off_end: np.ndarray
    reduced: dict[str, np.ndarray]
    attractors: tuple[dict[str, Any], ...]
    evidence: dict[str, np.ndarray]

    @property
    def system(self) -> str:
        return self.config.model

    @property
    def axes(self) -> tuple[str, ...]:
        return (f"{self.plane[1]}0", f"{self.plane[0]}0", "sigma", "seed")

    @functools.cached_property
    def _cells(self) -> tuple[FateCell, ...]:
        y0, x0 = self.axes[:2]
        return plane_cells(
            self.full,
            self.reduced,
            self.runs,
            ((y0, self.ys), (x0, self.xs)),
            self._reason,
            self._detail,
        )

    def cells(self) -> Sequence[FateCell]:
        """Every comparison: per metric, per batch ``(σ, seed)``, per start (row = y)."""
        return self._cells

    def csv_columns(self) -> dict[str, Sequence[Any]]:
        """Per comparison its run's status, time, loss, distances and evidence."""
        return run_columns(self.arrays(), self.full.shape, len(self.reduced), skip=("full",))

    def _reason(self, r: int, i: int, j: int, other: str) -> str:
        """Why the run ``(r, i, j)`` differs from the prediction (the module docstring's order)."""
        full = str(self.full[r, i, j])
        if full in SLOW:
            return "slow-corner"
        if full == other:
            return "metric"
        rise, end = (self.evidence[k][r, i, j] for k in EVIDENCE)
        return "off-reduction" if rise > RISE_SHARE or end > END_GRADIENT else "unexplained"

    def _detail(self, r: int, i: int, j: int) -> str:
        point = ", ".join(f"{v:.6g}" for v in self.projected[r, i, j])
        text = (
            f"t = {self.times[r, i, j]:.4g}, full loss {self.losses[r, i, j]:.6g}, projected "
            f"({point}); off the family {self.off_start[r, i, j]:.3g} → {self.off_end[r, i, j]:.3g}"
        )
        rise, end = (self.evidence[k][r, i, j] for k in EVIDENCE)
        if np.isnan(rise):
            return text
        return (
            f"{text}; reduced loss climbed {rise:.3g} (loss scales) after its least value, "
            f"reduced gradient at the end {end:.3g} (gradient scales)"
        )

    def arrays(self) -> dict[str, np.ndarray]:
        """The NPZ's arrays."""
        return {
            "x": self.xs,
            "y": self.ys,
            "sigma": np.array([s for s, _ in self.runs]),
            "seed": np.array([k for _, k in self.runs]),
            "full": self.full,
            "status": self.status,
            "times": self.times,
            "losses": self.losses,
            "projected": self.projected,
            "off_start": self.off_start,
            "off_end": self.off_end,
            **{f"reduced_{m}": v for m, v in self.reduced.items()},
            **{f"evidence_{k}": v for k, v in self.evidence.items()},
        }

    def details(self) -> dict[str, Any]:
        """Settings, the parameters, the plane and the attractors the outcomes name."""
        return {
            "config": asdict(self.config),
            "parameters": list(self.params),
            "plane": list(self.plane),
            "attractors": list(self.attractors),
        }

    def detail_lines(self) -> list[str]:
        """Settings and the attractors."""
        c = self.config
        hyper = ", ".join(c.hyper) or "no hyperparameters"
        lines = [
            f"{c.grid} × {c.grid} starts on ({', '.join(self.plane)}), {hyper}, "
            f"budget t = {c.t_max:g}, gtol = {c.gtol:g}",
            "attractors:",
        ]
        lines += [f"  {a['kind']} #{a['id']} {a['set']} at {a['point']}" for a in self.attractors]
        return lines

    def figure(self) -> Any:
        """One panel per ``σ`` (its first seed): the induced prediction as the cell's colour, the
        full outcome as a marker of its colour, disagreements ringed in red."""
        import matplotlib.pyplot as plt

        sigmas = list(dict.fromkeys(s for s, _ in self.runs))
        names = sorted(set(self.full.ravel()) | set(self.reduced["induced"].ravel()))
        colours = {n: plt.get_cmap("tab10")(k % 10) for k, n in enumerate(names)}
        fig, axes = plt.subplots(
            1, len(sigmas), figsize=(5.2 * len(sigmas), 5.8), squeeze=False, layout="constrained"
        )
        share = self.agreement()
        gx, gy = np.meshgrid(self.xs, self.ys)
        for ax, sigma in zip(axes[0], sigmas):
            r = next(k for k, (s, _) in enumerate(self.runs) if s == sigma)
            predicted = self.reduced["induced"]
            marks = {"zorder": 5, "clip_on": False}  # the box's edge rows are drawn whole
            ax.scatter(
                gx,
                gy,
                s=260,
                marker="s",
                alpha=0.3,
                c=[colours[n] for n in predicted.ravel()],
                **marks,
            )
            ax.scatter(gx, gy, s=40, c=[colours[n] for n in self.full[r].ravel()], **marks)
            wrong = self.full[r] != predicted
            ax.scatter(gx[wrong], gy[wrong], s=120, facecolors="none", edgecolors="red", **marks)
            ax.set_xlim(*cell_edges(self.xs)[[0, -1]])
            ax.set_ylim(*cell_edges(self.ys)[[0, -1]])
            ax.set_title(
                f"σ = {sigma:g}: agreement {100 * share[f'induced σ={sigma:g}']:.0f} % induced, "
                f"{100 * share[f'euclidean σ={sigma:g}']:.0f} % Euclidean",
                fontsize=9,
            )
            ax.set_xlabel(self.plane[0])
            ax.set_ylabel(self.plane[1])
        handles = [plt.Line2D([], [], marker="o", ls="", color=colours[n], label=n) for n in names]
        if any((self.full[r] != self.reduced["induced"]).any() for r in range(len(self.runs))):
            ring = {"mfc": "none", "mec": "red", "label": "mismatch (induced metric)"}
            handles.append(plt.Line2D([], [], marker="o", ls="", **ring))
        fig.legend(
            handles=handles, loc="outside lower center", ncol=min(len(handles), 4), fontsize=8
        )
        fig.suptitle(
            f"fate map, {self.config.model}\nfull outcome (dot) on the induced prediction "
            "(square), mismatches ringed",
            fontsize=10,
        )
        return fig


def fate_map(
    config: ModelFateConfig, checkpoint: Path | str | None = None, **cell_options: Any
) -> ModelFateMap:
    """Run the fate map of ``config.model`` (module docstring).

    Args:
        config: what to run.
        checkpoint: a folder to write each finished cell to and resume from.
        cell_options: passed on to :func:`gradflow.run_cells` (``progress``, …).

    Raises:
        GradflowError: a model without a full model, a checkpoint folder of another map.
    """
    import gradflow as gf

    folder = None if checkpoint is None else Path(checkpoint)
    manifest = {"fate map": asdict(config)}

    def cells(compute: Any, grid: Sequence[Any], names: list[str], part: str) -> list[Any]:
        return gf.run_cells(
            compute,
            grid,
            names=names,
            checkpoint=None if folder is None else folder / part,
            manifest={**manifest, "part": part},
            desc=f"{config.model} fate: {part}",
            **cell_options,
        )

    bound, region, _, index = _setup(config)
    predicted = cells(
        reduced_prediction,
        [ReducedPrediction(config, m) for m in METRICS],
        list(METRICS),
        "reduced",
    )
    batches = [FullRuns(config, s, k) for s, k in config.runs()]
    done = cells(full_runs, batches, [f"sigma{c.sigma:g}_seed{c.seed}" for c in batches], "runs")
    shape = (len(batches), config.grid, config.grid)
    stack = {k: np.stack([d[k] for d in done]) for k in done[0]}
    labels = [p["labels"].ravel() for p in predicted]
    evidence = {k: np.full((len(batches), config.grid**2), np.nan) for k in EVIDENCE}
    for r, (batch, outcomes) in enumerate(zip(batches, stack["full"])):
        unlike = np.any([outcomes != lab for lab in labels], axis=0)
        differ = np.flatnonzero(unlike & ~np.isin(outcomes, SLOW))
        if differ.size:
            found = run_evidence(batch, differ)
            for k in EVIDENCE:
                evidence[k][r, differ] = found[k]
    return ModelFateMap(
        config=config,
        params=bound.param_names,
        plane=region.plane,
        xs=region.xs,
        ys=region.ys,
        runs=tuple(config.runs()),
        **{k: stack[k].reshape(shape) for k in ("full", "status", "times", "losses")},
        projected=stack["projected"].reshape(shape + (bound.dim,)),
        off_start=stack["off_start"].reshape(shape),
        off_end=stack["off_end"].reshape(shape),
        reduced={m: p["labels"] for m, p in zip(METRICS, predicted)},
        attractors=tuple(a.metadata() for a in index.attractors),
        evidence={k: v.reshape(shape) for k, v in evidence.items()},
    )
