"""Grids of independent cells (:func:`gradflow.run_cells`) and the fate contract's common parts."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gradflow import GradflowError, run_cells
from gradflow.systems.fate import REASONS, FateCell, FateResult, quick_config
from gradflow.systems.markov.config import FateConfig


def _square(cell: tuple[int, float]) -> dict[str, np.ndarray]:
    """A cell's result worked out by hand: its index and the square of its value."""
    index, value = cell
    return {"index": np.asarray(index), "square": np.asarray(value**2)}


def test_cells_come_back_in_order_and_resume_without_recomputing(tmp_path: Path) -> None:
    cells = [(i, 0.5 * i) for i in range(5)]
    folder = tmp_path / "runs"
    first = run_cells(_square, cells, checkpoint=folder, manifest={"what": "squares"})
    assert [int(r["index"]) for r in first] == [0, 1, 2, 3, 4]
    assert [float(r["square"]) for r in first] == [0.0, 0.25, 1.0, 2.25, 4.0]
    (folder / "cell00003.npz").unlink()
    seen: list[int] = []

    def counting(cell: tuple[int, float]) -> dict[str, np.ndarray]:
        seen.append(cell[0])
        return _square(cell)

    again = run_cells(counting, cells, checkpoint=folder, manifest={"what": "squares"})
    assert seen == [3]
    assert all(
        np.array_equal(a[k], b[k]) for a, b in zip(first, again) for k in ("index", "square")
    )


def test_a_folder_of_another_computation_is_refused(tmp_path: Path) -> None:
    run_cells(_square, [(0, 1.0)], checkpoint=tmp_path, manifest={"what": "squares"})
    with pytest.raises(GradflowError, match="another computation"):
        run_cells(_square, [(0, 1.0)], checkpoint=tmp_path, manifest={"what": "cubes"})


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"cells": []}, "grid is empty"),
        ({"names": ["a"]}, "one per cell"),
        ({"names": ["a", "a"]}, "distinct"),
        ({"names": ["a", "b/c"]}, "letters, digits"),
    ],
)
def test_bad_cells_are_refused_in_one_line(kwargs: dict, message: str) -> None:
    arguments = {"cells": [(0, 1.0), (1, 2.0)], **kwargs}
    with pytest.raises(GradflowError, match=message):
        run_cells(_square, **arguments)


def test_a_cell_that_agrees_has_no_reason_and_one_that_does_not_has_a_known_one() -> None:
    with pytest.raises(ValueError, match="no reason"):
        FateCell({"x": 0.0}, "a", "a", True, reason="metric")
    with pytest.raises(ValueError, match="must be one of"):
        FateCell({"x": 0.0}, "a", "b", False, reason="because")
    assert set(REASONS) >= {"metric", "slow-corner", "off-reduction", "assumption"}


class _Toy(FateResult):
    """Four cells in two groups, one mismatch: agreement 1 and 1/2 by counting."""

    system = "toy"
    axes = ("x",)

    def cells(self) -> list[FateCell]:
        return [
            FateCell({"x": 0.0}, "a", "a", True, "one"),
            FateCell({"x": 1.0}, "b", "b", True, "one"),
            FateCell({"x": 0.0}, "a", "a", True, "two"),
            FateCell({"x": 1.0}, "b", "a", False, "two", "slow-corner", "t = 3"),
        ]

    def arrays(self) -> dict:
        return {}

    def figure(self) -> None:
        return None

    def details(self) -> dict:
        return {"extra": 1}


def test_agreement_mismatches_and_reasons_are_counted_per_group() -> None:
    toy = _Toy()
    assert toy.agreement() == {"one": 1.0, "two": 0.5}
    assert toy.reasons() == {"slow-corner": 1}
    record = toy.metadata()
    assert record["cells"] == 4 and record["extra"] == 1
    assert record["mismatches"] == [
        {
            "coords": {"x": 1.0},
            "group": "two",
            "reduced": "b",
            "full": "a",
            "agree": False,
            "reason": "slow-corner",
            "detail": "t = 3",
        }
    ]
    assert "x = 1 [two]: reduced b, full a — slow-corner (t = 3)" in toy.text()


def test_quick_settings_yield_to_options_the_user_gave() -> None:
    quick = quick_config(FateConfig(p=0.5, q=0.8))
    assert (quick.grid, quick.sigma, quick.seeds) == (4, (0.0,), 1)
    assert quick_config(FateConfig(p=0.5, q=0.8, grid=6)).grid == 6
