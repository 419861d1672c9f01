"""Training the two-mixture transformer: joint and staged schedules, full model or reduced dynamics.

The full model (:mod:`gradflow.systems.two_mixture.transformer`) is trained on its exact population
loss (a finite sum over the ``4K(K-1)`` samples) by the engine, with gradient descent
(:func:`gradflow.flow` with :class:`gradflow.GradientDescent`, step ``η``; ``n`` steps advance flow time by ``nη``) or by the
gradient flow itself (:func:`gradflow.flow` of a field, an explicit adaptive solver).  The reduced
dynamics (:class:`gradflow.systems.two_mixture.reduced.ReducedMixture`) run the same schedules on the
attention state ``(B, P_Q, P_K)`` and the neuron alignments ``N``; its descent map is the exact
projection of full descent, so sweeps over ``ω`` use it (:mod:`.stages`).

Schedules: ``"joint"`` trains every weight from the start; ``"staged"`` trains the neurons with
attention frozen until ``t_1``, the attention with neurons frozen until ``t_2``, then the neurons
again (the three-stage schedule of the reconstruction); ``"frozen"`` trains the neurons alone,
the attention held at its initialization throughout.  Both kinds of run share one loop
(:func:`_train`): a :class:`_Dynamics` advances its state through the schedule's stages and
summarizes the recorded states.
"""

from __future__ import annotations

import abc
import dataclasses
import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree

from gradflow import (
    PID,
    FlowOptions,
    GradientDescent,
    GradientField,
    Outcome,
    StopRule,
    flow,
    progress_bar,
)

from .config import METHODS, SCHEDULES, TrainOptions
from .reduced import ReducedMixture, ReducedState, project
from .transformer import (
    MixtureConfig,
    MixtureTransformer,
    init_transformer,
    logistic_loss,
    population_loss,
)

__all__ = [
    "METHODS",
    "SCHEDULES",
    "MixtureRun",
    "TrainOptions",
    "conservation_drift",
    "train",
    "train_reduced",
]

DIVERGENCE_RADIUS = 1e6
"""``‖θ‖₂`` (parameter units) above which a run of this model counts as diverged.  Set, not
left to the engine's default (ten times the start's norm at least): from ``N(0, ω²/m)`` weights
with ``ω = 10⁻³`` the weights of a run that learns grow by far more than ten times their start,
and such runs must not stop; a logistic loss run that fits only grows its weights slowly
(logarithmically), so ``10⁶`` is reached by none that is meant to be recorded."""

CHUNKS = 20
"""Pieces a run is split into, for the progress bar."""


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
            (a :class:`gradflow.Outcome` name).
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
    return _train(_FullDynamics, config, options, init, progress)


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
    return _train(_ReducedDynamics, config, options, init, progress)


@dataclass(frozen=True)
class _Summaries:
    """What a run records of its states: margins ``y f`` ``(T, n)``, scores ``(T, H, 2K, 2K)``,
    neuron alignments ``(T, 2, m, 2K)`` and norms ``(T, 2, m)``, conservation drift ``(T, ·)``."""

    margins: np.ndarray
    scores: np.ndarray
    neurons: np.ndarray
    neuron_norms: np.ndarray
    conservation: np.ndarray


class _Dynamics(abc.ABC):
    """A kind of run (``kind``, its progress bar's ``desc``): its initial state ``state0``, how
    it advances through a stage, what it records."""

    kind: ClassVar[str]
    desc: ClassVar[str]
    state0: Any

    def __init__(self, config: MixtureConfig, options: TrainOptions, model0: MixtureTransformer):
        self.config, self.options, self.U = config, options, config.frame()
        self.grid = options.t_max / options.records

    @abc.abstractmethod
    def advance(
        self, state: Any, n_records: int, flags: tuple[bool, bool]
    ) -> tuple[list[Any], Outcome]:
        """Integrate ``n_records`` record intervals with the ``(attention, neurons)`` flagged
        weights moving; return the states (the initial one first) and the engine's status."""

    @abc.abstractmethod
    def summaries(self, states: list[Any]) -> _Summaries:
        """The recorded arrays of a sequence of states."""


