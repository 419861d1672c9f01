"""How a flow is integrated, as values: the solver, the step-size controller and the stop rule.

:class:`FlowOptions` holds one of each and is what both entry points take
(:func:`gradflow.flow` for one trajectory, :func:`gradflow.flow_endpoints` for a batch):

- the **solver**: a diffrax solver (``diffrax.Tsit5()``), or the name of its class
  (``"Tsit5"``, one of :data:`SOLVERS`) — the same solver, spelled so that diffrax is imported
  only when something integrates — or :class:`GradientDescent` (the discrete map
  ``θ ← θ − η∇L``, whose step is its own);
- the **step-size controller**: :class:`PID` (error-controlled steps within ``rtol``, ``atol``)
  or :class:`ConstantStep` (a fixed step ``dt``);
- the **stop rule**: :class:`StopRule` (steady state at ``‖∇L‖₂ ≤ gtol``, the flow-time and
  step budgets, the divergence radius).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from .._errors import GradflowError

if TYPE_CHECKING:
    import diffrax

    from .rk import BatchedIntegrator

__all__ = ["SOLVERS", "ConstantStep", "FlowOptions", "GradientDescent", "PID", "StopRule"]

SOLVERS = (
    "Tsit5",
    "Dopri5",
    "Dopri8",
    "Bosh3",
    "Heun",
    "Midpoint",
    "Ralston",
    "Euler",
    "Kvaerno3",
    "Kvaerno4",
    "Kvaerno5",
    "ImplicitEuler",
    "Rodas4",
)
"""The ODE solvers :class:`FlowOptions` takes by name: diffrax's, and ``Rodas4``, gradflow's
own Rosenbrock method for stiff flows (:data:`gradflow._flow.rosenbrock.RODAS4`), the default."""


def _positive(**values: float) -> None:
    for name, value in values.items():
        if not value > 0:
            raise GradflowError(f"{name} = {value!r} must be > 0")


@dataclass(frozen=True)
class PID:
    """Error-controlled step sizes (diffrax's ``PIDController``; :class:`gradflow._flow.rk.StepControl`
    for the batched explicit pairs): a step is accepted where its local error estimate is at
    most ``atol + rtol·|θ|`` in every coordinate.

    Attributes:
        rtol: relative tolerance (dimensionless).
        atol: absolute tolerance (parameter units).

    Raises:
        GradflowError: a tolerance that is not positive.
    """

    rtol: float = 1e-7
    atol: float = 1e-9

    def __post_init__(self) -> None:
        _positive(rtol=self.rtol, atol=self.atol)


@dataclass(frozen=True)
class ConstantStep:
    """A fixed step ``dt`` (flow time units; on a landscape, units of its time scale ``ℓ/g``,
    as ``t_max``), with no error control: Euler with ``ConstantStep(dt)`` is gradient descent
    with step ``dt``.  Integrated through diffrax (``ConstantStepSize``), also in batches.

    Raises:
        GradflowError: ``dt`` not positive.
    """

    dt: float

    def __post_init__(self) -> None:
        _positive(dt=self.dt)


@dataclass(frozen=True)
class GradientDescent:
    """Plain gradient descent ``θ_{k+1} = θ_k − η∇L(θ_k)`` as a solver: the discrete map full
    training uses, one step advancing flow time by ``η``.

    One trajectory (:func:`gradflow.flow`) runs ``min(max_steps, ⌊t_max/η⌋)`` steps of the
    stop rule's budgets (it does not stop early), then labels its last iterate by the stop
    rule: converged where ``‖∇L‖₂ ≤ gtol``, diverged where an iterate left the divergence
    radius or was not finite (the path ends there).  In a batch
    (:func:`gradflow.flow_endpoints`) each member stops at its first iterate that meets the
    stop rule (or falls below the decision level), within the same budgets.  On a landscape
    ``η`` is in flow time units of the loss itself (not of its scales: the iterates are those
    of ``θ ← θ − η∇L``), while ``gtol`` and ``t_max`` keep their landscape units.  It takes no
    step-size controller.

    Attributes:
        lr: the step ``η`` (flow time units).

    Raises:
        GradflowError: ``lr`` not positive.
    """

    lr: float

    def __post_init__(self) -> None:
        _positive(lr=self.lr)


DIVERGENCE_REACH = 1e3
"""A relative divergence radius is this many times the extent of the problem (the box, the
starts): on the boxes of a few units the engine's models use, a few thousand."""


