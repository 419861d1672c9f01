"""Training the two-mixture transformer: joint and staged schedules, stage detection, the ω law.

The full model (:mod:`gradflow.models.mixture_transformer`) is trained on its exact population
loss (a finite sum over the ``4K(K-1)`` samples) by the engine, with gradient descent
(:func:`gradflow.descend`, step ``η``; ``n`` steps advance flow time by ``nη``) or by the
gradient flow itself (:func:`gradflow.integrate`, an explicit adaptive solver).  The reduced
dynamics (:class:`gradflow.models.mixture_reduced.ReducedMixture`) run the same schedules on the
attention state ``(B, P_Q, P_K)`` and the neuron alignments ``N``; its descent map is the exact
projection of full descent, so sweeps over ``ω`` use it.

Schedules: ``"joint"`` trains every weight from the start; ``"staged"`` trains the neurons with
attention frozen until ``t_1``, the attention with neurons frozen until ``t_2``, then the neurons
again (the three-stage schedule of the reconstruction).

Stage detection (:func:`detect_stages`) reads three times off a run:

- ``t_align``: the neurons have aligned with the signal span, i.e. the cosine between the neuron
  weights and their projection on ``span U``, ``(Σ_r ‖Uᵀ w_r‖² / Σ_r ‖w_r‖²)^{1/2}``, first
  reaches ``align_level`` (default 0.99; at initialization it is about ``√(2K/d)``);
- ``t_attention``: the scores leave the ``O(ω²)`` regime, i.e. ``max_{h,a,b} |B_h[a, b]|`` first
  reaches ``score_level`` (default 1);
- ``t_fit``: the loss first falls below ``loss_level`` (default 0.05 nats).

The attention stage lasts ``t_attention - t_align``.  With the neurons held fixed and the
infinite-width initialization (``B = 0``, ``P_Q = P_K = ω² I``), a constant driving gradient
``G = -γ e_a e_bᵀ`` makes the score ``ω² sinh(2γt)``, which reaches ``s`` at
``arcsinh(s/ω²)/(2γ) ≈ ln(2s/ω²)/(2γ)``: linear in ``ln(1/ω)`` with slope ``1/γ``.
:func:`fit_log_law` fits ``duration = a ln(1/ω) + b`` to measured durations.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from gradflow.models.mixture_reduced import ReducedMixture, ReducedState, project
from gradflow.models.mixture_transformer import (
    MixtureConfig,
    MixtureTransformer,
    init_transformer,
    logistic_loss,
    population_loss,
)
from jax.flatten_util import ravel_pytree

from gradflow import FlowOptions, GradflowError, GradientField, Status, descend, integrate
from gradflow._progress import progress_bar

__all__ = [
    "METHODS",
    "SCHEDULES",
    "MixtureRun",
    "StageTimes",
    "TrainOptions",
    "LogLaw",
    "detect_stages",
    "conservation_drift",
    "fit_log_law",
    "omega_sweep",
    "train",
    "train_reduced",
]

SCHEDULES = ("joint", "staged")
"""Training schedules: all weights at once, or neurons → attention → neurons."""

METHODS = ("gd", "flow")
"""Integrators: gradient descent with step ``lr``, or the gradient flow (adaptive Tsit5)."""

CHUNKS = 20
"""Pieces a run is split into, for the progress bar."""


@dataclass(frozen=True)
class TrainOptions:
    """How a run is integrated.

    Attributes:
        schedule: ``"joint"`` or ``"staged"``.
        method: ``"gd"`` or ``"flow"``.
        t_max: flow-time horizon (time units of the gradient flow; ``t_max/lr`` descent steps).
        lr: descent step ``η`` (``method = "gd"``).
        records: recorded states, evenly spaced in time, besides the initial one.
        stage_times: ``(t_1, t_2)`` of the staged schedule; default the record times nearest
            ``(t_max/10, t_max/2)``.  Each must lie on the record grid.
        rtol, atol: tolerances of the flow's step-size controller (``method = "flow"``).
        max_steps: solver-step budget per record interval (``method = "flow"``).

    Raises:
        GradflowError: an unknown schedule or method, non-positive ``t_max``, ``lr`` or
            ``records``, a horizon that is not a whole number of descent steps per record, or
            stage times off the record grid or out of order.
    """

    schedule: str = "joint"
    method: str = "gd"
    t_max: float = 2000.0
    lr: float = 0.1
    records: int = 200
    stage_times: tuple[float, float] | None = None
    rtol: float = 1e-7
    atol: float = 1e-10
    max_steps: int = 200_000

    def __post_init__(self) -> None:
        if self.schedule not in SCHEDULES:
            raise GradflowError(
                f"schedule = {self.schedule!r} is not one of {', '.join(SCHEDULES)}"
            )
        if self.method not in METHODS:
            raise GradflowError(f"method = {self.method!r} is not one of {', '.join(METHODS)}")
        for name in ("t_max", "lr"):
            value = getattr(self, name)
            if not (np.isfinite(value) and value > 0):
                raise GradflowError(f"{name} = {value!r} must be > 0")
        if int(self.records) != self.records or self.records < 1:
            raise GradflowError(f"records = {self.records!r} must be an integer ≥ 1")
        if self.method == "gd":
            self.steps_per_record()
        if self.schedule == "staged" or self.stage_times is not None:
            t1, t2 = self.boundaries()
            grid = self.t_max / self.records
            for t in (t1, t2):
                if abs(t / grid - round(t / grid)) > 1e-9:
                    raise GradflowError(
                        f"stage time {t!r} is not on the record grid (multiples of {grid:g})"
                    )
            if not 0 < t1 < t2 < self.t_max:
                raise GradflowError(
                    f"stage_times = ({t1!r}, {t2!r}) need 0 < t_1 < t_2 < t_max = {self.t_max!r}"
                )

    def steps_per_record(self) -> int:
        """Descent steps between two records, ``t_max / (records · lr)``, an integer."""
        ratio = self.t_max / (self.records * self.lr)
        if ratio < 1 - 1e-9 or abs(ratio - round(ratio)) > 1e-6:
            raise GradflowError(
                f"t_max/(records·lr) = {ratio:g} must be a whole number ≥ 1 of descent steps per record; "
                f"adjust --t-max, --lr or --records"
            )
        return int(round(ratio))

    def boundaries(self) -> tuple[float, float]:
        """``(t_1, t_2)``: the ends of the first two stages of the staged schedule; by default the
        record-grid points nearest ``t_max/10`` and ``t_max/2``."""
        if self.stage_times is not None:
            return tuple(float(t) for t in self.stage_times)
        grid = self.t_max / self.records
        return grid * max(1, round(self.records / 10)), grid * round(self.records / 2)

    def segments(self) -> list[tuple[int, int, tuple[bool, bool]]]:
        """``(first record, last record, (attention, neurons))`` of each stage."""
        if self.schedule == "joint":
            return [(0, self.records, (True, True))]
        grid = self.t_max / self.records
        r1, r2 = (int(round(t / grid)) for t in self.boundaries())
        return [(0, r1, (False, True)), (r1, r2, (True, False)), (r2, self.records, (False, True))]


@dataclass(frozen=True)
class MixtureRun:
    """A recorded training run (full or reduced).

    Attributes:
        config: the model.
        options: how it was integrated.
        kind: ``"full"`` or ``"reduced"``.
        ts: flow times of the records, shape ``(T,)``.
        loss: population loss, nats, shape ``(T,)``.
        loss_hard, loss_consistent: the loss over the hard (``ε = -y``) and the consistent
            (``ε = y``) samples, shape ``(T,)``.
        scores: the score matrices ``B`` of both heads, shape ``(T, 2, 2K, 2K)`` (row key,
            column query, slots ``c_1..c_K, v_1..v_K``).
        neurons: neuron alignments ``N[h, r] = Uᵀ w_{h,r}``, shape ``(T, 2, m, 2K)``.
        neuron_norms: ``‖w_{h,r}‖`` (the whole weight, in ``R^d``), shape ``(T, 2, m)``.
        conservation: per attention map, the relative drift of ``C = W_Q W_Qᵀ - W_K W_Kᵀ``
            (:func:`conservation_drift`), shape ``(T, H)``; empty for reduced runs.
        status: ``"horizon"`` if ``t_max`` was reached, else why the integration stopped
            (a :class:`gradflow.Status` name).
    """

    config: MixtureConfig
    options: TrainOptions
    kind: str
    ts: np.ndarray
    loss: np.ndarray
    loss_hard: np.ndarray
    loss_consistent: np.ndarray
    scores: np.ndarray
    neurons: np.ndarray
    neuron_norms: np.ndarray
    conservation: np.ndarray
    status: str

    def arrays(self) -> dict[str, np.ndarray]:
        """The recorded arrays by name (for NPZ output)."""
        names = (
            "ts",
            "loss",
            "loss_hard",
            "loss_consistent",
            "scores",
            "neurons",
            "neuron_norms",
            "conservation",
        )
        return {name: getattr(self, name) for name in names} | {"span_cosine": self.span_cosine}

    @property
    def span_cosine(self) -> np.ndarray:
        """``(Σ_{h,r} ‖Uᵀ w_{h,r}‖² / Σ_{h,r} ‖w_{h,r}‖²)^{1/2}``: how much of the neurons lies in
        the signal span, shape ``(T,)``; about ``√(2K/d)`` at initialization, 1 when aligned."""
        inside = (self.neurons**2).sum(axis=(1, 2, 3))
        return np.sqrt(inside / (self.neuron_norms**2).sum(axis=(1, 2)))

    def neuron_cosines(self) -> np.ndarray:
        """``cos∠(w_{h,r}, u_a)`` for the slots ``a`` (``c_1..c_K, v_1..v_K``), shape ``(T, 2, m, 2K)``
        (0 for a zero neuron)."""
        norms = self.neuron_norms[..., None]
        return np.divide(self.neurons, norms, out=np.zeros_like(self.neurons), where=norms > 0)


@dataclass(frozen=True)
class StageTimes:
    """Detected stage times of a run (flow-time units; NaN where not reached).

    Attributes:
        t_align: neuron alignment with the signal span reached ``align_level``.
        t_attention: ``max |B|`` reached ``score_level``.
        t_fit: the loss fell below ``loss_level``.
        levels: the three levels used.
    """

    t_align: float
    t_attention: float
    t_fit: float
    levels: dict[str, float]

    @property
    def attention_duration(self) -> float:
        """``t_attention - t_align``: the length of the attention stage."""
        return self.t_attention - self.t_align

    def to_dict(self) -> dict[str, Any]:
        """The times, the attention-stage duration and the levels, as a plain dict."""
        return {
            "t_align": self.t_align,
            "t_attention": self.t_attention,
            "t_fit": self.t_fit,
            "attention_duration": self.attention_duration,
            "levels": dict(self.levels),
        }


def detect_stages(
    run: MixtureRun, align_level: float = 0.99, score_level: float = 1.0, loss_level: float = 0.05
) -> StageTimes:
    """The stage times of a run (see the module docstring for the three definitions).

    Each is the first record time at which its criterion holds, NaN if it never does.
    """

    def first(reached: np.ndarray) -> float:
        return float(run.ts[np.argmax(reached)]) if reached.any() else float("nan")

    max_score = np.abs(run.scores).max(axis=(1, 2, 3))
    return StageTimes(
        t_align=first(run.span_cosine >= align_level),
        t_attention=first(max_score >= score_level),
        t_fit=first(run.loss <= loss_level),
        levels={"align_level": align_level, "score_level": score_level, "loss_level": loss_level},
    )


def _subset_losses(
    margins: np.ndarray, config: MixtureConfig
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Loss over all, hard and consistent samples from margins ``y f`` of shape ``(T, n)``."""
    ell = np.asarray(logistic_loss(jnp.asarray(margins)))
    hard = config.population().hard
    return ell.mean(axis=1), ell[:, hard].mean(axis=1), ell[:, ~hard].mean(axis=1)


