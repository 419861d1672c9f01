"""Batches of flow trajectories with an adaptive integrator, here an explicit embedded
Runge–Kutta pair: one program steps every member at once, each with its own step size, error
control and stop.

diffrax vectorized with ``jax.vmap`` runs a ``while_loop`` per member whose state (solver,
controller, event and saving bookkeeping) is carried and selected for the whole batch at every
step, about 500 ns per member and step on a CPU against 4 ns for the gradient itself.  Here the
batch is the unit: one ``lax.while_loop`` whose state is the members' ``(y, t, dt, f(y))``
arrays of shape ``(B, …)``; a step evaluates the stages of every member together, and masks
keep the members that have stopped where they are.

The integrator is a value, :class:`BatchedRK`: a :class:`Tableau` (:data:`TSIT5`,
:data:`DOPRI5`), a :class:`StepControl` (the I-controller of ``diffrax.PIDController`` with its
defaults) and a flow-time budget; the vector field and the stop rule are passed to
:meth:`BatchedRK.advance`, so any field ``dθ/dt = F(θ)`` (a gradient flow, a flow in a metric)
and any stop rule (absolute or scale-relative tolerances) fit.  It reproduces diffrax's
``Tsit5`` with ``PIDController(rtol, atol)`` and ``dt0=None``: the same tableau, initial step
(Hairer, Nørsett & Wanner, *Solving ODEs I*, §II.4), error norm (RMS of the error over
``atol + rtol·max(|y0|, |y1|)``) and step factor ``clip(0.9·err^(-1/p), 1 or 0.2, 10 or 0.9)``
(``p`` the order; an accepted step never shrinks the next, a rejected one shrinks it).  One
difference: diffrax 0.7.2 never runs its initial-step rule, since ``diffeqsolve`` wraps the
term before the controller checks that it is an ``ODETerm``, so every diffrax solve starts with
``dt = 0.01``; the steps after the first differ accordingly, the endpoints agree to the
tolerances.
The loop, the step-size control and the recording of a path are
:class:`BatchedIntegrator`'s, shared with the Rosenbrock method of
:mod:`gradflow._flow.rosenbrock` (stiff flows).  diffrax integrates the explicit pairs' single
trajectories (its interpolant of ``Tsit5`` records given times more accurately than a cubic)
and every other solver, and is the reference the tests compare with.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp

from .._outcome import Outcome

__all__ = [
    "DOPRI5",
    "TSIT5",
    "BatchedIntegrator",
    "BatchedRK",
    "StepControl",
    "Tableau",
    "tableau_of",
]

RUNNING = -1
"""Status code of a member still integrating when :meth:`BatchedRK.advance` returns (no
:class:`~gradflow.Outcome`: every outcome code is at least 0)."""


@dataclass(frozen=True)
class Tableau:
    """An explicit embedded Runge–Kutta pair with the first-same-as-last property.

    Attributes:
        name: the pair's usual name.
        c: nodes of stages 2…s (stage 1 is at ``c = 0``).
        a: rows 2…s of the lower-triangular matrix ``a_ij``.
        b: weights of the solution (order ``order``); equal to the last row of ``a``, so the
            last stage is ``f(y_{n+1})``, the first stage of the next step.
        b_error: weights of the error estimate ``b - b̂`` (``b̂`` of one order less).
        order: order of the solution ``p``; the step factor is ``err^(-1/p)``.
    """

    name: str
    c: tuple[float, ...]
    a: tuple[tuple[float, ...], ...]
    b: tuple[float, ...]
    b_error: tuple[float, ...]
    order: int


_TSIT5_B = (
    0.09646076681806522951816731316512876333711995238157997181903319145764851595234062815396,
    0.01,
    0.4798896504144995747752495322905965199130404621990332488332634944254542060153074523509,
    1.379008574103741893192274821856872770756462643091360525934940067397245698027561293331,
    -3.290069515436080679901047585711363850115683290894936158531296799594813811049925401677,
    2.324710524099773982415355918398765796109060233222962411944060046314465391054716027841,
)
_TSIT5_B_HAT = (
    0.09468075576583945807478876255758922856117527357724631226139574065785592789071067303271,
    0.009183565540343253096776363936645313759813746240984095238905939532922955247253608687270,
    0.4877705284247615707855642599631228241516691959761363774365216240304071651579571959813,
    1.234297566930478985655109673884237654035539930748192848315425833500484878378061439761,
    -2.707712349983525454881109975059321670689605166938197378763992255714444407154902012702,
    1.866628418170587035753719399566211498666255505244122593996591602841258328965767580089,
    1 / 66,
)

TSIT5 = Tableau(
    name="Tsit5",
    c=(
        0.161,
        0.327,
        0.9,
        0.9800255409045096857298102862870245954942137979563024768854764293221195950761080302604,
        1.0,
        1.0,
    ),
    a=(
        (0.161,),
        (
            -0.008480655492356988544426874250230774675121177393430391537369234245294192976164141156943,
            0.3354806554923569885444268742502307746751211773934303915373692342452941929761641411569,
        ),
        (
            2.897153057105493432130432594192938764924887287701866490314866693455023795137503079289,
            -6.359448489975074843148159912383825625952700647415626703305928850207288721235210244366,
            4.362295432869581411017727318190886861027813359713760212991062156752264926097707165077,
        ),
        (
            5.325864828439256604428877920840511317836476253097040101202360397727981648835607691791,
            -11.74888356406282787774717033978577296188744178259862899288666928009020615663593781589,
            7.495539342889836208304604784564358155658679161518186721010132816213648793440552049753,
            -0.09249506636175524925650207933207191611349983406029535244034750452930469056411389539635,
        ),
        (
            5.861455442946420028659251486982647890394337666164814434818157239052507339770711679748,
            -12.92096931784710929170611868178335939541780751955743459166312250439928519268343184452,
            8.159367898576158643180400794539253485181918321135053305748355423955009222648673734986,
            -0.07158497328140099722453054252582973869127213147363544882721139659546372402303777878835,
            -0.02826905039406838290900305721271224146717633626879770007617876201276764571291579142206,
        ),
        _TSIT5_B,
    ),
    b=(*_TSIT5_B, 0.0),
    b_error=tuple(b - bh for b, bh in zip((*_TSIT5_B, 0.0), _TSIT5_B_HAT)),
    order=5,
)
"""Tsitouras's 5(4) pair: Ch. Tsitouras, "Runge–Kutta pairs of order 5(4) satisfying only the
first column simplifying assumption", Comput. Math. Appl. 62 (2011) 770–775, Table 1 (the
coefficients as diffrax's ``Tsit5`` writes them)."""