@dataclass(frozen=True)
class StopRule:
    """When a trajectory stops.

    Attributes:
        gtol: steady-state test ``‖∇L‖₂ ≤ gtol`` (loss units per parameter unit; on a landscape,
            in units of its gradient scale ``g``).
        t_max: flow-time budget (time units of the flow; on a landscape, of its time scale
            ``ℓ/g``).  The default, ``1e8 = 1/gtol``, is the time the flow needs to meet the
            steady-state test beside a minimum whose smallest curvature is ``gtol``, and more
            than it needs beside a degenerate one: on ``x⁴ + y⁴`` from ``(1, 1)``,
            ``x(t) = (1 + 8t)^{-1/2}`` and ``‖∇L‖₂ = 4√2 x³`` falls to ``gtol·g`` at
            ``t ≈ 6.7e3`` (``≈ 3e5`` in units of ``ℓ/g``); a flat minimum of order ``2k`` needs
            ``τ ~ gtol^{-(2k-2)/(2k-1)} < 1/gtol``.  Implicit solvers take steps growing with
            ``t`` there, so the step budget is not what a long time costs.
        max_steps: solver-step budget per trajectory.
        divergence_radius: ``‖θ‖₂`` above which a trajectory is labelled diverged (parameter
            units); ``None`` (the default): relative to the problem, :data:`DIVERGENCE_REACH`
            times the extent of the landscape's box, rounded up to a power of ten and at least
            ten times every start's norm (:meth:`FlowOptions.within`), so a minimum at
            ``(10⁴, 10⁴)`` is no divergence.  A flow of a field or of a loss over a pytree
            (no landscape, no box) takes the default range ``(-3, 3)`` of every parameter as
            its box, so weights that grow from a small initialization by many times their
            start are no divergence either.

    Raises:
        GradflowError: a tolerance, budget or radius that is not positive.
    """

    gtol: float = 1e-8
    t_max: float = 1e8
    max_steps: int = 20_000
    divergence_radius: float | None = None

    def __post_init__(self) -> None:
        _positive(gtol=self.gtol, t_max=self.t_max)
        if self.divergence_radius is not None:
            _positive(divergence_radius=self.divergence_radius)
        if self.max_steps < 1:
            raise GradflowError(f"max_steps = {self.max_steps!r} must be ≥ 1")


