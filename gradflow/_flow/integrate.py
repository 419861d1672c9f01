"""One trajectory of a gradient flow ``dθ/dt = -∇L(θ, args)``, integrated with gradflow's own
Rosenbrock method (``Rodas4``, the default: :mod:`gradflow._flow.rosenbrock`) or with diffrax
(every other solver).

A trajectory stops at a steady state, on divergence (``‖θ‖₂ > divergence_radius`` or a
non-finite value), when its loss falls below an optional decision level, or when its budget
(``t_max`` flow time, ``max_steps`` solver steps) runs out.  Every stop is labelled by a
:class:`Outcome`.

A steady state is a point with ``‖∇L‖₂ ≤ gtol`` from which the flow does not escape
(:func:`escaping`): beside a saddle, where the gradient is small, the flow still leaves along an
unstable direction of the Hessian unless the gradient has no component along it.  The start
``(10⁻⁸, 10⁻⁸)`` of ``(3 − ab)²/2`` has ``‖∇L‖ ≈ 4·10⁻⁸`` along the unstable direction
``(1, 1)`` of the saddle at the origin, and the flow leaves it on Saxe et al.'s sigmoidal curve
(*Exact solutions to the nonlinear dynamics of learning in deep linear networks*, ICLR 2014).
"""

from __future__ import annotations

import functools
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree
from jax.scipy.linalg import solve_triangular

from .._compiled.store import stored_for
from .._evidence import Evidence
from .._landscape.base import GradientField, padded_call
from .._outcome import Outcome
from .._output.text import TABLE_WIDTH, format_point
from .options import FlowOptions

if TYPE_CHECKING:
    import diffrax

    from .._critical.attractors import Attractor

__all__ = [
    "Trajectory",
    "diverged",
    "escaping",
    "hermite",
    "integrate",
    "metric_frame",
    "own_path_program",
    "pytree_field",
    "solve",
    "status_code",
    "status_of",
]


