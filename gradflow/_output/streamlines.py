"""Streamlines of a planar field, placed as matplotlib's ``streamplot`` places them, integrated
in one batch.

``matplotlib.axes.Axes.streamplot`` integrates one streamline at a time in Python (an adaptive
Heun–Euler pair, two interpolations of the field per attempted step): about half a second for
a portrait's field on a 2-core machine.  Its placement rule (evenly spaced streamlines on a
square mask of ``30·density`` cells a side: seeds tried in a spiral from the corner inwards, a
streamline stopped where it enters a cell another one occupies, dropped if shorter than
``min_length``) is sequential, but the integration is not: a streamline's points do not depend
on the mask, only where it stops does.  So :func:`streamlines` integrates both directions from
every seed of the mask at once (NumPy, the same arithmetic as matplotlib, so the same
floating-point results), then replays the placement over the stored steps.  The streamlines
equal matplotlib's point for point (a test compares them on several fields).

Coordinates follow matplotlib's ``streamplot``: *grid* coordinates index the field's samples
(``0 … nx - 1``), *mask* coordinates its cells, and a streamline's length is measured in *axes*
units (the box is 1 wide and 1 high).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Streamline", "streamlines"]

MAX_ERROR = 0.003
"""Largest accepted local error of a step, axes units (matplotlib's ``maxerror``)."""
MASK_CELLS = 30
"""Mask cells a side at ``density = 1`` (matplotlib's ``StreamMask``)."""


@dataclass(frozen=True)
class Streamline:
    """One streamline: its points in data coordinates, shape ``(n, 2)``, and the arrow drawn
    half-way along it (``tail`` and ``head``, data coordinates), as ``streamplot`` places it."""

    points: np.ndarray
    tail: tuple[float, float]
    head: tuple[float, float]


@dataclass(frozen=True)
class _Field:
    """The field in grid coordinates and its speed in axes units, stacked: ``uvs[iy, ix]`` is
    ``(u, v, speed)``."""

    uvs: np.ndarray

    @property
    def nx(self) -> int:
        return self.uvs.shape[1]

    @property
    def ny(self) -> int:
        return self.uvs.shape[0]

    def within(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return (x >= 0) & (x <= self.nx - 1) & (y >= 0) & (y <= self.ny - 1)

    def per_length(self, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(dx/ds, dy/ds, stopped)`` at points inside the grid, per unit of path length in
        axes units (bilinear interpolation); ``stopped`` where the speed is 0 or a sample is not
        finite: the streamline ends there."""
        ix, iy = x.astype(int), y.astype(int)
        jx, jy = np.minimum(ix + 1, self.nx - 1), np.minimum(iy + 1, self.ny - 1)
        tx, ty = (x - ix)[:, None], (y - iy)[:, None]
        a = self.uvs
        a0 = a[iy, ix] * (1 - tx) + a[iy, jx] * tx
        a1 = a[jy, ix] * (1 - tx) + a[jy, jx] * tx
        u, v, speed = (a0 * (1 - ty) + a1 * ty).T
        with np.errstate(invalid="ignore", divide="ignore"):
            stopped = ~np.isfinite(speed) | (speed == 0)
            time_per_length = 1.0 / np.where(stopped, 1.0, speed)
            du, dv = u * time_per_length, v * time_per_length
        return du, dv, stopped | ~np.isfinite(du) | ~np.isfinite(dv)


REJECTED, ACCEPTED, LEFT, STOPPED, EXITED = range(5)
"""What an attempted step did: rejected by the error test; accepted; accepted but outside the
grid (the streamline ends there); the field stopped (zero or undefined speed: it ends at the
step's start); the next stage fell outside the grid (an Euler step to the border ends it)."""


@dataclass(frozen=True)
class _Paths:
    """Every step Heun's method attempted from every seed in one direction, without a mask.

    Arrays of shape ``(attempts, seeds)``: ``start`` (grid coordinates, a trailing axis of 2)
    where the attempt began, ``kind`` (:data:`ACCEPTED` …), ``end`` where an accepted step
    went, ``length`` its length (axes units; for :data:`EXITED`, the Euler step's);
    ``count[i]`` attempts of seed ``i``, the last one ending its path.
    """

    start: np.ndarray
    kind: np.ndarray
    end: np.ndarray
    length: np.ndarray
    count: np.ndarray


def _integrate(
    field: _Field, x0: np.ndarray, y0: np.ndarray, sign: float, max_step: float, max_length: float
) -> _Paths:
    """Heun's method with ``streamplot``'s step control from every seed at once, until each
    path leaves the grid, stops, or passes ``max_length`` (its last step the one that does).
    A seed outside the grid (by rounding, on its border) attempts no step."""
    n = len(x0)
    x, y = x0.astype(float), y0.astype(float)
    ds, total = np.full(n, max_step), np.zeros(n)
    active = field.within(x, y)
    rows: list[tuple[np.ndarray, ...]] = []
    while active.any():
        i = np.flatnonzero(active)
        xi, yi, h = x[i], y[i], ds[i]
        k1x, k1y, stop1 = field.per_length(xi, yi)
        k1x, k1y = sign * k1x, sign * k1y
        mx, my = xi + h * k1x, yi + h * k1y
        out = ~stop1 & ~field.within(mx, my)
        ok = ~stop1 & ~out
        k2x, k2y, stop2 = field.per_length(np.where(ok, mx, xi), np.where(ok, my, yi))
        k2x, k2y = sign * k2x, sign * k2y
        dx1, dy1 = h * k1x, h * k1y
        dx2, dy2 = h * 0.5 * (k1x + k2x), h * 0.5 * (k1y + k2y)
        with np.errstate(invalid="ignore"):
            error = np.hypot((dx2 - dx1) / (field.nx - 1), (dy2 - dy1) / (field.ny - 1))
            accept = ok & ~stop2 & (error < MAX_ERROR)
        ex, ey = xi + dx2, yi + dy2
        left = accept & ~field.within(ex, ey)
        kind = np.where(accept, np.where(left, LEFT, ACCEPTED), REJECTED)
        kind = np.where(ok & stop2 | stop1, STOPPED, kind)
        kind = np.where(out, EXITED, kind)
        length = np.where(out, _to_border(field, xi, yi, k1x, k1y), h)
        ex, ey = np.where(out, xi + k1x * length, ex), np.where(out, yi + k1y * length, ey)
        rows.append((i, np.stack([xi, yi], 1), kind, np.stack([ex, ey], 1), length))
        moved = kind == ACCEPTED
        m = i[moved]
        x[m], y[m] = ex[moved], ey[moved]
        done = np.isin(kind, (LEFT, STOPPED, EXITED)) | moved & (total[i] + h > max_length)
        active[i[done]] = False
        total[m] += ds[m]
        with np.errstate(divide="ignore", invalid="ignore"):
            shrunk = np.minimum(max_step, 0.85 * h * (MAX_ERROR / error) ** 0.5)
        ds[i] = np.where(error == 0, max_step, shrunk)
    count = np.zeros(n, int)
    for i, *_ in rows:
        count[i] += 1
    depth = max(int(count.max(initial=0)), 1)
    start, end = np.zeros((depth, n, 2)), np.zeros((depth, n, 2))
    kind, length, filled = np.full((depth, n), STOPPED), np.zeros((depth, n)), np.zeros(n, int)
    for i, xy0, what, xy1, ds_ in rows:
        k = filled[i]
        start[k, i], kind[k, i], end[k, i], length[k, i] = xy0, what, xy1, ds_
        filled[i] += 1
    return _Paths(start, kind, end, length, count)


def _to_border(
    field: _Field, x: np.ndarray, y: np.ndarray, cx: np.ndarray, cy: np.ndarray
) -> np.ndarray:
    """Length of ``streamplot``'s last step, an Euler step from ``(x, y)`` along ``(cx, cy)``
    to the border of the grid (taken where the next stage would fall outside it)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        sx = np.where(cx == 0, np.inf, np.where(cx < 0, x / -cx, (field.nx - 1 - x) / cx))
        sy = np.where(cy == 0, np.inf, np.where(cy < 0, y / -cy, (field.ny - 1 - y) / cy))
    return np.minimum(sx, sy)


def _spiral(nx: int, ny: int) -> list[tuple[int, int]]:
    """Mask cells ``(xm, ym)`` in ``streamplot``'s order of seeds: from the corner ``(0, 0)``
    along the border, spiralling inwards."""
    first_x, first_y, last_x, last_y = 0, 1, nx - 1, ny - 1
    x = y = 0
    direction = "right"
    cells = []
    for _ in range(nx * ny):
        cells.append((x, y))
        if direction == "right":
            x += 1
            if x >= last_x:
                last_x -= 1
                direction = "up"
        elif direction == "up":
            y += 1
            if y >= last_y:
                last_y -= 1
                direction = "left"
        elif direction == "left":
            x -= 1
            if x <= first_x:
                first_x += 1
                direction = "down"
        else:
            y -= 1
            if y <= first_y:
                first_y += 1
                direction = "right"
    return cells


class _Mask:
    """``streamplot``'s mask: the cells kept streamlines cross (flat indices), the cell the
    streamline being placed is in, and the cells it has taken (undone if it is too short)."""

    def __init__(self, nx: int, ny: int, to_mask: tuple[float, float]) -> None:
        self.nx = nx
        self.occupied = np.zeros(nx * ny, bool)
        self.to_mask = to_mask
        self.current = -1
        self.placed: list[int] = []

    def cells(self, points: np.ndarray) -> np.ndarray:
        """Flat indices of the nearest cells of grid points, shape ``(n, 2)`` → ``(n,)``."""
        xm = np.round(points[:, 0] * self.to_mask[0]).astype(int)
        ym = np.round(points[:, 1] * self.to_mask[1]).astype(int)
        return ym * self.nx + xm

    def begin(self, cell: int) -> bool:
        """Start a streamline in ``cell``: it takes the cell, unless it is the current one;
        ``False`` where another streamline holds it."""
        self.placed = []
        if cell == self.current:
            return True
        if self.occupied[cell]:
            return False
        self.take(np.array([cell]))
        return True

    def take(self, cells: np.ndarray) -> None:
        if len(cells):
            self.occupied[cells] = True
            self.placed.extend(cells.tolist())
            self.current = int(cells[-1])

    def undo(self) -> None:
        self.occupied[self.placed] = False


def _replay(paths: _Paths, seed: int, mask: _Mask, max_length: float) -> tuple[np.ndarray, float]:
    """One direction of a streamline as ``streamplot`` ends it: where a step enters a cell
    taken before (by another streamline, or by this one other than the cell it is in), leaves
    the grid or passes ``max_length``, or where its path ends.  Returns its points (grid
    coordinates, from the seed) and its length (axes units); the cells it crosses are taken."""
    count = paths.count[seed]
    if count == 0:
        return np.zeros((0, 2)), 0.0
    kind, start = paths.kind[:count, seed], paths.start[:count, seed]
    end, length = paths.end[:count, seed], paths.length[:count, seed]
    steps = np.flatnonzero((kind == ACCEPTED) | (kind == LEFT))
    cells = mask.cells(end[steps])
    change = cells != np.concatenate([[mask.current], cells[:-1]])
    entered = cells[change]
    _, first, inverse = np.unique(entered, return_index=True, return_inverse=True)
    blocked = np.zeros(len(steps), bool)
    blocked[change] = mask.occupied[entered] | (first[inverse] != np.arange(len(entered)))
    blocked |= kind[steps] == LEFT
    travelled = np.cumsum(length[steps])
    ends = np.flatnonzero(blocked | (travelled > max_length))
    if len(ends):
        j = ends[0]
        taken = j + (not blocked[j])
        mask.take(cells[:taken][change[:taken]])
        return start[: steps[j] + 1], float(travelled[j - 1]) if j else 0.0
    mask.take(cells[change])
    total = float(travelled[-1]) if len(steps) else 0.0
    if kind[-1] == EXITED:
        return np.vstack([start, end[-1:]]), total + float(length[-1])
    return start, total


def streamlines(
    xs: np.ndarray,
    ys: np.ndarray,
    u: np.ndarray,
    v: np.ndarray,
    density: float = 1.0,
    min_length: float = 0.1,
    max_length: float = 4.0,
) -> list[Streamline]:
    """The streamlines ``matplotlib.axes.Axes.streamplot(xs, ys, u, v, density, minlength=
    min_length, maxlength=max_length)`` draws (integration in both directions), computed in
    one batch.

    Args:
        xs: evenly spaced, increasing abscissas, shape ``(nx,)``.
        ys: evenly spaced, increasing ordinates, shape ``(ny,)``.
        u: the field's first component on the grid, shape ``(ny, nx)``; NaN where undefined (a
            streamline stops there).
        v: its second component, shape ``(ny, nx)``.
        density: streamlines per ``1/30`` of the box, as in ``streamplot``.
        min_length: streamlines shorter than this (axes units) are dropped.
        max_length: longest streamline (axes units), half of it in each direction.

    Returns:
        The streamlines in the order ``streamplot`` places them.
    """
    xs, ys = np.asarray(xs, float), np.asarray(ys, float)
    to_grid_x, to_grid_y = 1.0 / (xs[1] - xs[0]), 1.0 / (ys[1] - ys[0])
    gu, gv = np.asarray(u, float) * to_grid_x, np.asarray(v, float) * to_grid_y
    with np.errstate(invalid="ignore", over="ignore"):
        speed = np.sqrt((gu / (len(xs) - 1)) ** 2 + (gv / (len(ys) - 1)) ** 2)
    field = _Field(np.stack([gu, gv, speed], axis=-1))
    mnx, mny = (MASK_CELLS * np.broadcast_to(density, 2)).astype(int)
    to_mask = ((mnx - 1) / (field.nx - 1), (mny - 1) / (field.ny - 1))
    mask = _Mask(mnx, mny, to_mask)
    cells = _spiral(mnx, mny)
    seeds = np.array(cells, float) * (1.0 / to_mask[0], 1.0 / to_mask[1])
    half, max_step = max_length / 2.0, min(1.0 / mnx, 1.0 / mny, 0.1)
    backward, forward = (
        _integrate(field, seeds[:, 0], seeds[:, 1], sign, max_step, half) for sign in (-1.0, 1.0)
    )
    lines = []
    for s, (xm, ym) in enumerate(cells):
        if mask.occupied[ym * mnx + xm]:
            continue
        seed_cell = int(mask.cells(seeds[s : s + 1])[0])
        if not mask.begin(seed_cell):
            continue
        back, back_length = _replay(backward, s, mask, half)
        mask.current = seed_cell
        ahead, ahead_length = _replay(forward, s, mask, half)
        if back_length + ahead_length > min_length:
            lines.append(np.vstack([back[::-1], ahead[1:]]))
        else:
            mask.undo()
    return [_in_data(line, xs[0], ys[0], to_grid_x, to_grid_y) for line in lines]


def _in_data(line: np.ndarray, x0: float, y0: float, sx: float, sy: float) -> Streamline:
    """A streamline in data coordinates, with its arrow half-way along the path (as
    ``streamplot`` places it)."""
    tx, ty = line[:, 0] / sx + x0, line[:, 1] / sy + y0
    s = np.cumsum(np.hypot(np.diff(tx), np.diff(ty)))
    k = int(np.searchsorted(s, s[-1] * 0.5))
    tail = (float(tx[k]), float(ty[k]))
    head = (float(np.mean(tx[k : k + 2])), float(np.mean(ty[k : k + 2])))
    return Streamline(np.stack([tx, ty], 1), tail, head)
