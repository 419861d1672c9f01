"""Fate over a grid: where full transformer training ends, against the reduced basin map.

From each point ``θ0 = (e0, w0)`` of a grid (``a0 = 0`` for the model with attention), the full
single-layer transformer starts at ``embed(θ0)`` plus Gaussian noise of standard deviation ``σ``
on every weight, and follows the gradient flow of its exact population loss (all ``2^N`` input
sequences enumerated, float64; adaptive Tsit5, batched over the grid).  Each run stops when its
fate is decided:

- ``global``: the loss fell below ``H_rate + ½ (H(π) - H_rate)``.  The loss never increases
  along a gradient flow and every point of the reduced local set (``e = 0``) has loss ``H(π)``,
  so such a run can no longer end there; its loss heads for the entropy rate.
- ``local``: a steady state (``‖∇L_full‖ ≤ gtol``) at loss ``H(π)`` (the unigram predictor).
- ``other``: a steady state at any other loss; ``diverged``; ``undecided``: the flow-time
  budget or the step budget ran out first.
- ``kink``: the step budget ran out with a pre-activation of the FFN's ReLU at 0 (within
  ``KINK_TOL`` of the largest): the run reached a kink of the full loss and the flow slides
  along it (it is not differentiable there, so an adaptive solver's steps shrink to nothing).
  The reduced loss has no such kink away from ``e = 0``; the full model's residual stream of
  a token at some position can cross 0 on the way.

Each fate is compared with the reduced model's basin label at ``θ0`` in the Euclidean metric
(the paper's portrait) and in the metric the embedding induces, ``G = JᵀJ``
(:mod:`gradflow.models.full_model`): agreement fractions per metric and ``σ``, and the list of
mismatches.  Runs are checkpointed one ``(σ, seed)`` at a time and a rerun resumes.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import diffrax
import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree

from gradflow import (
    LABELS,
    FlowOptions,
    GradflowError,
    GradientField,
    Kinks,
    Landscape,
    Status,
    atomic_outputs,
    basins,
    flow_endpoints,
    in_metric,
    open_checkpoint,
)
from gradflow.models.full_model import MarkovFullModel
from gradflow.models.markov_data import enumerate_sequences
from gradflow.models.markov_transformer import (
    exact_loss_at,
    prefix_preactivations,
    residual_stream,
)

from .markov_configs import FateConfig
from .markov_full_spectrum import critical_set_indices, index_lines

__all__ = [
    "FATES",
    "FateConfig",
    "FateMap",
    "FullLandscape",
    "cost_line",
    "fate_map",
    "reduced_label",
]

FATES = ("global", "local", "other", "diverged", "undecided", "kink")
"""Fates of a full run, in the order of their codes."""
DECISION_SHARE = 0.5
"""A run is decided ``global`` once its loss is below ``H_rate + DECISION_SHARE·(H(π) - H_rate)``."""
FULL_CHUNK = 1
"""Full runs integrated together.  One: the members of a batch step together until the last of
the round is done, and the runs of a map differ in length by a factor of a hundred.  A full
gradient in a ``vmap`` batch of 16 costs about a third of one alone per member, yet a 12 × 12
map's runs took 34 s CPU in batches of 4 (re-batched every 64 steps) and 85 s in batches of 16,
against 16 s one at a time; and a round of the few long runs left at the end would otherwise
be padded with copies of them."""
FULL_ROUND = 512
"""Solver steps of a full run between returns to Python: a round restarts the step-size
control, and a stiff run takes thousands of steps."""
FULL_RTOL = 1e-6
"""Relative local-error tolerance of a full run (:func:`full_options`)."""
FULL_ATOL = 1e-9
"""Absolute local-error tolerance of a full run, weight units (:func:`full_options`)."""
KINK_TOL = 1e-6
"""A run is on a ReLU kink when its smallest FFN pre-activation, over all ``2^N`` sequences,
positions and hidden units, is within ``KINK_TOL`` of its largest (in absolute value)."""
LOCAL_TOL = 1e-6
"""Relative distance ``|L - H(π)| / (H(π) - H_rate)`` within which a steady state is ``local``."""


@dataclass(frozen=True, eq=False)
class FullLandscape(Landscape):
    """The full model's exact loss over its flat weights (``ravel_pytree`` order), as a landscape.

    The field is built once per full model, so runs at other ``(p, q)`` reuse the compiled
    integrator (``h`` is the field's argument).
    """

    full: MarkovFullModel
    h: jax.Array

    @functools.cached_property
    def _unravel(self) -> Callable[[jax.Array], Any]:
        return _unravel(self.full)

    @property
    def param_names(self) -> tuple[str, ...]:
        return tuple(f"W{i}" for i in range(_size(self.full)))

    @property
    def field(self) -> GradientField:
        return _full_field(self.full)

    @property
    def declared_scales(self) -> tuple[float, float]:
        """Absolute units: ``gtol`` in nats per weight unit, ``t_max`` in time units of the
        flow, the time of the reduced flow it is compared with."""
        return (1.0, 1.0)

    @property
    def args(self) -> jax.Array:
        return self.h

    @property
    def name(self) -> str:
        return f"full model of {self.full.reduced.name}"

    def loss(self, theta: Any) -> np.ndarray:
        flat = jnp.atleast_2d(jnp.asarray(theta))
        out = _batched_loss(self.full)(flat, self.h)
        return np.asarray(out).reshape(np.shape(theta)[:-1])

    def grad(self, theta: Any) -> np.ndarray:
        flat = jnp.atleast_2d(jnp.asarray(theta))
        out = jax.vmap(self.field.grad, in_axes=(0, None))(flat, self.h)
        return np.asarray(out).reshape(np.shape(theta))

    def hessian(self, theta: Any) -> np.ndarray:
        raise GradflowError("the full landscape does not form Hessians of its weights")

    @property
    def kinks(self) -> Kinks:
        """The FFN's ReLUs: a kink where a pre-activation at some prefix is 0
        (:func:`~gradflow.models.markov_transformer.prefix_preactivations`), slopes ``[0, 1]``."""
        return _full_kinks(self.full)


@functools.cache
def _unravel(full: MarkovFullModel) -> Callable[[jax.Array], Any]:
    theta = jnp.zeros(full.reduced.dim).at[0].set(1.0)
    return ravel_pytree(full.embed(theta, jnp.asarray([0.5, 0.5])))[1]


@functools.cache
def _size(full: MarkovFullModel) -> int:
    theta = jnp.zeros(full.reduced.dim).at[0].set(1.0)
    return int(ravel_pytree(full.embed(theta, jnp.asarray([0.5, 0.5])))[0].size)


@functools.cache
def _full_field(full: MarkovFullModel) -> GradientField:
    unravel = _unravel(full)
    return GradientField.from_loss(lambda flat, h: full.loss(unravel(flat), h))


@functools.cache
def _full_kinks(full: MarkovFullModel) -> Kinks:
    unravel = _unravel(full)
    size = int(np.prod(prefix_preactivations(unravel(jnp.zeros(_size(full)))).shape))
    return Kinks(
        surfaces=lambda flat, h: prefix_preactivations(unravel(flat)).ravel(),
        loss_at=lambda flat, s, h: exact_loss_at(
            unravel(flat), h[0], h[1], s.reshape(-1, full.d * 4)
        ),
        lo=np.zeros(size),
        hi=np.ones(size),
    )


@functools.cache
def _batched_loss(full: MarkovFullModel) -> Callable[..., jax.Array]:
    return jax.jit(jax.vmap(_full_field(full).loss, in_axes=(0, None)))


@functools.cache
def _embed_batch(full: MarkovFullModel) -> Callable[..., jax.Array]:
    return jax.jit(jax.vmap(lambda t, h: ravel_pytree(full.embed(t, h))[0], in_axes=(0, None)))


@functools.cache
def _kink_margin(full: MarkovFullModel) -> Callable[..., jax.Array]:
    """Jitted, batched: ``min |W_1 y| / max |W_1 y|`` over sequences, positions and units
    (0 where every pre-activation is 0)."""
    unravel, seqs = _unravel(full), jnp.asarray(enumerate_sequences(full.length))

    def margin(flat: jax.Array) -> jax.Array:
        model = unravel(flat)
        u = jnp.abs(residual_stream(model, seqs) @ model.W_1.T)
        top = jnp.max(u)
        return jnp.where(top > 0, jnp.min(u) / jnp.where(top > 0, top, 1.0), 0.0)

    return jax.jit(jax.vmap(margin))


@functools.cache
def _project_batch(full: MarkovFullModel) -> Callable[..., jax.Array]:
    unravel = _unravel(full)
    return jax.jit(jax.vmap(lambda f: full.project(unravel(f))))


def reduced_label(kind: str) -> str:
    """The fate a reduced basin label predicts: ``global`` for a global minimum, ``local`` for
    the unigram set (local minima and the saddles of ``e = 0``, all at loss ``H(π)``), else the
    label itself."""
    return {"global_min": "global", "local_min": "local", "saddle": "local"}.get(kind, kind)


@dataclass(frozen=True)
class FateMap:
    """Full fates on the grid against the reduced basin labels.

    Attributes:
        config: what was run.
        ws, es: grid coordinates, shapes ``(n,)`` (``w`` on x, ``e`` on y).
        runs: ``(σ, seed)`` per run batch, in the order of the arrays' first axis.
        fates: codes into :data:`FATES`, shape ``(R, n, n)`` (row = e).
        times: flow time at which each run was decided, shape ``(R, n, n)``.
        losses: final full loss, nats, shape ``(R, n, n)``.
        steps: solver steps of each run, accepted and rejected, shape ``(R, n, n)``: its cost
            (every step of Tsit5 evaluates the full gradient six times).
        projected: final weights projected to reduced coordinates, shape ``(R, n, n, dim)``.
        reduced: per metric (``"euclidean"``, ``"induced"``) the predicted fate per grid point
            (:func:`reduced_label`), string arrays of shape ``(n, n)``.
        references: ``unigram_loss`` ``H(π)`` and ``entropy_rate``, nats.
        spectra: with ``config.spectra``, per reduced critical set its Morse index in the
            reduced and in the full model (:func:`~gradflow.analysis.markov_full_spectrum.critical_set_indices`), else empty.
    """

    config: FateConfig
    ws: np.ndarray
    es: np.ndarray
    runs: tuple[tuple[float, int], ...]
    fates: np.ndarray
    times: np.ndarray
    losses: np.ndarray
    steps: np.ndarray
    projected: np.ndarray
    reduced: dict[str, np.ndarray]
    references: dict[str, float]
    spectra: tuple[dict[str, Any], ...] = ()

    def fate_names(self) -> np.ndarray:
        """:attr:`fates` as strings."""
        return np.asarray(FATES)[self.fates]

    def agreement(self) -> dict[str, dict[str, float]]:
        """Per metric, per ``σ``: the share of runs whose fate is the reduced prediction."""
        names = self.fate_names()
        sig = np.array([s for s, _ in self.runs])
        return {
            metric: {
                f"{s:g}": float(np.mean(names[sig == s] == labels[None])) for s in self.config.sigma
            }
            for metric, labels in self.reduced.items()
        }

    def mismatches(self, metric: str) -> list[dict[str, Any]]:
        """Every run whose fate differs from the reduced prediction in ``metric``."""
        names, labels = self.fate_names(), self.reduced[metric]
        out = []
        for r, i, j in zip(*np.nonzero(names != labels[None])):
            out.append(
                {
                    "sigma": self.runs[r][0],
                    "seed": self.runs[r][1],
                    "w0": float(self.ws[j]),
                    "e0": float(self.es[i]),
                    "reduced": str(labels[i, j]),
                    "full": str(names[r, i, j]),
                    "time": float(self.times[r, i, j]),
                    "loss": float(self.losses[r, i, j]),
                }
            )
        return out

    def counts(self) -> dict[str, int]:
        """How many runs ended in each fate."""
        return {name: int(np.sum(self.fates == k)) for k, name in enumerate(FATES)}

    def cost(self) -> dict[str, dict[str, float]]:
        """Per fate that occurred: its runs' solver steps in all, the most of one run, and the
        share of all the map's steps (a step costs the same whatever the fate, so this is
        where the map's time goes)."""
        total = max(int(self.steps.sum()), 1)
        out = {}
        for k, name in enumerate(FATES):
            mine = self.steps[self.fates == k]
            if mine.size:
                out[name] = {
                    "steps": int(mine.sum()),
                    "most": int(mine.max()),
                    "share": float(mine.sum() / total),
                }
        return out

    def arrays(self) -> dict[str, np.ndarray]:
        """The NPZ's arrays."""
        return {
            "w": self.ws,
            "e": self.es,
            "sigma": np.array([s for s, _ in self.runs]),
            "seed": np.array([k for _, k in self.runs]),
            "fates": self.fates,
            "fate_names": np.asarray(FATES),
            "times": self.times,
            "losses": self.losses,
            "steps": self.steps,
            "projected": self.projected,
            **{f"reduced_{m}": v for m, v in self.reduced.items()},
        }

    def metadata(self) -> dict[str, Any]:
        """The JSON record: settings, references, agreement, counts, mismatches (sorted)."""
        return {
            "config": asdict(self.config),
            "references": self.references,
            "parameters": list(self.config.full().reduced.param_names),
            "agreement": self.agreement(),
            "counts": self.counts(),
            "steps": self.cost(),
            "undecided": sum(1 for r in self._records() if r["full"] == "undecided"),
            "mismatches": {m: self.mismatches(m) for m in self.reduced},
            "spectra": list(self.spectra),
        }

    def _records(self) -> list[dict[str, Any]]:
        names = self.fate_names()
        return [{"full": str(v)} for v in names.ravel()]

    def figure(self) -> None:
        """No picture of its own: the fate-map figure (``gradflow figures local-to-global-fate-map``) draws it over the reduced basins."""
        return None

    def text(self) -> str:
        """Agreement per metric and σ, fate counts, the mismatches of the induced metric."""
        c, ref = self.config, self.references
        lines = [
            f"fate map, {c.model}, p = {c.p:g}, q = {c.q:g}: {c.grid} × {c.grid} grid, "
            f"N = {c.length}, d = {c.d}, {c.attention} attention, budget t = {c.t_max:g}",
            f"H(π) = {ref['unigram_loss']:.6f}, entropy rate = {ref['entropy_rate']:.6f} nats",
        ]
        for metric, by_sigma in self.agreement().items():
            shares = ", ".join(f"σ = {s}: {100 * v:.1f} %" for s, v in by_sigma.items())
            lines.append(f"agreement with the reduced basins, {metric} metric: {shares}")
        lines.append("fates: " + ", ".join(f"{k} {v}" for k, v in self.counts().items()))
        lines.append(cost_line(self.cost()))
        for metric in self.reduced:
            found = self.mismatches(metric)
            lines.append(f"mismatches, {metric} metric: {len(found)}")
            lines += [
                f"  σ = {m['sigma']:g} seed {m['seed']}: (e0, w0) = ({m['e0']:.3f}, {m['w0']:.3f}) "
                f"reduced {m['reduced']}, full {m['full']} at t = {m['time']:.4g}"
                for m in found[:20]
            ]
            if len(found) > 20:
                lines.append(f"  … and {len(found) - 20} more (all in the JSON)")
        lines += index_lines(self.spectra)
        return "\n".join(lines)


def cost_line(cost: dict[str, dict[str, float]]) -> str:
    """One line of :meth:`FateMap.cost`: the solver steps of each fate, their share, the most
    of one run."""
    return "solver steps: " + ", ".join(
        f"{k} {c['steps']:,} ({100 * c['share']:.0f} %, at most {c['most']:,} a run)"
        for k, c in cost.items()
    )


def full_options(config: FateConfig) -> FlowOptions:
    """Tsit5 with PID steps (stiff-safe by step rejection), steady state at ``gtol``, budget
    ``t_max``.  ``atol`` sits far below ``gtol``/λ_max (``1e-6/23`` at the default ``gtol``
    and the largest full Hessian eigenvalue met on the default box): an explicit solver at its
    stability limit keeps a residual of about ``atol`` in the state, ``λ_max·atol`` in the
    gradient.  No tighter: where a run slides along a ReLU kink of the full loss, every step
    straddles the kink, where the gradient jumps, and is cut to about ``tol/|jump|``, so the
    cost of those runs is inversely proportional to the tolerances (``rtol = 1e-7``,
    ``atol = 1e-10`` took 8–9× the steps, to the same fates)."""
    return FlowOptions(
        solver=diffrax.Tsit5(),
        rtol=FULL_RTOL,
        atol=FULL_ATOL,
        gtol=config.gtol,
        t_max=config.t_max,
        max_steps=config.max_steps,
        divergence_radius=1e3,
    )


def _reduced_predictions(config: FateConfig, full: MarkovFullModel) -> dict[str, np.ndarray]:
    """Predicted fates on the grid from the reduced basin maps in both metrics."""
    bound = full.reduced.bind(p=config.p, q=config.q)
    induced = in_metric(bound, full.metric, name="induced")
    out = {}
    for name, landscape in (("euclidean", bound), ("induced", induced)):
        bm = basins(landscape, region=config.region(), options=FlowOptions(), progress=False)
        out[name] = np.vectorize(reduced_label)(np.asarray(LABELS)[bm.labels])
    return out


def _run(
    config: FateConfig, full: MarkovFullModel, flat0: np.ndarray, h: jax.Array, refs: dict
) -> dict[str, np.ndarray]:
    """One batch of full runs: fates, times, losses, solver steps, projected endpoints."""
    land = FullLandscape(full, h)
    gap = refs["unigram_loss"] - refs["entropy_rate"]
    level = refs["entropy_rate"] + DECISION_SHARE * gap
    result = flow_endpoints(
        land,
        flat0,
        full_options(config),
        decide_below=level,
        chunk_size=FULL_CHUNK,
        steps_per_round=FULL_ROUND,
    )
    losses = land.loss(result.endpoints)
    fates = np.full(len(flat0), FATES.index("other"))
    fates[result.status == Status.DECIDED] = FATES.index("global")
    fates[losses < level] = FATES.index("global")
    steady = result.status == Status.CONVERGED
    at_unigram = np.abs(losses - refs["unigram_loss"]) <= LOCAL_TOL * gap
    fates[steady & at_unigram] = FATES.index("local")
    fates[result.status == Status.DIVERGED] = FATES.index("diverged")
    undecided = (result.status == Status.NOT_CONVERGED) & (losses >= level)
    fates[undecided] = FATES.index("undecided")
    margins = np.asarray(_kink_margin(full)(jnp.asarray(result.endpoints)))
    stalled = undecided & (result.times < config.t_max) & (margins <= KINK_TOL)
    fates[stalled] = FATES.index("kink")
    projected = np.asarray(_project_batch(full)(jnp.asarray(result.endpoints)))
    return {
        "fates": fates,
        "times": result.times,
        "losses": losses,
        "steps": result.steps,
        "projected": projected,
    }


def fate_map(config: FateConfig, checkpoint: Path | str | None = None) -> FateMap:
    """Run the fate map (module docstring).

    Args:
        config: what to run.
        checkpoint: a folder to write each finished ``(σ, seed)`` batch to and resume from.

    Raises:
        GradflowError: a checkpoint folder of another configuration.
    """
    full = config.full()
    bound = full.reduced.bind(p=config.p, q=config.q)
    h = bound.h
    refs = {k: float(bound.references[k]) for k in ("unigram_loss", "entropy_rate")}
    region = config.region()
    ws, es, thetas = region.xs, region.ys, region.points().reshape(-1, full.reduced.dim)
    base = np.asarray(_embed_batch(full)(jnp.asarray(thetas), h))
    folder = (
        None
        if checkpoint is None
        else open_checkpoint(
            Path(checkpoint),
            "config.json",
            asdict(dataclasses.replace(config, spectra=False)),
            "runs of a different fate map",
        )
    )
    batches = []
    for sigma, seed in config.runs():
        done = None if folder is None else _load(folder, sigma, seed)
        if done is None:
            noise = np.random.default_rng([seed, config.grid]).standard_normal(base.shape)
            done = _run(config, full, base + sigma * noise, h, refs)
            if folder is not None:
                _store(folder, sigma, seed, done)
        batches.append(done)
    shape = (len(batches), config.grid, config.grid)
    stack = {k: np.stack([b[k] for b in batches]) for k in batches[0]}
    return FateMap(
        config=config,
        ws=ws,
        es=es,
        runs=tuple(config.runs()),
        fates=stack["fates"].reshape(shape),
        times=stack["times"].reshape(shape),
        losses=stack["losses"].reshape(shape),
        steps=stack["steps"].reshape(shape),
        projected=stack["projected"].reshape(shape + (full.reduced.dim,)),
        reduced=_reduced_predictions(config, full),
        references=refs,
        spectra=tuple(critical_set_indices(full, config.p, config.q)) if config.spectra else (),
    )


def _run_path(folder: Path, sigma: float, seed: int) -> Path:
    return folder / f"sigma{sigma:g}_seed{seed}.npz"


def _store(folder: Path, sigma: float, seed: int, run: dict[str, np.ndarray]) -> None:
    path = _run_path(folder, sigma, seed)
    with atomic_outputs(path) as (tmp,):
        with open(tmp, "wb") as fh:
            np.savez(fh, **run)


def _load(folder: Path, sigma: float, seed: int) -> dict[str, np.ndarray] | None:
    """A finished batch, or ``None`` (not run yet, or written before runs kept their steps)."""
    path = _run_path(folder, sigma, seed)
    if not path.exists():
        return None
    with np.load(path) as data:
        return {k: data[k] for k in data.files} if "steps" in data.files else None
