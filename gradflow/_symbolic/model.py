"""The extension point: a reduced model declared once in SymPy, and its binding to values.

A reduced model is a loss ``L(θ; h)`` over a few scalar parameters ``θ`` with hyperparameters
``h``.  :class:`ReducedModel` is its declaration; :meth:`ReducedModel.bind` fixes ``h`` and gives
a :class:`BoundModel`, the :class:`~gradflow.Landscape` every algorithm of the engine works on.
No engine module knows any particular model.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import sympy as sp

from .._errors import GradflowError
from .._landscape.base import (
    DEFAULT_BOUND,
    MATRIX_CALL_SIZES,
    GradientField,
    Kinks,
    Landscape,
    host_cast,
    padded_call,
)
from .budget import budgeted_cache
from .closed_forms import (
    ClosedFormPiece,
    CriticalSetSpec,
    family_names,
    piece_functions,
    solved,
    solved_specs,
)
from .compiled import CompiledLoss, compile_loss
from .facts import (
    gradient_jumps,
    jumps,
    kink_form,
    kink_function,
    lower_bound,
    nonsmooth_atoms,
    readable,
)
from .full import FullModel
from .lowering import lambdify_jax, lambdify_numpy
from .stabilize import stabilize

__all__ = ["BoundModel", "ReducedModel", "show_domain"]

KINK_TOL = 1e-6
"""A point is on a kink when the kink function is within this of 0 (relative to ``max(1, |θ|)``)."""


@dataclass(frozen=True, eq=False)
class ReducedModel:
    """A reduced loss ``L(θ; h)`` declared in SymPy: the one thing a model author writes.

    For model authors, a model provides:

    - ``name``: the registry name (``"canonical"``).
    - ``params``: the parameter symbols ``θ`` in order, named in the paper's notation.  Symbols
      not declared ``real=True`` are replaced by real ones (and a note says so).
    - ``loss``: the SymPy expression of ``L``.  Use :class:`gradflow.LogSigmoid` and friends for
      cross-entropies; the standard unstable forms (``log(1 + exp(x))``) are rewritten anyway.

    Optional:

    - ``hyperparams``: the hyperparameter symbols ``h`` (e.g. ``p, q``); compiled functions take
      them as array arguments, so a sweep over ``h`` compiles once.
    - ``domains``: a SymPy set per hyperparameter (e.g. ``Interval.open(0, 1)``; default the
      real line); values outside are rejected with a message naming the value and the range.
    - ``invariants``: conserved quantities of the gradient flow ``dθ/dt = -∇L`` by name.
    - ``critical_sets``: closed-form critical sets (:class:`CriticalSetSpec`).  The engine
      classifies them (it is never told a kind), checks ``∇L = 0`` on them, and adds whatever
      ``sympy.solve`` and its numerical search find beyond them.
    - ``global_min_loss``: the closed-form value of ``inf L`` (e.g. an entropy rate).  Only a
      set whose loss equals a proven lower bound is reported as a global minimum: this value,
      or ``0`` where SymPy proves ``L ≥ 0``.
    - ``sublevel_shortcut``: ``True`` lets basin maps decide a trajectory as soon as its loss is
      below every non-global critical value.  Sound only when ``global_min_loss`` is declared,
      every sublevel set below that value is bounded (so the flow converges there), and no
      critical point lies outside the searched box; the model's docs must justify it.
    - ``critical_sets_complete``: ``True`` when the declared ``critical_sets`` hold every
      critical point of ``L`` for every ``h`` in the domains; :func:`gradflow.critical_sets`
      then skips its numerical search for others.  The model's docs must prove it (e.g. by the
      chain rule through a function whose derivative vanishes at one value only).
    - ``references``: further named closed-form quantities in ``h`` (``H(π)``, ``c*``, …).
    - ``plane``: the two parameter names drawn on portraits, x first (default the first two).
    - ``bounds``: the default range ``(lo, hi)`` of each parameter, for portraits, basin grids
      and the critical-point search; a parameter left out gets ``(-3, 3)``.
    - ``loss_unit``: the unit of ``L`` for labels (``"nats"`` for a cross-entropy in natural
      logs), default none.
    - ``full``: the full model the loss comes from (:class:`~gradflow.FullModel`: its
      ``embed(θ, h)``, its ``loss(W, h)``, optionally the induced metric ``JᵀJ`` in closed form
      and a left inverse ``project``), for the reduced-vs-full checks and fate maps; flows in
      the ``"induced"`` metric use its metric.
    - ``source``: the paper and equation the loss comes from.
    - ``notes``: remarks for reports, each shown where its condition on ``h`` holds, e.g.
      ``{"p + q = 1: the chain is i.i.d. …": Eq(p + q, 1)}``.

    Raises:
        GradflowError: repeated parameter names, a hyperparameter without a domain that is not
            the real line, a symbol of the loss that is neither, or an unknown name in ``plane``
            or ``bounds``.
    """

    name: str
    params: tuple[sp.Symbol, ...]
    loss: sp.Expr
    hyperparams: tuple[sp.Symbol, ...] = ()
    domains: Mapping[sp.Symbol, sp.Set] = field(default_factory=dict)
    invariants: Mapping[str, sp.Expr] = field(default_factory=dict)
    critical_sets: tuple[CriticalSetSpec, ...] = ()
    global_min_loss: sp.Expr | None = None
    sublevel_shortcut: bool = False
    references: Mapping[str, sp.Expr] = field(default_factory=dict)
    plane: tuple[str, str] | None = None
    bounds: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    loss_unit: str = ""
    full: FullModel | None = None
    source: str = ""
    notes: Mapping[str, sp.Basic] = field(default_factory=dict)
    critical_sets_complete: bool = False

    def __post_init__(self) -> None:
        params, hyper = tuple(self.params), tuple(self.hyperparams)
        names = [s.name for s in params]
        if len(set(names)) != len(names):
            raise GradflowError(f"parameter names must be distinct, got {names}")
        if not params:
            raise GradflowError(f"model {self.name!r} has no parameters")
        unreal = [s for s in (*params, *hyper) if s.is_real is not True]
        if unreal:
            _make_real(self, unreal)
            return
        domains = {h: self.domains.get(h, sp.Reals) for h in hyper}
        object.__setattr__(self, "params", params)
        object.__setattr__(self, "hyperparams", hyper)
        object.__setattr__(self, "domains", domains)
        object.__setattr__(self, "loss", sp.sympify(self.loss))
        if self.global_min_loss is not None:
            object.__setattr__(self, "global_min_loss", sp.sympify(self.global_min_loss))
        unknown = self.loss.free_symbols - set(params) - set(hyper)
        if unknown:
            raise GradflowError(
                f"loss of {self.name!r} has symbols {', '.join(sorted(map(str, unknown)))} "
                f"that are neither parameters ({', '.join(names)}) nor hyperparameters"
            )
        if self.plane is None:
            object.__setattr__(self, "plane", (names[0], names[1]) if len(names) > 1 else None)
        for name in [*(self.plane or ()), *self.bounds]:
            self.index(name)

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

    @property
    def compiled(self) -> CompiledLoss:
        """The model's compiled JAX functions (shared by all hyperparameter values)."""
        return compile_loss(
            self.params, self.hyperparams, self.loss, tuple(self.invariants.items())
        )

    def bound(self, name: str) -> tuple[float, float]:
        """The default range ``(lo, hi)`` of parameter ``name``."""
        self.index(name)
        lo, hi = self.bounds.get(name, DEFAULT_BOUND)
        return (float(lo), float(hi))

    def bind(self, **values: float) -> BoundModel:
        """The model at fixed hyperparameter values (validated, see :meth:`validate`)."""
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
            expected = ", ".join(self.hyperparam_names) or "none"
            raise GradflowError(
                f"unknown hyperparameter(s) {', '.join(sorted(extra))} for model "
                f"{self.name!r}; expected {expected}"
            )
        checked: dict[str, float] = {}
        for h in self.hyperparams:
            domain = self.domains[h]
            if h.name not in values:
                raise GradflowError(
                    f"missing hyperparameter {h.name} for model {self.name!r} "
                    f"(a number in {show_domain(domain)})"
                )
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