@dataclass(frozen=True)
class FlowOptions:
    """How the flow is integrated and when a trajectory stops: a solver, a step-size controller
    and a stop rule, each a value.

    Attributes:
        solver: a diffrax solver, the name of one (:data:`SOLVERS`: the same solver, with
            diffrax imported only when it integrates), ``"Rodas4"``, or
            :class:`GradientDescent`.  With a :class:`PID` controller the explicit pairs
            ``Tsit5`` and ``Dopri5`` run on gradflow's own
            :class:`~gradflow._flow.rk.BatchedRK` and ``Rodas4`` on its
            :class:`~gradflow._flow.rosenbrock.BatchedRosenbrock`, one trajectory or a batch;
            every other solver runs through diffrax.  The default, the L-stable Rosenbrock
            method ``Rodas4``, handles stiff flows (near the canonical model's global-minimum
            curve the Hessian eigenvalues reach -30 and an explicit solver stalls at its
            stability limit); it takes a :class:`PID` controller only.
        controller: :class:`PID` or :class:`ConstantStep`; ``None`` (the default) is
            ``PID()`` (``rtol = 1e-7``, ``atol = 1e-9``) for an ODE solver and stays ``None``
            for :class:`GradientDescent`, which has its step.
        stop: the stop rule (:class:`StopRule`).

    The tolerances and budgets are readable through the options too (``options.gtol`` is
    ``options.stop.gtol``, ``options.rtol`` is ``options.controller.rtol``).

    Raises:
        GradflowError: an unknown solver name, a controller given to gradient descent, a
            :class:`ConstantStep` given to ``Rodas4``, or a :class:`PID` controller's
            tolerances read under another controller.
    """

    solver: str | diffrax.AbstractSolver | GradientDescent = "Rodas4"
    controller: PID | ConstantStep | None = None
    stop: StopRule = field(default_factory=StopRule)

    def __post_init__(self) -> None:
        if isinstance(self.solver, str) and self.solver not in SOLVERS:
            raise GradflowError(f"solver {self.solver!r}: choose one of {', '.join(SOLVERS)}")
        if self.descent and self.controller is not None:
            raise GradflowError(
                f"GradientDescent takes its step from lr, not from controller {self.controller!r}"
            )
        if not self.descent and self.controller is None:
            object.__setattr__(self, "controller", PID())
        if not self.descent and not isinstance(self.controller, (PID, ConstantStep)):
            raise GradflowError(
                f"controller {self.controller!r}: give PID(rtol, atol) or ConstantStep(dt)"
            )
        if self.solver == "Rodas4" and not self.adaptive:
            raise GradflowError(
                f"Rodas4 controls its own steps: give PID(rtol, atol), not {self.controller!r} "
                "(a constant step runs on a diffrax solver, e.g. Kvaerno5 or Euler)"
            )
        if not isinstance(self.stop, StopRule):
            raise GradflowError(f"stop {self.stop!r}: give a StopRule")

    def with_stop(self, **changes: Any) -> FlowOptions:
        """These options with the stop rule's fields ``changes`` replaced (``gtol=1e-4``)."""
        return dataclasses.replace(self, stop=dataclasses.replace(self.stop, **changes))

    @property
    def descent(self) -> bool:
        """Whether the solver is :class:`GradientDescent`."""
        return isinstance(self.solver, GradientDescent)

    @property
    def by_name(self) -> bool:
        """Whether the solver is given by its name, so that these options' ``repr`` names all
        they do: a program built from them can be kept under that description
        (:func:`gradflow._compiled.store.stored_for`)."""
        return isinstance(self.solver, str)

    @property
    def adaptive(self) -> bool:
        """Whether the controller is :class:`PID` (error-controlled steps)."""
        return isinstance(self.controller, PID)

    @property
    def rtol(self) -> float:
        """The :class:`PID` controller's ``rtol``."""
        return self._pid().rtol

    @property
    def atol(self) -> float:
        """The :class:`PID` controller's ``atol``."""
        return self._pid().atol

    @property
    def gtol(self) -> float:
        """The stop rule's ``gtol``."""
        return self.stop.gtol

    @property
    def t_max(self) -> float:
        """The stop rule's ``t_max``."""
        return self.stop.t_max

    @property
    def max_steps(self) -> int:
        """The stop rule's ``max_steps``."""
        return self.stop.max_steps

    @property
    def divergence_radius(self) -> float:
        """The stop rule's ``divergence_radius``; where it is relative (``None``), the one of
        the starts alone (:meth:`within`)."""
        radius = self.stop.divergence_radius
        return DIVERGENCE_REACH if radius is None else radius

    def within(self, box: Any, starts: Any) -> FlowOptions:
        """These options with a relative divergence radius (``None``) made absolute for a
        problem on ``box`` (shape ``(dim, 2)``) from ``starts`` (shape ``(n, dim)``):
        :data:`DIVERGENCE_REACH` times the larger of the norms of the box's corners and of its
        diagonal (1 where both are 0), rounded up to a power of ten, then grown tenfold while a
        start lies beyond a tenth of it.  The runs of one problem share one radius, and so
        one compiled program.  Absolute radii are kept."""
        if self.stop.divergence_radius is not None:
            return self
        corners = np.asarray(box, dtype=np.float64).T
        extent = max(
            float(np.max(np.linalg.norm(corners, axis=1))),
            float(np.linalg.norm(corners[1] - corners[0])),
        )
        radius = 10.0 ** math.ceil(math.log10(DIVERGENCE_REACH * (extent or 1.0)))
        far = float(np.max(np.linalg.norm(np.atleast_2d(starts), axis=1), initial=0.0))
        while far > radius / 10:
            radius *= 10
        return self.with_stop(divergence_radius=radius)

    def _pid(self) -> PID:
        if not isinstance(self.controller, PID):
            raise GradflowError(
                f"rtol and atol are a PID controller's; these options have {self.controller!r}"
            )
        return self.controller

    @property
    def solver_name(self) -> str:
        """The solver's name (``"Tsit5"``), whether given as a name or as a value."""
        return self.solver if isinstance(self.solver, str) else type(self.solver).__name__

    def batched_integrator(self) -> BatchedIntegrator | None:
        """gradflow's own integrator of these options, for one trajectory or a batch:
        :class:`~gradflow._flow.rk.BatchedRK` for an explicit pair (``Tsit5``, ``Dopri5``,
        by name or as a diffrax solver) and :class:`~gradflow._flow.rosenbrock.BatchedRosenbrock`
        for ``Rodas4``, under a :class:`PID` controller; ``None`` for any other solver or
        controller, which diffrax integrates."""
        if not self.adaptive:
            return None
        from .rk import BatchedRK, StepControl, tableau_of
        from .rosenbrock import RODAS4, BatchedRosenbrock

        control = StepControl(self.rtol, self.atol)
        if self.solver == "Rodas4":
            return BatchedRosenbrock(RODAS4, control, self.t_max)
        tableau = tableau_of(self.solver)
        return None if tableau is None else BatchedRK(tableau, control, self.t_max)

    def diffrax_solver(self) -> diffrax.AbstractSolver:
        """The diffrax solver (made from its name on first use, which imports diffrax).

        Raises:
            GradflowError: the solver is :class:`GradientDescent`, which is no ODE solver, or
                ``Rodas4``, which is gradflow's own (:meth:`batched_integrator`).
        """
        if self.descent:
            raise GradflowError("GradientDescent is a discrete map, not a diffrax solver")
        if self.solver == "Rodas4":
            raise GradflowError("Rodas4 is gradflow's own solver, not a diffrax one")
        if not isinstance(self.solver, str):
            return self.solver
        import diffrax

        return getattr(diffrax, self.solver)()

    def metadata(self) -> dict[str, Any]:
        """JSON-ready description: the solver's class name, the controller's tolerances
        (``rtol`` and ``atol``, or ``dt``; gradient descent's ``lr``) and the stop rule's
        tolerance and budgets."""
        if isinstance(self.solver, GradientDescent):
            steps: dict[str, float] = {"lr": self.solver.lr}
        elif isinstance(self.controller, ConstantStep):
            steps = {"dt": self.controller.dt}
        else:
            steps = {"rtol": self.rtol, "atol": self.atol}
        return {
            "solver": self.solver_name,
            **steps,
            "gtol": self.gtol,
            "t_max": self.t_max,
            "max_steps": self.max_steps,
            "divergence_radius": self.divergence_radius,
        }