class _FullDynamics(_Dynamics):
    """The full transformer: the state is its trained weights (``model.split()[0]``)."""

    kind, desc = "full", "mixture train"

    def __init__(self, config: MixtureConfig, options: TrainOptions, model0: MixtureTransformer):
        super().__init__(config, options, model0)
        pop = config.population()
        self.X, self.y = jnp.asarray(pop.tokens(self.U)), jnp.asarray(pop.y, jnp.float64)
        self.model0 = model0
        self.state0, self.fixed = model0.split()

    def advance(
        self, state: MixtureTransformer, n_records: int, flags: tuple[bool, bool]
    ) -> tuple[list[MixtureTransformer], Outcome]:
        field, unravel = _full_field(_shape_key(self.config), flags)
        moving, still = eqx.partition(state, _train_filter(self.model0, flags))
        args = (still, self.fixed, self.X, self.y)
        thetas, status = _advance(
            field, ravel_pytree(moving)[0], args, n_records, self.grid, self.options
        )
        return [eqx.combine(unravel(theta), still) for theta in thetas], status

    def summaries(self, states: list[MixtureTransformer]) -> _Summaries:
        models = [eqx.combine(t, self.fixed) for t in states]
        stacked = jax.tree.map(lambda *xs: jnp.stack(xs), *models)
        X, y = self.X, self.y
        reduced = jax.vmap(lambda m: project(m, self.U))(stacked)
        return _Summaries(
            margins=np.asarray(jax.vmap(lambda m: y * jax.vmap(m)(X))(stacked)),
            scores=np.asarray(reduced.B),
            neurons=np.asarray(reduced.N),
            neuron_norms=np.stack(
                [[np.linalg.norm(np.asarray(h.W), axis=-1) for h in m.heads] for m in models]
            ),
            conservation=conservation_drift(models),
        )


class _ReducedDynamics(_Dynamics):
    """The reduced dynamics: the state is ``(B, P_Q, P_K, N)`` of the projected initial model."""

    kind, desc = "reduced", "mixture reduced"

    def __init__(self, config: MixtureConfig, options: TrainOptions, model0: MixtureTransformer):
        super().__init__(config, options, model0)
        self.state0 = project(model0, self.U)
        self.red = ReducedMixture.from_config(config)
        self.orthogonal_sq = _orthogonal_sq(model0, self.U)

    def advance(
        self, state: ReducedState, n_records: int, flags: tuple[bool, bool]
    ) -> tuple[list[ReducedState], Outcome]:
        options, red = self.options, self.red
        if options.method == "gd":
            every = options.steps_per_record()
            states = _unstack(red.descend(state, options.lr, every * n_records, every, flags))
            finite = [bool(jnp.all(jnp.isfinite(ravel_pytree(s)[0]))) for s in states]
            if all(finite):
                return states, Outcome.NOT_CONVERGED
            return states[: finite.index(False)], Outcome.DIVERGED
        flow_options = _flow_options(options, self.grid * n_records, n_records)
        ts = self.grid * np.arange(n_records + 1)
        path, unravel = red.flow(state, ts, flow_options, flags)
        return [unravel(theta) for theta in path.thetas[_on_grid(path.ts, self.grid)]], path.status

    def summaries(self, states: list[ReducedState]) -> _Summaries:
        stacked = jax.tree.map(lambda *xs: jnp.stack(xs), *states)
        red = self.red
        N = np.asarray(stacked.N)
        return _Summaries(
            margins=np.asarray(jax.vmap(lambda s: red.y * red.logits(s.B, s.N))(stacked)),
            scores=np.asarray(stacked.B),
            neurons=N,
            neuron_norms=np.sqrt((N**2).sum(axis=-1) + self.orthogonal_sq),
            conservation=np.zeros((len(states), 0)),
        )