def _make_real(model: ReducedModel, unreal: list[sp.Symbol]) -> None:
    """Re-declare ``model`` with real symbols in place of ``unreal`` ones, with a note."""
    subs = {s: sp.Symbol(s.name, real=True) for s in unreal}

    def real(expr: Any) -> Any:
        return sp.sympify(expr).xreplace(subs)

    specs = tuple(
        replace(
            spec,
            solution={real(k): real(v) for k, v in spec.solution.items()},
            condition=real(spec.condition),
        )
        for spec in model.critical_sets
    )
    note = (
        f"parameters {', '.join(s.name for s in unreal)} were declared without real=True "
        "and are treated as real"
    )
    fields = {
        "params": tuple(real(s) for s in model.params),
        "hyperparams": tuple(real(s) for s in model.hyperparams),
        "domains": {real(k): v for k, v in model.domains.items()},
        "loss": real(model.loss),
        "invariants": {k: real(v) for k, v in model.invariants.items()},
        "critical_sets": specs,
        "global_min_loss": None if model.global_min_loss is None else real(model.global_min_loss),
        "references": {k: real(v) for k, v in model.references.items()},
        "notes": {**{k: real(v) for k, v in model.notes.items()}, note: sp.true},
    }
    redeclared = replace(model, **fields)
    for name, value in vars(redeclared).items():
        object.__setattr__(model, name, value)