_DOPRI5_B = (35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84)
DOPRI5 = Tableau(
    name="Dopri5",
    c=(1 / 5, 3 / 10, 4 / 5, 8 / 9, 1.0, 1.0),
    a=(
        (1 / 5,),
        (3 / 40, 9 / 40),
        (44 / 45, -56 / 15, 32 / 9),
        (19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729),
        (9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656),
        _DOPRI5_B,
    ),
    b=(*_DOPRI5_B, 0.0),
    b_error=tuple(
        b - bh
        for b, bh in zip(
            (*_DOPRI5_B, 0.0),
            (5179 / 57600, 0.0, 7571 / 16695, 393 / 640, -92097 / 339200, 187 / 2100, 1 / 40),
        )
    ),
    order=5,
)
"""Dormand and Prince's 5(4) pair: J. R. Dormand, P. J. Prince, "A family of embedded
Runge–Kutta formulae", J. Comput. Appl. Math. 6 (1980) 19–26, Table 2 (RK5(4)7M)."""


@dataclass(frozen=True)
class StepControl:
    """Per-member step-size control, the integral controller of ``diffrax.PIDController``.

    A step of size ``h`` is accepted when its scaled error ``err = RMS(e / (atol + rtol ·
    max(|y0|, |y1|)))`` is below 1; the next step is ``h · clip(safety · err^(-1/p), lo, hi)``
    with ``(lo, hi) = (1, factor_max)`` after an accepted step and ``(factor_min, safety)`` after
    a rejected one (a non-finite error counts as rejected, factor ``factor_min``).

    Attributes:
        rtol, atol: relative and absolute tolerances (units of ``θ``).
        safety, factor_min, factor_max: as in ``diffrax.PIDController``.
    """

    rtol: float
    atol: float
    safety: float = 0.9
    factor_min: float = 0.2
    factor_max: float = 10.0


Field = Callable[[jax.Array, Any], jax.Array]
"""A vector field ``F(θ, args)`` of one state of shape ``(dim,)``."""
StopRule = Callable[[jax.Array, Any], jax.Array]
"""The :class:`Outcome` code of one state of shape ``(dim,)``; ``NOT_CONVERGED`` goes on."""
BatchField = Callable[[jax.Array], jax.Array]
"""The field at states laid out ``(dim, B)``, the same shape."""
BatchJacobian = Callable[[jax.Array], jax.Array]
"""The field's Jacobians at states laid out ``(dim, B)``, shape ``(B, dim, dim)``."""


