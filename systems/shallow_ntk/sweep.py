"""Width sweeps of the shallow encoder's NTK: λ_min(K_0), α_0, kernel movement, GD vs kernel flow.

For each width ``d_m``, initialization and scaling, one run (:func:`run_width`):

1. initialize the network, compute ``K_0`` (:func:`gradflow.systems.shallow_ntk.ntk.empirical_ntk`),
   ``λ_min(K_0)``, ``λ_max(K_0)``, ``F_pre`` and ``α_0 = σ_min(F_pre)``;
2. train it by full-batch GD with step ``γ = η / λ_max(K_0)`` for ``T`` steps, then compute
   ``K_T`` and the relative kernel change ``‖K_T - K_0‖_F / ‖K_0‖_F``;
3. compare with linearized GD ``r_{k+1} = (I - γ K_0) r_k`` (the kernel frozen, same step),
   integrate the linearized flow ``df/dt = -K_0 (f - y)`` at ``t = γ k`` and, under
   ``τ0 = d_m^{-1}``, also the flow of the limiting kernel ``K∞`` and the error ``‖K_0 - K∞‖_F /
   ‖K∞‖_F`` (:mod:`gradflow.systems.shallow_ntk.limit`);
4. check the loss bound ``ℓ_k ≤ (1 - γ τ1² α_0² / 2)^k ℓ_0`` of Wu et al. (2023) at every step.

:func:`~gradflow.systems.shallow_ntk.threshold.fit_slope` fits the log-log slope of a quantity against ``d_m`` (geometric mean over seeds).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import jax
import jax.numpy as jnp
import numpy as np

from gradflow import format_table, progress_bar

from .config import (
    SweepConfig,
    name_list,
    positive_int,
    seeds_field,
    size_field,
    steps_field,
    width_list,
    widths_field,
)
from .dynamics import bound_holds, linearized_descent, linearized_flow, loss_bound, train_gd
from .encoder import init_encoder, predict, synthetic_data
from .limit import limit_kernel, mean_tokens
from .ntk import (
    alpha,
    empirical_ntk,
    feature_floor,
    feature_matrix,
    proposition1_holds,
    softmax_deviation,
)
from .threshold import fit_slope

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = [
    "AssumptionWarning",
    "QUANTITIES",
    "Sweep",
    "SweepConfig",
    "WidthRun",
    "assumption_warnings",
    "name_list",
    "positive_int",
    "run_width",
    "seeds_field",
    "size_field",
    "steps_field",
    "sweep_data",
    "width_list",
    "width_sweep",
    "widths_field",
]

QUANTITIES = ("lambda_min", "alpha0", "kernel_change", "weight_change", "limit_error")
"""The per-run quantities whose log-log slopes against ``d_m`` are fitted."""


class AssumptionWarning(UserWarning):
    """An assumption of a statement of Wu et al. (2023) fails for the requested sizes."""


@dataclass(frozen=True)
class WidthRun:
    """One network at one width: its kernel at init and after GD, and the loss curves.

    Attributes:
        init, scaling, d_m, seed: what was run.
        lr: the GD step ``γ``.
        tau1: the output multiplier ``τ1``.
        lambda_min, lambda_max: extreme eigenvalues of ``K_0``.
        alpha0: ``σ_min(F_pre)`` at init.
        lambda_star: ``λ_min`` of the features' mean Gram per unit
            (:func:`~gradflow.systems.shallow_ntk.ntk.feature_floor`), the scale of ``α_0² / d_m`` that
            Proposition 1's lower bound on ``α_0`` rests on.
        kernel_change: ``‖K_T - K_0‖_F / ‖K_0‖_F``.
        weight_change: ``‖θ_T - θ_0‖ / ‖θ_0‖`` over every trained weight (the multipliers
            ``τ0, τ1, τ_H`` are not trained).
        softmax_deviation: ``max |A - 1/d_s|`` at init.
        limit_error: ``‖K_0 - K∞‖_F / ‖K∞‖_F`` under ``τ0 = d_m^{-1}``, else NaN.
        losses: GD loss ``ℓ_k``, ``k = 0 … T``.
        linearized: loss of the flow ``df/dt = -K_0 (f - y)`` at ``t = γ k``.
        linearized_gd: loss of linearized GD ``r_{k+1} = (I - γ K_0) r_k``, the same discrete
            map as GD with the kernel frozen (isolates the nonlinearity from the time step).
        limit_flow: loss of the flow with ``K∞`` at ``t = γ k`` (NaN without a limit).
        limit_gd: loss of GD with the kernel fixed at ``K∞``, ``r_{k+1} = (I - γ K∞) r_k``, from
            the network's ``f_0`` (NaN without a limit): the reduced model's prediction of GD.
        bound: ``(1 - γ τ1² α_0² / 2)^k ℓ_0``.
    """

    init: str
    scaling: str
    d_m: int
    seed: int
    lr: float
    tau1: float
    lambda_min: float
    lambda_max: float
    alpha0: float
    lambda_star: float
    kernel_change: float
    weight_change: float
    softmax_deviation: float
    limit_error: float
    losses: np.ndarray = field(repr=False)
    linearized: np.ndarray = field(repr=False)
    linearized_gd: np.ndarray = field(repr=False)
    limit_flow: np.ndarray = field(repr=False)
    limit_gd: np.ndarray = field(repr=False)
    bound: np.ndarray = field(repr=False)

    @property
    def bound_holds(self) -> bool:
        """Whether ``ℓ_k`` stays within the bound at every step (up to rounding, 1e-9 relative)."""
        return bound_holds(self.losses, self.bound)

    @property
    def proposition1(self) -> bool:
        """Whether ``α_0² ≥ d_m λ* / 4`` (:func:`~gradflow.systems.shallow_ntk.ntk.proposition1_holds`)."""
        return proposition1_holds(self.alpha0, self.d_m, self.lambda_star)

    @property
    def linearization_gap(self) -> float:
        """``max_k |ℓ_k - ℓ_lin(γ k)| / ℓ_0``: how far GD is from the linearized flow (the
        kernel's movement plus the time step's discretization error)."""
        return float(np.max(np.abs(self.losses - self.linearized)) / self.losses[0])

    @property
    def nonlinearity_gap(self) -> float:
        """``max_k |ℓ_k - ℓ_linGD(k)| / ℓ_0``: how far GD is from linearized GD (the kernel's
        movement alone)."""
        return float(np.max(np.abs(self.losses - self.linearized_gd)) / self.losses[0])

    @property
    def limit_gap(self) -> float:
        """``max_k |ℓ_k - ℓ_K∞GD(k)| / ℓ_0``: how far GD is from GD with the limiting kernel
        (NaN without a limit)."""
        return float(np.max(np.abs(self.losses - self.limit_gd)) / self.losses[0])

    def scalars(self) -> dict[str, float | int | str | bool]:
        """The scalar results, for tables and JSON."""
        return {
            "init": self.init,
            "scaling": self.scaling,
            "d_m": self.d_m,
            "seed": self.seed,
            "lr": self.lr,
            "tau1": self.tau1,
            "lambda_min": self.lambda_min,
            "lambda_max": self.lambda_max,
            "alpha0": self.alpha0,
            "tau1sq_alpha0sq": self.tau1**2 * self.alpha0**2,
            "lambda_star": self.lambda_star,
            "proposition1": self.proposition1,
            "kernel_change": self.kernel_change,
            "weight_change": self.weight_change,
            "softmax_deviation": self.softmax_deviation,
            "limit_error": self.limit_error,
            "loss0": float(self.losses[0]),
            "final_loss": float(self.losses[-1]),
            "linearized_final_loss": float(self.linearized[-1]),
            "linearization_gap": self.linearization_gap,
            "nonlinearity_gap": self.nonlinearity_gap,
            "limit_gap": self.limit_gap,
            "bound_holds": self.bound_holds,
        }


def weight_change(before: Any, after: Any) -> float:
    """``‖θ_after - θ_before‖ / ‖θ_before‖`` over the trained weights of two encoders (the
    multipliers read through ``stop_gradient`` are equal in both and drop out of the difference,
    and are left out of the norm)."""
    trained = [
        (np.asarray(a), np.asarray(b))
        for a, b in zip(jax.tree.leaves(before), jax.tree.leaves(after))
        if np.ndim(a) > 0
    ]
    moved = np.sqrt(sum(np.sum((b - a) ** 2) for a, b in trained))
    return float(moved / np.sqrt(sum(np.sum(a**2) for a, _ in trained)))


def run_width(
    X: jax.Array,
    y: jax.Array,
    d_m: int,
    *,
    init: str,
    scaling: str,
    steps: int,
    eta: float = 0.5,
    hidden: bool = False,
    seed: int = 0,
) -> WidthRun:
    """One run of the sweep (module docstring) at width ``d_m``.

    Args:
        X: inputs, shape ``(N, d_s, d)``.
        y: targets, shape ``(N,)``.
        d_m: width.
        init: initialization.
        scaling: score scaling.
        steps: GD steps ``T``.
        eta: ``γ = η / λ_max(K_0)``.
        hidden: include ``W_H``.
        seed: network seed.

    Raises:
        GradflowError: bad sizes, init or scaling.
    """
    X, y = jnp.asarray(X), jnp.asarray(y)
    model = init_encoder(
        jax.random.PRNGKey(seed), int(X.shape[-1]), d_m, init=init, scaling=scaling, hidden=hidden
    )
    K0 = empirical_ntk(model, X)["total"]
    eigenvalues = np.linalg.eigvalsh(K0)
    alpha0 = alpha(feature_matrix(model, X))
    tau1 = float(model.tau1)
    lr = eta / float(eigenvalues[-1])
    descent = train_gd(model, X, y, lr=lr, steps=steps)
    KT = empirical_ntk(descent.model, X)["total"]
    ts = lr * np.arange(steps + 1)
    f0 = np.asarray(predict(model, X))
    _, linearized = linearized_flow(K0, f0, np.asarray(y), ts)
    if scaling == "linear":
        K_inf = limit_kernel(X, init, d_m, hidden=hidden)["total"]
        limit_error = float(np.linalg.norm(K0 - K_inf) / np.linalg.norm(K_inf))
        _, limit_flow = linearized_flow(K_inf, f0, np.asarray(y), ts)
        limit_gd = linearized_descent(K_inf, f0 - np.asarray(y), lr, steps)
    else:
        limit_error, limit_flow = float("nan"), np.full(steps + 1, np.nan)
        limit_gd = limit_flow
    return WidthRun(
        init=init,
        scaling=scaling,
        d_m=d_m,
        seed=seed,
        lr=lr,
        tau1=tau1,
        lambda_min=float(eigenvalues[0]),
        lambda_max=float(eigenvalues[-1]),
        alpha0=alpha0,
        lambda_star=feature_floor(X, init, d_m),
        kernel_change=float(np.linalg.norm(KT - K0) / np.linalg.norm(K0)),
        weight_change=weight_change(model, descent.model),
        softmax_deviation=softmax_deviation(model, X),
        limit_error=limit_error,
        losses=descent.losses,
        linearized=linearized,
        limit_flow=limit_flow,
        limit_gd=limit_gd,
        linearized_gd=linearized_descent(K0, f0 - np.asarray(y), lr, steps),
        bound=loss_bound(float(descent.losses[0]), lr, tau1, alpha0, steps),
    )


def assumption_warnings(config: SweepConfig, X: np.ndarray) -> list[str]:
    """The assumptions of Wu et al. (2023)'s statements that fail for this sweep, one line each.

    - ``d < N``: the ``N`` mean tokens cannot be linearly independent, which the paper's
      positive lower bound on ``λ_min`` of the limiting kernel assumes (``λ_min`` may still be
      positive: the two-layer ReLU NTK is positive definite for non-parallel inputs).
    - ``d ≥ N`` but the mean tokens of the data are linearly dependent.
    - a width ``d_m < N``: ``F_pre`` has rank ``≤ d_m < N``, so ``α_0 = 0`` and the loss bound
      ``(1 - γ τ1² α_0² / 2)^k`` is vacuous at that width.
    """
    n, d = config.n_samples, config.d
    out = []
    if d < n:
        out.append(
            f"d = {d} < N = {n}: the {n} mean tokens cannot be linearly independent (assumed by "
            "the paper's lower bound on λ_min of the limiting kernel, which then does not apply)"
        )
    elif np.linalg.matrix_rank(np.asarray(mean_tokens(X))) < n:
        out.append(
            f"the {n} mean tokens are linearly dependent (the paper's bound on λ_min assumes independence)"
        )
    narrow = [w for w in config.widths if w < n]
    if narrow:
        out.append(
            f"d_m = {', '.join(map(str, narrow))} < N = {n}: F_pre has rank < N, so α_0 = 0 and the "
            "loss bound is vacuous at that width"
        )
    return out


@dataclass(frozen=True)
class Sweep:
    """All runs of a width sweep.

    Attributes:
        config: what was run.
        runs: one :class:`WidthRun` per (init, scaling, width, seed).
    """

    config: SweepConfig
    runs: tuple[WidthRun, ...]

    def select(self, init: str, scaling: str) -> list[WidthRun]:
        """The runs of one (init, scaling), ordered by width then seed."""
        return sorted(
            (r for r in self.runs if r.init == init and r.scaling == scaling),
            key=lambda r: (r.d_m, r.seed),
        )

    def slopes(self) -> dict[tuple[str, str], dict[str, float]]:
        """Fitted log-log slopes against ``d_m`` of :data:`QUANTITIES`, per (init, scaling)."""
        out = {}
        for init in self.config.inits:
            for scaling in self.config.scalings:
                runs = self.select(init, scaling)
                widths = np.array([r.d_m for r in runs])
                out[(init, scaling)] = {
                    q: fit_slope(widths, np.array([getattr(r, q) for r in runs]))
                    for q in QUANTITIES
                }
        return out

    def proposition1_failures(self) -> list[str]:
        """One line per (init, scaling) with runs where Proposition 1's lower bound on ``α_0``
        does not hold (``α_0² < d_m λ* / 4``), naming their widths."""
        out = []
        for init in self.config.inits:
            for scaling in self.config.scalings:
                widths = sorted({r.d_m for r in self.select(init, scaling) if not r.proposition1})
                if widths:
                    out.append(
                        f"{init}/{scaling}: α_0² < d_m λ*/4 at d_m = {', '.join(map(str, widths))}: "
                        "F_pre F_preᵀ has not concentrated, so Proposition 1's lower bound on "
                        "α_0 (and the theorem's rate through it) does not hold there"
                    )
        return out

    def arrays(self) -> dict[str, np.ndarray]:
        """The sweep as arrays, one row per run: the scalars, loss curves ``(runs, T + 1)``."""
        out: dict[str, np.ndarray] = {
            key: np.array([r.scalars()[key] for r in self.runs]) for key in self.runs[0].scalars()
        }
        for curve in ("losses", "linearized", "linearized_gd", "limit_flow", "limit_gd", "bound"):
            out[curve] = np.stack([getattr(r, curve) for r in self.runs])
        out["step"] = np.arange(self.config.steps + 1)
        return out

    def metadata(self) -> dict[str, Any]:
        """The configuration, every run's scalars, the slopes by ``"init/scaling"``."""
        return {
            "config": vars(self.config),
            "runs": [r.scalars() for r in self.runs],
            "slopes": {f"{i}/{s}": v for (i, s), v in self.slopes().items()},
        }

    def figure(self) -> Figure:
        """A new matplotlib figure of the sweep (:func:`~gradflow.systems.shallow_ntk.draw.draw_sweep`),
        panel (d) for the first init and scaling; the ``shallow-ntk`` figure draws the same
        panels over every init and scaling."""
        from matplotlib.figure import Figure

        from .draw import SIZE, draw_sweep

        fig = Figure(figsize=SIZE, layout="constrained")
        draw_sweep(self, fig, self.config.inits[0], self.config.scalings[0])
        return fig

    def text(self) -> str:
        """A heading, one table row per run, and the fitted log-log slopes."""
        c = self.config
        heading = (
            f"NTK width sweep ({c.data} data): N = {c.n_samples}, d_s = {c.d_s}, d = {c.d}, "
            f"T = {c.steps} GD steps, "
            f"γ = {c.eta:g} / λ_max(K0){', hidden layer W_H' if c.hidden else ''}"
        )
        seeds = c.seeds > 1
        header = [
            "init",
            "scaling",
            "d_m",
            *(["seed"] if seeds else []),
            "λ_min(K0)",
            "α0",
            "τ1²α0²",
            "‖K_T−K0‖/‖K0‖",
            "‖θ_T−θ0‖/‖θ0‖",
            "‖K0−K∞‖/‖K∞‖",
            "ℓ0",
            "ℓ_T",
            "ℓ_lin(T)",
            "bound",
        ]
        rows = []
        for r in self.runs:
            s = r.scalars()
            rows.append(
                [
                    r.init,
                    r.scaling,
                    r.d_m,
                    *([r.seed] if seeds else []),
                    *(
                        _g(v)
                        for v in (
                            r.lambda_min,
                            r.alpha0,
                            s["tau1sq_alpha0sq"],
                            r.kernel_change,
                            r.weight_change,
                            r.limit_error,
                            s["loss0"],
                            s["final_loss"],
                            s["linearized_final_loss"],
                        )
                    ),
                    "holds" if r.bound_holds else "VIOLATED",
                ]
            )
        slope_rows = [
            [init, scaling, *(_g(v[q]) for q in QUANTITIES)]
            for (init, scaling), v in self.slopes().items()
        ]
        slopes = format_table(
            ["init", "scaling", "λ_min", "α0", "kernel change", "weight change", "K∞ error"],
            slope_rows,
        )
        return f"{heading}\n{format_table(header, rows)}\n\nlog-log slopes against d_m:\n{slopes}"