@dataclass(frozen=True)
class Trajectory:
    """One integrated trajectory.

    Attributes:
        ts: flow times of the recorded points, shape ``(n,)``, starting at 0.
        thetas: the path, shape ``(n, dim)``.
        losses: ``L`` along the path, shape ``(n,)``.
        status: why it stopped: ``CONVERGED`` (at a critical point), ``GLOBAL_MIN`` (below the
            decision level), ``DIVERGED``, ``NOT_CONVERGED`` or ``NON_SMOOTH``.
        reached: how it ended: the outcome of its critical point's kind (``SADDLE``, …) for a
            converged trajectory or one a kink's sublevel set decides, else its status;
            ``None`` when not classified.
        attractor: the attractor reached (:class:`gradflow.Attractor`: its id, kind, set and
            point), or ``None`` (not converged, or no critical sets given).
        kink: for status ``NON_SMOOTH``, the non-smooth term whose kink holds the endpoint.
        param_names: the names of the coordinates of ``thetas``.
        unit: the unit of the losses (``"nats"``), or ``""``.
        plane: the two parameters its picture draws the path in, horizontal axis first (the
            landscape's plane, the one its portraits use: ``(w, e)`` for the canonical model,
            whose points are ``(e, w)``); ``None``: the first two.
        evidence: the evidence of ``reached`` (:class:`gradflow.Evidence`: ``proven`` or
            ``numerical``, with the reason), or ``None`` when not judged (a field or a pytree
            loss).
        title: what flowed, for the picture's title (``canonical, p = 0.5, q = 0.8, induced
            metric``), or empty.
    """

    ts: np.ndarray
    thetas: np.ndarray
    losses: np.ndarray
    status: Outcome
    reached: Outcome | None = None
    attractor: Attractor | None = None
    kink: str | None = None
    param_names: tuple[str, ...] = ()
    unit: str = ""
    plane: tuple[str, str] | None = None
    evidence: Evidence | None = None
    title: str = ""

    @property
    def endpoint(self) -> np.ndarray:
        """Where the trajectory stopped, shape ``(dim,)``."""
        return self.thetas[-1]

    @property
    def time(self) -> float:
        """Flow time at which it stopped."""
        return float(self.ts[-1])

    @property
    def converged(self) -> bool:
        """Whether it stopped at a steady state beside a critical point (a small gradient beside
        none, ``reached`` ``NOT_CONVERGED``, is no steady state)."""
        return self.status is Outcome.CONVERGED and self.reached is not Outcome.NOT_CONVERGED

    def __repr__(self) -> str:
        names = f" ({', '.join(self.param_names)})" if self.param_names else ""
        return (
            f"Trajectory{names} from {format_point(self.thetas[0])} to "
            f"{format_point(self.endpoint)}: {self.status}\n  at t = {self.time:.4g} after "
            f"{len(self.ts) - 1} recorded steps, L = {self.losses[-1]:.6g}; "
            f"reached {self._reached_text(where=False)}"
            + ("" if self.evidence is None else f" ({self.evidence.word})")
        )

    def _reached_text(self, where: bool = True) -> str:
        reached = str(self.status if self.reached is None else self.reached)
        if self.attractor is not None and where:
            a = self.attractor
            at = f"at {format_point(a.point)}" if a.dimension == 0 else f"on {a.described}"
            reached += f": attractor #{a.id} {at}"
        elif self.attractor is not None:
            reached += f" (attractor #{self.attractor.id})"
        if self.kink:
            reached += f" on the kink of {self.kink}"
        return reached

    def arrays(self) -> dict[str, np.ndarray]:
        """``ts`` (shape ``(n,)``), ``thetas`` (shape ``(n, dim)``) and ``losses`` (``(n,)``)."""
        return {"ts": self.ts, "thetas": self.thetas, "losses": self.losses}

    def metadata(self) -> dict[str, Any]:
        """JSON-ready: ``{"parameters", "init", "endpoint", "loss", "time", "status",
        "converged", "reached", "attractor", "kink", "evidence"}`` (``attractor`` as
        :meth:`gradflow.Attractor.metadata`, ``evidence`` as :meth:`gradflow.Evidence.metadata`,
        or ``None``)."""
        return {
            "parameters": list(self.param_names),
            "init": self.thetas[0].tolist(),
            "endpoint": self.endpoint.tolist(),
            "loss": float(self.losses[-1]),
            "time": self.time,
            "status": str(self.status),
            "converged": self.converged,
            "reached": None if self.reached is None else str(self.reached),
            "attractor": None if self.attractor is None else self.attractor.metadata(),
            "kink": self.kink,
            "evidence": None if self.evidence is None else self.evidence.metadata(),
        }

    def text(self) -> str:
        """The endpoint, its loss, the flow time and what was reached, one line each."""
        names = self.param_names or tuple(f"θ{i}" for i in range(len(self.endpoint)))
        point = ", ".join(f"{n} = {v:.6g}" for n, v in zip(names, self.endpoint))
        return "\n".join(
            [
                f"  endpoint  ({point})",
                f"  loss      {self.losses[-1]:.6g}{' ' + self.unit if self.unit else ''}",
                f"  time      {self.time:.4g} (flow time units), {len(self.ts) - 1} solver steps",
                f"  reached   {self._reached_text()}",
                *(
                    textwrap.wrap(
                        f"  evidence  {self.evidence}", TABLE_WIDTH, subsequent_indent=" " * 12
                    )
                    if self.evidence is not None
                    else []
                ),
            ]
        )

    def figure(self) -> Any:
        """A new matplotlib figure: the path in the first two coordinates, and ``L(t)``."""
        from .._output.draw import trajectory_figure

        return trajectory_figure(self)

    def _repr_png_(self) -> bytes:
        from .._output.draw import figure_png

        return figure_png(self.figure())


def diverged(y: jax.Array, options: FlowOptions) -> jax.Array:
    """Whether states ``y`` of shape ``(..., dim)`` are non-finite or beyond the radius."""
    return ~jnp.all(jnp.isfinite(y), axis=-1) | (
        jnp.linalg.norm(y, axis=-1) > options.divergence_radius
    )


