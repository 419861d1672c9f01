"""MkDocs hook: the sources laid out under their import names, for mkdocstrings to read.

``pyproject.toml`` maps the folders ``models/``, ``analysis/`` and ``figures/`` into the
``gradflow`` namespace (``[tool.setuptools.package-dir]``).  mkdocstrings reads sources by path,
where ``gradflow/`` has no ``models`` folder, so before each build this hook links the files of
``gradflow/`` and the mapped folders into ``build/api-source/gradflow/``, the path
``mkdocs.yml`` gives mkdocstrings.  The tree is derived from ``pyproject.toml`` alone, so a new
module or package needs no change here.
"""

from __future__ import annotations

import shutil
import tomllib
from pathlib import Path
from typing import Any

from mkdocs.plugins import event_priority

ROOT = Path(__file__).resolve().parent.parent
TREE = ROOT / "build" / "api-source"


def link_tree(root: Path, tree: Path) -> None:
    """Link each package of ``root``'s ``package-dir`` table under ``tree`` at its dotted name:
    a top-level package becomes a folder of links to its files, a subpackage a link to its
    folder."""
    project = tomllib.loads((root / "pyproject.toml").read_text())
    packages = project["tool"]["setuptools"]["package-dir"]
    shutil.rmtree(tree, ignore_errors=True)
    for name, folder in sorted(packages.items()):
        target = tree.joinpath(*name.split("."))
        if "." in name:
            target.symlink_to(root / folder, target_is_directory=True)
            continue
        target.mkdir(parents=True)
        for entry in (root / folder).iterdir():
            if entry.name != "__pycache__":
                (target / entry.name).symlink_to(entry, target_is_directory=entry.is_dir())


@event_priority(100)
def on_config(config: Any) -> Any:
    """MkDocs' ``on_config`` event, run before the plugins' (mkdocstrings keeps only the paths
    that exist when it starts): build the tree."""
    link_tree(ROOT, TREE)
    return config