def _g(x: float) -> str:
    """A number in 3 significant digits, ``—`` if not finite."""
    return "—" if not math.isfinite(x) else f"{x:.3g}"


def sweep_data(config: SweepConfig) -> tuple[jax.Array, jax.Array]:
    """The inputs ``(N, d_s, d)`` and targets ``(N,)`` a sweep trains on: synthetic, or the
    digit images (``config.data``).

    Raises:
        GradflowError: the digits without scikit-learn installed.
    """
    if config.data == "digits":
        from .digits import digits_data

        X, y = digits_data(config.n_samples, config.d_s, config.d, config.data_seed)
        return jnp.asarray(X), jnp.asarray(y)
    return synthetic_data(
        jax.random.PRNGKey(config.data_seed), config.n_samples, config.d_s, config.d
    )


def width_sweep(config: SweepConfig, *, progress: bool | None = None) -> Sweep:
    """Run the sweep: every (init, scaling, width, seed) of ``config`` on one synthetic data set.

    Warns (:class:`AssumptionWarning`) once per failed assumption (:func:`assumption_warnings`).

    Raises:
        GradflowError: from :class:`SweepConfig` or the runs.
    """
    X, y = sweep_data(config)
    for message in assumption_warnings(config, np.asarray(X)):
        warnings.warn(message, AssumptionWarning, stacklevel=2)
    jobs = [
        (init, scaling, w, s)
        for init in config.inits
        for scaling in config.scalings
        for w in config.widths
        for s in range(config.seeds)
    ]
    runs = []
    with progress_bar(total=len(jobs), unit="network", enabled=progress, desc="width sweep") as bar:
        for init, scaling, w, s in jobs:
            bar.set_postfix_str(f"{init}/{scaling} d_m={w}")
            runs.append(
                run_width(
                    X,
                    y,
                    w,
                    init=init,
                    scaling=scaling,
                    steps=config.steps,
                    eta=config.eta,
                    hidden=config.hidden,
                    seed=s,
                )
            )
            bar.update(1)
    return Sweep(config=config, runs=tuple(runs))