ESCAPE_SHARE = 1e-3
"""A small gradient is no steady state where more than this share of it (Euclidean norm) lies
along unstable directions of the flow's Jacobian: the flow leaves along them.  A start on a
saddle's stable manifold has none (exactly, on the invariant line of a symmetric loss); a start
beside the saddle has a share of order one; a trajectory arriving along the stable manifold
has a share that grows as it nears the saddle, and one within ``ESCAPE_SHARE·gtol`` of the
manifold (in units of the loss's length) when it meets ``gtol`` is taken to lie on it."""
ESCAPE_FOLDS = 36.0
"""A direction is unstable where the flow's Jacobian has an eigenvalue ``λ`` with
``λ·t_max < -ESCAPE_FOLDS``: a component along it grows by ``e^36 ≈ 2^52`` within the flow-time
budget, so even one at rounding grows to the size of the state.  A slower direction leaves no
mark within the budget: a zero eigenvalue perturbed by rounding, or by a point's offset from a
line of critical points (beside the canonical model's degenerate saddle ``(0, -1/√2)`` on the
line of minima ``e = 0``, ``λ ≈ -2·10⁻⁸`` against a largest ``2·10⁻³``)."""
ESCAPE_FULL_DIM = 16
"""Up to this many parameters the escape test diagonalizes the Jacobian (``dim`` forward-mode
derivatives of the field); above, it uses the Rayleigh quotient ``Fᵀ(∂F)F/‖F‖²`` alone (one
Jacobian–vector product): a negative quotient means an unstable direction carries the field,
though a positive one may hide a small unstable share."""


def escape_test(xp: Any, jacobian: Any, field: Any, horizon: float) -> Any:
    """Whether the flow ``dθ/dt = -F`` escapes from points with Jacobian ``∂F`` (shape
    ``(..., dim, dim)``) and field ``F`` (shape ``(..., dim)``) within the flow time
    ``horizon``, computed with the array module ``xp`` (``numpy`` or ``jax.numpy``).

    Escaping means: the share of ``F`` along eigenvectors of ``(∂F + ∂Fᵀ)/2`` whose eigenvalues
    have ``λ·horizon < -ESCAPE_FOLDS`` (:data:`ESCAPE_FOLDS`) exceeds :data:`ESCAPE_SHARE`.  For
    the gradient flow ``∂F`` is the Hessian and this is exact: near a critical point
    ``F ≈ H(θ − θ*)``, and the component of ``θ − θ*`` along an eigenvector with ``λ < 0`` grows
    as ``e^{|λ|t}``.  In a metric (``F = G⁻¹∇L``) ``∂F ≈ G⁻¹H`` is not symmetric, and its
    symmetric part is no stand-in (beside a line of minima, where ``H ≥ 0`` has rank one, it is
    indefinite): :func:`escaping` passes the Jacobian and field in coordinates where ``G`` is
    the identity (:func:`metric_frame`).  Scale-free: ``c·L`` has ``c`` times
    the eigenvalues and the same flow in ``1/c`` times the time.  A non-finite Jacobian shows
    no unstable direction.  Returns a boolean array of shape ``(...)``.
    """
    sym = 0.5 * (jacobian + xp.swapaxes(jacobian, -1, -2))
    finite = xp.all(xp.isfinite(sym), axis=(-2, -1))
    lam, vec = xp.linalg.eigh(xp.where(finite[..., None, None], sym, 0.0))
    along = xp.einsum("...ji,...j->...i", vec, field) * (lam * horizon < -ESCAPE_FOLDS)
    norm = xp.sqrt(xp.sum(field * field, axis=-1))
    return finite & (xp.sqrt(xp.sum(along * along, axis=-1)) > ESCAPE_SHARE * norm)


def metric_frame(metric: jax.Array, jacobian: jax.Array, field: jax.Array) -> tuple[Any, Any]:
    """The Jacobian ``∂F`` (shape ``(dim, dim)``) and field ``F`` (shape ``(dim,)``) of a flow in
    the metric ``G = CCᵀ`` (Cholesky) in the coordinates ``θ̃ = Cᵀθ``, where ``G`` is the
    identity: ``Cᵀ(∂F)C⁻ᵀ`` and ``CᵀF``.  At a critical point ``∂F = G⁻¹H``, and
    ``Cᵀ G⁻¹H C⁻ᵀ = C⁻¹HC⁻ᵀ`` is symmetric, with the eigenvalues of ``G⁻¹H`` (the Hessian's
    signs, by Sylvester's law of inertia)."""
    chol = jnp.linalg.cholesky(metric)
    left = chol.T @ jacobian
    frame = solve_triangular(chol, left.T, lower=True).T
    return frame, chol.T @ field