def show_domain(domain: sp.Set) -> str:
    """Write an interval the way a paper would: ``(0, 1)``, ``[0, 1]``, ``(0, ∞)``."""
    if isinstance(domain, sp.Interval):
        lo = "-∞" if domain.start == -sp.oo else f"{float(domain.start):g}"
        hi = "∞" if domain.end == sp.oo else f"{float(domain.end):g}"
        return f"{'(' if domain.left_open else '['}{lo}, {hi}{')' if domain.right_open else ']'}"
    return str(domain)


@dataclass(frozen=True, eq=False)
class BoundModel(Landscape):
    """A :class:`ReducedModel` at validated hyperparameter values: a :class:`~gradflow.Landscape`.

    Build it with ``model.bind(p=0.7, q=0.6)`` or a model's factory such as
    ``gradflow.systems.markov.canonical(p=0.7, q=0.6)``, and pass it to the engine's functions
    (:func:`gradflow.critical_sets`, :func:`gradflow.flow`, :func:`gradflow.basins`,
    :func:`gradflow.portrait`).  Points ``θ`` have shape ``(..., dim)`` in the order of
    ``model.params``.
    """

    model: ReducedModel
    values: Mapping[str, float]

    @property
    def name(self) -> str:
        return self.model.name

    @property
    def param_names(self) -> tuple[str, ...]:
        return self.model.param_names

    @property
    def hyperparameters(self) -> Mapping[str, float]:
        return dict(self.values)

    @property
    def plane(self) -> tuple[str, str]:
        if self.model.plane is None:
            return Landscape.plane.fget(self)
        return self.model.plane

    def bound(self, name: str) -> tuple[float, float]:
        return self.model.bound(name)

    def index(self, name: str) -> int:
        return self.model.index(name)

    @functools.cached_property
    def h(self) -> jnp.ndarray:
        """Hyperparameter values as a float64 array, in the order of ``model.hyperparams``."""
        return host_cast([self.values[n] for n in self.model.hyperparam_names], np.float64)

    @property
    def compiled(self) -> CompiledLoss:
        """The model's compiled JAX functions (shared by all hyperparameter values)."""
        return self.model.compiled

    @property
    def field(self) -> GradientField:
        return self.compiled.field

    @property
    def args(self) -> jnp.ndarray:
        return self.h

    @property
    def induced_metric(self) -> Callable[[jax.Array, Any], jax.Array] | None:
        """``G(θ, h) = JᵀJ`` with ``J = ∂ ravel(embed(θ, h))/∂θ``, the metric of the model's
        full model (:attr:`FullModel.induced_metric`); ``None`` for a model without one."""
        return None if self.model.full is None else self.model.full.induced_metric

    @functools.cached_property
    def _subs(self) -> dict[sp.Symbol, float]:
        return {s: self.values[s.name] for s in self.model.hyperparams}

    @functools.cached_property
    def references(self) -> dict[str, float]:
        """The model's closed-form reference quantities at these hyperparameters."""
        out = {name: float(expr.subs(self._subs)) for name, expr in self.model.references.items()}
        if self.model.global_min_loss is not None:
            out.setdefault("global_min_loss", self.global_min_loss)
        return out

    @functools.cached_property
    def notes(self) -> list[str]:
        """The model's notes whose condition holds at these hyperparameters."""
        return [text for text, cond in self.model.notes.items() if bool(cond.subs(self._subs))]

    @functools.cached_property
    def global_min_loss(self) -> float | None:
        """``inf L`` as declared by the model, or the lower bound SymPy proves at these
        hyperparameter values (:func:`~gradflow._symbolic.facts.lower_bound`: the loss's
        constant term where the rest is proven ``≥ 0``, else ``0`` where ``L ≥ 0`` is; a set with
        that loss attains the bound); ``None`` when nothing is proven."""
        if self.model.global_min_loss is not None:
            return float(sp.N(self.model.global_min_loss.subs(self._subs)))
        return lower_bound(self._loss_at_values)[0]

    @functools.cached_property
    def _loss_at_values(self) -> sp.Expr:
        return self.model.loss.subs({s: sp.Float(v) for s, v in self._subs.items()})

    @property
    def symbolic_caveats(self) -> tuple[str, ...]:
        """The symbolic steps that ran out of their time budget, each with what it costs the
        report (:mod:`gradflow._symbolic.budget`)."""
        caveats = [solved(self.model)[1], jumps(self.model.params, self.model.loss)[1]]
        if self.model.global_min_loss is None:
            caveats.append(lower_bound(self._loss_at_values)[1])
        return tuple(c for c in caveats if c is not None)

    @property
    def sublevel_shortcut(self) -> bool:
        return self.model.sublevel_shortcut and self.model.global_min_loss is not None

    @property
    def critical_sets_complete(self) -> bool:
        return self.model.critical_sets_complete

    @property
    def loss_unit(self) -> str:
        return self.model.loss_unit

    @property
    def invariant_names(self) -> tuple[str, ...]:
        return tuple(self.model.invariants)

    def loss(self, theta: Any) -> np.ndarray:
        return padded_call(self.compiled.loss, theta, self.dim, (), self.h)

    def grad(self, theta: Any) -> np.ndarray:
        return padded_call(self.compiled.grad, theta, self.dim, (self.dim,), self.h)

    def hessian(self, theta: Any) -> np.ndarray:
        return padded_call(
            self.compiled.hessian, theta, self.dim, (self.dim, self.dim), self.h, MATRIX_CALL_SIZES
        )

    def point_grad(self, theta: np.ndarray) -> np.ndarray:
        return np.asarray(self.compiled.grad(np.asarray(theta, np.float64), self.h))

    def invariant(self, name: str, theta: Any) -> np.ndarray:
        if name not in self.model.invariants:
            return Landscape.invariant(self, name, theta)
        return padded_call(self.compiled.invariants[name], theta, self.dim, (), self.h)

    @functools.cached_property
    def closed_forms(self) -> tuple[ClosedFormPiece, ...]:
        """The declared critical sets and those ``sympy.solve`` finds, at these values."""
        specs = (*self.model.critical_sets, *solved_specs(self.model))
        return tuple(self._piece(spec) for spec in specs)

    @functools.cached_property
    def set_families(self) -> dict[str, str]:
        """Each closed-form set's report name → a name without the hyperparameters' values,
        the same at every value (``sympy.solve: x = 0.5, y = 0`` → ``x = sqrt(a), y = 0``): what
        follows a set across a sweep.  Where pieces meet at one value and share a report name
        there, the first piece names them."""
        families: dict[str, str] = {}
        for piece, family in zip(self.closed_forms, family_names(self.model)):
            families.setdefault(piece.name, family)
        return families

    def _piece(self, spec: CriticalSetSpec) -> ClosedFormPiece:
        values, condition = piece_functions(self.model, spec)
        equation = spec.equation or ", ".join(
            f"{k} = {readable(v, self._subs)}" for k, v in spec.solution.items()
        )
        return ClosedFormPiece(
            name=spec.name if spec.name != "sympy.solve" else f"sympy.solve: {equation}",
            equation=equation,
            free=tuple(i for i, s in enumerate(self.model.params) if s not in spec.solution),
            dependent=tuple(i for i, s in enumerate(self.model.params) if s in spec.solution),
            values=values,
            condition=condition,
            hyper=tuple(self._subs.values()),
            dim=self.dim,
        )

    @property
    def nonsmooth_terms(self) -> tuple[str, ...]:
        return gradient_jumps(self.model.params, self.model.loss)

    @property
    def kinks(self) -> Kinks | None:
        """The loss with a slope per kink (:func:`~gradflow._symbolic.facts.kink_form`), where its
        gradient jumps across a kink and the form covers every kink; its functions take
        ``(θ, h)`` as the field's do."""
        return _model_kinks(self.model) if self.nonsmooth_terms else None

    def kinks_at(self, theta: np.ndarray) -> list[str]:
        functions = _kink_functions(self.model)
        point = np.asarray(theta, dtype=float)
        scale = KINK_TOL * max(1.0, float(np.abs(point).max(initial=0.0)))
        with np.errstate(all="ignore"):
            return [
                term
                for term, fn in functions
                if abs(float(fn(*point, *self._subs.values()))) <= scale
            ]

    def kink_values(self, theta: Any) -> tuple[np.ndarray, np.ndarray]:
        theta = np.asarray(theta, dtype=float)
        shape, dim = theta.shape[:-1], theta.shape[-1]
        functions = _kink_gradients(self.model)
        values = np.zeros((*shape, len(functions)))
        grads = np.zeros((*shape, len(functions), dim))
        args = (*np.moveaxis(theta, -1, 0), *self._subs.values())
        with np.errstate(all="ignore"):
            for i, (value, gradient) in enumerate(functions):
                values[..., i] = np.broadcast_to(value(*args), shape)
                for j, part in enumerate(gradient):
                    grads[..., i, j] = np.broadcast_to(part(*args), shape)
        return values, grads

    def describe(self) -> dict[str, Any]:
        return {
            **Landscape.describe(self),
            "loss": str(self.model.loss),
            "source": self.model.source,
        }

    def __repr__(self) -> str:
        """``canonical(p=0.7, q=0.6)``; a model without hyperparameters by its name alone
        (``L = (x**2 - 1)**2 + y**2``, not followed by ``()``)."""
        if not self.values:
            return self.model.name
        hyper = ", ".join(f"{k}={v:g}" for k, v in self.values.items())
        return f"{self.model.name}({hyper})"


