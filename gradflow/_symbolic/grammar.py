"""The grammar of a loss written as text, read with Python's ``ast`` and never executed.

Allowed: numbers, names (real symbols, or the constants ``pi`` and ``E``), ``+ - * / **``,
unary ``-``/``+``, calls of the functions in :data:`FUNCTION_NAMES`, and inside ``Piecewise``,
``(expression, condition)`` pairs whose condition is one comparison or ``True``.  Anything else
(attributes, keywords, strings, ``^``, lambdas, …) is refused with its column, and so is a
number beyond the largest float (``1e400``).

:func:`read` walks a checked tree and hands each node to a *semantics* object, which builds the
result: the engine's SymPy semantics builds the expression (:mod:`gradflow._symbolic.expression`);
:class:`Names` only collects the symbols, so the command line can check a loss and its
parameters without importing SymPy.
"""

from __future__ import annotations

import ast
import keyword
import re
import sys
from collections.abc import Sequence
from typing import Any, Protocol

from .._errors import GradflowError
from .._output.text import shorten

__all__ = ["CONSTANT_NAMES", "FUNCTION_NAMES", "Names", "Semantics", "check_names", "read"]

FUNCTION_NAMES = (
    *("Abs", "DiracDelta", "Heaviside", "LogAddExp", "LogSigmoid", "Max", "Min", "Piecewise"),
    *("Sigmoid", "Softplus", "acos", "acosh", "acot", "acoth", "acsc", "acsch", "asec", "asech"),
    *("asin", "asinh", "atan", "atan2", "atanh", "cos", "cosh", "cot", "coth", "csc", "csch"),
    *("erf", "erfc", "erfinv", "exp", "gamma", "log", "loggamma", "polygamma", "sec", "sech"),
    *("sign", "sin", "sinh", "tan", "tanh"),
    *("abs", "max", "min", "sigmoid", "log_sigmoid", "softplus", "logaddexp"),
    *("sqrt", "cbrt", "real_root", "digamma"),
)
"""The functions a loss written as text may call: every function the engine lowers to JAX, the
aliases ``abs max min sigmoid log_sigmoid softplus logaddexp``, and ``sqrt cbrt real_root
digamma`` (written with powers and ``polygamma``)."""
CONSTANT_NAMES = ("pi", "E")
"""Names that stand for constants, not symbols."""
CONSTANT_MEANINGS = {"pi": "the number π", "E": "Euler's number e = 2.71828…"}
"""What each of :data:`CONSTANT_NAMES` stands for (``I`` is a real symbol here, not SymPy's
imaginary unit)."""
NOT_NUMBERS = ("nan", "inf", "infinity", "oo", "zoo")
"""Names (in any case) refused as symbols: they read as numbers that are not finite, and a loss
is a finite function of finite parameters."""
OPERATORS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Pow: "**"}
COMPARISONS = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}
MAX_LENGTH = 100_000
"""The longest loss text read, in characters."""
MAX_DEPTH = 32
"""The deepest nesting of operations read (a sum or product of many terms counts once): SymPy's
derivatives of deeper nests exceed Python's recursion limit."""
MAX_NESTING = 200
"""Python's parser reads at most 200 nested brackets; deeper nesting is refused."""
CHAINS = {ast.Add: "sum", ast.Sub: "sum", ast.Mult: "product", ast.Div: "product"}
"""Operators read as one n-ary sum or product (:meth:`Semantics.chain`)."""


class Semantics(Protocol):
    """What :func:`read` builds from each node of a checked tree."""

    def number(self, text: str) -> Any: ...
    def symbol(self, name: str) -> Any: ...
    def constant(self, name: str) -> Any: ...
    def operator(self, op: str, left: Any, right: Any) -> Any: ...
    def chain(self, first: Any, rest: list[tuple[str, Any]]) -> Any:
        """``first`` followed by ``(op, value)`` pairs, all ``+ -`` or all ``* /``."""
        ...

    def negate(self, value: Any) -> Any: ...
    def call(self, name: str, args: list[Any]) -> Any: ...
    def piecewise(self, pairs: list[tuple[Any, Any]]) -> Any: ...
    def comparison(self, op: str, left: Any, right: Any) -> Any: ...
    def true(self) -> Any: ...