def escaping(field: GradientField, y: jax.Array, args: Any, horizon: float) -> jax.Array:
    """Whether the flow of ``field`` escapes from the state ``y`` of shape ``(dim,)`` within the
    flow time ``horizon`` (:func:`escape_test`, in a metric in its frame: :func:`metric_frame`;
    above :data:`ESCAPE_FULL_DIM` parameters the Rayleigh quotient ``ρ = Fᵀ(∂F)F/‖F‖²`` with
    ``ρ·horizon < -ESCAPE_FOLDS`` and ``Fᵀ(∂F)F < -ESCAPE_SHARE·‖F‖·‖(∂F)F‖``, in a metric
    with ``G``'s inner product)."""
    f = field.grad(y, args)
    metric = None if field.metric is None else field.metric(y, args).astype(f.dtype)
    if y.shape[-1] > ESCAPE_FULL_DIM:
        _, jf = jax.jvp(lambda t: field.grad(t, args), (y,), (f,))
        gram = f if metric is None else metric @ f
        quotient = jnp.dot(gram, jf)
        size = jnp.sqrt(jnp.dot(gram, f))
        push = jnp.linalg.norm(jf) if metric is None else jnp.sqrt(jnp.dot(metric @ jf, jf))
        fast = quotient * horizon < -ESCAPE_FOLDS * size**2
        return fast & (quotient < -ESCAPE_SHARE * size * push)
    jacobian = jax.jacfwd(field.grad)(y, args)
    if metric is not None:
        jacobian, f = metric_frame(metric, jacobian, f)
    return escape_test(jnp, jacobian, f, horizon)


def status_code(
    field: GradientField,
    options: FlowOptions,
    y: jax.Array,
    args: Any,
    level: jax.Array,
    gtol: jax.Array | None = None,
    strict: bool = False,
    horizon: jax.Array | None = None,
) -> jax.Array:
    """Outcome code of a final state ``y`` of shape ``(dim,)``; ``gtol`` and ``horizon`` (the
    escape test's flow time) override the options' ``gtol`` and ``t_max`` (traced values, so
    that programs differing only in them compile once).

    The first condition met, in the order diverged, converged, decided, gives the code; a state
    that meets none can only have stopped because its budget ran out.  ``strict`` adds the
    escape test to convergence (:func:`escaping` within ``options.t_max``, evaluated only where
    ``‖∇L‖ ≤ gtol``; under
    ``vmap`` at every member): without it a small gradient is a steady state, and the batched
    integrator checks its converged members afterwards (``audit`` of
    :func:`~gradflow._flow.batched.integrate_batch`).  Written as nested ``where``, not
    ``jnp.select``: vectorized over a batch, ``select``'s argmax over the stacked conditions
    compiles to a reduction XLA does not vectorize on a CPU, which made a round of the batched
    integrator (16,384 members, 8 Tsit5 steps) 2.6 times slower.
    """
    loss, grad = field.loss(y, args), field.grad(y, args)
    return status_of(field, options, y, args, level, loss, grad, gtol, strict, horizon)


def status_of(
    field: GradientField,
    options: FlowOptions,
    y: jax.Array,
    args: Any,
    level: jax.Array,
    loss: jax.Array,
    grad: jax.Array,
    gtol: jax.Array | None = None,
    strict: bool = False,
    horizon: jax.Array | None = None,
) -> jax.Array:
    """:func:`status_code` of ``y`` from its ``loss`` and ``grad`` already evaluated (a
    gradient-descent step needs both anyway)."""
    converged = jnp.linalg.norm(grad) <= (options.gtol if gtol is None else gtol)
    if strict:
        converged &= ~jax.lax.cond(
            converged,
            lambda: escaping(field, y, args, options.t_max if horizon is None else horizon),
            lambda: jnp.zeros((), bool),
        )
    code = jnp.where(loss < level, int(Outcome.GLOBAL_MIN), int(Outcome.NOT_CONVERGED))
    code = jnp.where(converged, int(Outcome.CONVERGED), code)
    return jnp.where(diverged(y, options), int(Outcome.DIVERGED), code)