def _rms(x: jax.Array) -> jax.Array:
    """Root mean square over the coordinates (axis 0 of the ``(dim, B)`` layout)."""
    return jnp.sqrt(jnp.mean(x * x, axis=0))


@dataclass(frozen=True)
class BatchedIntegrator:
    """What the adaptive batched integrators share: members stepped together in one
    ``lax.while_loop``, each with its own step size, error control and stop.

    A subclass narrows the type of ``tableau`` and says how one step is tried
    (:meth:`attempt`): :class:`BatchedRK` (explicit pairs) and
    :class:`~gradflow._flow.rosenbrock.BatchedRosenbrock` (linearly implicit, for stiff flows).

    Attributes:
        tableau: the method; its ``order`` sets the step factor ``err^(-1/order)``.
        control: the step-size controller.
        t_max: flow-time budget (time units of the flow); a member that reaches it stops with
            the status its stop rule gives there (``NOT_CONVERGED`` unless it also meets a
            stopping condition).
    """

    tableau: Any
    control: StepControl
    t_max: float

    def attempt(
        self, f: BatchField, jacobian: BatchJacobian, y: jax.Array, h: jax.Array, f0: jax.Array
    ) -> tuple[jax.Array, jax.Array, jax.Array]:
        """One step of size ``h`` (shape ``(1, B)``) from the states ``y`` (``(dim, B)``) with
        ``f0 = f(y)``: the new states, their local error estimates (both ``(dim, B)``) and
        ``f`` at the new states.  ``f`` maps states ``(dim, B)`` to the field there,
        ``jacobian`` to its Jacobians ``(B, dim, dim)``."""
        raise NotImplementedError

    def advance(
        self, field: Field, stop: StopRule, steps: int
    ) -> Callable[[jax.Array, jax.Array, jax.Array, Any], tuple[jax.Array, ...]]:
        """A jitted function advancing members by at most ``steps`` steps each.

        It maps ``(y0, t0, dt0, args)`` (shapes ``(B, dim)``, ``(B,)``, ``(B,)``, any pytree
        shared by the members) to ``(y, t, dt, steps, status)``: the states and flow times
        reached, the step each member tries next, the steps taken by each member (accepted and
        rejected), and each member's :class:`Outcome` code, or ``-1`` for a member still running.
        ``dt0`` is the step a member tries first, or 0 for :meth:`initial_step`'s: passing back
        the ``dt`` of a previous call continues the step-size control where it stopped, so a
        trajectory advanced in several calls takes the steps of one long solve.  A member that
        meets its stop rule at ``t0`` takes no step.  Compiled once per
        ``(self, field, stop, steps)`` and batch shape.
        """
        return _advance(self, field, stop, steps)

    def initial_step(self, f: BatchField, y0: jax.Array) -> tuple[jax.Array, jax.Array]:
        """Hairer's starting step of each member (as ``diffrax`` picks ``dt0=None``), shape
        ``(B,)``: ``h0 = 0.01 ‖y0‖/‖f0‖`` then ``(0.01 / max(‖f0‖, ‖f1 - f0‖/h0))^(1/p)``, at
        most ``100 h0``, norms scaled by ``atol + rtol |y0|``; and ``f0 = f(y0)``.  States are
        laid out as ``(dim, B)``, members along the last axis."""
        rtol, atol = self.control.rtol, self.control.atol
        scale = atol + jnp.abs(y0) * rtol
        f0 = f(y0)
        d0, d1 = _rms(y0 / scale), _rms(f0 / scale)
        small = (d0 < 1e-5) | (d1 < 1e-5)
        h0 = jnp.where(small, 1e-6, 0.01 * d0 / jnp.where(small, 1.0, d1))
        d2 = _rms((f(y0 + h0[None, :] * f0) - f0) / scale) / h0
        top = jnp.maximum(d1, d2)
        h1 = jnp.where(
            top <= 1e-15,
            jnp.maximum(1e-6, h0 * 1e-3),
            (0.01 / jnp.where(top <= 1e-15, 1.0, top)) ** (1.0 / self.tableau.order),
        )
        return jnp.minimum(100 * h0, h1).astype(y0.dtype), f0

    def path(
        self, field: Field, stop: StopRule, max_steps: int
    ) -> Callable[..., tuple[jax.Array, ...]]:
        """A jitted function integrating one trajectory and recording every accepted step.

        It maps ``(y0, args)``, or ``(y0, args, t_max)`` with a flow-time budget of its own
        (a traced value: budgets share the program), ``y0`` of shape ``(dim,)`` from flow time
        0, to ``(ys, fs, ts, n, status)``: the states ``(max_steps + 1, dim)``, the field at
        them (same shape) and the flow times ``(max_steps + 1,)`` of the start and of each
        accepted step (rows after the ``n``-th are ``inf``), the number ``n`` of accepted
        steps, and the :class:`Outcome` code where it stopped, or ``-1`` if ``max_steps`` steps
        (accepted and rejected) ran out first.  The steps are those of :meth:`advance`.
        Compiled once per ``(self, field, stop, max_steps)``.
        """
        return _path(self, field, stop, max_steps)