def read(text: str, semantics: Semantics) -> Any:
    """Parse ``text`` and build it with ``semantics``.

    Raises:
        GradflowError: a syntax error or a construct outside the grammar, with its column.
    """
    source = text.strip()
    if not source:
        raise GradflowError("the loss is empty: give an expression in the parameters")
    if len(source) > MAX_LENGTH:
        raise GradflowError(
            f"the loss is {len(source)} characters long; at most {MAX_LENGTH} are read"
        )
    try:
        tree = ast.parse(source, mode="eval")
        return _Walker(source, semantics).walk(tree.body)
    except SyntaxError as error:
        what = (
            f"more than {MAX_NESTING} nested brackets"
            if "nested" in str(error.msg)
            else "invalid syntax"
        )
        if not error.offset:  # Python's offset 0: the text ended where more was expected
            what, column = "the loss ends unfinished", len(source) + 1
        else:
            column = error.offset
        if "never closed" in str(error.msg):
            what = "a bracket never closed"
        keywords = [w for w in re.findall(r"[A-Za-z_]\w*", source) if keyword.iskeyword(w)]
        if keywords and keywords[0] not in ("True", "False", "None"):
            raise GradflowError(
                f"{keywords[0]!r} is a Python keyword and cannot name a symbol of the loss "
                f"{shorten(source, 60)!r}; call it otherwise (e.g. {keywords[0]}_)"
            ) from None
        raise GradflowError(f"{what} at column {column} of {shorten(source, 60)!r}") from None
    except RecursionError:
        raise GradflowError(
            f"the loss {shorten(source, 60)!r} is nested too deeply to read "
            f"(at most {MAX_NESTING} levels of brackets, calls and unary signs)"
        ) from None


class _Walker:
    def __init__(self, text: str, semantics: Semantics) -> None:
        self.text, self.build = text, semantics
        self.depth = 0
        self.lines = [line.encode() for line in re.findall(r"[^\r\n]*(?:\r\n|\r|\n|$)", text)]

    def fail(self, node: ast.AST, what: str, offset: int | None = None) -> GradflowError:
        """The error ``what`` at ``node`` (or at the UTF-8 byte ``offset`` of its line), its
        column counted in characters from 1."""
        line = self.lines[getattr(node, "lineno", 1) - 1]
        start = node.col_offset if offset is None else offset
        column = len(line[:start].decode(errors="ignore")) + 1
        return GradflowError(f"{what} at column {column} of {shorten(self.text, 80)!r}")

    def operator_offset(self, node: ast.BinOp, symbol: bytes) -> int | None:
        """The byte offset of the operator ``symbol`` between the operands of ``node`` (on one
        line), or ``None``."""
        if node.left.end_lineno != node.lineno or node.right.lineno != node.lineno:
            return None
        line = self.lines[node.lineno - 1]
        found = line.find(symbol, node.left.end_col_offset, node.right.col_offset)
        return found if found >= 0 else None

    def source(self, node: ast.AST) -> str:
        """The text of ``node`` (a one-line node is cut from its line's UTF-8 bytes directly:
        ``ast.get_source_segment`` splits the whole text anew on every call)."""
        line = getattr(node, "lineno", None)
        if line is not None and line == node.end_lineno:
            return self.lines[line - 1][node.col_offset : node.end_col_offset].decode()
        return ast.get_source_segment(self.text, node) or type(node).__name__

    def walk(self, node: ast.AST) -> Any:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise self.fail(node, f"more than {MAX_DEPTH} nested operations (calls, powers, signs)")
        try:
            return self.node(node)
        finally:
            self.depth -= 1

    def node(self, node: ast.AST) -> Any:
        if isinstance(node, ast.Constant) and type(node.value) in (int, float):
            if not abs(node.value) <= sys.float_info.max:
                raise self.fail(
                    node,
                    f"number {self.source(node)} is beyond the largest float "
                    f"({sys.float_info.max:.4g})",
                )
            return self.build.number(self.source(node))
        if isinstance(node, ast.Name):
            return self.name(node)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitXor):
            raise self.fail(
                node, "'^' is not a power here: write ** (x**2)", self.operator_offset(node, b"^")
            )
        if isinstance(node, ast.BinOp) and type(node.op) in CHAINS:
            return self.chain(node)
        if isinstance(node, ast.BinOp) and type(node.op) in OPERATORS:
            op = OPERATORS[type(node.op)]
            return self.build.operator(op, self.walk(node.left), self.walk(node.right))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
            value = self.walk(node.operand)
            return self.build.negate(value) if isinstance(node.op, ast.USub) else value
        if isinstance(node, ast.Call):
            return self.call(node)
        raise self.fail(node, f"{type(node).__name__.lower()} {self.source(node)!r} is not allowed")

    def chain(self, node: ast.BinOp) -> Any:
        """``a + b - c + …`` or ``a * b / c * …`` (left-nested in the tree, one level per
        term) built in one step: a sum of 1000 terms costs no recursion and no quadratic work."""
        family = CHAINS[type(node.op)]
        pairs = []
        while isinstance(node, ast.BinOp) and CHAINS.get(type(node.op)) == family:
            pairs.append((OPERATORS[type(node.op)], node.right))
            node = node.left
        first = self.walk(node)
        return self.build.chain(first, [(op, self.walk(term)) for op, term in reversed(pairs)])

    def name(self, node: ast.Name) -> Any:
        if node.id in CONSTANT_NAMES:
            return self.build.constant(node.id)
        if node.id in FUNCTION_NAMES:
            raise self.fail(node, f"function {node.id!r} used without arguments")
        if node.id.startswith("_"):
            raise self.fail(node, f"name {node.id!r} is not allowed")
        if node.id.lower() in NOT_NUMBERS:
            raise self.fail(
                node,
                f"{node.id!r} is not a parameter name: it reads as a number that is not finite, "
                "and a loss must be finite",
            )
        return self.build.symbol(node.id)

    def call(self, node: ast.Call) -> Any:
        if not isinstance(node.func, ast.Name):
            raise self.fail(node, f"call of {self.source(node.func)!r} is not allowed")
        name = node.func.id
        if name not in FUNCTION_NAMES:
            known = ", ".join(sorted(FUNCTION_NAMES, key=str.lower))
            raise self.fail(node, f"unknown function {name!r} (known: {known})")
        if node.keywords:
            raise self.fail(node.keywords[0], f"keyword arguments of {name!r} are not allowed")
        if name == "Piecewise":
            return self.build.piecewise([self.piece(arg) for arg in node.args])
        return self.build.call(name, [self.walk(arg) for arg in node.args])

    def piece(self, node: ast.AST) -> tuple[Any, Any]:
        if not (isinstance(node, ast.Tuple) and len(node.elts) == 2):
            raise self.fail(node, "Piecewise takes (expression, condition) pairs")
        value, condition = node.elts
        return self.walk(value), self.condition(condition)

    def condition(self, node: ast.AST) -> Any:
        if isinstance(node, ast.Constant) and node.value is True:
            return self.build.true()
        if (
            isinstance(node, ast.Compare)
            and len(node.ops) == 1
            and type(node.ops[0]) in COMPARISONS
        ):
            left, right = self.walk(node.left), self.walk(node.comparators[0])
            return self.build.comparison(COMPARISONS[type(node.ops[0])], left, right)
        raise self.fail(node, "a Piecewise condition must be one comparison (x > 0) or True")


