"""One module per paper figure (``gradflow.systems.figures``): computing its data, then drawing it.

Every figure module provides:

- ``NAME``: the figure's name (``gradflow figures NAME``, the stem of its files);
- ``Config``: a frozen dataclass of its settings, checked on construction (a bad value raises
  :class:`gradflow.GradflowError`), one ``metadata["help"]`` line per field;
- ``compute(config) -> data``: the expensive part; ``data`` is a dataclass with ``arrays()``
  (the NPZ contents) and ``metadata()`` (the JSON contents), and optionally ``summary()``, a
  text the command line prints;
- ``draw(data, fig)``: draws on a matplotlib :class:`~matplotlib.figure.Figure`;
- ``SIZE``: the figure's size in inches.

From Python::

    from pathlib import Path

    from .figures import save
    from .markov import figure_fig1 as fig1

    data = fig1.compute(fig1.Config(grid=101))
    Path("out").mkdir(exist_ok=True)  # save writes into an existing folder
    save(fig1, data, "out")  # out/local-to-global-fig1.png, .npz, .json
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from gradflow import check_folder, save_with_data

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["DPI", "check_folder", "render", "save"]

DPI = 120
"""Resolution of the saved PNGs (dots per inch)."""


def render(module: ModuleType, data: Any) -> Figure:
    """``module``'s figure drawn from ``data`` (its ``compute`` result), ``module.SIZE`` inches."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=module.SIZE, layout="constrained")
    module.draw(data, fig)
    return fig


def save(module: ModuleType, data: Any, folder: Path | str = ".") -> list[Path]:
    """Draw ``data`` and write ``folder/NAME.png`` with ``NAME.npz`` and ``NAME.json`` atomically.

    The JSON holds ``{"figure": NAME, **data.metadata()}`` and the package versions.

    Returns:
        The three paths written.

    Raises:
        GradflowError: ``folder`` is not an existing folder or cannot be written.
    """
    folder = check_folder(folder)
    fig = render(module, data)
    return save_with_data(
        folder / f"{module.NAME}.png",
        lambda path: fig.savefig(path, dpi=DPI),
        data.arrays(),
        {"figure": module.NAME, **data.metadata()},
    )
