"""The layout's rules, read off the source with ``ast`` (imports inside functions count too).

- Only ``gradflow/cli/`` parses command lines: no other module imports ``argparse`` or
  ``gradflow.cli``.
- The packages outside ``gradflow/`` (``systems/``, ``benchmarks/``) and the tests use the
  engine through what ``gradflow`` exports: none imports a private module (a dotted name with a
  part starting with ``_``, e.g. ``gradflow._io`` or ``gradflow.cli._registry``).  Tests may
  import ``gradflow.cli`` and its command modules (public names); the engine's own tests
  (``tests/engine/``) may test its internals, any other test of one is listed in
  :data:`PRIVATE_IN_TESTS`.
- The packages depend one way, ``gradflow.cli → gradflow.benchmarks → gradflow.systems →
  gradflow`` (the engine), and no paper system imports another: a module of
  ``systems/<system>/`` imports only the engine, the modules at the top of ``systems/`` (the
  registry, the fate contract, the plane fate map, the figure contract) and its own system; the
  modules at the top of ``systems/`` import no system.
- No import cycle at run time anywhere (imports inside functions count; names imported under
  ``TYPE_CHECKING`` are never run).
- Every engine module sits in one layer of the diagram in ``docs/architecture.md`` and imports
  only from its own layer or the ones drawn above it.
"""

from __future__ import annotations

import ast
import graphlib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

PACKAGES = {
    "gradflow": "gradflow",
    "systems": "gradflow.systems",
    "benchmarks": "gradflow.benchmarks",
    "tests": "tests",
}
"""Source folder → the dotted name it is imported as (``pyproject.toml``'s package-dir)."""

PRIVATE_IN_TESTS = {
    ("tests.conftest", "gradflow._compiled.store"),
    ("tests.conftest", "gradflow.cli._setup"),
    ("tests.systems.markov.test_canonical_dynamics", "gradflow._portrait.separatrix"),
    ("tests.test_registry", "gradflow.cli._registry"),
}
"""``(test module, private module)``: tests outside ``tests/engine/`` of an engine internal that
is not exported."""


@dataclass(frozen=True)
class Import:
    """One imported name of a module.

    Attributes:
        name: the absolute dotted name: the module of ``import a.b``, or ``module.name`` for
            ``from module import name`` (which may be a submodule or an attribute).
        line: its line number.
        in_function: whether the import statement sits inside a function.
        for_types: whether it sits under ``if TYPE_CHECKING:`` (names for annotations only).
    """

    name: str
    line: int
    in_function: bool
    for_types: bool = False

    def within(self, prefix: str) -> bool:
        """Whether this is ``prefix`` or something inside it."""
        return self.name == prefix or self.name.startswith(prefix + ".")


def module_name(path: Path) -> str:
    """The dotted name a source file is imported as: ``systems/shallow_ntk/ntk.py`` → ``gradflow.systems.shallow_ntk.ntk``."""
    parts = path.relative_to(ROOT).with_suffix("").parts
    dotted = [PACKAGES[parts[0]], *parts[1:]]
    if dotted[-1] == "__init__":
        dotted.pop()
    return ".".join(dotted)


def imports(path: Path) -> list[Import]:
    """Every name the module at ``path`` imports, relative imports resolved."""
    module = module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: list[Import] = []

    def visit(node: ast.AST, in_function: bool, for_types: bool) -> None:
        if isinstance(node, ast.Import):
            found.extend(
                Import(alias.name, node.lineno, in_function, for_types) for alias in node.names
            )
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(package, node.module, node.level)
            found.append(Import(base, node.lineno, in_function, for_types))
            found.extend(
                Import(f"{base}.{a.name}", node.lineno, in_function, for_types) for a in node.names
            )
        inside = in_function or isinstance(
            node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
        )
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.body:
                visit(child, inside, True)
            for child in node.orelse:
                visit(child, inside, for_types)
            return
        for child in ast.iter_child_nodes(node):
            visit(child, inside, for_types)

    visit(ast.parse(path.read_text(), filename=str(path)), False, False)
    return found


def _is_type_checking(test: ast.expr) -> bool:
    """Whether an ``if`` tests ``TYPE_CHECKING`` or ``typing.TYPE_CHECKING``."""
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _resolve(package: str, module: str | None, level: int) -> str:
    """The absolute name of ``from {'.' * level}{module} import …`` inside ``package``."""
    if level == 0:
        return module or ""
    parts = package.split(".")
    base = parts[: len(parts) - (level - 1)]
    return ".".join([*base, module] if module else base)


