"""The shallow encoder's fate map: where GD converges over ``(N, d_m)``, against Wu et al. (2023).

Wu et al. (NeurIPS 2023) prove that full-batch GD on the shallow encoder
(:mod:`gradflow.systems.shallow_ntk.encoder`) drives the squared loss to zero at a linear rate,

    ℓ_k ≤ (1 - γ τ1² α_0² / 2)^k ℓ_0,        α_0 = σ_min(F_pre) at init,

once the width is above a sufficient threshold, ``d_m ≥ N^α`` up to constants with ``α = 2``
under ``τ0 = d_m^{-1/2}`` and ``α = 1`` under ``τ0 = d_m^{-1}``
(:data:`~gradflow.systems.shallow_ntk.config.SUFFICIENT_EXPONENT`), and the proof needs ``α_0`` bounded
below, which its Proposition 1 draws from the concentration of ``F_pre F_preᵀ`` around its mean.

**The full model's outcome.**  Every ``(N, d_m, seed)`` draws a data set and one network per
(init, scaling) and trains each by GD with ``γ = η / λ_max(K_0)`` (:class:`NtkFateConfig`):
``converged`` once ``ℓ_k ≤ ε ℓ_0`` within the budget ``T``; ``diverged`` once the loss is not
finite or above ``10³ ℓ_0``; ``stalled`` otherwise.

**The reduced prediction is the theorem's statement read at the cell.**  It predicts
``converges`` where the cell meets the theorem's assumptions, ``no guarantee`` where one fails
(:func:`failed_assumptions`):

- ``width``: ``d_m ≥ N^α`` (the sufficient width, its constant taken as 1);
- ``features`` (Proposition 1's bound): ``α_0² ≥ d_m λ* / 4``, where ``λ* = λ_min(Φ)`` and
  ``Φ = E[F_pre F_preᵀ] / d_m`` is the features' mean Gram per unit under uniform attention
  (:func:`~gradflow.systems.shallow_ntk.ntk.feature_floor`, :func:`~gradflow.systems.shallow_ntk.ntk.proposition1_holds`).
  It fails for every ``d_m < N`` (``α_0 = 0``) and, as a square random matrix's smallest
  singular value is near 0, at ``d_m = N``;
- ``tokens``: ``d ≥ N``, so that the ``N`` mean tokens can be linearly independent.

A predicted ``converges`` agrees with a run that converged within the guaranteed rate (the bound
held at every step).  A ``no guarantee`` agrees with a run that stalled or diverged; where such a
run converged, the mismatch's reason is ``assumption`` (the threshold is sufficient, not
necessary).  A predicted ``converges`` that did not happen is ``off-reduction`` where the kernel
left its initial value (a relative change above :data:`KERNEL_MOVED`, or divergence: the kernel
grew past ``2/γ``), ``slow-corner`` where the run was still descending when the budget ran out,
else ``unexplained``.

Each cell also records ``λ_min(K_0)`` against ``λ_min(K∞)`` of the limiting kernel (under
``τ0 = d_m^{-1}``, where the limit exists), the steps linearized GD with ``K∞`` needs to reach
``ε``, the kernel's blocks (the share of ``Q, K``, which carries every dependence on ``τ0``), the
measured and the guaranteed rates.  The threshold ``d_m* ∝ N^α`` is fitted per (init, scaling)
over the sample counts with ``N ≤ d`` (a larger ``N`` breaks the theorem's ``tokens`` assumption,
so it cannot test the theorem), with an interval over the draws and the width grid
(:mod:`.threshold`).  Cells run through
:func:`gradflow.run_cells`, checkpointed one ``(N, d_m, seed)`` at a time.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from gradflow import run_cells
from gradflow.systems.fate import FateCell, FateResult

from .config import OUTCOMES, SUFFICIENT_EXPONENT, NtkFateConfig, compiled_width
from .dynamics import bound_holds, linearized_descent, loss_bound, run_gd
from .encoder import init_encoder, pad_width, synthetic_data
from .limit import limit_kernel
from .ntk import PROPOSITION1_MARGIN, feature_floor, kernel_blocks, proposition1_holds
from .threshold import Exponent, bootstrap_exponent, width_thresholds

__all__ = [
    "KERNEL_MOVED",
    "FateRun",
    "NtkFateConfig",
    "NtkFateMap",
    "compute_cell",
    "failed_assumptions",
    "fate_map",
]

BLOCK_ORDER = ("Q", "K", "V", "O")
"""The kernel blocks, in the order of the ``traces`` arrays."""
KERNEL_MOVED = 0.5
"""A relative kernel change ``‖K_end - K_0‖_F / ‖K_0‖_F`` above which a run left the kernel
regime."""
DIVERGED = 1e3
"""A loss above ``DIVERGED · ℓ_0`` (or not finite) is divergence."""
CHUNK = 100
"""GD steps between checks whether every network of a cell is done."""


@dataclass(frozen=True)
class FateRun:
    """One cell of the map, as :func:`compute_cell` receives it (plain, picklable data).

    Attributes:
        n_samples, d_m, seed: the cell's place on the grid.
        d_s, d, steps, eta, eps, data_seed: as in :class:`NtkFateConfig`.
        pairs: ``(init, scaling)`` of its networks.
    """

    n_samples: int
    d_m: int
    seed: int
    d_s: int
    d: int
    steps: int
    eta: float
    eps: float
    data_seed: int
    pairs: tuple[tuple[str, str], ...]

    @property
    def name(self) -> str:
        """Its checkpoint file's stem."""
        return f"N{self.n_samples}_dm{self.d_m}_seed{self.seed}"


