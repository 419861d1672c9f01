"""The documentation points at what exists: every code path a page cites is a file of the
repository, and the index links every page and notebook."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
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
