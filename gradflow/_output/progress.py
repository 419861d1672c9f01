"""Progress bars (tqdm) for long batched computations.

The plain text bar (``tqdm.std``), not ``tqdm.auto``: in a notebook without ipywidgets the
latter prints a warning naming the installation's path into the cell's output.

Two kinds of count, two kinds of bar.  Units of about equal cost (cells, training steps, runs)
get a rate and a time left, measured from the end of the first unit: the first one carries
the compilation (tens of seconds) and would make the estimate for the rest hours too long.
Units that finish all at once at the end (the trajectories of a batch, integrated in rounds:
a bar can sit at 1 % for minutes and then jump to 100 %) get no rate and no time left, which
could only be wrong; the bar shows what is done and the time elapsed.  Units of known but
different cost (a fate map's rows of a dozen runs, then its noise draws of a whole grid each)
get a *weighted* bar: it advances by each unit's estimated work, so its rate and time left are
work per second measured so far, shown with the units done beside it; counting such units alike
made a map at two thirds of its cells say 11 s left with two minutes to go.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tqdm.std import tqdm

__all__ = ["DELAY_S", "progress_bar", "weighted_bar"]

DELAY_S = 1.5
"""A bar appears only once a computation has run this long (seconds)."""
UNEVEN_FORMAT = "{l_bar}{bar}| {n_fmt}/{total_fmt} finished [{elapsed}]"
"""The bar of units that do not finish at an even pace: no rate, no time left."""
WEIGHTED_FORMAT = "{l_bar}{bar}| {units} [{elapsed}<{remaining}, time left by estimated work]"
"""The bar of units weighted by their estimated work: the percentage and the time left count
work, ``units`` the units done (:func:`weighted_bar`)."""


class _Bar(tqdm):
    """A tqdm bar whose rate, and so its time left, counts from the end of the first unit."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._first: tuple[float, float] | None = None
        self.units = ""
        super().__init__(*args, **kwargs)

    def update(self, n: float | None = 1) -> bool | None:
        shown = super().update(n)
        if self._first is None and self.n > 0 and not self.disable:
            self._first = (self.n, self._time())
        return shown

    @property
    def format_dict(self) -> dict[str, Any]:
        """tqdm's, with ``rate`` the units since the first one over the time since then (``0``,
        shown as ``?``, until a second unit is done)."""
        shown = super().format_dict
        rate = 0.0
        if self._first is not None:
            n1, t1 = self._first
            elapsed = self._time() - t1
            rate = (self.n - n1) / elapsed if self.n > n1 and elapsed > 0 else 0.0
        return {**shown, "rate": rate, "units": self.units}


def progress_bar(
    total: int,
    unit: str,
    enabled: bool | None = None,
    desc: str | None = None,
    *,
    even: bool = True,
    done: int = 0,
) -> tqdm:
    """A tqdm bar on stderr: always shown if ``enabled``, never if ``False``, after
    :data:`DELAY_S` if ``None``.

    Args:
        total: the number of units.
        unit: what a unit is (``"cell"``, ``"trajectory"``).
        enabled: see above.
        desc: what the bar counts, shown before it (``"σ = 0.01, seed 2"``).
        even: units of about equal cost: a rate and a time left from the second unit on;
            ``False`` for units that finish unevenly (no rate, no time left).
        done: units already done (a resumed run's): counted, but the rate starts from the end
            of the first unit computed now, which carries the compilation.
    """
    return _Bar(
        total=total,
        initial=done,
        unit=unit,
        desc=desc,
        disable=enabled is False,
        delay=0.0 if enabled else DELAY_S,
        leave=False,
        dynamic_ncols=True,
        bar_format=None if even else UNEVEN_FORMAT,
    )


class _Weighted:
    """A bar over units of different cost: :meth:`update` takes a unit's index and advances the
    bar by its work, naming the units done."""

    def __init__(self, bar: tqdm, work: Sequence[float], unit: str, done: int) -> None:
        self.bar, self.work, self.unit, self.done = bar, work, unit, done

    def __enter__(self) -> _Weighted:
        self.bar.__enter__()
        self._name()
        return self

    def __exit__(self, *exc: object) -> None:
        self.bar.__exit__(*exc)

    def _name(self) -> None:
        self.bar.units = f"{self.done}/{len(self.work)} {self.unit}s"

    def update(self, *units: int) -> None:
        """Count the units of these indices as done."""
        self.done += len(units)
        self._name()
        self.bar.update(sum(self.work[k] for k in units))


def weighted_bar(
    work: Sequence[float],
    unit: str,
    enabled: bool | None = None,
    desc: str | None = None,
    *,
    done: Sequence[int] = (),
) -> _Weighted:
    """A bar over units whose costs differ, advancing by ``work[k]`` when unit ``k`` is done:
    its rate, and so its time left, is work per second from the end of the first unit on.

    Args:
        work: each unit's estimated work (any unit of measure, > 0; seconds at measured rates,
            runs of equal cost).
        unit: what a unit is (``"cell"``).
        enabled, desc: as in :func:`progress_bar`.
        done: the indices of the units already done (a resumed run's), counted as in
            :func:`progress_bar`.
    """
    bar = _Bar(
        total=float(sum(work)),
        initial=float(sum(work[k] for k in done)),
        unit="",
        desc=desc,
        disable=enabled is False,
        delay=0.0 if enabled else DELAY_S,
        leave=False,
        dynamic_ncols=True,
        bar_format=WEIGHTED_FORMAT,
    )
    return _Weighted(bar, work, unit, len(done))
