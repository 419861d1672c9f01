"""Every example in README.md and docs/**/*.md runs as written, so that a change of the API or
of an option breaks the suite and not the reader.

What is collected:

- each fenced ```` ```python ```` block: executed with a fresh namespace, in a fresh working
  folder; a block preceded by the comment ``<!-- continued -->`` runs after the block before it
  on the page, in the same namespace;
- each ``gradflow …`` command: a line of a code block (fenced or indented; after a ``$``
  prompt, environment variables, ``time`` or ``sh -c '…'``), and an inline code span that starts
  with ``gradflow ``. A synopsis with placeholders (``gradflow bench NAME``, ``--p P``,
  ``[--json]``, ``…``) is a template, not an example, and is left out; so is a line a command
  prints (``gradflow sweep: …``). An inline span without options names a command
  (``gradflow fate``): it is checked to exist, with ``--help``.

In the default suite each command is parsed by the command line's own parser
(:func:`gradflow.cli.parser`: every option exists and its value parses), and each Python block
runs unless the page marks it ``<!-- slow -->`` (a slow block is compiled and its ``gradflow``
imports resolved instead). With ``-m slow`` the slow blocks run too, and every command of a
code block runs for real, the commands of a page one after the other in one folder (a later one
may read what an earlier one wrote), at the smaller sizes of :data:`SMALLER` (a figure's
``--out`` folder made first, as its reader would make it). A block that needs what the test
machine cannot have is marked ``<!-- not run: REASON -->``: a Python block is then compiled and
its ``gradflow`` imports resolved, a block of commands parsed only.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import importlib
import io
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]

MARK = re.compile(r"^\s*<!--\s*(slow|continued|not run:.*?)\s*-->\s*$")
"""A comment on the line before a block (blank lines between allowed): how the block runs."""

SMALLER: dict[tuple[str, ...], dict[str, str]] = {
    ("portrait",): {"--grid": "21"},
    ("basins",): {"--grid": "21"},
    ("sweep",): {"--grid": "5"},
    ("fate",): {
        "--quick": "",
        "--grid": "3",
        "--seeds": "1",
        "--max-steps": "500",
        "--transformer-steps": "40",
    },
    ("figures", "local-to-global-phase-diagram"): {"--cells": "3", "--grid": "5"},
    ("figures", "local-to-global-fig1"): {"--grid": "11"},
    ("figures", "local-to-global-fate-map"): {"--grid": "2", "--basin-grid": "11"},
    ("figures", "local-to-global-training"): {"--steps": "20", "--seeds": "1", "--seq-len": "8"},
    ("figures", "local-to-global-overlay"): {"--steps": "20", "--seeds": "1", "--grid": "11"},
    ("figures", "canonical-attention"): {"--grid": "5", "--directions": "8"},
    ("figures", "induction-heads"): {
        "--transformer-steps": "20",
        "--minimal-steps": "20",
        "--seeds": "1",
        "--grid": "5",
        "--shares": "0 1",
    },
    ("figures", "shallow-ntk"): {"--widths": "2,4", "--steps": "10", "--seeds": "1"},
    ("figures", "two-mixture"): {"--m": "16", "--omegas": "1e-2,1e-1"},
    ("bench", "sweep"): {"--cells": "3", "--grid": "5"},
    ("bench", "basins"): {"--grid": "21", "--lsoda-samples": "2", "--rk45-samples": "1"},
    ("bench", "fate"): {"--grid": "2"},
    ("bench", "train"): {"--length": "16,32", "--steps": "10", "--repeats": "1"},
    ("bench", "startup"): {"--repeats": "1"},
    ("bench", "bifurcations"): {"--cells": "5", "--grid": "5"},
    ("bench", "induction-heads"): {"--steps": "10"},
    ("bench", "shallow-ntk"): {"--n-samples": "4", "--width": "16", "--repeats": "1"},
    ("train",): {"--steps": "10", "--seeds": "1", "--seq-len": "8"},
    ("compare",): {"--points": "2", "--steps": "10"},
    ("induction-heads",): {"--steps": "10", "--T": "10", "--seeds": "1"},
    ("shallow-ntk",): {"--widths": "2,4", "--steps": "10", "--seeds": "1"},
    ("two-mixture",): {"--m": "16"},
}
"""What a slow run changes in a command so that it finishes in seconds to a minute: for the
command (its first word, or its first two for ``figures`` and ``bench``), each option is given
this value (its words), replacing the one written, or added where none is and the command
takes it (``""``: a flag, added); the fate maps run at their ``--quick`` size.  A figure drawn from a saved sweep (``--sweep``) is
run as written, and a sweep over ``0.05:0.95:19`` runs over ``0.05:0.95:3``.  The sizes are
otherwise the documented command's."""

