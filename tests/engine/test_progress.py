"""Progress bars: what they count is named, and the time left is honest — measured from the end
of the first unit (which carries the compilation), and not shown at all for trajectories, which
finish in rounds, most of them at the end."""

from __future__ import annotations

import re

from gradflow import progress_bar


def _clocked(bar, clock):
    bar._time = lambda: clock[0]
    bar.start_t = bar.last_print_t = clock[0]
    return bar


def test_the_time_left_counts_from_the_end_of_the_first_unit() -> None:
    clock = [0.0]
    bar = _clocked(progress_bar(10, "cell", True, "sweep over p, q"), clock)
    clock[0] = 100.0  # the first cell compiled for 100 s
    bar.update()
    assert "?" in str(bar) and str(bar).startswith("sweep over p, q:")
    clock[0] = 102.0  # then one cell per second: 8 left, 8 s
    bar.update(2)
    text = str(bar)
    bar.close()
    assert re.search(r"<00:07, +1\.00cell/s", text), text


def test_trajectory_bars_name_their_run_and_promise_no_time_left() -> None:
    bar = progress_bar(1000, "trajectory", True, "σ = 0.01, seed 2", even=False)
    bar.update(10)
    text = str(bar)
    bar.close()
    assert text.startswith("σ = 0.01, seed 2:") and "10/1000 finished" in text
    assert "<" not in text and "/s" not in text