def cell_runs(config: NtkFateConfig) -> list[FateRun]:
    """Every cell of the map, ``N`` slowest, then ``d_m``, then the draw."""
    common = {
        "d_s": config.d_s,
        "d": config.d,
        "steps": config.steps,
        "eta": float(config.eta),
        "eps": float(config.eps),
        "data_seed": config.data_seed,
        "pairs": tuple(config.pairs()),
    }
    return [
        FateRun(n, w, s, **common)
        for n in config.n_samples
        for w in config.widths
        for s in range(config.seeds)
    ]


def _stack(models: Sequence[Any]) -> Any:
    return jax.tree.map(lambda *leaves: jnp.stack(leaves), *models)


@eqx.filter_jit
def _measure(models: Any, X: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
    """Per network: kernel blocks ``(4, N, N)`` in :data:`BLOCK_ORDER`, ``F_pre`` ``(N, d_m)``,
    the outputs ``(N,)`` and ``max |A - 1/d_s|``."""

    def one(model: Any) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
        blocks = kernel_blocks(model, X)
        attention = jax.vmap(model.attention)(X)
        return (
            jnp.stack([blocks[b] for b in BLOCK_ORDER]),
            jax.vmap(model.features)(X),
            jax.vmap(model)(X),
            jnp.max(jnp.abs(attention - 1.0 / X.shape[-2])),
        )

    return eqx.filter_vmap(one)(models)


_descend = eqx.filter_jit(eqx.filter_vmap(run_gd, in_axes=(0, None, None, 0, None)))
"""GD of a stack of networks, each with its own step."""


def _train(
    models: Any, X: jax.Array, y: jax.Array, lr: np.ndarray, run: FateRun
) -> tuple[Any, np.ndarray, int]:
    """GD in chunks of :data:`CHUNK` steps until every network converged or diverged or the
    budget is spent: the last networks, the losses ``(B, T + 1)`` (NaN after the last step
    run) and the steps run."""
    lengths = ([run.steps % CHUNK] if run.steps % CHUNK else []) + [CHUNK] * (run.steps // CHUNK)
    losses = np.full((len(run.pairs), run.steps + 1), np.nan)
    done, k = 0, 0
    for length in lengths:
        models, chunk, _ = _descend(models, X, y, jnp.asarray(lr), length)
        losses[:, k : k + length + 1] = np.asarray(chunk)
        k += length
        seen = losses[:, : k + 1]
        done = np.any(seen <= run.eps * seen[:, :1], axis=1) | np.any(
            ~np.isfinite(seen) | (seen > DIVERGED * seen[:, :1]), axis=1
        )
        if np.all(done):
            break
    return models, losses, k


def _first(mask: np.ndarray) -> np.ndarray:
    """Per row, the first index where ``mask`` holds, ``-1`` where it never does."""
    return np.where(mask.any(axis=1), mask.argmax(axis=1), -1)


def _outcomes(losses: np.ndarray, ran: int, eps: float) -> tuple[np.ndarray, np.ndarray]:
    """Per network, the outcome's code (:data:`OUTCOMES`: whichever of ``ℓ_k ≤ ε ℓ_0`` and
    divergence comes first, else stalled) and its step (the last step run if stalled)."""
    recorded = np.arange(losses.shape[1])[None, :] <= ran
    reached = _first(recorded & (losses <= eps * losses[:, :1]))
    blown = _first(recorded & ~(losses <= DIVERGED * losses[:, :1]))
    converged = (reached >= 0) & ((blown < 0) | (reached < blown))
    diverged = ~converged & (blown >= 0)
    outcome = np.where(converged, 0, np.where(diverged, 2, 1))
    return outcome, np.where(converged, reached, np.where(diverged, blown, ran))


def compute_cell(run: FateRun) -> dict[str, np.ndarray]:
    """Train the networks of one cell and measure them (module docstring).

    Returns:
        Per network (first axis, in ``run.pairs`` order): ``losses`` ``(B, T + 1)`` (NaN after
        the cell stopped), ``outcome`` (codes into :data:`OUTCOMES`), ``steps_to_eps`` and
        ``stop`` (the step of the outcome; ``-1`` / the last step run), ``lambda_min``,
        ``lambda_max`` of ``K_0``, ``lambda_limit`` (``λ_min(K∞)``, NaN under ``τ0 = d_m^{-1/2}``),
        ``lambda_star`` (``λ_min(Φ)``), ``alpha0``, ``tau1``, ``lr``, ``traces`` ``(B, 4)``
        (``tr K_b`` at init), ``kernel_change``, ``deviation`` (``max |A - 1/d_s|``),
        ``bound_held``, ``rate`` and ``rate_bound`` (nats of loss per step: ``-ln(ℓ_k/ℓ_0)/k`` at
        the stop, and ``-ln(1 - γ τ1² α_0² / 2)``), ``descending`` (the loss halved over the last
        quarter of the run) and ``steps_limit`` (steps of linearized GD with ``K∞`` from the same
        ``f_0`` and ``γ`` to ``ε``; ``-1`` if not within ``T``, ``-2`` without a limit).
    """
    key = jax.random.fold_in(
        jax.random.fold_in(jax.random.PRNGKey(run.data_seed), run.n_samples), run.seed
    )
    data_key, net_key = jax.random.split(key)
    X, y = synthetic_data(data_key, run.n_samples, run.d_s, run.d)
    width = compiled_width(run.d_m)
    models = _stack(
        [
            pad_width(init_encoder(net_key, run.d, run.d_m, init=i, scaling=s), width)
            for i, s in run.pairs
        ]
    )
    blocks, features, f0, deviation = (np.asarray(a) for a in _measure(models, X))
    K0 = blocks.sum(axis=1)
    eigenvalues = np.linalg.eigvalsh(K0)
    alpha0 = (
        np.linalg.svd(features[:, :, : run.d_m], compute_uv=False)[:, -1]
        if run.n_samples <= run.d_m
        else np.zeros(len(run.pairs))
    )
    lr = run.eta / eigenvalues[:, -1]
    tau1 = np.asarray(models.tau1)
    trained, losses, ran = _train(models, X, y, lr, run)
    K_end = np.asarray(_measure(trained, X)[0]).sum(axis=1)
    change = np.linalg.norm(K_end - K0, axis=(1, 2)) / np.linalg.norm(K0, axis=(1, 2))

    outcome, stop = _outcomes(losses, ran, run.eps)
    held = [
        bound_holds(curve[: k + 1], loss_bound(curve[0], g, t, a, k))
        for curve, k, g, t, a in zip(losses, stop, lr, tau1, alpha0)
    ]
    descending = [curve[k] < 0.5 * curve[(3 * k) // 4] for curve, k in zip(losses, stop)]
    last = losses[np.arange(len(run.pairs)), stop]
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = np.where(outcome == 2, np.nan, -np.log(last / losses[:, 0]) / np.maximum(stop, 1))
        rate_bound = -np.log1p(-np.minimum(lr * tau1**2 * alpha0**2 / 2, 1.0))

    limits = _limits(X, run, f0 - np.asarray(y)[None], lr)
    return {
        "losses": losses,
        "outcome": outcome,
        "steps_to_eps": np.where(outcome == 0, stop, -1),
        "stop": stop,
        "lambda_min": eigenvalues[:, 0],
        "lambda_max": eigenvalues[:, -1],
        "alpha0": alpha0,
        "tau1": tau1,
        "lr": lr,
        "traces": np.trace(blocks, axis1=2, axis2=3),
        "kernel_change": change,
        "deviation": deviation,
        "bound_held": np.array(held),
        "rate": rate,
        "rate_bound": rate_bound,
        "descending": np.array(descending),
        **limits,
    }


def _limits(
    X: jax.Array, run: FateRun, residual0: np.ndarray, lr: np.ndarray
) -> dict[str, np.ndarray]:
    """``lambda_star``, ``lambda_limit`` and ``steps_limit`` per network (:func:`compute_cell`)."""
    star, limit, steps = [], [], []
    for b, (init, scaling) in enumerate(run.pairs):
        star.append(feature_floor(X, init, run.d_m))
        if scaling != "linear":
            limit.append(np.nan)
            steps.append(-2)
            continue
        kernel = limit_kernel(X, init, run.d_m)["total"]
        limit.append(np.linalg.eigvalsh(kernel)[0])
        with np.errstate(over="ignore", invalid="ignore"):  # γ λ_max(K∞) > 2: it diverges
            curve = linearized_descent(kernel, residual0[b], float(lr[b]), run.steps)
        hit = np.flatnonzero(curve <= run.eps * curve[0])
        steps.append(int(hit[0]) if hit.size else -1)
    return {
        "lambda_star": np.array(star),
        "lambda_limit": np.array(limit),
        "steps_limit": np.array(steps),
    }


def failed_assumptions(
    n_samples: int,
    d_m: int,
    d: int,
    scaling: str,
    alpha0: float,
    lambda_star: float,
) -> list[str]:
    """The assumptions of Wu et al. (2023)'s convergence theorem that fail in a cell, one line
    each (module docstring); empty where the theorem applies.

    Args:
        n_samples: ``N``.
        d_m: the width.
        d: the token dimension.
        scaling: ``"sqrt"`` or ``"linear"``.
        alpha0: ``σ_min(F_pre)`` at init.
        lambda_star: ``λ_min`` of the features' mean Gram per unit, ``Φ``.
    """
    out = []
    exponent = SUFFICIENT_EXPONENT[scaling]
    if d_m < n_samples**exponent:
        out.append(f"width: d_m = {d_m} < N^{exponent:g} = {n_samples**exponent:g}")
    if not proposition1_holds(alpha0, d_m, lambda_star):
        needed = PROPOSITION1_MARGIN * d_m * lambda_star
        out.append(
            f"features: α0² = {alpha0**2:.3g} < d_m λ*/4 = {needed:.3g} (Proposition 1's bound)"
        )
    if d < n_samples:
        out.append(f"tokens: d = {d} < N = {n_samples}, the mean tokens are dependent")
    return out


def judge(measured: dict[str, Any], failed: list[str]) -> tuple[str, str, bool, str | None, str]:
    """``(reduced, full, agree, reason, detail)`` of one network (module docstring).

    Args:
        measured: that network's scalars from :func:`compute_cell` (``outcome``, ``stop``,
            ``bound_held``, ``kernel_change``, ``descending``, ``rate``, ``rate_bound``).
        failed: :func:`failed_assumptions` of its cell.
    """
    outcome = OUTCOMES[int(measured["outcome"])]
    moved = float(measured["kernel_change"])
    numbers = (
        f"{outcome} at step {int(measured['stop'])}, kernel change {moved:.2g}, rate "
        f"{float(measured['rate']):.3g} (guaranteed {float(measured['rate_bound']):.3g})"
    )
    if failed:
        if outcome == "converged":
            return "no guarantee", outcome, False, "assumption", "; ".join(failed)
        return "no guarantee", outcome, True, None, numbers
    if outcome == "converged" and measured["bound_held"]:
        return "converges", outcome, True, None, numbers
    full = "converged under the guaranteed rate" if outcome == "converged" else outcome
    if outcome == "diverged" or not moved <= KERNEL_MOVED:
        reason = "off-reduction"
    elif outcome == "stalled" and measured["descending"]:
        reason = "slow-corner"
    else:
        reason = "unexplained"
    return "converges", full, False, reason, numbers


SCALARS = (
    "outcome",
    "steps_to_eps",
    "stop",
    "lambda_min",
    "lambda_max",
    "lambda_limit",
    "lambda_star",
    "steps_limit",
    "alpha0",
    "tau1",
    "lr",
    "kernel_change",
    "deviation",
    "bound_held",
    "rate",
    "rate_bound",
    "descending",
)
"""The per-network scalars of a cell, as :class:`NtkFateMap` holds them."""


@dataclass(frozen=True, eq=False)
class NtkFateMap(FateResult):
    """The shallow encoder's fate map (module docstring).

    Attributes:
        config: what was run.
        values: per name of :data:`SCALARS`, an array of shape ``(P, n, W, S)``: pairs
            (``config.pairs()``), sample counts, widths, draws; ``traces`` ``(P, n, W, S, 4)``
            (``tr K_b`` at init, :data:`BLOCK_ORDER`); ``losses`` ``(P, n, W, S, T + 1)``.
    """

    config: NtkFateConfig
    values: dict[str, np.ndarray]

    system = "shallow-ntk"
    axes = ("N", "d_m", "seed")

    def pairs(self) -> list[str]:
        """``"init/scaling"`` of the first axis."""
        return [f"{i}/{s}" for i, s in self.config.pairs()]

    def value(self, name: str, p: int, i: int, j: int, s: int) -> Any:
        """One network's ``name``."""
        return self.values[name][p, i, j, s]

    @cached_property
    def failed(self) -> np.ndarray:
        """Per network, the failed assumptions (:func:`failed_assumptions`), an object array of
        shape ``(P, n, W, S)``."""
        c = self.config
        out = np.empty(self.values["outcome"].shape, dtype=object)
        for (p, i, j, s), _ in np.ndenumerate(out):
            out[p, i, j, s] = failed_assumptions(
                c.n_samples[i],
                c.widths[j],
                c.d,
                c.pairs()[p][1],
                float(self.value("alpha0", p, i, j, s)),
                float(self.value("lambda_star", p, i, j, s)),
            )
        return out

    @cached_property
    def _cells(self) -> list[FateCell]:
        c = self.config
        cells = []
        for (p, i, j, s), failed in np.ndenumerate(self.failed):
            measured = {k: self.value(k, p, i, j, s) for k in SCALARS}
            reduced, full, agree, reason, detail = judge(measured, failed)
            coords = {"N": c.n_samples[i], "d_m": c.widths[j], "seed": s}
            cells.append(FateCell(coords, reduced, full, agree, self.pairs()[p], reason, detail))
        return cells

    def cells(self) -> list[FateCell]:
        return self._cells

    def csv_columns(self) -> dict[str, Sequence[Any]]:
        """Per comparison (a network) its measured :data:`SCALARS` (its outcome is ``full``)."""
        return {k: self.values[k].reshape(-1) for k in SCALARS if k != "outcome"}

    def agree_array(self) -> np.ndarray:
        """Whether each network's outcome agrees with the prediction, shape ``(P, n, W, S)``."""
        return np.array([c.agree for c in self._cells]).reshape(self.failed.shape)

    def fitted_samples(self) -> np.ndarray:
        """Whether each sample count enters the exponent's fit: ``N ≤ d`` (the theorem's
        ``tokens`` assumption; a larger ``N`` is outside the theorem it tests), shape ``(n,)``."""
        return np.array(self.config.n_samples) <= self.config.d

    @cached_property
    def exponents(self) -> dict[str, Exponent]:
        """Per ``"init/scaling"``, the fitted threshold ``d_m* = c N^α`` over the sample counts
        with ``N ≤ d`` (:meth:`fitted_samples`), with its interval over the draws and the width
        grid."""
        converged = self.values["outcome"] == OUTCOMES.index("converged")
        keep = self.fitted_samples()
        return {
            pair: bootstrap_exponent(
                np.array(self.config.n_samples)[keep],
                np.array(self.config.widths),
                converged[p][keep],
            )
            for p, pair in enumerate(self.pairs())
        }

    @cached_property
    def thresholds(self) -> np.ndarray:
        """``d_m*`` per ``"init/scaling"`` and sample count, every ``N`` (inside the fit or not),
        shape ``(P, n)`` (:func:`~.threshold.width_thresholds`)."""
        converged = self.values["outcome"] == OUTCOMES.index("converged")
        widths = np.array(self.config.widths)
        return np.array([width_thresholds(widths, c) for c in converged])

    def rates(self) -> dict[str, dict[str, float]]:
        """Per ``"init/scaling"``, at the largest ``N`` and ``d_m``, medians over the draws:
        the measured rate, the guaranteed one, the ``Q, K`` share of ``tr K_0``, ``λ_min(K_0)``,
        ``λ_min(K_0) / λ_min(K∞)``, the steps to ``ε`` of the run and of linearized GD with
        ``K∞``."""
        traces = self.values["traces"][:, -1, -1]
        share = (traces[..., 0] + traces[..., 1]) / traces.sum(axis=-1)
        v = {k: a[:, -1, -1] for k, a in self.values.items() if k in SCALARS}
        table = {
            "rate": v["rate"],
            "rate_bound": v["rate_bound"],
            "qk_share": share,
            "lambda_min": v["lambda_min"],
            "lambda_ratio": v["lambda_min"] / v["lambda_limit"],
            "steps": np.where(v["steps_to_eps"] >= 0, v["steps_to_eps"], np.nan),
            "steps_limit": np.where(v["steps_limit"] >= 0, v["steps_limit"], np.nan),
        }
        return {
            pair: {k: _median(a[p]) for k, a in table.items()}
            for p, pair in enumerate(self.pairs())
        }

    def arrays(self) -> dict[str, np.ndarray]:
        c = self.config
        exponents = self.exponents
        return {
            "N": np.array(c.n_samples),
            "d_m": np.array(c.widths),
            "pairs": np.array(self.pairs()),
            "outcome_names": np.array(OUTCOMES),
            "blocks": np.array(BLOCK_ORDER),
            **self.values,
            "agree": self.agree_array(),
            "theorem_applies": np.vectorize(lambda f: not f, otypes=[bool])(self.failed),
            "alpha_fit": np.array([e.alpha for e in exponents.values()]),
            "alpha_interval": np.array([[e.low, e.high] for e in exponents.values()]),
            "alpha_grid_range": np.array([[e.grid_low, e.grid_high] for e in exponents.values()]),
            "fitted_N": self.fitted_samples(),
            "thresholds": self.thresholds,
            "alpha_sufficient": np.array([SUFFICIENT_EXPONENT[s] for _, s in c.pairs()]),
        }

    def details(self) -> dict[str, Any]:
        return {
            "config": dataclasses.asdict(self.config),
            "sufficient_exponent": SUFFICIENT_EXPONENT,
            "exponents": {k: e.record() for k, e in self.exponents.items()},
            "fitted_N": [int(n) for n, f in zip(self.config.n_samples, self.fitted_samples()) if f],
            "agreement_over_draws": self.agreement_spread(),
            "rates": self.rates(),
            "counts": {
                pair: {
                    name: int(np.sum(self.values["outcome"][p] == k))
                    for k, name in enumerate(OUTCOMES)
                }
                for p, pair in enumerate(self.pairs())
            },
            "source": "Wu, Liu, Chrysos, Cevher, On the Convergence of Encoder-only Shallow "
            "Transformers (NeurIPS 2023)",
        }

    def agreement_spread(self) -> dict[str, dict[str, Any]] | None:
        """Per ``"init/scaling"``, the agreement of each draw (a data set and its networks) with
        its mean and spread (:func:`~gradflow.systems.fate_spread.agreement_over_draws`);
        ``None`` for one draw."""
        if self.config.seeds == 1:
            return None
        from ..fate_spread import agreement_over_draws

        return agreement_over_draws(self.cells(), "seed")

    def detail_lines(self) -> list[str]:
        from .fate_report import detail_lines

        return detail_lines(self)

    def figure(self) -> Any:
        from matplotlib.figure import Figure

        from .fate_figure import SIZE, draw

        fig = Figure(figsize=SIZE, layout="constrained")
        draw(self, fig)
        return fig


def _median(values: np.ndarray) -> float:
    finite = np.asarray(values, float)[np.isfinite(values)]
    return float(np.median(finite)) if finite.size else float("nan")


def fate_map(
    config: NtkFateConfig, checkpoint: Path | str | None = None, **cell_options: Any
) -> NtkFateMap:
    """Run the fate map (module docstring): every cell of ``config`` through
    :func:`gradflow.run_cells` (``cell_options`` go to it).

    Raises:
        GradflowError: a checkpoint folder of another map.
    """
    runs = cell_runs(config)
    results = run_cells(
        compute_cell,
        runs,
        names=[r.name for r in runs],
        checkpoint=checkpoint,
        manifest={"system": "shallow-ntk", **dataclasses.asdict(config)},
        desc="shallow-ntk fate",
        work=[config.cell_seconds(r.n_samples, r.d_m) for r in runs],
        **cell_options,
    )
    shape = (len(config.n_samples), len(config.widths), config.seeds)
    values = {}
    for name in (*SCALARS, "traces", "losses"):
        stacked = np.stack([r[name] for r in results])  # (cells, P, ...)
        stacked = stacked.reshape(shape + stacked.shape[1:])
        values[name] = np.moveaxis(stacked, 3, 0)
    return NtkFateMap(config=config, values=values)