ALIASES = {"icl": "induction-heads", "ntk": "shallow-ntk", "mixture": "two-mixture"}
"""Earlier names of commands and benchmarks, which the command line still accepts."""


@dataclass(frozen=True)
class Block:
    """A code block of a page: its language (``""`` for none or an indented block), its text
    (dedented), the line its text starts on, and the marks before it."""

    page: Path
    line: int
    lang: str
    text: str
    mark: str = ""

    @property
    def where(self) -> str:
        return f"{label(self.page)}:{self.line}"


def label(page: Path) -> str:
    """The page's path from the repository's root (its name, for a page outside it)."""
    return str(page.relative_to(ROOT)) if page.is_relative_to(ROOT) else page.name


def blocks(page: Path) -> list[Block]:
    """The fenced blocks (at any indentation) and the indented blocks of a Markdown page."""
    lines = page.read_text().splitlines()
    found: list[Block] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        fence = re.match(r"^(\s*)(```+)\s*([\w-]*)", line)
        if fence:
            indent, ticks, lang = len(fence[1]), fence[2], fence[3]
            end = next(
                (j for j in range(i + 1, len(lines)) if lines[j].strip().startswith(ticks)),
                len(lines),
            )
            text = "\n".join(x[indent:] if x[:indent].isspace() else x for x in lines[i + 1 : end])
            found.append(Block(page, i + 2, lang, text + "\n", mark_before(lines, i)))
            i = end + 1
        elif line.startswith("    ") and (i == 0 or not lines[i - 1].strip()) and line.strip():
            end = i
            while end < len(lines) and (lines[end].startswith("    ") or not lines[end].strip()):
                end += 1
            text = "\n".join(x[4:] for x in lines[i:end])
            found.append(Block(page, i + 1, "", text.rstrip() + "\n", mark_before(lines, i)))
            i = end
        else:
            i += 1
    return found


def mark_before(lines: list[str], start: int) -> str:
    """The mark comment on the nearest non-blank line before ``lines[start]``, or ``""``."""
    for line in reversed(lines[:start]):
        if line.strip():
            match = MARK.match(line)
            return match[1] if match else ""
    return ""


def outside_code(page: Path) -> str:
    """The page's text without its fenced blocks."""
    return re.sub(r"^\s*```.*?^\s*```", "", page.read_text(), flags=re.S | re.M)


def python_examples() -> Iterator[tuple[str, str, str]]:
    """``(where, source, mark)`` of every Python example; a block marked ``continued`` is
    joined to the example before it on its page."""
    for page in PAGES:
        examples: list[list] = []
        for block in blocks(page):
            if block.lang != "python":
                continue
            if block.mark == "continued":
                assert examples, f"{block.where}: nothing before it to continue"
                examples[-1][1] += block.text
            else:
                examples.append([block.where, block.text, block.mark])
        yield from (tuple(example) for example in examples)


PLACEHOLDER = re.compile(r"^[A-Z][A-Z0-9_]*$|…|\.\.\.|^\[|\]$|\\\||^<|^\$")
"""A word of a synopsis rather than an example: ``NAME``, ``P``, ``[--json]``, ``…``,
``a\\|b``, ``<path>``, ``$VARIABLE``."""

SHELL = re.compile(r"^(&&|\|\||;|\||>|>>|2>&1|2>|&)$|^[0-9]?>")


def gradflow_words(line: str) -> list[str] | None:
    """The words after ``gradflow`` in one shell command line, or ``None`` where the line runs
    no ``gradflow`` command."""
    line = line.strip().removeprefix("$ ")
    try:
        words = shlex.split(line, comments=True)
    except ValueError:
        return None
    if "gradflow" not in words:
        inner = next((w for w in words if re.search(r"(^|\s)gradflow\s", w)), None)
        return gradflow_words(inner) if inner is not None else None
    words = words[words.index("gradflow") + 1 :]
    end = next((i for i, w in enumerate(words) if SHELL.match(w)), len(words))
    return words[:end]


@dataclass(frozen=True)
class Command:
    where: str
    words: tuple[str, ...]
    in_block: bool
    runs: bool = True

    @property
    def line(self) -> str:
        return shlex.join(["gradflow", *self.words])