def sources(*folders: str) -> Iterator[Path]:
    """Every ``.py`` file under the given top-level folders."""
    for folder in folders:
        yield from sorted((ROOT / folder).rglob("*.py"))


ENGINE_PACKAGES = {
    module_name(init.parent / "__init__.py") for init in (ROOT / "gradflow").rglob("__init__.py")
}
"""The engine's packages: ``gradflow`` and ``gradflow.cli``."""


def private_module(name: str) -> str | None:
    """The private engine module ``name`` is or lies in (``gradflow._io`` for
    ``gradflow._io.save_with_data``, ``gradflow._flow.rk`` for ``gradflow._flow.rk.Pair``), or
    ``None``: the first part starting with ``_`` (dunder names aside) follows an engine package,
    and the module is the deepest engine package on the way plus one part (a private folder
    itself holds nothing: ``from gradflow._flow import rk`` is checked as ``gradflow._flow.rk``)."""
    parts = name.split(".")
    for i, part in enumerate(parts[1:], start=1):
        if part.startswith("_") and not part.startswith("__"):
            if ".".join(parts[:i]) not in ENGINE_PACKAGES:
                return None
            end = i + 1
            while end < len(parts) and ".".join(parts[:end]) in ENGINE_PACKAGES:
                end += 1
            module = ".".join(parts[:end])
            return None if module in ENGINE_PACKAGES else module
    return None


def _where(path: Path, imported: Import, name: str) -> str:
    inside = " (inside a function)" if imported.in_function else ""
    return f"{path.relative_to(ROOT)}:{imported.line} imports {name}{inside}"


def test_the_import_helper_resolves_relative_and_nested_imports(tmp_path, monkeypatch) -> None:
    folder = tmp_path / "benchmarks"
    folder.mkdir()
    source = folder / "example.py"
    source.write_text(
        "import numpy as np\nfrom .tables import format_table\n\n"
        "def f():\n    from gradflow import _io\n\n"
        "if TYPE_CHECKING:\n    import jax\nelse:\n    import scipy\n"
    )
    monkeypatch.setattr(f"{__name__}.ROOT", tmp_path)
    found = {(i.name, i.line, i.in_function, i.for_types) for i in imports(source)}
    assert found == {
        ("numpy", 1, False, False),
        ("gradflow.benchmarks.tables", 2, False, False),
        ("gradflow.benchmarks.tables.format_table", 2, False, False),
        ("gradflow", 5, True, False),
        ("gradflow._io", 5, True, False),
        ("jax", 8, False, True),
        ("scipy", 10, False, False),
    }
    assert private_module("gradflow._io.save_with_data") == "gradflow._io"
    assert private_module("gradflow.cli._registry.MODELS") == "gradflow.cli._registry"
    assert private_module("gradflow._flow.rk.Pair") == "gradflow._flow.rk"
    assert private_module("gradflow.cli.main") is None
    assert (
        private_module("gradflow.systems.markov.reduced._markov_loss") is None
    )  # not the engine's


@pytest.mark.parametrize("folder", ["gradflow", "systems", "benchmarks"])
def test_only_the_cli_parses_command_lines(folder) -> None:
    cli = ROOT / "gradflow" / "cli"
    offending = {
        _where(path, imported, imported.name)
        for path in sources(folder)
        if cli not in path.parents
        for imported in imports(path)
        if imported.within("argparse") or imported.within("gradflow.cli")
    }
    assert not offending, "\n".join(sorted(offending))


@pytest.mark.parametrize("folder", ["systems", "benchmarks", "tests"])
def test_nothing_outside_the_engine_imports_a_private_module(folder) -> None:
    engine_tests = ROOT / "tests" / "engine"
    offending = {
        _where(path, imported, private)
        for path in sources(folder)
        if engine_tests not in path.parents
        for imported in imports(path)
        if (private := private_module(imported.name)) is not None
        and (module_name(path), private) not in PRIVATE_IN_TESTS
    }
    assert not offending, "\n".join(sorted(offending))