@dataclass(frozen=True)
class BatchedRK(BatchedIntegrator):
    """An adaptive explicit Runge–Kutta integrator of a batch of trajectories; its ``tableau``
    is the embedded pair (the other fields: :class:`BatchedIntegrator`)."""

    tableau: Tableau

    def attempt(
        self, f: BatchField, jacobian: BatchJacobian, y: jax.Array, h: jax.Array, f0: jax.Array
    ) -> tuple[jax.Array, jax.Array, jax.Array]:
        """The pair's step (:meth:`BatchedIntegrator.attempt`); its last stage is ``f`` at the
        new states (first same as last)."""
        tab = self.tableau
        ks = [f0]
        for row in tab.a:
            ks.append(f(y + h * sum(a * k for a, k in zip(row, ks) if a != 0.0)))
        y1 = y + h * sum(b * k for b, k in zip(tab.b, ks) if b != 0.0)
        err = h * sum(e * k for e, k in zip(tab.b_error, ks) if e != 0.0)
        return y1, err, ks[-1]


def _stepper(
    rk: BatchedIntegrator, field: Field, stop: StopRule, args: Any, dtype: Any, t_max: Any
) -> tuple[Callable[..., tuple[jax.Array, ...]], Callable[..., tuple[jax.Array, ...]]]:
    """``(start, step)`` of the members' state ``(y, t, dt, f(y), steps, status)``, with ``y`` laid
    out ``(dim, B)``: ``start(y0, t0, dt0)`` is the state at the start (the step ``dt0``, or the
    initial step where it is 0; the stop rule applied), ``step(state)`` tries one step of every
    running member and returns the new state and which members accepted it.  A single member's
    stop rule is called as it is, not vectorized: a ``lax.cond`` in it (the escape test) stays
    a branch."""
    ctl = rk.control
    order = float(rk.tableau.order)
    t_max = jnp.asarray(t_max, dtype)

    def f(y: jax.Array) -> jax.Array:
        return jax.vmap(field, in_axes=(1, None), out_axes=1)(y, args)

    def jacobian(y: jax.Array) -> jax.Array:
        return jax.vmap(jax.jacfwd(field), in_axes=(1, None))(y, args)

    def status(y: jax.Array) -> jax.Array:
        if y.shape[1] == 1:
            return stop(y[:, 0], args).astype(jnp.int32)[None]
        return jax.vmap(stop, in_axes=(1, None))(y, args).astype(jnp.int32)

    def start(y0: jax.Array, t0: jax.Array, dt0: jax.Array) -> tuple[jax.Array, ...]:
        code = status(y0)
        code = jnp.where((code == int(Outcome.NOT_CONVERGED)) & (t0 < t_max), RUNNING, code)
        first, k1 = rk.initial_step(f, y0)
        dt = jnp.where(dt0 > 0, dt0.astype(first.dtype), first)
        return y0, t0, dt, k1, jnp.zeros(y0.shape[1], dtype=jnp.int32), code

    def step(state: tuple[jax.Array, ...]) -> tuple[tuple[jax.Array, ...], jax.Array]:
        y, t, dt, k1, n, code = state
        running = code == RUNNING
        h = jnp.minimum(dt, t_max - t)
        y1, err, f1 = rk.attempt(f, jacobian, y, h[None, :], k1)
        y1_scale = jnp.where(jnp.isnan(y1).any(axis=0, keepdims=True), y, y1)
        scale = ctl.atol + ctl.rtol * jnp.maximum(jnp.abs(y), jnp.abs(y1_scale))
        scaled = _rms(err / scale)
        finite = jnp.isfinite(scaled)
        accept = running & finite & (scaled < 1.0)
        grow = ctl.safety * jnp.where(finite & (scaled > 0), scaled, 1.0) ** (-1.0 / order)
        grow = jnp.where(scaled == 0, ctl.factor_max, grow)
        factor = jnp.where(
            accept,
            jnp.clip(grow, 1.0, ctl.factor_max),
            jnp.where(finite, jnp.clip(grow, ctl.factor_min, ctl.safety), ctl.factor_min),
        )
        y = jnp.where(accept[None, :], y1, y)
        t = jnp.where(accept, jnp.where(dt >= t_max - t, t_max, t + h), t)
        k1 = jnp.where(accept[None, :], f1, k1)
        dt = jnp.where(running, (h * factor).astype(dtype), dt)
        new = status(y1)
        done = accept & ((new != int(Outcome.NOT_CONVERGED)) | (t >= t_max))
        code = jnp.where(done, new, code)
        return (y, t, dt, k1, n + running.astype(n.dtype), code), accept

    return start, step


