"""A bar over cells of very different cost tells the time left by their work, not their count."""

from __future__ import annotations

import pytest

from gradflow import GradflowError, run_cells
from gradflow._output.progress import progress_bar, weighted_bar


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _run(bar, clock: Clock, seconds: list[float]) -> None:
    """Finish one unit per entry of ``seconds`` after that many seconds each."""
    for k, spent in enumerate(seconds):
        clock.now += spent
        bar.update(k) if hasattr(bar, "work") else bar.update()


def _clocked(bar, clock: Clock):
    inner = getattr(bar, "bar", bar)
    inner._time, inner.start_t, inner.last_print_t = clock, 0.0, 0.0
    return inner


def test_a_fate_map_two_thirds_through_its_cells_has_most_of_its_work_left() -> None:
    """The default canonical map: 12 rows of 12 runs without noise (12 × 0.31 = 3.72 s of work
    each), then 6 noise draws of the whole 12 × 12 grid (144 × 0.17 = 24.48 s each).  The first
    row takes 10 s (compiling), the next 11 take 3.72 s each: 12 of 18 cells are done, but the
    work left is 6 × 24.48 = 146.88 s at the measured 1 s of work per second; counting cells
    alike (11 cells in 40.92 s) says 6 × 3.72 = 22.3 s."""
    work = [3.72] * 12 + [24.48] * 6
    clock = Clock()
    weighted = weighted_bar(work, "cell", enabled=True)
    inner = _clocked(weighted, clock)
    _run(weighted, clock, [10.0] + [3.72] * 11)
    shown = inner.format_dict
    assert (shown["total"] - shown["n"]) / shown["rate"] == pytest.approx(146.88)
    assert weighted.done == 12 and shown["units"] == "12/18 cells"

    clock = Clock()
    counted = progress_bar(18, "cell", enabled=True)
    _clocked(counted, clock)
    _run(counted, clock, [10.0] + [3.72] * 11)
    shown = counted.format_dict
    assert (shown["total"] - shown["n"]) / shown["rate"] == pytest.approx(6 * 3.72)


def test_a_resumed_map_times_its_rest_from_the_cells_it_computes() -> None:
    """The same map resumed with its 12 rows done: the first noise draw computed now takes 40 s
    (compiling), the second its 24.48 s of work, so 4 × 24.48 = 97.92 s are left; the rows
    loaded from the checkpoint take no time and do not count in the rate."""
    work = [3.72] * 12 + [24.48] * 6
    clock = Clock()
    bar = weighted_bar(work, "cell", enabled=True, done=range(12))
    inner = _clocked(bar, clock)
    for k, spent in ((12, 40.0), (13, 24.48)):
        clock.now += spent
        bar.update(k)
    shown = inner.format_dict
    assert (shown["total"] - shown["n"]) / shown["rate"] == pytest.approx(97.92)
    assert shown["units"] == "14/18 cells"


def _square(cell: float) -> dict[str, float]:
    return {"y": cell * cell}


def test_cells_with_work_are_computed_as_without() -> None:
    done = run_cells(_square, [1.0, 2.0, 3.0], work=[1.0, 1.0, 5.0], progress=False)
    assert [float(c["y"]) for c in done] == [1.0, 4.0, 9.0]
    with pytest.raises(GradflowError, match="work: one number > 0 per cell"):
        run_cells(_square, [1.0, 2.0], work=[1.0, 0.0], progress=False)
