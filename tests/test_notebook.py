"""The tutorial notebook is committed with its outputs, and they are current: executed again, every
code cell shows the same text (tables, reprs, HTML) and the same number of pictures.

Its cells assert what they show (the double well's three critical points, the basin shares
820/1681, 820/1681, 41/1681), so running it also checks the engine.  Pictures are compared by
presence, not byte for byte (PNG bytes change with matplotlib's version).  After a change that
alters an output, regenerate the committed file with ``python tests/test_notebook.py``.
"""

from __future__ import annotations

import copy
import re
import sys
from pathlib import Path
from typing import Any

import pytest

NOTEBOOK = Path(__file__).parent.parent / "docs" / "notebooks" / "own-loss.ipynb"
PICTURE = "image/png"
TINY = re.compile(r"-?\d+(\.\d+)?e-(0[7-9]|[1-9]\d+)")
"""A number below 1e-6 in magnitude written in scientific notation: rounding (a coordinate or a
loss at a minimum), compared as 0 since its digits depend on the processor's arithmetic."""


def executed(notebook: Any, where: Path) -> Any:
    """A copy of ``notebook`` executed in a fresh kernel, in the folder ``where``."""
    import nbclient

    run = copy.deepcopy(notebook)
    nbclient.NotebookClient(
        run, timeout=300, record_timing=False, resources={"metadata": {"path": str(where)}}
    ).execute()
    return run


def shown(cell: Any) -> list[tuple[str, str, str]]:
    """What a code cell shows: ``(output type, MIME type, text)`` per output, the text of a
    picture left out and rounding-level numbers (:data:`TINY`) written as 0."""
    out = []
    for output in cell.get("outputs", []):
        if output.output_type == "stream":
            out.append(("stream", output.name, TINY.sub("0", output.text)))
        elif output.output_type == "error":
            out.append(("error", output.ename, output.evalue))
        else:
            for mime, data in sorted(output.get("data", {}).items()):
                text = "" if mime == PICTURE else data if isinstance(data, str) else "".join(data)
                out.append((output.output_type, mime, TINY.sub("0", text)))
    return out


@pytest.fixture(scope="module")
def notebooks(tmp_path_factory) -> tuple[Any, Any]:
    """The committed notebook and the same notebook executed again."""
    nbformat = pytest.importorskip("nbformat")
    pytest.importorskip("nbclient")
    committed = nbformat.read(NOTEBOOK, as_version=4)
    return committed, executed(committed, tmp_path_factory.mktemp("notebook"))


@pytest.mark.slow
def test_the_committed_notebook_shows_its_outputs(notebooks) -> None:
    """The tables and at least three pictures (trajectory, basin map, portrait) are there for a
    reader browsing the file, and no cell failed."""
    committed, _ = notebooks
    cells = [c for c in committed.cells if c.cell_type == "code"]
    kinds = [mime for c in cells for _, mime, _ in shown(c)]
    assert kinds.count(PICTURE) >= 3 and "text/html" in kinds
    assert "error" not in {kind for c in cells for kind, _, _ in shown(c)}


def test_the_committed_outputs_are_current(notebooks) -> None:
    """Executed again, each code cell shows what the committed file shows."""
    committed, run = notebooks
    for old, new in zip(committed.cells, run.cells):
        if old.cell_type == "code":
            assert shown(new) == shown(old), f"outdated outputs of the cell:\n{old.source}"


if __name__ == "__main__":
    import nbformat

    notebook = executed(nbformat.read(NOTEBOOK, as_version=4), NOTEBOOK.parent)
    nbformat.write(notebook, NOTEBOOK)
    sys.exit(0)