def _both_heads(B: np.ndarray) -> np.ndarray:
    """Scores of both heads, shape ``(T, 2, 2K, 2K)``, from ``(T, H, 2K, 2K)`` (tied: ``B^- = -B^+``)."""
    return np.concatenate([B, -B], axis=1) if B.shape[1] == 1 else B


def _neuron_norms(N: np.ndarray, orthogonal_sq: np.ndarray) -> np.ndarray:
    """``‖w‖`` per record and neuron from ``N = Uᵀ w`` (``(T, 2, m, 2K)``) and the constant
    ``‖w - U Uᵀ w‖²`` (``(2, m)``)."""
    return np.sqrt((N**2).sum(axis=-1) + orthogonal_sq)


def _orthogonal_sq(model: MixtureTransformer, U: np.ndarray) -> np.ndarray:
    """``‖w_{h,r} - U Uᵀ w_{h,r}‖²``, shape ``(2, m)``: constant along any training, since every
    token, hence every neuron gradient, lies in span U."""
    W = np.stack([np.asarray(h.W) for h in model.heads])
    return ((W - W @ U @ U.T) ** 2).sum(axis=-1)


# --- full model -------------------------------------------------------------------------------


def _train_filter(model: MixtureTransformer, train: tuple[bool, bool]) -> MixtureTransformer:
    """A bool pytree over ``model.split()[0]``: which weights move (attention, neurons)."""
    trained, _ = model.split()
    flags = jax.tree.map(lambda _: train[0], trained)
    return eqx.tree_at(lambda m: [h.W for h in m.heads], flags, replace=[train[1], train[1]])