@functools.cache
def _model_kinks(model: ReducedModel) -> Kinks | None:
    """The :class:`Kinks` of a model's loss, compiled once per model."""
    form = kink_form(model.loss)
    if form is None:
        return None
    params, hyper = model.params, model.hyperparams
    loss_fn = lambdify_jax((*params, *form.slopes, *hyper), stabilize(form.loss))
    surface_fn = lambdify_jax((*params, *hyper), list(form.surfaces))

    def loss_at(theta: jax.Array, s: jax.Array, h: jax.Array) -> jax.Array:
        values = (*(theta[i] for i in range(len(params))), *(s[k] for k in range(len(s))))
        return loss_fn(*values, *(h[j] for j in range(len(hyper))))

    def surfaces(theta: jax.Array, h: jax.Array) -> jax.Array:
        values = (*(theta[i] for i in range(len(params))), *(h[j] for j in range(len(hyper))))
        return jnp.broadcast_to(surface_fn(*values), (len(form.surfaces),)).astype(theta.dtype)

    return Kinks(
        surfaces=surfaces,
        loss_at=loss_at,
        lo=np.asarray(form.lo),
        hi=np.asarray(form.hi),
        names=form.names,
    )


@budgeted_cache
def _kink_functions(model: ReducedModel) -> tuple[tuple[str, Callable[..., Any]], ...]:
    """``(term, kink function)`` in NumPy for each term of the loss whose kink makes ``∇L`` jump."""
    jumping = set(gradient_jumps(model.params, model.loss))
    symbols = (*model.params, *model.hyperparams)
    return tuple(
        (str(atom), lambdify_numpy(symbols, kink_function(atom)))
        for atom in nonsmooth_atoms(model.loss)
        if str(atom) in jumping
    )


@budgeted_cache
def _kink_gradients(
    model: ReducedModel,
) -> tuple[tuple[Callable[..., Any], tuple[Callable[..., Any], ...]], ...]:
    """``(k, (∂k/∂θ_1, …))`` in NumPy for the kink function ``k`` of each term of
    :func:`gradient_jumps` (in its order), functions of the parameters and hyperparameters."""
    jumping = gradient_jumps(model.params, model.loss)
    atoms = {str(atom): atom for atom in nonsmooth_atoms(model.loss)}
    symbols = (*model.params, *model.hyperparams)
    out = []
    for term in jumping:
        k = kink_function(atoms[term])
        out.append(
            (
                lambdify_numpy(symbols, k),
                tuple(lambdify_numpy(symbols, sp.diff(k, s)) for s in model.params),
            )
        )
    return tuple(out)