class Names:
    """Semantics that builds nothing and collects the symbol names (:attr:`found`)."""

    def __init__(self) -> None:
        self.found: set[str] = set()

    def symbol(self, name: str) -> None:
        self.found.add(name)

    def number(self, text: str) -> None: ...
    def constant(self, name: str) -> None: ...
    def operator(self, op: str, left: Any, right: Any) -> None: ...
    def chain(self, first: Any, rest: list[tuple[str, Any]]) -> None: ...
    def negate(self, value: Any) -> None: ...
    def call(self, name: str, args: list[Any]) -> None: ...
    def piecewise(self, pairs: list[tuple[Any, Any]]) -> None: ...
    def comparison(self, op: str, left: Any, right: Any) -> None: ...
    def true(self) -> None: ...


def check_names(
    text: str, symbols: set[str], params: Sequence[str] | None, hyperparams: Sequence[str]
) -> list[str]:
    """The parameter order of a loss with ``symbols``: ``params``, or by default every symbol
    that is not a hyperparameter, sorted by name.

    Raises:
        GradflowError: a parameter or hyperparameter named as a constant (``E``, ``pi``) or a
            Python keyword, or that is not in the loss, a name given as both, a symbol that is neither, or no parameter left.
    """
    hyper = list(hyperparams)
    names = list(params) if params is not None else sorted(symbols - set(hyper))
    for given, what in ((names, "parameter"), (hyper, "hyperparameter")):
        for name in given:
            if name in CONSTANT_MEANINGS:
                raise GradflowError(
                    f"{what} {name} clashes with {CONSTANT_MEANINGS[name]}, which {name} stands "
                    f"for in a loss; call the {what} otherwise (e.g. {name}_)"
                )
            if keyword.iskeyword(name):
                raise GradflowError(
                    f"{what} {name!r} is a Python keyword and cannot name a symbol; call it "
                    f"otherwise (e.g. {name}_)"
                )
        missing = [n for n in given if n not in symbols]
        if missing:
            raise GradflowError(
                f"{what} {', '.join(missing)} is not in the loss {text.strip()!r} "
                f"(its symbols: {', '.join(sorted(symbols)) or 'none'})"
            )
    both = set(names) & set(hyper)
    if both:
        raise GradflowError(
            f"{', '.join(sorted(both))} cannot be both a parameter and a hyperparameter"
        )
    loose = sorted(symbols - set(names) - set(hyper))
    if loose:
        raise GradflowError(
            f"symbol {', '.join(loose)} of the loss is neither a parameter "
            f"({', '.join(names) or 'none'}) nor a hyperparameter given a value"
        )
    if not names:
        raise GradflowError(f"the loss {text.strip()!r} has no parameter to flow in")
    return names