def test_the_engine_modules_import_in_one_direction() -> None:
    """No import cycle among the engine's modules (every module of ``gradflow/`` outside
    ``gradflow/cli/``), counting imports inside functions; names imported under
    ``TYPE_CHECKING`` are for annotations, never run, and make no cycle (the drawing
    primitives are typed against the results that call them)."""
    engine = engine_modules()
    graph = {
        name: {
            imported.name.rsplit(".", 1)[0] if imported.name not in engine else imported.name
            for imported in imports(path)
            if not imported.for_types
        }
        & set(engine) - {name}
        for name, path in engine.items()
    }
    order = graphlib.TopologicalSorter(graph)
    try:
        layers = list(order.static_order())
    except graphlib.CycleError as cycle:
        pytest.fail(f"import cycle among engine modules: {' → '.join(cycle.args[1])}")
    assert layers.index("gradflow._errors") < layers.index("gradflow._symbolic.model")


ARCHITECTURE = ROOT / "docs" / "architecture.md"


def written_layers(text: str) -> list[list[str]]:
    """The engine's layers as the diagram under "The engine's layers" draws them, first layer
    first: each layer's modules are the names in its left column (lines starting at column 0),
    layers are separated by a line holding only ``↓``; ``__init__`` is ``gradflow``."""
    section = text.split("## The engine's layers", 1)[1]
    diagram = section.split("```", 2)[1]
    layers: list[list[str]] = [[]]
    for line in diagram.splitlines():
        if line.strip() == "↓":
            layers.append([])
        elif line[:1] == "_":
            left = re.split(r"\s{2,}", line, maxsplit=1)[0]
            layers[-1] += re.findall(r"_\w+", left)
    return [
        ["gradflow" if m == "__init__" else f"gradflow.{m}" for m in layer]
        for layer in layers
        if layer
    ]


def test_the_layer_reader_reads_a_diagram() -> None:
    text = (
        "## The engine's layers\n\n```\n"
        "_errors, _text,     errors and types:\n"
        "_draw               tables and _pictures_\n"
        "                    of results\n"
        "        ↓\n"
        "_model              the model\n"
        "        ↓\n"
        "__init__            the re-exports\n```\n"
    )
    assert written_layers(text) == [
        ["gradflow._errors", "gradflow._text", "gradflow._draw"],
        ["gradflow._model"],
        ["gradflow"],
    ]


def engine_modules() -> dict[str, Path]:
    """The engine's modules by dotted name: every ``.py`` of ``gradflow/`` outside
    ``gradflow/cli/``."""
    cli = ROOT / "gradflow" / "cli"
    return {module_name(path): path for path in sources("gradflow") if cli not in path.parents}


def unit(module: str) -> str:
    """What a layer of the diagram lists a module under: its folder (``gradflow._flow`` for
    ``gradflow._flow.rk``), or the module itself at the root (``gradflow._errors``,
    ``gradflow``)."""
    return ".".join(module.split(".")[:2])


def test_every_engine_folder_says_what_it_owns() -> None:
    """Each folder of the engine opens with a module docstring naming its modules."""
    for folder in sorted(p for p in (ROOT / "gradflow").iterdir() if p.name.startswith("_")):
        if not folder.is_dir() or folder.name == "__pycache__":
            continue
        doc = ast.get_docstring(ast.parse((folder / "__init__.py").read_text())) or ""
        modules = sorted(p.stem for p in folder.glob("*.py") if p.stem != "__init__")
        missing = [m for m in modules if f"``{m}``" not in doc]
        assert doc and not missing, f"{folder.name}/__init__.py does not name {missing}"


def test_every_engine_module_is_in_one_written_layer() -> None:
    layers = written_layers(ARCHITECTURE.read_text())
    listed = [m for layer in layers for m in layer]
    twice = sorted({m for m in listed if listed.count(m) > 1})
    assert not twice, f"in more than one layer of docs/architecture.md: {twice}"
    units = {unit(m) for m in engine_modules()}
    missing = sorted(units - set(listed))
    assert not missing, (
        f"{missing} in no layer of the diagram in docs/architecture.md: add each to the "
        "layer of the modules it imports (or a layer below them)"
    )
    gone = sorted(set(listed) - units)
    assert not gone, f"docs/architecture.md lists modules that do not exist: {gone}"


def test_the_engine_imports_only_from_its_layer_or_above() -> None:
    """Imports at the top and inside functions count; names imported under ``TYPE_CHECKING``
    (for annotations, never run) may come from any layer."""
    layer_of = {
        m: depth
        for depth, layer in enumerate(written_layers(ARCHITECTURE.read_text()))
        for m in layer
    }
    engine = engine_modules()
    offending = set()
    for name, path in engine.items():
        for imported in imports(path):
            target = imported.name if imported.name in engine else imported.name.rsplit(".", 1)[0]
            if (
                target in engine
                and not imported.for_types
                and layer_of.get(unit(target), 0) > layer_of.get(unit(name), len(layer_of))
            ):
                offending.add(_where(path, imported, target))
    assert not offending, "imports from a lower layer:\n" + "\n".join(sorted(offending))