def solve(
    field: GradientField,
    options: FlowOptions,
    y0: jax.Array,
    t0: jax.Array,
    args: Any,
    level: jax.Array,
    max_steps: int,
    saveat: diffrax.SaveAt,
    strict: bool = False,
    gtol: jax.Array | None = None,
    t_max: jax.Array | None = None,
) -> diffrax.Solution:
    """diffrax solve of ``dθ/dt = -∇L`` from ``(t0, y0)`` with the stopping rule as an event
    (``strict``: with the escape test, see :func:`status_code`); ``gtol`` and ``t_max``, traced,
    override the options'."""
    import diffrax

    def vector_field(t: jax.Array, y: jax.Array, a: tuple[Any, jax.Array]) -> jax.Array:
        return -field.grad(y, a[0])

    def stop(t: jax.Array, y: jax.Array, a: tuple[Any, jax.Array], **kwargs: Any) -> jax.Array:
        code = status_code(field, options, y, a[0], a[1], gtol, strict, t_max)
        return code != int(Outcome.NOT_CONVERGED)

    if options.adaptive:
        dt0, controller = None, diffrax.PIDController(rtol=options.rtol, atol=options.atol)
    else:
        dt0, controller = options.controller.dt, diffrax.ConstantStepSize()
    return diffrax.diffeqsolve(
        diffrax.ODETerm(vector_field),
        options.diffrax_solver(),
        t0=t0,
        t1=options.t_max if t_max is None else t_max,
        dt0=dt0,
        y0=y0,
        args=(args, level),
        saveat=saveat,
        stepsize_controller=controller,
        event=diffrax.Event(stop),
        max_steps=max_steps,
        throw=False,
    )


def integrate(
    field: GradientField,
    theta0: Any,
    args: Any = None,
    options: FlowOptions | None = None,
    *,
    ts: np.ndarray | None = None,
) -> Trajectory:
    """Integrate one trajectory of ``dθ/dt = -∇L(θ, args)`` from flat ``theta0`` until it stops.

    Compiles once per field, options and array shapes (``gtol`` and ``t_max`` are arguments of
    the program, so a trajectory continued with another budget shares it): reuse the field
    object.

    Args:
        field: the loss and its gradient.
        theta0: initial point, shape ``(dim,)``.
        args: passed to ``field.loss`` and ``field.grad`` (hyperparameters, data).
        options: solver and stopping rule.
        ts: flow times at which to record the path (ascending, from 0); by default every accepted
            solver step is recorded.

    Returns:
        The recorded path (ending where the trajectory stopped) and why it stopped.
    """
    options = options or FlowOptions()
    y0 = jnp.asarray(theta0, dtype=jnp.float64)
    budget = np.float64(options.gtol), np.float64(options.t_max)
    placeholders = options.with_stop(gtol=1.0, t_max=1.0)
    if options.solver == "Rodas4":
        times, ys, status = _own_path(field, placeholders, y0, args, ts, budget)
    else:
        times, ys, status = _diffrax_path(field, placeholders, y0, args, ts, budget)
    losses = padded_call(_path_losses(field), ys, ys.shape[-1], (), args, PATH_SIZES)
    return Trajectory(ts=times, thetas=ys, losses=losses, status=Outcome(status))


def _own_path(
    field: GradientField,
    options: FlowOptions,
    y0: jax.Array,
    args: Any,
    ts: np.ndarray | None,
    budget: tuple[np.float64, np.float64],
) -> tuple[np.ndarray, np.ndarray, int]:
    """:func:`integrate` on gradflow's own Rosenbrock integrator (:func:`own_path_program`):
    every accepted step, or the path at ``ts`` by the cubic Hermite interpolant of the steps
    around each time (:func:`hermite`, the interpolant diffrax gives its implicit solvers),
    then the stop.  The explicit pairs' single trajectories stay on diffrax, whose own
    interpolant of ``Tsit5`` (order 4) records ``ts`` more accurately than a cubic."""
    ys, fs, times, n, code = own_path_program(field, options)(y0, args, *budget)
    n = int(n)
    ys, fs, times = np.asarray(ys)[: n + 1], np.asarray(fs)[: n + 1], np.asarray(times)[: n + 1]
    status = int(Outcome.NOT_CONVERGED) if int(code) < 0 else int(code)
    if ts is None:
        return times, ys, status
    wanted = np.asarray(ts, dtype=np.float64)
    wanted = wanted[wanted <= times[-1]]
    path_ts, path_ys = wanted, hermite(times, ys, fs, wanted)
    if path_ts.size == 0 or path_ts[-1] < times[-1]:
        path_ts, path_ys = np.append(path_ts, times[-1]), np.concatenate([path_ys, ys[-1:]])
    return path_ts, path_ys, status


