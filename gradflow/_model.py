"""The extension point: a reduced model declared once, symbolically.

A reduced model is a loss ``L(θ; h)`` over a few scalar parameters ``θ`` with hyperparameters
``h``.  Everything the engine does (flows, critical sets, basins, portraits, sweeps) works from
this declaration alone; no engine module knows any particular model.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import sympy as sp

from ._errors import GradflowError

if TYPE_CHECKING:
    from ._bound import BoundModel

__all__ = ["CriticalSetSpec", "ReducedModel", "show_domain"]


@dataclass(frozen=True, eq=False)
class CriticalSetSpec:
    """A critical set of ``L`` known in closed form, written as a graph over free coordinates.

    Args:
        name: short name shown in reports and legends, e.g. ``"Γ*"`` or ``"e = 0"``.  Pieces that
            share a name and turn out to have the same kind are reported as one set.
        solution: the dependent parameters as SymPy expressions of the free parameters and the
            hyperparameters, e.g. ``{e: 0}`` for the line ``e = 0``.  Parameters not in
            ``solution`` are free; their number is the dimension of the set.
        condition: where on that graph the set lies (a SymPy boolean in ``θ`` and ``h``),
            e.g. ``w > -1/sqrt(2)``.  Points where it is false, or where ``solution`` is not real,
            are not on the set.
        equation: a human-readable equation, e.g. ``"e²(1 + 2w|w|) = c*"``.
    """

    name: str
    solution: Mapping[sp.Symbol, sp.Expr]
    condition: sp.Basic = sp.true
    equation: str | None = None


@dataclass(frozen=True, eq=False)
class ReducedModel:
    """A reduced loss ``L(θ; h)`` declared in SymPy: the one thing a model author writes.

    For model authors, a model provides:

    - ``name``: the registry name (``"canonical"``).
    - ``params``: the parameter symbols ``θ`` in order, named in the paper's notation, declared
      ``real=True``.
    - ``hyperparams``: the hyperparameter symbols ``h`` (e.g. ``p, q``); compiled functions take
      them as array arguments, so a sweep over ``h`` compiles once.
    - ``domains``: a SymPy set per hyperparameter (e.g. ``Interval.open(0, 1)``); values outside
      are rejected with a message naming the value and the range.
    - ``loss``: the SymPy expression of ``L`` in nats.  Use :class:`gradflow.LogSigmoid` and
      friends for cross-entropies, never ``log(1 + exp(x))``.

    Optional:

    - ``invariants``: conserved quantities of the gradient flow ``dθ/dt = -∇L`` by name.
    - ``critical_sets``: closed-form critical sets (:class:`CriticalSetSpec`).  The engine
      classifies them (it is never told a kind), checks ``∇L = 0`` on them, and adds whatever its
      numerical search finds beyond them.
    - ``global_min_loss``: the closed-form value of ``inf L`` (e.g. an entropy rate).
    - ``references``: further named closed-form quantities in ``h`` (``H(π)``, ``c*``, …).
    - ``plane``: the two parameter names drawn on portraits, x first (e.g. ``("w", "e")``).
    - ``bounds``: the default range ``(lo, hi)`` of each parameter, for portraits, basin grids
      and the critical-point search; a parameter left out gets ``(-3, 3)``.
    - ``embed``: ``embed(θ, h) -> full-model parameters`` for the reduced-vs-full checks.
    - ``source``: the paper and equation the loss comes from.
    - ``notes``: remarks for reports, each shown where its condition on ``h`` holds, e.g.
      ``{"p + q = 1: the chain is i.i.d. …": Eq(p + q, 1)}``.
    """

    name: str
    params: tuple[sp.Symbol, ...]
    hyperparams: tuple[sp.Symbol, ...]
    domains: Mapping[sp.Symbol, sp.Set]
    loss: sp.Expr
    invariants: Mapping[str, sp.Expr] = field(default_factory=dict)
    critical_sets: tuple[CriticalSetSpec, ...] = ()
    global_min_loss: sp.Expr | None = None
    references: Mapping[str, sp.Expr] = field(default_factory=dict)
    plane: tuple[str, str] | None = None
    bounds: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    embed: Callable[..., Any] | None = None
    source: str = ""
    notes: Mapping[str, sp.Basic] = field(default_factory=dict)

    def __post_init__(self) -> None:
        names = [s.name for s in self.params]
        if len(set(names)) != len(names):
            raise GradflowError(f"parameter names must be distinct, got {names}")
        missing = [h.name for h in self.hyperparams if h not in self.domains]
        if missing:
            raise GradflowError(f"hyperparameters {missing} have no domain")
        unknown = self.loss.free_symbols - set(self.params) - set(self.hyperparams)
        if unknown:
            raise GradflowError(f"loss has undeclared symbols {sorted(map(str, unknown))}")
        if self.plane is None:
            object.__setattr__(self, "plane", (names[-1], names[0]) if len(names) > 1 else None)

    @property
    def dim(self) -> int:
        """Number of parameters ``len(θ)``."""
        return len(self.params)

    @property
    def param_names(self) -> tuple[str, ...]:
        """Parameter names in order."""
        return tuple(s.name for s in self.params)

    @property
    def hyperparam_names(self) -> tuple[str, ...]:
        """Hyperparameter names in order."""
        return tuple(s.name for s in self.hyperparams)

    def bound(self, name: str) -> tuple[float, float]:
        """The default range ``(lo, hi)`` of parameter ``name``."""
        self.index(name)
        return tuple(self.bounds.get(name, (-3.0, 3.0)))

    def bind(self, **values: float) -> BoundModel:
        """The model at fixed hyperparameter values (validated, see :meth:`validate`)."""
        from ._bound import BoundModel

        return BoundModel(self, self.validate(values))

    def index(self, name: str) -> int:
        """Position of parameter ``name`` in ``θ``; raises :class:`GradflowError` if unknown."""
        try:
            return self.param_names.index(name)
        except ValueError:
            raise GradflowError(
                f"unknown parameter {name!r} of model {self.name!r}; "
                f"parameters are {', '.join(self.param_names)}"
            ) from None

    def validate(self, values: Mapping[str, float]) -> dict[str, float]:
        """Check hyperparameter values against their domains; return them as floats in order.

        Raises:
            GradflowError: a value is missing, unknown, not a finite number, or outside its
                domain; the message names the value and the valid range.
        """
        extra = set(values) - set(self.hyperparam_names)
        if extra:
            raise GradflowError(
                f"unknown hyperparameter(s) {sorted(extra)} for model {self.name!r}; "
                f"expected {', '.join(self.hyperparam_names)}"
            )
        checked: dict[str, float] = {}
        for h in self.hyperparams:
            domain = self.domains[h]
            if h.name not in values:
                raise GradflowError(f"missing hyperparameter {h.name} for model {self.name!r}")
            try:
                x = float(values[h.name])
            except (TypeError, ValueError):
                raise GradflowError(
                    f"{h.name} must be a number in {show_domain(domain)}, got {values[h.name]!r}"
                ) from None
            if not math.isfinite(x) or domain.contains(sp.Float(x)) is not sp.true:
                raise GradflowError(
                    f"{h.name} = {x:g} is outside the valid range {show_domain(domain)}"
                )
            checked[h.name] = x
        return checked


def show_domain(domain: sp.Set) -> str:
    """Write an interval the way a paper would: ``(0, 1)``, ``[0, 1]``, ``(0, ∞)``."""
    if isinstance(domain, sp.Interval):
        lo = "-∞" if domain.start == -sp.oo else f"{float(domain.start):g}"
        hi = "∞" if domain.end == sp.oo else f"{float(domain.end):g}"
        return f"{'(' if domain.left_open else '['}{lo}, {hi}{')' if domain.right_open else ']'}"
    return str(domain)