PACKAGE_ORDER = ("gradflow", "gradflow.systems", "gradflow.benchmarks", "gradflow.cli")
"""The packages, each importing only from the ones before it (``docs/architecture.md``)."""


def package_of(module: str) -> int:
    """The index in :data:`PACKAGE_ORDER` of the package ``module`` belongs to (the longest
    match)."""
    return max(
        (i for i, p in enumerate(PACKAGE_ORDER) if module == p or module.startswith(p + ".")),
        key=lambda i: len(PACKAGE_ORDER[i]),
    )


@pytest.mark.parametrize("folder", ["gradflow", "systems", "benchmarks"])
def test_the_packages_depend_one_way(folder) -> None:
    """``gradflow.cli → gradflow.benchmarks → gradflow.systems → gradflow``: the engine imports
    no system, a system no benchmark, and none of them the command line."""
    offending = set()
    for path in sources(folder):
        own = package_of(module_name(path))
        for imported in imports(path):
            if any(imported.within(p) for p in PACKAGE_ORDER[own + 1 :]):
                offending.add(_where(path, imported, imported.name))
    assert not offending, "\n".join(sorted(offending))


def system_of(module: str) -> str | None:
    """The paper system ``module`` belongs to (``markov`` for ``gradflow.systems.markov.fate``),
    or ``None`` for the shared modules at the top of ``systems/`` and anything outside it."""
    parts = module.split(".")
    if parts[:2] != ["gradflow", "systems"] or len(parts) < 3:
        return None
    return parts[2] if (ROOT / "systems" / parts[2]).is_dir() else None


def test_no_system_imports_another() -> None:
    """A paper system's modules import the engine, the shared modules at the top of
    ``systems/`` and their own system, never another system; the shared modules import no
    system (they name a system's modules only as data, ``"module:function"``)."""
    offending = set()
    for path in sources("systems"):
        own = system_of(module_name(path))
        for imported in imports(path):
            other = system_of(imported.name)
            if other is not None and other != own:
                offending.add(_where(path, imported, imported.name))
    assert not offending, "\n".join(sorted(offending))


def test_no_import_cycle_at_run_time() -> None:
    """No import cycle among all modules of the distribution (``gradflow/``, ``systems/``,
    ``benchmarks/``), counting imports inside functions; names imported under
    ``TYPE_CHECKING`` are for annotations, never run, and make no cycle."""
    modules = {module_name(path): path for path in sources("gradflow", "systems", "benchmarks")}
    graph = {
        name: {
            imported.name if imported.name in modules else imported.name.rsplit(".", 1)[0]
            for imported in imports(path)
            if not imported.for_types
        }
        & set(modules) - {name}
        for name, path in modules.items()
    }
    try:
        list(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError as cycle:
        pytest.fail(f"import cycle at run time: {' → '.join(cycle.args[1])}")


MAX_LINES = 600
"""No module of the engine, the systems or the benchmarks is longer than this."""


@pytest.mark.parametrize("folder", ["gradflow", "systems", "benchmarks"])
def test_no_module_is_longer_than_the_limit(folder) -> None:
    """Small modules with one job each: a module past :data:`MAX_LINES` lines is split along
    its seams."""
    long = {
        f"{path.relative_to(ROOT)}: {n} lines"
        for path in sources(folder)
        if (n := len(path.read_text().splitlines())) > MAX_LINES
    }
    assert not long, f"longer than {MAX_LINES} lines:\n" + "\n".join(sorted(long))


def test_every_package_folder_is_installed() -> None:
    """Every folder with an ``__init__.py`` under ``gradflow/``, ``systems/`` and
    ``benchmarks/`` is a package ``pyproject.toml`` lists: one it leaves out is missing from a
    ``pip install .`` (an editable install finds it anyway, so nothing else would fail)."""
    import tomllib

    listed = set(
        tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    )
    folders = {
        module_name(init)
        for top in ("gradflow", "systems", "benchmarks")
        for init in (ROOT / top).rglob("__init__.py")
    }
    assert folders - listed == set(), "add them to [tool.setuptools] packages"
    assert listed - folders == set(), "listed packages without a folder"