def commands(page: Path) -> tuple[list[Command], list[str]]:
    """The page's ``gradflow`` commands, and the synopses it holds (left out)."""
    found: list[Command] = []
    synopses: list[str] = []

    def add(where: str, line: str, in_block: bool, runs: bool = True) -> None:
        words = gradflow_words(line)
        if words is None:
            return
        if not words or words[0].endswith(":"):  # a message the command printed
            return
        if any(PLACEHOLDER.search(w) for w in words):
            synopses.append(f"{where}: {line.strip()}")
        else:
            found.append(Command(where, tuple(words), in_block, runs))

    for block in blocks(page):
        if block.lang in ("python", "json", "toml", "yaml"):
            continue
        joined = block.text.replace("\\\n", " ")
        for k, line in enumerate(joined.splitlines()):
            if re.search(r"(^|[\s'\"])gradflow\s+[a-z-]", line) and not line.lstrip().startswith(
                "#"
            ):
                add(f"{block.where}+{k}", line, True, not block.mark.startswith("not run:"))
    text = outside_code(page)
    for span in re.findall(r"`(gradflow [^`]+)`", text.replace("\n", " ")):
        add(label(page), span, False)
    return found, synopses


ALL_COMMANDS = [c for page in PAGES for c in commands(page)[0]]
PYTHON = list(python_examples())


def test_the_collector_reads_fences_indents_prompts_and_synopses(tmp_path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "Run `gradflow models` or `gradflow bench NAME`.\n\n"
        "    $ gradflow portrait --p 0.7 \\\n      --q 0.6   # a comment\n    …\n\n"
        "1. a list\n\n   ```python\n   import gradflow\n   ```\n\n"
        "<!-- continued -->\n```python\nx = 1\n```\n\n"
        "```\nGRADFLOW_CACHE_DIR=$(mktemp -d) sh -c 'time gradflow flow --init 1 2 > f.txt'\n```\n"
    )
    kinds = [(b.lang, b.mark) for b in blocks(page)]
    assert kinds == [("", ""), ("python", ""), ("python", "continued"), ("", "")]
    assert blocks(page)[1].text == "import gradflow\n"
    found, synopses = commands(page)
    assert [c.words for c in found] == [
        ("portrait", "--p", "0.7", "--q", "0.6"),
        ("flow", "--init", "1", "2"),
        ("models",),
    ]
    assert [c.in_block for c in found] == [True, True, False]
    assert synopses == ["page.md: gradflow bench NAME"]


def test_the_pages_have_examples() -> None:
    """Guards the collector: the quick start's command and Python block are found."""
    assert any(c.line == "gradflow portrait --p 0.7 --q 0.6" for c in ALL_COMMANDS)
    assert any(where.startswith("README.md") for where, _, _ in PYTHON)
    assert len(ALL_COMMANDS) >= 100 and len(PYTHON) >= 5


def test_python_is_only_in_python_fences() -> None:
    """An indented block or a fence without a language holding Python would be left out."""
    stray = [
        b.where
        for page in PAGES
        for b in blocks(page)
        if b.lang == ""
        and re.search(r"^(import \w+|from [\w.]+ import )", b.text, re.M)
        and "gradflow " not in b.text
    ]
    assert stray == [], "mark these blocks ```python"


@pytest.mark.parametrize("command", ALL_COMMANDS, ids=lambda c: f"{c.where} {c.line}"[:120])
def test_the_command_parses(command: Command) -> None:
    from gradflow.cli import parser

    words = list(command.words)
    if not command.in_block and not any(w.startswith("-") for w in words):
        words.append("--help")  # a command named in the text: it exists
    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()):
        try:
            parser(words).parse_args(words)
        except SystemExit as exit:
            assert exit.code == 0, f"{command.where}: {command.line}\n{stderr.getvalue()}"


def gradflow_imports(source: str, where: str) -> list[tuple[str, str | None]]:
    """``(module, name)`` of each ``gradflow`` import of ``source`` (``name`` ``None`` for
    ``import module``)."""
    found: list[tuple[str, str | None]] = []
    for node in ast.walk(ast.parse(source, where)):
        if isinstance(node, ast.Import):
            found += [(a.name, None) for a in node.names if a.name.split(".")[0] == "gradflow"]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "gradflow":
            found += [(node.module, a.name) for a in node.names]
    return found


