"""From the events located along the lines of a sweep to its results: tracks of different lines
joined into branches, and the events at one place typed as fold, pitchfork (with its
criticality), transcritical or degenerate crossing (see :mod:`.continuation`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from scipy.cluster.hierarchy import DisjointSet

from .branches import Bifurcation, Branch, CellPoints
from .corrector import singular
from .line import Event, Landscapes, Nodes, Track

__all__ = ["join_tracks", "typed"]

EVENT_H = 1e-5
"""Events closer than this in the hyperparameter (relative to ``1 + |h|``) are one bifurcation."""
EVENT_POINT = 0.05
"""… and closer than this fraction of the box diagonal in parameter space."""
STABILITY_RANK = {"min": 0, "saddle": 1, "max": 2}
"""Stabilities in order of unstable directions (a minimum none, a maximum all)."""


def join_tracks(
    nodes: Nodes, tracks: list[tuple[int, Track]]
) -> tuple[tuple[Branch, ...], list[int]]:
    """The branches, and the branch of each track.

    Tracks of different lines that share a point (which no other track of their lines holds)
    are one branch; along one line, two tracks that meet at a point stay two branches.
    """
    joined = DisjointSet(range(len(tracks)))
    holders: dict[tuple[int, int], list[int]] = {}
    for i, (_, t) in enumerate(tracks):
        for step, j in zip(t.steps, t.nodes):
            holders.setdefault((t.line[step], j), []).append(i)
    for held in holders.values():
        lines = [tracks[i][0] for i in held]
        if len(held) == 2 and lines[0] != lines[1]:
            joined.merge(held[0], held[1])
    made = []
    for members in map(sorted, joined.subsets()):
        visits = sorted(
            {
                (tracks[i][1].line[step], j)
                for i in members
                for step, j in zip(tracks[i][1].steps, tracks[i][1].nodes)
            }
        )
        made.append((members, visits))
    made.sort(key=lambda m: (m[1][0][0], tuple(nodes.points[m[1][0][0]][m[1][0][1]])))
    owner = [0] * len(tracks)
    branches = []
    for number, (members, visits) in enumerate(made):
        for i in members:
            owner[i] = number
        cell, j = visits[0]
        branches.append(
            Branch(
                id=number,
                name=nodes.names[cell][j],
                cells=tuple(c for c, _ in visits),
                points=np.array([nodes.points[c][j] for c, j in visits]),
                kinds=tuple(nodes.kinds[c][j] for c, j in visits),
            )
        )
    return tuple(branches), owner


def typed(
    events: list[tuple[int, Event]],
    owner: list[int],
    landscapes: Landscapes,
    diagonal: float,
    lines: list[tuple[str, list[int]]],
    cells: Sequence[CellPoints],
) -> tuple[Bifurcation, ...]:
    """Group each line's events by place and type each group (see the module's docstring)."""
    clusters: list[tuple[int, list[Event]]] = []
    for number, e in sorted(events, key=lambda x: (x[0], x[1].h)):
        for line, group in clusters:
            first = group[0]
            if (
                line == number
                and abs(e.h - first.h) <= EVENT_H * (1 + abs(first.h))
                and np.linalg.norm(e.point - first.point) <= EVENT_POINT * diagonal
            ):
                group.append(e)
                break
        else:
            clusters.append((number, [e]))
    out = []
    for number, group in clusters:
        axis, line = lines[number]
        base = dict(cells[line[0]].values)

        def at(events: list[Event], axis: str = axis, base: dict = base) -> dict[str, float]:
            return {**base, axis: float(np.mean([e.h for e in events]))}

        out += _type_group(group, owner, at, axis, landscapes)
    out.sort(key=lambda b: (b.axis, tuple(b.at.values()), b.type))
    return tuple(out)


def _type_group(
    group: list[Event],
    owner: list[int],
    at: Callable[[list[Event]], dict[str, float]],
    axis: str,
    landscapes: Landscapes,
) -> list[Bifurcation]:
    """The bifurcations of one place: a typed event of the isolated points, and a degenerate
    crossing per closed-form set that changes kind."""
    changes: dict[int, list[str]] = {}
    existence: list[Event] = []
    curves: dict[str, list[Event]] = {}
    for e in group:
        if e.set is not None:
            curves.setdefault(e.set, []).append(e)
        elif e.what == "change":
            branch = owner[e.branch]
            changes.setdefault(branch, [e.before, e.after])[1] = e.after
        else:
            existence.append(e)
    changed = {b: (x, y) for b, (x, y) in changes.items() if x != y}
    ends = {owner[e.branch] for e in existence if e.what == "end"}
    starts = {owner[e.branch] for e in existence if e.what == "start"}
    existence = [e for e in existence if owner[e.branch] not in ends & starts]
    out = [
        Bifurcation(
            type="degenerate crossing",
            at=at(events),
            axis=axis,
            point=events[0].point,
            set=name,
            changes=tuple((e.before, e.after) for e in events),
        )
        for name, events in curves.items()
    ]
    branch_events = [
        e
        for e in existence + [e for e in group if e.what == "change" and e.set is None]
        if e.what != "change" or owner[e.branch] in changed
    ]
    if not branch_events:
        return out
    if changed and len(existence) >= 2:
        kind = "pitchfork"
    elif len(changed) >= 2:
        kind = "transcritical"
    elif changed:
        kind = "degenerate crossing"
    else:
        kind = "fold"
    anchor = [e for e in branch_events if e.what == "change"] or branch_events
    point = np.mean([e.point for e in anchor], axis=0)
    where = at(anchor)
    if kind == "fold" and not singular(landscapes(where), point):
        return out
    involved = sorted({*changed, *(owner[e.branch] for e in existence)})
    moves = [changed[b] for b in sorted(changed)] + [(e.before, e.after) for e in existence]
    out.append(
        Bifurcation(
            type=kind,
            at=where,
            axis=axis,
            point=point,
            branches=tuple(involved),
            changes=tuple(moves),
            criticality=_criticality(changed, existence) if kind == "pitchfork" else None,
        )
    )
    return out


def _criticality(changed: dict[int, tuple[str, str]], existence: list[Event]) -> str | None:
    """``"supercritical"`` where the pitchfork's new branches are more stable than the centre
    on the side where they exist, ``"subcritical"`` where less, ``None`` where that is not
    told (several centres, branches on both sides, or equal ranks)."""
    sides = {e.what for e in existence}
    if len(changed) != 1 or len(sides) != 1:
        return None
    (before, after), (side,) = next(iter(changed.values())), sides
    centre = before if side == "end" else after
    new = {e.before if side == "end" else e.after for e in existence}
    ranks = {STABILITY_RANK.get(k) for k in new}
    rank = STABILITY_RANK.get(centre)
    if len(ranks) != 1 or None in ranks or rank is None or ranks == {rank}:
        return None
    return "supercritical" if ranks.pop() < rank else "subcritical"
