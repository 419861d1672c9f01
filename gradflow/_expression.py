"""A loss written as text, e.g. ``"(x**2 - 1)**2 + y**2"``, read without executing it.

The text is parsed by Python's ``ast`` and every node is checked against a fixed grammar:
numbers, names (real symbols, or the constants ``pi`` and ``E``), ``+ - * / **``, calls of the
functions in :data:`FUNCTIONS`, and comparisons and tuples inside ``Piecewise``.  The checked tree
is then built into a SymPy expression node by node; nothing is passed to ``eval``, so a loss
cannot run arbitrary code.  An error names the offending name or column.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from typing import Any

import sympy as sp

from ._errors import GradflowError
from ._lowering import LOWERED_FUNCTIONS, LogAddExp, LogSigmoid, Sigmoid, Softplus
from ._model import ReducedModel

__all__ = ["FUNCTIONS", "loss_model", "parse_loss"]

_OWN = {"Sigmoid": Sigmoid, "LogSigmoid": LogSigmoid, "Softplus": Softplus, "LogAddExp": LogAddExp}
_ALIASES = {
    "abs": "Abs",
    "max": "Max",
    "min": "Min",
    "sigmoid": "Sigmoid",
    "log_sigmoid": "LogSigmoid",
    "softplus": "Softplus",
    "logaddexp": "LogAddExp",
}
FUNCTIONS: dict[str, Any] = {
    **{name: _OWN.get(name) or getattr(sp, name) for name in LOWERED_FUNCTIONS},
    **{alias: _OWN.get(name) or getattr(sp, name) for alias, name in _ALIASES.items()},
    "sqrt": sp.sqrt,
    "cbrt": sp.cbrt,
    "real_root": sp.real_root,
    "digamma": sp.digamma,
}
"""The functions a loss written as text may call, by the name it uses."""
CONSTANTS = {"pi": sp.pi, "E": sp.E}
"""Names that stand for constants, not symbols."""
_OPERATORS = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
    ast.Pow: lambda a, b: a**b,
}
_COMPARISONS = {ast.Lt: sp.Lt, ast.LtE: sp.Le, ast.Gt: sp.Gt, ast.GtE: sp.Ge}


def parse_loss(text: str) -> sp.Expr:
    """The SymPy expression of a loss written as text; every name is a real symbol.

    Powers are written ``**`` (``^`` is refused: in Python's grammar it binds more loosely than
    ``+``, so ``x^2 + 1`` would mean ``x^(2 + 1)``).  Decimal numbers are read exactly (``0.1``
    is 1/10).

    Raises:
        GradflowError: a syntax error, an unknown function, or a construct outside the grammar
            (attribute access, keywords, strings, …), naming it and its column.
    """
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as error:
        column = (error.offset or 1) - (len(text) - len(text.lstrip()))
        raise GradflowError(f"invalid syntax at column {column} of {text.strip()!r}") from None
    return _Builder(text.strip()).build(tree.body)


class _Builder:
    """Builds a SymPy expression from a checked ``ast`` tree of ``text``."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.symbols: dict[str, sp.Symbol] = {}

    def fail(self, node: ast.AST, what: str) -> GradflowError:
        return GradflowError(f"{what} at column {node.col_offset + 1} of {self.text!r}")

    def build(self, node: ast.AST) -> Any:
        if isinstance(node, ast.Constant) and type(node.value) in (int, float):
            return sp.Rational(ast.get_source_segment(self.text, node) or repr(node.value))
        if isinstance(node, ast.Name):
            return self.name(node)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitXor):
            raise self.fail(node, "'^' is not a power here: write ** (x**2)")
        if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
            return _OPERATORS[type(node.op)](self.build(node.left), self.build(node.right))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            value = self.build(node.operand)
            return -value if isinstance(node.op, ast.USub) else value
        if isinstance(node, ast.Call):
            return self.call(node)
        raise self.fail(
            node, f"{type(node).__name__.lower()} {_source(self.text, node)!r} is not allowed"
        )

    def name(self, node: ast.Name) -> Any:
        if node.id in CONSTANTS:
            return CONSTANTS[node.id]
        if node.id in FUNCTIONS:
            raise self.fail(node, f"function {node.id!r} used without arguments")
        if node.id.startswith("_"):
            raise self.fail(node, f"name {node.id!r} is not allowed")
        return self.symbols.setdefault(node.id, sp.Symbol(node.id, real=True))

    def call(self, node: ast.Call) -> Any:
        if not isinstance(node.func, ast.Name):
            raise self.fail(node, f"call of {_source(self.text, node.func)!r} is not allowed")
        name = node.func.id
        if name not in FUNCTIONS:
            raise self.fail(
                node, f"unknown function {name!r} (known: {', '.join(sorted(FUNCTIONS))})"
            )
        if node.keywords:
            raise self.fail(node, f"keyword arguments of {name!r} are not allowed")
        if name == "Piecewise":
            return sp.Piecewise(*(self.piece(arg) for arg in node.args))
        return FUNCTIONS[name](*(self.build(arg) for arg in node.args))

    def piece(self, node: ast.AST) -> tuple[Any, Any]:
        if not (isinstance(node, ast.Tuple) and len(node.elts) == 2):
            raise self.fail(node, "Piecewise takes (expression, condition) pairs")
        value, condition = node.elts
        return self.build(value), self.condition(condition)

    def condition(self, node: ast.AST) -> Any:
        if isinstance(node, ast.Constant) and node.value is True:
            return sp.true
        if (
            isinstance(node, ast.Compare)
            and len(node.ops) == 1
            and type(node.ops[0]) in _COMPARISONS
        ):
            left, right = self.build(node.left), self.build(node.comparators[0])
            return _COMPARISONS[type(node.ops[0])](left, right)
        raise self.fail(node, "a Piecewise condition must be one comparison (x > 0) or True")


