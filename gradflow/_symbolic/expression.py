"""A loss written as text, e.g. ``"(x**2 - 1)**2 + y**2"``, built into SymPy without executing it.

The text is read by :mod:`gradflow._symbolic.grammar` (a checked ``ast`` walk); this module gives each
node its SymPy meaning.  Decimal numbers are read exactly (``0.1`` is 1/10), names are real
symbols.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from typing import Any

import sympy as sp

from .._errors import GradflowError
from .._output.text import shorten
from .functions import LogAddExp, LogSigmoid, Sigmoid, Softplus
from .grammar import check_names, read
from .model import ReducedModel

__all__ = ["FUNCTIONS", "loss_model", "parse_loss"]

_OWN = {"Sigmoid": Sigmoid, "LogSigmoid": LogSigmoid, "Softplus": Softplus, "LogAddExp": LogAddExp}
FUNCTIONS: dict[str, Any] = {
    **{name: getattr(sp, name) for name in ("Abs", "DiracDelta", "Heaviside", "Max", "Min")},
    **_OWN,
    "abs": sp.Abs,
    "max": sp.Max,
    "min": sp.Min,
    "sigmoid": Sigmoid,
    "log_sigmoid": LogSigmoid,
    "softplus": Softplus,
    "logaddexp": LogAddExp,
}
"""The SymPy meaning of a function name that is not SymPy's own lower-case function."""
_OPERATORS = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "/": lambda a, b: a / b,
    "**": lambda a, b: a**b,
}
_COMPARISONS = {"<": sp.Lt, "<=": sp.Le, ">": sp.Gt, ">=": sp.Ge}


class _SymPy:
    """The grammar's semantics that builds SymPy expressions (symbols are real)."""

    def __init__(self) -> None:
        self.symbols: dict[str, sp.Symbol] = {}

    def number(self, text: str) -> sp.Expr:
        return sp.Rational(text)

    def symbol(self, name: str) -> sp.Symbol:
        return self.symbols.setdefault(name, sp.Symbol(name, real=True))

    def constant(self, name: str) -> sp.Expr:
        return {"pi": sp.pi, "E": sp.E}[name]

    def operator(self, op: str, left: Any, right: Any) -> sp.Expr:
        return _OPERATORS[op](left, right)

    def chain(self, first: Any, rest: list[tuple[str, Any]]) -> sp.Expr:
        if rest[0][0] in "+-":
            return sp.Add(first, *(v if op == "+" else -v for op, v in rest))
        return sp.Mul(first, *(v if op == "*" else 1 / v for op, v in rest))

    def negate(self, value: Any) -> sp.Expr:
        return -value

    def call(self, name: str, args: list[Any]) -> sp.Expr:
        return FUNCTIONS.get(name, getattr(sp, name, None))(*args)

    def piecewise(self, pairs: list[tuple[Any, Any]]) -> sp.Expr:
        return sp.Piecewise(*pairs)

    def comparison(self, op: str, left: Any, right: Any) -> sp.Basic:
        return _COMPARISONS[op](left, right)

    def true(self) -> sp.Basic:
        return sp.true


def parse_loss(text: str) -> sp.Expr:
    """The SymPy expression of a loss written as text; every name is a real symbol.

    Powers are written ``**`` (``^`` is refused: in Python's grammar it binds more loosely than
    ``+``, so ``x^2 + 1`` would mean ``x^(2 + 1)``).

    Raises:
        GradflowError: a syntax error, an unknown function, or a construct outside the grammar
            (attribute access, keywords, strings, …), naming it and its column.
    """
    return sp.sympify(read(text, _SymPy()))


MAX_NODES = 2000
"""The largest loss compiled, in nodes of its SymPy tree (``sp.preorder_traversal``): a sum of
400 terms ``(x - k/400)**2`` (2004 nodes) compiles in 20 s within 0.4 GB; one of 500 terms
(2504 nodes) takes XLA's compiler past 16 GB."""


def _check_size(text: str, loss: sp.Expr) -> None:
    """Refuse a loss larger than :data:`MAX_NODES` nodes."""
    nodes = sum(1 for _ in sp.preorder_traversal(loss))
    if nodes > MAX_NODES:
        raise GradflowError(
            f"the loss {shorten(text.strip(), 40)!r} has {nodes} nodes in its expression tree; "
            f"at most {MAX_NODES} are compiled (larger ones take XLA's compiler past 2 GB)"
        )


def _check_numbers(text: str, loss: sp.Expr) -> None:
    """Refuse a loss holding a number no float can hold (``10**400``: exact in SymPy, infinite
    or an ``OverflowError`` once evaluated)."""
    for number in loss.atoms(sp.Number):
        try:
            finite = math.isfinite(float(number))
        except OverflowError:
            finite = False
        if not finite:
            raise GradflowError(
                f"the loss {text.strip()!r} holds the number {shorten(str(number), 24)}, "
                f"beyond the largest float ({sys.float_info.max:.4g})"
            )


def loss_model(
    text: str,
    params: Sequence[str] | None = None,
    hyperparams: Sequence[str] = (),
    name: str | None = None,
) -> ReducedModel:
    """A :class:`ReducedModel` from a loss written as text (see :func:`parse_loss`).

    Args:
        text: the loss, e.g. ``"(1 - x*y)**2"``.
        params: the parameters ``θ`` in order (default: every symbol that is not a
            hyperparameter, sorted by name).
        hyperparams: the names of the symbols given values at binding time.
        name: the model's name in reports and picture titles (default ``"L = <text>"``).

    Raises:
        GradflowError: the text does not parse; a parameter or hyperparameter that is not in
            the loss; a symbol that is neither; no parameter left; a number beyond the largest
            float (``10**400``); a loss of more than :data:`MAX_NODES` nodes.
    """
    builder = _SymPy()
    loss = sp.sympify(read(text, builder))
    _check_numbers(text, loss)
    _check_size(text, loss)
    symbols = builder.symbols
    order = check_names(text, set(symbols), params, hyperparams)
    return ReducedModel(
        name or f"L = {text.strip()}",
        tuple(symbols[n] for n in order),
        loss,
        hyperparams=tuple(symbols[n] for n in hyperparams),
        source=f"loss {text.strip()!r}",
    )
