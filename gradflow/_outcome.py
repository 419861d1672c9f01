"""How a gradient flow ends (:class:`Outcome`) and the kinds of critical sets (:class:`Kind`).

One integer code per outcome serves everywhere: the status the integrators compute inside
their JAX programs, what a trajectory reached, and a basin map's labels.  The first five
outcomes are the kinds of critical set a flow can reach, in the order of :class:`Kind`, so a
kind's code is its outcome's (:attr:`Kind.outcome`) and a converged grid point's label is the
code of its attractor's kind.  Every output writes a member by its lower-case name
(``"global_min"``, ``"not_converged"``); each member's :attr:`message` says what it means.
"""

from __future__ import annotations

import enum

from ._errors import GradflowError

__all__ = ["KINDS", "LABELS", "Kind", "Outcome"]


class Outcome(enum.IntEnum):
    """How a gradient flow from one start ended; the value is its code in every array.

    ``str(outcome)`` is its lower-case name, the one every output writes; ``message`` says
    what it means.  A trajectory's status is one of ``GLOBAL_MIN`` (stopped below a decision
    level), ``CONVERGED``, ``DIVERGED``, ``NOT_CONVERGED`` or ``NON_SMOOTH``; what it reached
    and a basin map's label name the kind of a converged endpoint instead of ``CONVERGED``.
    ``GLOBAL_MIN`` is code 0, so it is falsy: test an optional outcome with ``is None``.
    """

    message: str

    def __new__(cls, code: int, message: str) -> Outcome:
        member = int.__new__(cls, code)
        member._value_ = code
        member.message = message
        return member

    GLOBAL_MIN = (
        0,
        "at a global minimum; a trajectory stopped by a decision level fell below every "
        "other critical value, so it ends at one",
    )
    LOCAL_MIN = 1, "at a local minimum, above the global one"
    SADDLE = 2, "at a saddle: the start lies on its stable manifold"
    LOCAL_MAX = 3, "at a local maximum: the start lies on its stable manifold"
    DEGENERATE = 4, "at a degenerate critical set, which the Hessian and loss probes leave open"
    DIVERGED = 5, "‖θ‖₂ exceeded the divergence radius, or θ became non-finite"
    NOT_CONVERGED = 6, "the budget (t_max flow time or max_steps solver steps) ran out first"
    NON_SMOOTH = (
        7,
        "the budget ran out on a kink of a non-smooth loss (|x| at x = 0), where the gradient "
        "flow is not defined",
    )
    CONVERGED = (
        8,
        "‖∇L‖₂ ≤ gtol with no escape along an unstable direction: at a critical point whose "
        "kind is classified afterwards",
    )

    def __str__(self) -> str:
        return self.name.lower()

    @property
    def kind(self) -> Kind | None:
        """The kind of critical set this outcome reaches, or ``None`` (no set, or not yet
        classified)."""
        return _KIND_OF.get(self)

    @classmethod
    def of(cls, name: str) -> Outcome:
        """The outcome named ``name`` (``"saddle"``, ``"diverged"``, …).

        Raises:
            GradflowError: an unknown name; the message lists the names.
        """
        for outcome in cls:
            if str(outcome) == name:
                return outcome
        names = ", ".join(str(o) for o in cls)
        raise GradflowError(f"unknown outcome {name!r}; outcomes are {names}")


class Kind(enum.StrEnum):
    """The kind of a critical set, classified from the Hessian's signs (Morse index, nullity)
    and, where it is singular, loss probes along its null space.

    A member is a ``str``, its lower-case name (``"global_min"``): it is that string in every
    output (text, JSON, NPZ) and compares equal to it.  Members come in reporting order.
    """

    outcome: Outcome
    message: str

    def __new__(cls, outcome: Outcome, message: str) -> Kind:
        member = str.__new__(cls, str(outcome))
        member._value_ = str(outcome)
        member.outcome = outcome
        member.message = message
        return member

    GLOBAL_MIN = (
        Outcome.GLOBAL_MIN,
        "a minimum at the least loss: the proven inf L where the landscape gives one, else the "
        "least critical value found",
    )
    LOCAL_MIN = (
        Outcome.LOCAL_MIN,
        "a minimum above the global one: no Hessian eigenvalue below zero, and the loss rising "
        "along the Hessian's null space",
    )
    SADDLE = (
        Outcome.SADDLE,
        "the loss falls along some directions and rises along others (Morse index between 0 "
        "and the dimension, or loss probes both ways along the null space)",
    )
    LOCAL_MAX = (
        Outcome.LOCAL_MAX,
        "no Hessian eigenvalue above zero, and the loss falling along the Hessian's null space",
    )
    DEGENERATE = (
        Outcome.DEGENERATE,
        "a vanishing Hessian with the loss flat along every probe: its order is not decided",
    )

    @property
    def code(self) -> int:
        """The integer code of the outcome of a flow that reaches this kind."""
        return int(self.outcome)


_KIND_OF = {kind.outcome: kind for kind in Kind}

KINDS = tuple(Kind)
"""The kinds of critical points and sets, in reporting order (their codes ``0 … 4``)."""
LABELS = tuple(str(o) for o in Outcome if o is not Outcome.CONVERGED)
"""The names of the outcomes a basin map holds, in code order: ``BasinMap.labels`` indexes it
(a converged grid point is labelled by its attractor's kind)."""
