"""The documentation against the code: every public name of ``gradflow`` is described in
``docs/api.md``, every code path a page cites exists, the index links every page and notebook,
the API page's figure example runs, and the site (``mkdocs.yml``: the Markdown pages and the
reference rendered from the docstrings) builds with ``--strict``."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import gradflow

ROOT = Path(__file__).resolve().parent.parent


def code_names(markdown: str) -> set[str]:
    """Every identifier written as code in ``markdown``: in inline code spans (which may run
    over a line break) and in fenced code blocks."""
    fence = re.compile(r"^```.*?^```", flags=re.S | re.M)
    code = fence.findall(markdown) + re.findall(r"`([^`]+)`", fence.sub("", markdown))
    return {name for text in code for name in re.findall(r"[^\W\d]\w*", text)}


def test_code_names_reads_spans_and_fences() -> None:
    text = "Use `flow(m,\nθ0)` or\n\n```python\nbasins(m)  # `not a span\n```\nnot plain_words."
    assert code_names(text) == {"flow", "m", "θ0", "basins", "not", "a", "span", "python"}


def test_every_public_name_is_in_the_api_page() -> None:
    documented = code_names((ROOT / "docs" / "api.md").read_text())
    missing = [name for name in gradflow.__all__ if name not in documented]
    assert not missing, f"gradflow exports names docs/api.md does not describe: {missing}"


def test_every_public_name_is_exported_once_and_resolves() -> None:
    """``__all__`` and the table of lazily imported names agree, and each name imports."""
    assert len(set(gradflow.__all__)) == len(gradflow.__all__)
    assert set(gradflow.__all__) == set(gradflow._EXPORTS)
    for name in gradflow.__all__:
        assert getattr(gradflow, name) is not None, name


def test_the_site_builds_strictly(tmp_path) -> None:
    """``mkdocs build --strict``: every page of the nav exists, every link and anchor resolves,
    and every docstring mkdocstrings renders parses (a parameter it documents is in the
    signature).  Skipped, saying so, in an environment installed before the test extras
    included the ``docs`` extra."""
    pytest.importorskip("mkdocstrings", reason='the docs tools: pip install -e ".[test]"')
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    reference = (tmp_path / "reference" / "gradflow" / "index.html").read_text()
    assert all(f'id="gradflow.{name}"' in reference for name in gradflow.__all__)
    assert (
        'id="gradflow.systems.markov.reduced.canonical_model"'
        in (tmp_path / "reference" / "systems" / "index.html").read_text()
    )


DOCS = ROOT / "docs"
EXAMPLES = {DOCS / "architecture.md"}
"""Pages whose worked examples name files the reader is to write."""
PAGES = [ROOT / "README.md", *sorted(set(DOCS.rglob("*.md")) - EXAMPLES)]


def test_every_code_path_a_page_cites_exists():
    missing = []
    for page in PAGES:
        for path in re.findall(r"`([\w./-]+\.(?:py|ipynb|toml|yml))`", page.read_text()):
            if "/" in path and not (ROOT / path).exists() and not (page.parent / path).exists():
                missing.append(f"{page.relative_to(ROOT)}: {path}")
    assert missing == []


def test_the_index_links_every_page_and_notebook():
    links = set(re.findall(r"\]\(([^)#]+)", (DOCS / "index.md").read_text()))
    pages = [
        p.relative_to(DOCS).as_posix()
        for p in [*DOCS.rglob("*.md"), *DOCS.rglob("*.ipynb")]
        if p.name != "index.md" and "reference" not in p.parts
    ]
    assert pages and sorted(set(pages) - links) == []


@pytest.mark.slow
def test_the_api_page_figure_example_runs(tmp_path, monkeypatch):
    """The ``save(fig1, data, "out")`` example of docs/api.md, at a 5 × 5 grid."""
    blocks = re.findall(r"```python\n(.*?)```", (DOCS / "api.md").read_text(), re.S)
    (example,) = [b for b in blocks if "save(fig1, data" in b]
    monkeypatch.chdir(tmp_path)
    exec(example.replace("grid=101", "grid=5"), {})
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        f"local-to-global-fig1.{suffix}" for suffix in ("json", "npz", "png")
    ]


def test_the_readme_model_table_matches_gradflow_models(cli) -> None:
    """Every family of the README's model table is run as its last column says: its
    ``--model NAME``s are exactly the models ``gradflow models`` lists, the others are the
    families it names with their own command, and each command named exists."""
    import json

    rows = [
        [cell.strip() for cell in line.strip("|").split(" | ")]
        for line in (ROOT / "README.md").read_text().splitlines()
        if line.startswith("| [")
    ]
    code, out, _ = cli("models", "--json")
    listed = json.loads(out)
    in_readme, own = set(), {}
    for row in rows:
        family = re.match(r"\[([^\]]+)\]", row[0]).group(1)
        models = re.findall(r"`--model ([\w-]+)`", row[-1])
        commands = re.findall(r"`gradflow ([\w-]+)`", row[-1])
        assert models or commands, row
        in_readme |= set(models)
        if not models:
            own[family] = " ".join(f"gradflow {c}" for c in commands)
        for command in commands:
            assert cli(command, "--help").code == 0, command
    assert len(rows) == 5
    assert in_readme == {m["name"] for m in listed["models"]}
    assert own == listed["own_commands"]


def test_the_notebook_says_how_to_run_it_with_what_the_extras_install() -> None:
    """``jupyter execute`` (nbclient's command, in the ``notebook`` extra), not nbconvert, which
    no extra installs."""
    import tomllib

    notebook = (ROOT / "docs" / "notebooks" / "own-loss.ipynb").read_text()
    assert "jupyter execute docs/notebooks/own-loss.ipynb" in notebook
    assert "jupyter execute" in (ROOT / "docs" / "own-loss.md").read_text()
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    assert any(dep.startswith("nbclient") for dep in extras["notebook"])
    assert "gradflow[notebook]" in extras["test"]
    assert not any("nbconvert" in dep for deps in extras.values() for dep in deps)