@pytest.mark.parametrize(("where", "source", "mark"), PYTHON, ids=[e[0] for e in PYTHON])
def test_the_python_example_compiles_and_its_imports_resolve(where, source, mark) -> None:
    """Every block, slow or not run included: it is Python, and what it imports from gradflow
    exists (a module moved or a name removed fails here, in the default suite)."""
    for module, name in gradflow_imports(source, where):
        imported = importlib.import_module(module)
        if name is not None and not hasattr(imported, name):
            importlib.import_module(f"{module}.{name}")


RUN = [
    pytest.param(*example, marks=pytest.mark.slow) if example[2] == "slow" else example
    for example in PYTHON
    if not example[2].startswith("not run:")
]


@pytest.mark.parametrize(
    ("where", "source", "mark"), RUN, ids=[p[0] for p in PYTHON if not p[2].startswith("not run:")]
)
def test_the_python_example_runs(where, source, mark, tmp_path, monkeypatch) -> None:
    """A fresh namespace in a fresh working folder; what the block prints is not kept."""
    monkeypatch.chdir(tmp_path)
    code = compile(source, where, "exec")
    with contextlib.redirect_stdout(io.StringIO()):
        exec(code, {"__name__": "__doc_example__"})


def options_of(words: list[str]) -> set[str]:
    """The options the command ``gradflow WORDS`` takes (its parser's, as the command line
    builds it for these words)."""
    from gradflow.cli import parser

    current: argparse.ArgumentParser = parser(words)
    for word in words:
        sub = next((a for a in current._actions if isinstance(a, argparse._SubParsersAction)), None)
        if sub is None or word not in sub.choices:
            break
        current = sub.choices[word]
    return set(current._option_string_actions)


def smaller(words: list[str]) -> list[str]:
    """The command ``gradflow WORDS`` at the sizes of :data:`SMALLER`."""
    words = ["0.05:0.95:3" if w == "0.05:0.95:19" else w for w in words]
    names = [ALIASES.get(w, w) for w in words[:2]]
    key = tuple(names[:2]) if names[0] in ("figures", "bench") else tuple(names[:1])
    if "--sweep" in words:
        return words
    takes = options_of(words)
    for option, value in SMALLER.get(key, {}).items():
        if option in words:
            start = words.index(option) + 1
            end = next((i for i in range(start, len(words)) if words[i].startswith("--")), None)
            words[start : end or len(words)] = value.split()
        elif option in takes:
            words += [option, *value.split()]
    return words


def test_smaller_sets_replaces_and_adds_the_options_a_command_takes() -> None:
    assert smaller(["sweep", "--p", "0.05:0.95:19", "--grid", "101"]) == [
        "sweep",
        "--p",
        "0.05:0.95:3",
        "--grid",
        "5",
    ]
    assert smaller(["fate", "--model", "two-mixture"]) == [
        "fate",
        "--model",
        "two-mixture",
        "--quick",
        "--seeds",
        "1",
    ]
    assert smaller(["fate", "--p", "0.5", "--grid", "12"]) == (
        ["fate", "--p", "0.5", "--grid", "3", "--quick", "--seeds", "1", "--max-steps", "500"]
    )
    assert smaller(["figures", "local-to-global-phase-diagram", "--sweep", "a.npz"])[-1] == "a.npz"
    assert smaller(["figures", "induction-heads", "--shares", "0", "0.5", "1", "--seeds", "2"]) == [
        "figures",
        "induction-heads",
        "--shares",
        "0",
        "1",
        "--seeds",
        "1",
        "--transformer-steps",
        "20",
        "--minimal-steps",
        "20",
        "--grid",
        "5",
    ]


RUN_COMMANDS = [c for c in ALL_COMMANDS if c.in_block and c.runs]
PAGES_WITH_COMMANDS = sorted({c.where.split(":")[0] for c in RUN_COMMANDS})


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES_WITH_COMMANDS)
def test_the_commands_of_a_page_run(page: str, tmp_path) -> None:
    failed = []
    for command in [c for c in RUN_COMMANDS if c.where.startswith(page + ":")]:
        words = smaller(list(command.words))
        line = shlex.join(["gradflow", *words])
        if words[0] == "figures" and "--out" in words:  # an existing folder, as the reader makes
            (tmp_path / words[words.index("--out") + 1]).mkdir(parents=True, exist_ok=True)
        result = subprocess.run(
            [sys.executable, "-c", "import sys; from gradflow.cli import main; sys.exit(main())"]
            + words,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=900,
        )
        if result.returncode != 0:
            failed.append(f"{command.where}: {line}\n{result.stderr[-600:]}")
    assert failed == []