@functools.cache
def _full_field(config: MixtureConfig, train: tuple[bool, bool]) -> tuple[GradientField, Callable]:
    """The engine field of the full population loss over the moving weights of one stage.

    ``args = (still, fixed, X, y)``: the frozen weights, the untrained leaves, tokens and labels.
    Cached per configuration shape and stage, so repeated runs compile once.
    """
    template = init_transformer(config)
    moving, _ = eqx.partition(template.split()[0], _train_filter(template, train))
    _, unravel = ravel_pytree(moving)

    def loss(theta: jax.Array, args: tuple) -> jax.Array:
        still, fixed, X, y = args
        return population_loss(eqx.combine(unravel(theta), still, fixed), X, y)

    return GradientField.from_loss(loss), unravel


def _shape_key(config: MixtureConfig) -> MixtureConfig:
    """The configuration with everything that does not change shapes or code set to a default."""
    return dataclasses.replace(config, omega=1.0, seed=0, basis="standard", filler="zero")


def train(
    config: MixtureConfig,
    options: TrainOptions | None = None,
    init: MixtureTransformer | None = None,
    *,
    progress: bool | None = None,
) -> MixtureRun:
    """Train the full two-headed transformer on the exact population loss.

    Args:
        config: the model (sizes, ``ω``, options, seed).
        options: schedule, integrator and horizon.
        init: the initial model; default :func:`init_transformer` ``(config)``.
        progress: show a progress bar (default: after 1.5 s).

    Returns:
        The run, recorded at ``options.records + 1`` evenly spaced times from 0 to ``t_max``
        (fewer if the integration stopped early: divergence or the flow's step budget).

    Raises:
        GradflowError: bad options.
    """
    options = options or TrainOptions()
    model = init_transformer(config) if init is None else init
    U = config.frame()
    pop = config.population()
    X, y = jnp.asarray(pop.tokens(U)), jnp.asarray(pop.y, jnp.float64)
    trained, fixed = model.split()
    grid = options.t_max / options.records

    def advance(state: MixtureTransformer, n_records: int, flags: tuple[bool, bool]):
        field, unravel = _full_field(_shape_key(config), flags)
        moving, still = eqx.partition(state, _train_filter(model, flags))
        thetas, status = _advance(
            field, ravel_pytree(moving)[0], (still, fixed, X, y), n_records, grid, options
        )
        return [eqx.combine(unravel(theta), still) for theta in thetas], status

    records, status = _run_schedule(trained, advance, options, "mixture train", progress)
    return _full_run(config, options, [eqx.combine(t, fixed) for t in records], U, X, y, status)


