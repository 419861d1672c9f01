"""Gradient flows that slide along the kinks of a loss: Filippov sliding modes, located.

Where a loss has a kink (``|u|``, ``max(0, u)``, a ReLU) its gradient jumps across the surface
``u(θ) = 0``.  A trajectory of ``θ' = -∇L`` meets such a surface and either crosses it, or is
pushed into it from both sides and *slides* along it.  An explicit solver cannot follow the
sliding motion: every step straddles the surface, where the gradient jumps, and is cut to
``tol/|jump|``, so the run spends its budget without moving.

The motion itself is well defined.  Write the loss as ``L(θ) = L_s(θ)`` with ``s_k`` the slope
of kink ``k`` on the side of ``g_k(θ) = 0`` the point lies on (:class:`Kinks`).  On the
surfaces ``g_k = 0`` every slope in ``[lo_k, hi_k]`` gives the same value, and the gradients
``∇_θ L_s`` with those slopes span the set of velocities Filippov's solution chooses from;
the solution of the gradient flow is its *minimum-norm* element (the lazy selection of
``θ' ∈ -∂L(θ)``: H. Brezis, *Opérateurs maximaux monotones*, 1973, Thm 3.1, for a convex
``L``; A. F. Filippov, *Differential Equations with Discontinuous Righthand Sides*, 1988,
§2.4 and §4.4, for the sliding on one surface and on intersections of surfaces: the convex
combination of the one-sided fields that is tangent to the surfaces).  With ``Δ_i`` the jump of
the gradient across surface ``i`` (``∇_θ L`` with ``s_i = hi`` minus with ``s_i = lo``),

    v* = argmin ‖w + Σ_i λ_i Δ_i‖,   λ ∈ [0, 1]^m,     θ' = -v*,

over the surfaces ``i`` the point is on (``w`` the gradient with each on its ``lo`` side).
Where ``0 < λ_i < 1`` the surface is a sliding one: the jump ``Δ_i`` is normal to it, so the
optimality of ``λ_i`` makes ``v*`` tangent to it.  Where ``λ_i`` is 0 or 1 the flow leaves the
surface, or crosses it, on that side.

:func:`slide` integrates this motion exactly in the sense of an ODE solver:

- between surfaces it takes the steps of Tsitouras's 5(4) pair with the error control of
  :class:`gradflow._flow.rk.StepControl`, on the smooth piece of the loss the point lies on;
- a step whose end lies beyond a surface that pushes it back (the field on the far side points
  toward the surface as well) is *located*: the step is shortened, by regula falsi on the
  surface's value, until it ends on the surface (within :data:`BAND`);
- on the surfaces, the sliding mode (which surfaces slide, the slopes of the others) is the
  solution of the box-constrained least-squares problem above (SciPy's BVLS, exact for the
  handful of surfaces a point is on), and the steps integrate the smooth field
  ``θ' = -P(θ) ∇_θ L_s(θ)``, ``P`` the projector orthogonal to the sliding surfaces' normals,
  after each of which the point is projected back onto the surfaces (Gauss–Newton);
- the mode is solved again after every step taken on a surface, so a sliding surface is left
  where its ``λ`` reaches 0 or 1 (there the sliding field equals the one-sided one: the motion
  is continuous, and the order of the method is kept).

Surfaces whose values and normals agree within the tolerances are one surface: a ReLU layer
with equal units, or positions that coincide, has hundreds of pre-activations on one surface.
They are grouped by the direction of their normals (measured along a few fixed random
directions) and solved as one.

A run whose budget ends on a surface is reported :attr:`Status.NON_SMOOTH`, as the other
integrators report a run stuck on a kink.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._landscape.base import Kinks
from .integrate import FlowOptions, Status
from .rk import TSIT5, StepControl
from .sliding_steps import (
    BAND,
    Info,
    Mode,
    Programs,
    grouped,
    independent_rows,
    min_norm_weights,
    padded_mode,
)

__all__ = ["BAND", "SlideResult", "slide", "sliding_options", "unit_kinks"]

INTERIOR = 1e-9
"""A surface slides when its ``λ`` is at least this far inside ``(0, 1)``."""
LOCATE = 40
"""Regula-falsi iterations at most, to end a step on a surface."""


@functools.cache
def unit_kinks(kinks: Kinks) -> Kinks:
    """The kinks of ``L/g``, whose functions take ``(args, g)`` (as
    :func:`gradflow._landscape.scales.unit_field`'s field does); one per kinks, so that its programs
    compile once."""
    return Kinks(
        surfaces=lambda theta, a: kinks.surfaces(theta, a[0]),
        loss_at=lambda theta, s, a: kinks.loss_at(theta, s, a[0]) / a[1],
        lo=kinks.lo,
        hi=kinks.hi,
        names=kinks.names,
    )


def sliding_options(options: FlowOptions) -> FlowOptions:
    """``options`` for :func:`slide` where another integrator stopped: tolerances at most a
    hundredth of ``gtol``.  An explicit pair that has reached its stability limit beside a
    minimum keeps an error of about ``rtol·|θ| + atol`` in the state, so a steady state at
    ``gtol`` needs tolerances below it (the implicit solvers these runs continue need not)."""
    tight = 1e-2 * options.gtol
    return dataclasses.replace(
        options, rtol=min(options.rtol, tight), atol=min(options.atol, tight), solver="Tsit5"
    )


@dataclass(frozen=True)
class SlideResult:
    """Where :func:`slide` stopped, and the path if it was recorded.

    Attributes:
        endpoint: shape ``(dim,)``.
        time: flow time at the stop.
        steps: steps tried, accepted, rejected and those that located a surface.
        status: why it stopped (:class:`Status`).
        ts, thetas: the accepted points (start included), shapes ``(n,)`` and ``(n, dim)``,
            when recorded; else empty.
        sliding_time: flow time spent sliding on at least one surface.
        surfaces: the largest number of independent surfaces slid on at once.
    """

    endpoint: np.ndarray
    time: float
    steps: int
    status: Status
    ts: np.ndarray
    thetas: np.ndarray
    sliding_time: float = 0.0
    surfaces: int = 0


def slide(
    kinks: Kinks,
    theta0: Any,
    args: Any,
    options: FlowOptions,
    *,
    decide_below: float | None = None,
    t0: float = 0.0,
    record: bool = False,
) -> SlideResult:
    """Integrate ``θ' ∈ -∂L(θ)`` from ``theta0``, sliding along the kinks (module docstring).

    Args:
        kinks: the loss and its kinks.
        theta0: the start, shape ``(dim,)``.
        args: passed to ``kinks``' functions.
        options: tolerances (``rtol``, ``atol``) and the stop rule (``gtol`` on the speed
            ``‖θ'‖``, the minimum-norm subgradient; ``t_max``; ``max_steps``;
            ``divergence_radius``); the solver is Tsitouras's 5(4) pair whatever it names.
        decide_below: stop as :attr:`Status.DECIDED` once the loss is below this level.
        t0: the flow time at the start.
        record: keep every accepted point.

    Returns:
        The stop, its time, the steps taken, why it stopped, the path if recorded.
    """
    run = _Run(kinks, args, options, decide_below, record)
    return run.integrate(np.array(theta0, dtype=np.float64), float(t0))


class _Run:
    """One trajectory of :func:`slide`: the host side of the loop (modes, location, status);
    every evaluation of the loss runs in a compiled program of :class:`Programs`."""

    def __init__(
        self,
        kinks: Kinks,
        args: Any,
        options: FlowOptions,
        level: float | None,
        record: bool,
    ) -> None:
        self.kinks, self.args, self.options, self.record = kinks, args, options, record
        self.level = -math.inf if level is None else float(level)
        self.programs = Programs(kinks, options.rtol, options.atol)
        self.control = StepControl(options.rtol, options.atol)

    def integrate(self, y: np.ndarray, t: float) -> SlideResult:
        opts, prog = self.options, self.programs
        g, loss = prog.probe(y, self.args)
        mode, y, g = self._settle(y, g)
        k1 = prog.field(mode, g, y, self.args)
        loss = prog.probe(y, self.args)[1]
        ts, ys = [t], [np.array(y)]
        steps, slid, most = 0, 0.0, mode.sliding
        status = self._status(np.isfinite(y).all(), np.linalg.norm(y), loss, np.linalg.norm(k1), t)
        h = self._initial_step(np.asarray(y), np.asarray(k1))
        while status is None and steps < opts.max_steps:
            h = min(h, opts.t_max - t)
            out = prog.step(mode, y, k1, h, g, self.args)
            info = Info(*np.asarray(out[-1]))
            steps += 1
            if not (math.isfinite(info.err) and info.err < 1.0):
                h *= self._factor(info.err, accepted=False)
                continue
            through = (info.crossed or info.wrong) and self._through(mode, y, g, h, out, info.err)
            if not through and (info.wrong or (info.crossed and not info.end_crossed)):
                h *= 0.5
                continue
            if info.crossed and not through:
                located, used = self._locate(mode, y, k1, g, h, out)
                steps += used
                if located is None:
                    h *= 0.5
                    continue
                h, out = located
                info = Info(*np.asarray(out[-1]))
            y, k1, g = out[0], out[1], out[2]
            if mode.sliding:
                slid += h
            t, loss, speed = t + h, info.loss, info.speed
            if (
                info.new
                or (through and info.wrong)
                or (mode.sliding and not self._still_sliding(mode, out[4]))
            ):
                mode, y, g = self._settle(y, np.asarray(g))
                most = max(most, mode.sliding)
                k1 = prog.field(mode, g, y, self.args)
                loss, speed = prog.probe(y, self.args)[1], np.linalg.norm(k1)
            if self.record:
                ts.append(t)
                ys.append(np.array(y))
            status = self._status(info.finite, info.size, loss, speed, t)
            h *= self._factor(info.err, accepted=True)
        y, g = np.array(y), np.asarray(g)
        if status is None:
            status = Status.NON_SMOOTH if np.any(self._on(g)) else Status.NOT_CONVERGED
        return SlideResult(
            endpoint=y,
            time=t,
            steps=steps,
            status=status,
            ts=np.asarray(ts) if self.record else np.zeros(0),
            thetas=np.asarray(ys) if self.record else np.zeros((0, y.size)),
            sliding_time=slid,
            surfaces=most,
        )

    def _through(
        self, mode: Mode, y: Any, g0: Any, h: float, out: tuple[Any, ...], err: float
    ) -> bool:
        """Whether the step of size ``h`` from ``y`` (its outputs ``out``), some point of which
        lies beyond a surface on the side whose slope the step does not use (a surface the
        mode does not hold, or holds without sliding), may stand as it is: the jump of the
        gradient across those surfaces, ``Δ``, is so small that ``h·Δ`` (at most what the
        step, integrated on one piece, misses of a solution that switches pieces within it)
        and the step's own error estimate ``err`` fit within the tolerances together, and
        every such surface whose end lies beyond it is crossed, not pushed back into (the
        far side's field at the end carries the point on, away from it)."""
        y1, g1 = np.asarray(out[0]), np.asarray(out[2])
        hi, lo = self._sides
        near = np.where(mode.fixed, mode.slopes, np.where(np.asarray(g0) > 0, hi, lo))
        switch = np.asarray(out[3]) | np.asarray(out[5])
        far = np.where(switch, np.where(near == hi, lo, hi), near)
        jump, rates = self.programs.crossing(near, far, y1, self.args)
        scale = self.control.atol + self.control.rtol * np.maximum(np.abs(y), np.abs(y1))
        missed = h * float(np.sqrt(np.mean((jump / scale) ** 2)))
        beyond = switch & ~self._on(g1) & (np.where(g1 > 0, hi, lo) == far)
        return bool(np.all(g1[beyond] * rates[beyond] > 0) and err + missed < 1.0)

    @functools.cached_property
    def _sides(self) -> tuple[np.ndarray, np.ndarray]:
        """Each kink's slope on its positive and its negative side."""
        return np.asarray(self.kinks.hi, np.float64), np.asarray(self.kinks.lo, np.float64)

    def _still_sliding(self, mode: Mode, mu: Any) -> bool:
        """Whether every sliding surface of ``mode`` still slides at a step's end, where the
        projection's multipliers are ``mu``: ``λ = -μ/d`` inside ``(0, 1)``."""
        lam = -np.asarray(mu)[: mode.sliding] / mode.jumps[: mode.sliding]
        return bool(np.all((lam > INTERIOR) & (lam < 1 - INTERIOR)))

    def _band(self, g: np.ndarray) -> float:
        return BAND * max(1.0, float(np.max(np.abs(g), initial=0.0)))

    def _on(self, g: np.ndarray) -> np.ndarray:
        return np.abs(g) <= self._band(g)

    def _status(
        self, finite: bool, size: float, loss: float, speed: float, t: float
    ) -> Status | None:
        """Why to stop at a point (``finite`` coordinates of norm ``size``, ``loss``, the
        field's norm ``speed``, at flow time ``t``), or ``None``."""
        opts = self.options
        if not finite or size > opts.divergence_radius:
            return Status.DIVERGED
        if speed <= opts.gtol:
            return Status.CONVERGED
        if loss < self.level:
            return Status.DECIDED
        if t >= opts.t_max:
            return Status.NOT_CONVERGED
        return None

    def _factor(self, err: float, accepted: bool) -> float:
        """The step factor of :class:`StepControl` after an accepted or rejected step."""
        ctl = self.control
        if not math.isfinite(err):
            return ctl.factor_min
        grow = ctl.factor_max if err == 0 else ctl.safety * err ** (-1.0 / TSIT5.order)
        if accepted:
            return min(max(grow, 1.0), ctl.factor_max)
        return min(max(grow, ctl.factor_min), ctl.safety)

    def _initial_step(self, y: np.ndarray, f0: np.ndarray) -> float:
        """Hairer's starting step without its second evaluation: ``0.01 ‖y‖/‖f‖`` in the
        error norm, at least ``1e-6`` (:meth:`BatchedRK.initial_step`'s first guess)."""
        scale = self.control.atol + self.control.rtol * np.abs(y)
        d0 = float(np.sqrt(np.mean((y / scale) ** 2)))
        d1 = float(np.sqrt(np.mean((f0 / scale) ** 2)))
        if d0 < 1e-5 or d1 < 1e-5:
            return 1e-6
        return 0.01 * d0 / d1

    def _locate(
        self,
        mode: Mode,
        y: Any,
        k1: Any,
        g0: Any,
        h: float,
        out: tuple[Any, ...],
    ) -> tuple[tuple[float, tuple[Any, ...]] | None, int]:
        """The step of size ``h`` from ``y`` (its outputs ``out``, whose end is beyond some
        surfaces the mode does not hold) shortened by regula falsi (Illinois) until it ends on
        the first of them that it reaches: ``((h, step outputs), steps used)``, or
        ``(None, steps used)`` where no shortened step ends on a surface within :data:`LOCATE`
        tries."""
        g0 = np.asarray(g0)
        crossed = np.flatnonzero(np.asarray(out[3]))
        side = np.sign(g0[crossed])

        def phi(g: Any) -> tuple[float, float]:
            g = np.asarray(g)
            return float(np.min(side * g[crossed])), self._band(g)

        lo, f_lo, hi, f_hi = 0.0, phi(g0)[0], h, phi(out[2])[0]
        used, last = 0, 0
        for _ in range(LOCATE):
            if not f_lo > 0 > f_hi:
                return None, used
            trial = hi - f_hi * (hi - lo) / (f_hi - f_lo)
            trial = min(max(trial, lo + 1e-6 * (hi - lo)), hi - 1e-6 * (hi - lo))
            step = self.programs.step(mode, y, k1, trial, g0, self.args)
            used += 1
            if not Info(*np.asarray(step[-1])).err < 1.0:
                hi, f_hi, last = trial, -abs(f_hi), 0
                continue
            value, band = phi(step[2])
            if abs(value) <= band:
                return (trial, step), used
            if value > 0:
                lo, f_lo = trial, value
                f_hi = f_hi / 2 if last == 1 else f_hi
                last = 1
            else:
                hi, f_hi = trial, value
                f_lo = f_lo / 2 if last == -1 else f_lo
                last = -1
        return None, used

    def _settle(self, y: np.ndarray, g: np.ndarray) -> tuple[Mode, np.ndarray, np.ndarray]:
        """The mode at ``y``; on sliding surfaces, ``y`` projected onto them (and ``g`` there)."""
        mode = self._mode(y, g)
        if mode.sliding:
            y = self.programs.project(mode, y, self.args)
            g = self.programs.probe(y, self.args)[0]
        return mode, y, g

    def _mode(self, y: np.ndarray, g: np.ndarray) -> Mode:
        """The sliding mode at ``y`` (module docstring): the minimum-norm subgradient over the
        surfaces ``y`` is on, grouped by their normals.  A surface that does not slide takes the
        slope of the side the minimum-norm velocity moves it to (at a concave kink the least
        velocity is the near side's, which carries the point across: beyond, the far side's
        slope holds)."""
        prog, kinks = self.programs, self.kinks
        slopes = np.where(g > 0, kinks.hi, kinks.lo).astype(np.float64)
        on = np.flatnonzero(self._on(g))
        groups = grouped(prog.signatures(y, self.args)[on]) if on.size else []
        fixed, slides = np.zeros(g.shape, bool), np.zeros(g.shape, bool)
        fixed[on] = True
        if not groups:
            return padded_mode(fixed, slopes, np.zeros(0, np.int64), slides, np.zeros(0))
        rows = np.repeat(slopes[None], len(groups) + 1, axis=0)
        for i, (members, orient) in enumerate(groups):
            k = on[members]
            rows[:, k] = np.where(orient > 0, kinks.lo[k], kinks.hi[k])
            rows[i + 1, k] = np.where(orient > 0, kinks.hi[k], kinks.lo[k])
        grads = prog.grads(rows, y, self.args)
        w, jumps = grads[0], (grads[1:] - grads[0]).T
        lam = min_norm_weights(w, jumps)
        velocity = -(w + jumps @ lam)
        reps = np.array([on[members[0]] for members, _ in groups], dtype=np.int64)
        normals = prog.normals(y, reps, self.args) * np.array([o[0] for _, o in groups])[:, None]
        rates = normals @ velocity
        scale = np.linalg.norm(normals, axis=1) * np.linalg.norm(velocity)
        attracting = np.einsum("ij,ji->i", normals, jumps) > 0
        chosen, sliding = rows[0].copy(), []
        for i, (members, _) in enumerate(groups):
            k = on[members]
            if INTERIOR < lam[i] < 1 - INTERIOR and attracting[i]:
                sliding.append(i)
                slides[k] = True
            elif rates[i] > INTERIOR * scale[i] or (
                lam[i] >= 1 - INTERIOR and rates[i] >= -INTERIOR * scale[i]
            ):
                chosen[k] = rows[i + 1, k]
        keep = independent_rows(normals[sliding]) if sliding else np.zeros(0, int)
        kept = np.asarray(sliding, int)[keep]
        plain = normals[kept] * np.array([groups[i][1][0] for i in kept])[:, None]
        along = np.einsum("ij,ji->i", plain, jumps[:, kept]) / np.sum(plain**2, axis=1)
        return padded_mode(fixed, chosen, reps[kept], slides, along)
