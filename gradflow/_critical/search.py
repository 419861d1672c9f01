"""Critical sets of a loss: closed form first, then numerical search; each classified.

1. Closed form: the landscape's closed-form sets (for a reduced model: its declared sets and the
   solutions of ``sympy.solve(∇L = 0)``).  Each is sampled inside the bounds, checked
   (``∇L = 0`` there, or the declaration is wrong) and classified point by point.
2. Numerical: multi-start Levenberg–Marquardt on ``∇L = 0`` (all starts in one compiled loop).
   Solutions lying on a closed-form set are absorbed by it; the rest are classified and grouped
   into clusters, whose dimension comes from their geometry (a Morse–Bott set of minima is
   reported as one set, not as the hundreds of points the search lands on).
3. Kinks: where ``∇L`` jumps across a kink (``|x|`` at ``x = 0``), the Clarke-stationary points
   on the kinks (``0 ∈ ∂L``: the minimum of ``|x| + y²`` at the origin, where ``∇L = (±1, 0)``),
   classified from the loss along and across the kinks (:mod:`gradflow._critical.kink_points`).

A set is a **global minimum** only when its loss equals a proven lower bound of ``L`` (see
:attr:`gradflow.Landscape.global_min_loss`); otherwise the lowest minimum found is a local
minimum, and where ``L`` visibly runs to ``-∞`` along a ray the result says so.  Each set is split
into its connected components (two wells of a double well are two components of one set); see
:mod:`gradflow._critical.attractors`.
"""

from __future__ import annotations

import dataclasses
import weakref
from typing import Any

import numpy as np

from .._errors import GradflowError
from .._evidence import Evidence
from .._landscape.base import Landscape
from .._output.text import format_point
from .._symbolic.model import BoundModel
from .._symbolic.symmetries import sign_symmetries
from .box import bounded_below, checked_box
from .certificate import Certificate
from .certify import certify as certify_box
from .classify import classify_points
from .closed_sets import group
from .clusters import numerical_sets
from .coercive import global_bound, global_min_loss
from .kept import kept
from .kink_points import kink_sets
from .merging import joined, merge, restricted, without_repeats, without_subsets
from .pieces import (
    on_piece,
    sample_piece,
)
from .proven_kinds import with_proven_kinds
from .roots import ROOT_STARTS, numerical_solutions
from .sets import CriticalSet, CriticalSets, make_set

__all__ = ["critical_sets"]


def critical_sets(
    landscape: Landscape,
    *,
    box: Any = None,
    samples: int = 41,
    starts: int = ROOT_STARTS,
    seed: int = 0,
    certify: bool = False,
) -> CriticalSets:
    """The critical sets of ``L`` inside the bounds, each classified.

    Args:
        landscape: the loss (e.g. a model bound to its hyperparameters).
        box: where to search, shape ``(dim, 2)``: a row ``(lo, hi)`` per parameter in the
            order of ``param_names`` (default the landscape's ranges).  A row with ``lo == hi``
            pins its parameter: only the critical points on that slice of parameter space
            (what a portrait of a slice draws); closed-form sets are sampled on the slice, and
            the numerical search moves only the free coordinates, asking for the whole gradient
            to vanish.  Made by name with :meth:`gradflow.Landscape.search_box` (``bounds``,
            ``fixed``), or for a map by its region (:meth:`gradflow.Region.search_box`: the
            map's box widened, since trajectories end outside it).  The search is not given a
            ``Region`` itself: a region is a plane with the other parameters held at values,
            while a search box bounds every parameter (a 3-parameter box is no region), and
            the critical sets a map needs lie beyond its box.
        samples: sample points per free dimension on each closed-form set (fewer on sets of
            dimension 2 and more, so that a set has at most ``_pieces.MAX_SAMPLES`` points).
        starts: starting points of the numerical search per two parameters (uniform in the
            bounds, seeded; :func:`~gradflow._critical.roots.numerical_solutions` adds the
            box's centre and the images of the points found under the loss's sign symmetries);
            no search where the landscape proves its closed forms complete
            (:attr:`~gradflow.Landscape.critical_sets_complete`).
        seed: seed of the starting points.
        certify: prove by interval arithmetic that no critical point is missed
            (:func:`gradflow.certify`); a certified point the search missed is added (named
            ``"certified"``), and a point of the numerical search where the proof shows
            ``∇L ≠ 0`` is dropped (the result's ``caveats`` say so).  Not on a slice (a box
            with a pinned row).

    Returns:
        The sets ordered by kind (global minima first) and loss, with what is known of the
        lower bound (and the certificate).  Their kinds come from the Hessian in the whole
        parameter space, also on a slice.  Asked again for the same landscape object and
        arguments, the same result (its arrays are read-only); asked again in another process
        for a model declared in SymPy, the result that process wrote to the cache folder
        (:mod:`gradflow._critical.kept`).

    Raises:
        GradflowError: a box of another shape, with ``lo > hi`` or a bound that is not finite,
            or a declared set on which ``∇L ≠ 0``; with ``certify``, a loss not known in SymPy, a
            slice, or a closed-form set's point where the certificate proves ``∇L ≠ 0``.
    """
    box = checked_box(landscape, box)
    key = (box.tobytes(), samples, starts, seed, certify)
    try:
        known = _KNOWN.setdefault(landscape, {})
    except TypeError:  # a landscape that is not hashable or not weakly referenceable
        known = {}
    if key not in known:
        known[key] = _frozen(
            kept(
                landscape,
                key,
                lambda: _critical_sets(landscape, box, samples, starts, seed, certify),
            )
        )
    return known[key]


_KNOWN: weakref.WeakKeyDictionary[Any, dict[tuple[Any, ...], CriticalSets]] = (
    weakref.WeakKeyDictionary()
)
"""The critical sets already found, per landscape object and arguments: a portrait of each of
three slices of one model needs the model's critical sets in the same box three times."""