@functools.cache
def _advance(
    rk: BatchedIntegrator, field: Field, stop: StopRule, steps: int
) -> Callable[[jax.Array, jax.Array, jax.Array, Any], tuple[jax.Array, ...]]:
    def run(y0: jax.Array, t0: jax.Array, dt0: jax.Array, args: Any) -> tuple[jax.Array, ...]:
        start, step = _stepper(rk, field, stop, args, y0.dtype, rk.t_max)

        def body(state: tuple[Any, ...]) -> tuple[Any, ...]:
            return state[0] + 1, step(state[1])[0]

        def going(state: tuple[Any, ...]) -> jax.Array:
            return (state[0] < steps) & jnp.any(state[1][-1] == RUNNING)

        _, (y, t, dt, _, n, code) = jax.lax.while_loop(going, body, (0, start(y0.T, t0, dt0)))
        return y.T, t, dt, n, code

    return jax.jit(run)


@functools.cache
def _path(
    rk: BatchedIntegrator, field: Field, stop: StopRule, max_steps: int
) -> Callable[..., tuple[jax.Array, ...]]:
    def run(y0: jax.Array, args: Any, t_max: Any = None) -> tuple[jax.Array, ...]:
        budget = rk.t_max if t_max is None else t_max
        start, step = _stepper(rk, field, stop, args, y0.dtype, budget)
        rows = (max_steps + 1, y0.shape[0])
        ys = jnp.full(rows, jnp.inf, y0.dtype).at[0].set(y0)
        ts = jnp.full(max_steps + 1, jnp.inf, y0.dtype).at[0].set(0.0)
        state = start(y0[:, None], jnp.zeros(1, y0.dtype), jnp.zeros(1, y0.dtype))
        fs = jnp.full(rows, jnp.inf, y0.dtype).at[0].set(state[3][:, 0])

        def body(carry: tuple[Any, ...]) -> tuple[Any, ...]:
            i, count, ys, fs, ts, state = carry
            state, accept = step(state)
            count = count + accept[0].astype(count.dtype)
            row = jnp.where(accept[0], count, max_steps + 1)
            ys = ys.at[row].set(state[0][:, 0], mode="drop")
            fs = fs.at[row].set(state[3][:, 0], mode="drop")
            ts = ts.at[row].set(state[1][0], mode="drop")
            return i + 1, count, ys, fs, ts, state

        def going(carry: tuple[Any, ...]) -> jax.Array:
            return (carry[0] < max_steps) & (carry[-1][-1][0] == RUNNING)

        carry = jax.lax.while_loop(going, body, (0, jnp.int32(0), ys, fs, ts, state))
        _, count, ys, fs, ts, state = carry
        return ys, fs, ts, count, state[-1][0]

    return jax.jit(run)


def tableau_of(solver: Any) -> Tableau | None:
    """The pair of a diffrax solver, or of a solver's name, that this module integrates in
    batches (``Tsit5``, ``Dopri5``), or ``None`` for any other (implicit, stiff) solver."""
    if isinstance(solver, str):
        return {"Tsit5": TSIT5, "Dopri5": DOPRI5}.get(solver)
    import diffrax

    if isinstance(solver, diffrax.Tsit5):
        return TSIT5
    if isinstance(solver, diffrax.Dopri5):
        return DOPRI5
    return None