def _train(
    dynamics_type: type[_Dynamics],
    config: MixtureConfig,
    options: TrainOptions | None,
    init: MixtureTransformer | None,
    progress: bool | None,
) -> MixtureRun:
    """Drive a kind of run through its schedule from ``init`` and record it."""
    options = options or TrainOptions()
    model0 = init_transformer(config) if init is None else init
    dynamics = dynamics_type(config, options, model0)
    states, status = _run_schedule(dynamics, options, progress)
    s = dynamics.summaries(states)
    loss, hard, consistent = _subset_losses(s.margins, config)
    return MixtureRun(
        config=config,
        options=options,
        kind=dynamics.kind,
        ts=dynamics.grid * np.arange(len(states)),
        loss=loss,
        loss_hard=hard,
        loss_consistent=consistent,
        scores=_both_heads(s.scores),
        neurons=s.neurons,
        neuron_norms=s.neuron_norms,
        conservation=s.conservation,
        status=status,
    )


def _run_schedule(
    dynamics: _Dynamics, options: TrainOptions, progress: bool | None
) -> tuple[list, str]:
    """Advance through the schedule's stages in chunks; stop early when a chunk comes back short.

    Returns:
        ``(states, status)``: the recorded states (the initial one first) and ``"horizon"`` if
        ``t_max`` was reached, else the engine's status name of the stop.
    """
    states = [dynamics.state0]
    with progress_bar(
        total=options.records, unit="record", enabled=progress, desc=dynamics.desc
    ) as bar:
        for start, stop, flags in options.segments():
            for a, b in _chunks(start, stop):
                path, status = dynamics.advance(states[-1], b - a, flags)
                states += path[1:]
                bar.update(len(path) - 1)
                if len(path) < b - a + 1:
                    return states, status.name
    return states, "horizon"


def _chunks(start: int, stop: int) -> list[tuple[int, int]]:
    """Record intervals of one stage, about ``records / CHUNKS`` records each."""
    size = max(1, -(-(stop - start) // CHUNKS))
    return [(a, min(a + size, stop)) for a in range(start, stop, size)]


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


def _orthogonal_sq(model: MixtureTransformer, U: np.ndarray) -> np.ndarray:
    """``‖w_{h,r} - U Uᵀ w_{h,r}‖²``, shape ``(2, m)``: constant along any training, since every
    token, hence every neuron gradient, lies in span U."""
    W = np.stack([np.asarray(h.W) for h in model.heads])
    return ((W - W @ U @ U.T) ** 2).sum(axis=-1)


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


def _advance(
    field: GradientField,
    theta0: jax.Array,
    args: Any,
    n_records: int,
    grid: float,
    options: TrainOptions,
) -> tuple[np.ndarray, Outcome]:
    """Integrate ``n_records`` record intervals of length ``grid``; return the records (initial included)."""
    if options.method == "gd":
        every = options.steps_per_record()
        descent = FlowOptions(
            solver=GradientDescent(options.lr),
            stop=StopRule(max_steps=every * n_records, divergence_radius=DIVERGENCE_RADIUS),
        )
        ts = options.lr * every * np.arange(n_records + 1)
        path = flow(field, theta0, descent, args=args, ts=ts)
        return path.thetas, path.status
    flow_options = _flow_options(options, grid * n_records, n_records)
    path = flow(field, theta0, flow_options, args=args, ts=grid * np.arange(n_records + 1))
    return path.thetas[_on_grid(path.ts, grid)], path.status


def _flow_options(options: TrainOptions, horizon: float, n_records: int) -> FlowOptions:
    """Explicit adaptive solver (the loss is not stiff; its ReLU kinks make steps short), run to
    the horizon: ``gtol`` is set below any reachable gradient, since the logistic loss has no
    finite minimizer."""
    return FlowOptions(
        solver=diffrax.Tsit5(),
        controller=PID(rtol=options.rtol, atol=options.atol),
        stop=StopRule(
            gtol=1e-300,
            t_max=horizon,
            max_steps=options.max_steps * n_records,
            divergence_radius=DIVERGENCE_RADIUS,
        ),
    )


def _on_grid(ts: np.ndarray, grid: float) -> np.ndarray:
    """Mask of the recorded times that are record-grid points (drops an early stop's last point)."""
    return np.abs(ts / grid - np.round(ts / grid)) < 1e-9


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


def _unstack(tree: ReducedState) -> list[ReducedState]:
    """A state stacked on a leading axis as a list of states."""
    leaves, treedef = jax.tree.flatten(tree)
    return [treedef.unflatten([leaf[i] for leaf in leaves]) for i in range(tree.B.shape[0])]