def _frozen(sets: CriticalSets) -> CriticalSets:
    """``sets`` with every array read-only: one result is handed to every caller that asks."""
    for array in (sets.box, *(a for s in sets for a in vars(s).values())):
        if isinstance(array, np.ndarray):
            array.flags.writeable = False
    return sets


def _critical_sets(
    landscape: Landscape, box: np.ndarray, samples: int, starts: int, seed: int, certify: bool
) -> CriticalSets:
    """:func:`critical_sets` in the checked box ``box`` (shape ``(dim, 2)``)."""
    global_loss = global_min_loss(landscape)
    sampled = [
        (piece, sample_piece(landscape, piece, box, samples)) for piece in landscape.closed_forms
    ]
    searched = not landscape.critical_sets_complete
    symmetries = sign_symmetries(landscape.model) if isinstance(landscape, BoundModel) else ()
    found = numerical_solutions(landscape, box, starts if searched else 0, seed, symmetries)
    on_closed_form = np.zeros(len(found), dtype=bool)
    for piece, _ in sampled:
        on_closed_form |= on_piece(landscape, piece, found)
    grouped = []
    for piece, points in sampled:
        classes = classify_points(landscape, points.points, global_loss)
        grouped.append((piece, group(landscape, piece, points, classes, box)))
    result = without_subsets(landscape, grouped)
    result += numerical_sets(landscape, found[~on_closed_form], global_loss, box)
    if searched:
        result += kink_sets(landscape, box, global_loss, seed=seed)
    certificate = certify_box(landscape, box) if certify else None
    caveats = tuple(landscape.symbolic_caveats)
    if certificate is not None:
        result, dropped = _with_certificate(landscape, result, certificate, box)
        caveats += dropped
    final = joined(landscape, without_repeats(merge(result, box.mean(axis=1))))
    return CriticalSets(
        sets=tuple(with_proven_kinds(landscape, final, box)),
        box=box,
        global_min_loss=global_loss,
        bounded_below=bounded_below(landscape, box),
        non_smooth=landscape.nonsmooth_terms,
        param_names=landscape.param_names,
        title=landscape.title,
        unit=landscape.loss_unit,
        certificate=certificate,
        caveats=caveats,
        completeness=_completeness(landscape, certificate),
        bound_reason=global_bound(landscape).reason,
    )


def _completeness(landscape: Landscape, certificate: Certificate | None) -> Evidence:
    """Whether the list is proven complete: by the landscape's own proof that its closed forms
    are every critical set, or by a certificate with no unresolved box."""
    if landscape.critical_sets_complete:
        return Evidence.of_proof("the landscape proves its closed-form sets complete")
    if certificate is not None and certificate.complete:
        return Evidence.of_proof("interval arithmetic leaves no box of the search unresolved")
    if certificate is not None:
        return Evidence.numerical("the certificate left boxes unresolved")
    return Evidence.numerical("a numerical search; --certify proves it by interval arithmetic")


def _with_certificate(
    landscape: Landscape, sets: list[CriticalSet], certificate: Certificate, box: np.ndarray
) -> tuple[list[CriticalSet], tuple[str, ...]]:
    """The sets with the certificate's word, and what the report must say of it.

    The points of a numerical set that lie where the certificate proves ``∇L ≠ 0`` (outside
    every certified, explained and unresolved box) are dropped, and a set left with none is
    dropped: the search keeps a point where a Newton step supports a zero, and a zero that
    only rounding separates from a minimum of ``‖∇L‖`` (``∂L/∂x = (x − 1)² + 10⁻¹²``) is
    settled by the proof.  An isolated set inside a certified point's box takes its kind where
    the certificate proves the Morse index (a saddle whose loss is within the global tolerance
    of the lower bound is no minimum), and the certified points no set holds are added as sets
    named ``"certified"`` (classified).

    Raises:
        GradflowError: a closed-form set's sample where the certificate proves ``∇L ≠ 0``
            (a wrong declaration).
    """
    samples = np.array([s.sample for s in sets if s.name != "numerical"]).reshape(-1, landscape.dim)
    wrong = ~certificate.accounts_for(samples)
    if wrong.any():
        raise GradflowError(
            f"a closed-form critical set has a point at {format_point(samples[wrong][0], 10)} "
            "where interval arithmetic proves ∇L ≠ 0"
        )
    kept, dropped = [], []
    for s in sets:
        if s.name != "numerical":
            kept.append(s)
            continue
        inside = certificate.accounts_for(s.points)
        dropped += list(s.points[~inside])
        if inside.all():
            kept.append(s)
        elif inside.any():
            kept.append(restricted(s, inside))
    caveats = ()
    if dropped:
        caveats = (
            f"dropped {len(dropped)} point(s) of the numerical search where interval arithmetic "
            f"proves ∇L ≠ 0 (the first at {format_point(dropped[0], 10)})",
        )
    proven = [c for c in certificate.isolated if c.morse_index is not None]
    checked = []
    for s in kept:
        holders = [c for c in proven if certificate.holds(c, s.points)] if not s.dimension else []
        checked.append(dataclasses.replace(s, kind=holders[0].kind) if holders else s)
    added = []
    held = np.concatenate([s.points for s in kept] or [np.zeros((0, landscape.dim))])
    for point in certificate.missing(held):
        classes = classify_points(landscape, point.point[None], global_min_loss(landscape))
        made = make_set(
            landscape,
            "certified",
            None,
            point.point[None],
            classes,
            np.zeros(1, int),
            0,
            np.zeros(1, int),
            box,
        )
        added.append(dataclasses.replace(made, kind=point.kind, loss=point.loss))
    return checked + added, caveats