def hermite(times: np.ndarray, ys: np.ndarray, fs: np.ndarray, at: np.ndarray) -> np.ndarray:
    """The cubic Hermite interpolant of a recorded path at the times ``at`` (shape ``(m,)``,
    within ``[times[0], times[-1]]``): on each step ``[tₖ, tₖ₊₁]`` the cubic with the states
    ``yₖ, yₖ₊₁`` and derivatives ``fₖ, fₖ₊₁`` at its ends (third order, as diffrax's
    ``ThirdOrderHermitePolynomialInterpolation``).  ``times`` shape ``(n,)``, ascending;
    ``ys`` and ``fs`` shape ``(n, dim)``; returns shape ``(m, dim)``."""
    if times.size == 1:
        return np.repeat(ys, at.size, axis=0)
    k = np.clip(np.searchsorted(times, at, side="right") - 1, 0, times.size - 2)
    h = (times[k + 1] - times[k])[:, None]
    s = (at - times[k])[:, None] / h
    h00, h10 = (1 + 2 * s) * (1 - s) ** 2, s * (1 - s) ** 2
    h01, h11 = s * s * (3 - 2 * s), s * s * (s - 1)
    return h00 * ys[k] + h10 * h * fs[k] + h01 * ys[k + 1] + h11 * h * fs[k + 1]


def _diffrax_path(
    field: GradientField,
    options: FlowOptions,
    y0: jax.Array,
    args: Any,
    ts: np.ndarray | None,
    budget: tuple[np.float64, np.float64],
) -> tuple[np.ndarray, np.ndarray, int]:
    """:func:`integrate` through diffrax (:func:`path_program`): every solver but ``Rodas4``."""
    save_ts = None if ts is None else jnp.asarray(ts, dtype=jnp.float64)
    path_ts, path_ys, stats, _ = path_program(field, options)(y0, args, save_ts, *budget)
    times, ys = np.asarray(path_ts), np.asarray(path_ys)
    kept = np.isfinite(times)
    times, ys = times[kept], ys[kept]
    if ts is not None and (times.size == 0 or times[-1] < float(stats["t_stop"])):
        times = np.append(times, float(stats["t_stop"]))
        ys = np.concatenate([ys, np.asarray(stats["y_stop"])[None]])
    return times, ys, int(stats["final_status"])


@functools.cache
def own_path_program(
    field: GradientField, options: FlowOptions
) -> Callable[..., tuple[jax.Array, ...]]:
    """Jitted: one trajectory's recorded path on gradflow's own integrator of ``options``
    (:meth:`FlowOptions.batched_integrator`, :meth:`~gradflow._flow.rk.BatchedIntegrator.path`),
    with the stop rule of :func:`status_code` and its escape test (``strict``).

    It maps ``(y0, args, gtol, t_max)`` to the path's states, field values and times (shapes
    ``(max_steps + 1, dim)`` and ``(max_steps + 1,)``, rows past the end ``+inf``), the number
    of accepted steps and the stop's :class:`Outcome` code (``-1``: the step budget ran out).
    ``gtol`` and ``t_max`` are arguments, so ``options`` (with placeholders for them) and the
    field name the program, which is kept between processes where the field's programs are
    (:func:`gradflow._compiled.store.stored`)."""
    integrator = options.batched_integrator()

    def vector_field(y: jax.Array, a: tuple[Any, jax.Array, jax.Array]) -> jax.Array:
        return -field.grad(y, a[0])

    def stop(y: jax.Array, a: tuple[Any, jax.Array, jax.Array]) -> jax.Array:
        minus_inf = jnp.asarray(-jnp.inf, y.dtype)
        return status_code(field, options, y, a[0], minus_inf, a[1], True, a[2])

    path = integrator.path(vector_field, stop, options.max_steps)

    def run(y0: jax.Array, args: Any, gtol: jax.Array, t_max: jax.Array) -> tuple[Any, ...]:
        return path(y0, (args, gtol, t_max), t_max)

    description = f"own trajectory path {options!r}"
    return stored_for(jax.jit(run), field, description, describable=options.by_name)