def _source(text: str, node: ast.AST) -> str:
    return ast.get_source_segment(text, node) or type(node).__name__


def loss_model(
    text: str,
    params: Sequence[str] | None = None,
    hyperparams: Sequence[str] = (),
    name: str = "loss",
) -> ReducedModel:
    """A :class:`ReducedModel` from a loss written as text (see :func:`parse_loss`).

    Args:
        text: the loss, e.g. ``"(1 - x*y)**2"``.
        params: the parameters ``θ`` in order (default: every symbol that is not a
            hyperparameter, sorted by name).
        hyperparams: the names of the symbols given values at binding time.
        name: the model's name in reports.

    Raises:
        GradflowError: the text does not parse; a parameter or hyperparameter that is not in
            the loss; a symbol that is neither; no parameter left.
    """
    loss = parse_loss(text)
    symbols = {s.name: s for s in loss.free_symbols}
    hyper = list(hyperparams)
    names = list(params) if params is not None else sorted(set(symbols) - set(hyper))
    for given, what in ((names, "parameter"), (hyper, "hyperparameter")):
        missing = [n for n in given if n not in symbols]
        if missing:
            raise GradflowError(
                f"{what} {', '.join(missing)} is not in the loss {text!r} "
                f"(its symbols: {', '.join(sorted(symbols)) or 'none'})"
            )
    both = set(names) & set(hyper)
    if both:
        raise GradflowError(
            f"{', '.join(sorted(both))} cannot be both a parameter and a hyperparameter"
        )
    loose = sorted(set(symbols) - set(names) - set(hyper))
    if loose:
        raise GradflowError(
            f"symbol {', '.join(loose)} of the loss is neither a parameter "
            f"({', '.join(names) or 'none'}) nor a hyperparameter given a value"
        )
    if not names:
        raise GradflowError(f"the loss {text!r} has no parameter to flow in")
    return ReducedModel(
        name,
        tuple(symbols[n] for n in names),
        loss,
        hyperparams=tuple(symbols[n] for n in hyper),
        source=f"loss {text!r}",
    )