def _run_schedule(
    state0: Any, advance: Callable, options: TrainOptions, desc: str, progress: bool | None
) -> tuple[list, str]:
    """Drive ``advance(state, n_records, (attention, neurons)) -> (states, Status)`` through the
    schedule's stages in chunks; stop early when a chunk comes back short.

    Returns:
        ``(states, status)``: the recorded states (the initial one first) and ``"horizon"`` if
        ``t_max`` was reached, else the engine's status name of the stop.
    """
    states = [state0]
    with progress_bar(total=options.records, unit="record", enabled=progress, desc=desc) as bar:
        for start, stop, flags in options.segments():
            for a, b in _chunks(start, stop):
                path, status = advance(states[-1], b - a, flags)
                states += path[1:]
                bar.update(len(path) - 1)
                if len(path) < b - a + 1:
                    return states, status.name
    return states, "horizon"


def _chunks(start: int, stop: int) -> list[tuple[int, int]]:
    """Record intervals of one stage, about ``records / CHUNKS`` records each."""
    size = max(1, -(-(stop - start) // CHUNKS))
    return [(a, min(a + size, stop)) for a in range(start, stop, size)]


def _advance(
    field: GradientField,
    theta0: jax.Array,
    args: Any,
    n_records: int,
    grid: float,
    options: TrainOptions,
) -> tuple[np.ndarray, Status]:
    """Integrate ``n_records`` record intervals of length ``grid``; return the records (initial included)."""
    if options.method == "gd":
        every = options.steps_per_record()
        path = descend(field, theta0, args, lr=options.lr, steps=every * n_records, every=every)
        return path.thetas, path.status
    flow_options = _flow_options(options, grid * n_records, n_records)
    path = integrate(field, theta0, args, flow_options, ts=grid * np.arange(n_records + 1))
    return path.thetas[_on_grid(path.ts, grid)], path.status


def _flow_options(options: TrainOptions, horizon: float, n_records: int) -> FlowOptions:
    """Explicit adaptive solver (the loss is not stiff; its ReLU kinks make steps short), run to
    the horizon: ``gtol`` is set below any reachable gradient, since the logistic loss has no
    finite minimizer."""
    return FlowOptions(
        solver=diffrax.Tsit5(),
        rtol=options.rtol,
        atol=options.atol,
        gtol=1e-300,
        t_max=horizon,
        max_steps=options.max_steps * n_records,
    )


def _on_grid(ts: np.ndarray, grid: float) -> np.ndarray:
    """Mask of the recorded times that are record-grid points (drops an early stop's last point)."""
    return np.abs(ts / grid - np.round(ts / grid)) < 1e-9


def _full_run(
    config: MixtureConfig,
    options: TrainOptions,
    models: Sequence[MixtureTransformer],
    U: np.ndarray,
    X: jax.Array,
    y: jax.Array,
    status: str,
) -> MixtureRun:
    """Record summaries of a sequence of full models."""
    stacked = jax.tree.map(lambda *xs: jnp.stack(xs), *models)
    margins = np.asarray(jax.vmap(lambda m: y * jax.vmap(m)(X))(stacked))
    reduced = jax.vmap(lambda m: project(m, U))(stacked)
    scores = _both_heads(np.asarray(reduced.B))
    loss, hard, consistent = _subset_losses(margins, config)
    N = np.asarray(reduced.N)
    return MixtureRun(
        config=config,
        options=options,
        kind="full",
        ts=options.t_max / options.records * np.arange(len(models)),
        loss=loss,
        loss_hard=hard,
        loss_consistent=consistent,
        scores=scores,
        neurons=N,
        neuron_norms=np.stack(
            [[np.linalg.norm(np.asarray(h.W), axis=-1) for h in m.heads] for m in models]
        ),
        conservation=conservation_drift(models),
        status=status,
    )


def conservation_drift(models: Sequence[MixtureTransformer]) -> np.ndarray:
    """Drift of ``C = W_Q W_Qᵀ - W_K W_Kᵀ`` per attention map, shape ``(T, H)``.

    ``‖C(t) - C(0)‖_F / (‖W_Q W_Qᵀ(t)‖_F + ‖W_K W_Kᵀ(t)‖_F)``: the change of the invariant
    relative to the size of the two terms it is the difference of (``C(0)`` itself is ``O(ω²)``
    and would make a small-init drift look large).  Zero along the exact flow; ``O(η)`` per unit
    time along descent.
    """

    def terms(model: MixtureTransformer) -> np.ndarray:
        maps = model.attention_maps()[: 1 if model.heads[1].W_Q is None else 2]
        return np.stack(
            [np.stack([np.asarray(wq @ wq.T), np.asarray(wk @ wk.T)]) for wq, wk in maps]
        )

    QK = np.stack([terms(m) for m in models])  # (T, H, 2, d_head, d_head)
    C = QK[:, :, 0] - QK[:, :, 1]
    scale = np.linalg.norm(QK[:, :, 0], axis=(2, 3)) + np.linalg.norm(QK[:, :, 1], axis=(2, 3))
    return np.linalg.norm(C - C[:1], axis=(2, 3)) / scale


# --- reduced model ----------------------------------------------------------------------------


def train_reduced(
    config: MixtureConfig,
    options: TrainOptions | None = None,
    init: MixtureTransformer | None = None,
    *,
    progress: bool | None = None,
) -> MixtureRun:
    """Run the reduced dynamics under the same schedule and integrator as :func:`train`.

    Args:
        config: the model.
        options: schedule, integrator and horizon.
        init: the full model whose projection is the initial state; default
            :func:`init_transformer` ``(config)`` (so the run is :func:`train`'s run seen
            through ``U``).
        progress: show a progress bar.

    Returns:
        The run (``conservation`` is empty: the reduced state has no ``W_Q W_Qᵀ``).
    """
    options = options or TrainOptions()
    model0 = init_transformer(config) if init is None else init
    U = config.frame()
    state = project(model0, U)
    red = ReducedMixture.from_config(config)
    grid = options.t_max / options.records

    def advance(state: ReducedState, n_records: int, flags: tuple[bool, bool]):
        return _advance_reduced(red, state, n_records, grid, options, flags)

    states, status = _run_schedule(state, advance, options, "mixture reduced", progress)
    stacked = jax.tree.map(lambda *xs: jnp.stack(xs), *states)
    margins = np.asarray(jax.vmap(lambda s: red.y * red.logits(s.B, s.N))(stacked))
    loss, hard, consistent = _subset_losses(margins, config)
    N = np.asarray(stacked.N)
    return MixtureRun(
        config=config,
        options=options,
        kind="reduced",
        ts=grid * np.arange(len(states)),
        loss=loss,
        loss_hard=hard,
        loss_consistent=consistent,
        scores=_both_heads(np.asarray(stacked.B)),
        neurons=N,
        neuron_norms=_neuron_norms(N, _orthogonal_sq(model0, U)),
        conservation=np.zeros((len(states), 0)),
        status=status,
    )


def _advance_reduced(
    red: ReducedMixture,
    state: ReducedState,
    n_records: int,
    grid: float,
    options: TrainOptions,
    train: tuple[bool, bool],
) -> tuple[list[ReducedState], Status]:
    """Reduced counterpart of :func:`_advance`: a list of states, the initial one first."""
    if options.method == "gd":
        every = options.steps_per_record()
        states = _unstack(red.descend(state, options.lr, every * n_records, every, train))
        finite = [bool(jnp.all(jnp.isfinite(ravel_pytree(s)[0]))) for s in states]
        if all(finite):
            return states, Status.NOT_CONVERGED
        return states[: finite.index(False)], Status.DIVERGED
    flow_options = _flow_options(options, grid * n_records, n_records)
    path, unravel = red.flow(state, grid * np.arange(n_records + 1), flow_options, train)
    return [unravel(theta) for theta in path.thetas[_on_grid(path.ts, grid)]], path.status


def _unstack(tree: ReducedState) -> list[ReducedState]:
    """A state stacked on a leading axis as a list of states."""
    leaves, treedef = jax.tree.flatten(tree)
    return [treedef.unflatten([leaf[i] for leaf in leaves]) for i in range(tree.B.shape[0])]


# --- the ω law --------------------------------------------------------------------------------


@dataclass(frozen=True)
class LogLaw:
    """The fit ``duration = a ln(1/ω) + b`` of attention-stage durations.

    Attributes:
        slope: ``a`` (flow time per nat of ``ln(1/ω)``).
        intercept: ``b`` (flow time).
        r2: coefficient of determination of the fit.
        max_residual: largest ``|duration - fit|`` (flow time).
    """

    slope: float
    intercept: float
    r2: float
    max_residual: float

    def __call__(self, omega: np.ndarray) -> np.ndarray:
        """The fitted duration at ``ω``."""
        return self.slope * np.log(1 / np.asarray(omega)) + self.intercept


def fit_log_law(omegas: Sequence[float], durations: Sequence[float]) -> LogLaw:
    """Least-squares fit of ``duration = a ln(1/ω) + b`` (NaN durations are left out).

    Raises:
        GradflowError: fewer than two finite durations.
    """
    x = np.log(1 / np.asarray(omegas, dtype=float))
    d = np.asarray(durations, dtype=float)
    ok = np.isfinite(d)
    if ok.sum() < 2:
        raise GradflowError(
            f"need at least two finite attention-stage durations to fit, got {int(ok.sum())}"
        )
    a, b = np.polyfit(x[ok], d[ok], 1)
    residual = d[ok] - (a * x[ok] + b)
    total = ((d[ok] - d[ok].mean()) ** 2).sum()
    r2 = 1.0 - (residual**2).sum() / total if total > 0 else 1.0
    return LogLaw(
        slope=float(a), intercept=float(b), r2=float(r2), max_residual=float(np.abs(residual).max())
    )


def omega_sweep(
    config: MixtureConfig,
    omegas: Sequence[float],
    options: TrainOptions | None = None,
    *,
    levels: dict[str, float] | None = None,
    progress: bool | None = None,
) -> tuple[list[StageTimes], LogLaw | None]:
    """Stage times across initialization scales, with the ``O(ln 1/ω)`` fit of the attention stage.

    Each ``ω`` runs the reduced dynamics from the projection of the full initialization (same
    seed), whose descent map is the exact projection of full descent.

    Returns:
        ``(stage times per ω, fit)``; the fit is ``None`` when fewer than two durations exist.
    """
    times = []
    with progress_bar(total=len(omegas), unit="ω", enabled=progress, desc="ω sweep") as bar:
        for omega in omegas:
            run = train_reduced(
                dataclasses.replace(config, omega=float(omega)), options, progress=False
            )
            times.append(detect_stages(run, **(levels or {})))
            bar.update(1)
    durations = [t.attention_duration for t in times]
    law = fit_log_law(omegas, durations) if np.isfinite(durations).sum() >= 2 else None
    return times, law