PATH_SIZES = tuple(64 << k for k in range(11))
"""The lengths a recorded path is padded to when its losses are evaluated: powers of two from
64 to 65,536 (longer paths go in chunks of 65,536).  Paths differ in length from one start to
the next, and a program per length cost three compilations per trajectory; padding to a power
of two at most doubles the evaluations, which matters where the loss is a full model's."""


@functools.cache
def _path_losses(field: GradientField) -> Callable[[jax.Array, Any], jax.Array]:
    """``field.loss`` at each row of a path, jitted once per field."""
    return jax.jit(jax.vmap(field.loss, in_axes=(0, None)))


@functools.cache
def path_program(field: GradientField, options: FlowOptions) -> Callable[..., tuple[Any, ...]]:
    """Jitted: one trajectory's recorded path, the program of :func:`integrate`.

    It maps ``(y0, args, ts, gtol, t_max)`` (``ts`` ``None`` for every accepted step) to the
    recorded times and states (rows past the end ``+inf``), diffrax's statistics with the stop
    (``t_stop``, ``y_stop``) and the end's ``final_status`` added, and diffrax's other outputs,
    unused.  Those are returned all the same, as plain arrays (a solution object does not
    serialize): without them XLA compiles the solver's loop otherwise, and the flow of
    ``(1 − ab)² + (a² − b²)²/10`` from a point of the saddle's stable manifold ``b = −a``, which
    the loop's arithmetic keeps bit for bit with them, left it for a minimum.  ``gtol`` and
    ``t_max`` are arguments, so ``options`` (with placeholders for them) and the field name the
    program.
    Built once per field and options; its executable is kept between processes where the
    field's programs are (:func:`gradflow._compiled.store.stored`), keyed by the options and the
    field's key: tracing diffrax's implicit solver took 1.6 s of a warm ``gradflow flow``."""
    import diffrax

    def run(
        y0: jax.Array, args: Any, ts: jax.Array | None, gtol: jax.Array, t_max: jax.Array
    ) -> tuple[Any, ...]:
        if ts is None:
            saveat = diffrax.SaveAt(t0=True, steps=True)
        else:
            saveat = diffrax.SaveAt(subs=[diffrax.SubSaveAt(ts=ts), diffrax.SubSaveAt(t1=True)])
        start, steps = jnp.zeros(()), options.max_steps
        sol = solve(field, options, y0, start, args, -jnp.inf, steps, saveat, True, gtol, t_max)
        if ts is None:
            path_ts, path_ys, stats = sol.ts, sol.ys, dict(sol.stats)
            # the recorded steps are a prefix of the rows (the rest +inf): the last one is the end
            end = path_ys[jnp.sum(jnp.isfinite(path_ts)) - 1]
        else:
            (path_ts, stop_ts), (path_ys, stop_ys) = sol.ts, sol.ys
            stats = dict(sol.stats, t_stop=stop_ts[-1], y_stop=stop_ys[-1])
            path_ts = jnp.where(path_ts <= stop_ts[-1], path_ts, jnp.inf)
            # the end is the last recorded time's state, or the stop's where it came after it
            last = jnp.sum(jnp.isfinite(path_ts)) - 1
            end = jnp.where((last < 0) | (path_ts[last] < stop_ts[-1]), stop_ys[-1], path_ys[last])
        # the status of the end in this program, not one of its own per (field, options)
        minus_inf = jnp.asarray(-jnp.inf, end.dtype)
        stats["final_status"] = status_code(field, options, end, args, minus_inf, gtol, True, t_max)
        unused = (sol.t0, sol.t1, sol.result == diffrax.RESULTS.successful, sol.event_mask)
        return path_ts, path_ys, stats, unused

    description = f"trajectory path {options!r}"
    return stored_for(jax.jit(run), field, description, describable=options.by_name)


@functools.cache
def pytree_field(
    loss: Callable[[Any, Any], jax.Array], treedef: Any, shapes: tuple[tuple[int, ...], ...]
) -> GradientField:
    """The field of ``loss(params, args)`` on the flat vectors (``ravel_pytree`` order) of one
    pytree structure, built once per ``loss`` function and structure, so that its flow
    compiles once."""
    example = jax.tree.unflatten(treedef, [jnp.zeros(s, jnp.float64) for s in shapes])
    _, unravel = ravel_pytree(example)
    return GradientField.from_loss(lambda flat, a: loss(unravel(flat), a))
