"""Where a full run leaves the reduced prediction: evidence read off its recorded path.

A full run is recorded as its accepted points ``(t_k, W_k)`` (:func:`gradflow.slide` with
``record=True``) and, between two of them, followed by the cubic Hermite interpolant whose end
slopes are the flow's velocities ``-∇L(W_k)`` (fourth order on a smooth piece of the loss; on a
piece that slides along a kink it uses the one-sided gradient, so there it is an interpolation
of the recorded points only).  On that dense path:

- :func:`level_crossing`: the first time a function of the state (the loss) reaches a level:
  the stopping time of a run decided below a loss level is that crossing, not the end of the
  integrator step that first lies below it;
- :func:`label_change`: the first time a label of the state (the reduced basin label of its
  projection) differs from the label at the start: where the run's projection crosses the
  reduced basin boundary, located by bisection to ``tol`` in time.

For the Markov transformer, :func:`saddle_alignment` measures how much of a departure direction
lies in the unstable space of the full model at a point of the reduced local set ``e = 0``
(the eigenvectors of its full Hessian with negative eigenvalues, from Hessian-vector products).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import jax.numpy as jnp
import numpy as np

from gradflow import PID, FlowOptions, StopRule, slide

from .full_landscape import (
    FullLandscape,
    embed_batch,
    full_hessian,
    off_family,
    project_batch,
)
from .full_model import MarkovFullModel
from .full_spectrum import KINK_OFFSET

__all__ = [
    "BISECTIONS",
    "EVIDENCE",
    "LABELLED",
    "RISE_SHARE",
    "SADDLE_COS",
    "Path",
    "euclidean_basin",
    "evidence_ranges",
    "evidence_text",
    "run_evidence",
    "label_change",
    "level_crossing",
    "refined_crossing",
    "saddle_alignment",
    "unstable_space",
]

BISECTIONS = 40
"""Bisection steps of :func:`level_crossing` within a segment of the path (a segment of length
100 to ``10⁻¹⁰``)."""
LABEL_BISECTIONS = 16
"""Bisection steps of :func:`label_change` (each labels one state, perhaps by a reduced flow):
the change is located to ``2⁻¹⁶`` of the span between two labelled points."""
LABELLED = 33
"""Recorded points of a path whose labels :func:`label_change` reads (each label may be a
reduced gradient flow): at most this many states are labelled at once."""
UNSTABLE_PAIRS = 12
"""Eigenpairs of the full Hessian computed at the bottom of its spectrum (the default Markov
transformer has 7 + 1 negative eigenvalues on ``e = 0``, ``w < -1/√2``, at p, q = 0.2, 0.3)."""


@dataclass(frozen=True)
class Path:
    """A recorded run: times ``ts`` (shape ``(n,)``, increasing), states ``ys`` (``(n, dim)``)
    and velocities ``vs`` (``(n, dim)``, ``-∇L`` at each state)."""

    ts: np.ndarray
    ys: np.ndarray
    vs: np.ndarray

    def at(self, t: float) -> np.ndarray:
        """The state at time ``t`` in ``[ts[0], ts[-1]]`` (cubic Hermite on its segment)."""
        k = int(np.clip(np.searchsorted(self.ts, t, side="right") - 1, 0, len(self.ts) - 2))
        t0, t1 = self.ts[k], self.ts[k + 1]
        h = t1 - t0
        if h <= 0:
            return self.ys[k + 1]
        s = (t - t0) / h
        h00, h10 = 2 * s**3 - 3 * s**2 + 1, s**3 - 2 * s**2 + s
        h01, h11 = -2 * s**3 + 3 * s**2, s**3 - s**2
        return (
            h00 * self.ys[k]
            + h10 * h * self.vs[k]
            + h01 * self.ys[k + 1]
            + h11 * h * self.vs[k + 1]
        )


def _bisect(
    path: Path, lo: float, hi: float, inside: Callable[[np.ndarray], bool], steps: int
) -> float:
    """The time in ``[lo, hi]`` where ``inside`` turns true (false at ``lo``, true at ``hi``),
    to ``(hi - lo)/2^steps``."""
    for _ in range(steps):
        mid = 0.5 * (lo + hi)
        if inside(path.at(mid)):
            hi = mid
        else:
            lo = mid
        if hi - lo <= 1e-12 * max(1.0, abs(hi)):
            break
    return 0.5 * (lo + hi)


def level_crossing(path: Path, value: Callable[[np.ndarray], float], level: float) -> float:
    """The first time ``value(state) ≤ level`` on the dense path; ``nan`` if the recorded
    points never reach it.  ``value`` takes a state of shape ``(dim,)``."""
    values = np.asarray([value(y) for y in path.ys])
    below = np.nonzero(values <= level)[0]
    if not below.size:
        return float("nan")
    k = int(below[0])
    if k == 0:
        return float(path.ts[0])
    return _bisect(path, path.ts[k - 1], path.ts[k], lambda y: value(y) <= level, BISECTIONS)


def label_change(
    path: Path, labels: Callable[[np.ndarray], np.ndarray]
) -> tuple[float, np.ndarray | None]:
    """The first time the label of the dense path differs from its label at the start, and the
    state there; ``(nan, None)`` if none of :data:`LABELLED` recorded points, evenly spread over
    the path (all if fewer), changes it.  The change is located by bisection between the first
    such point and the one before it (a change that is undone between two of them is missed).

    Args:
        path: the recorded run.
        labels: labels of a batch of states, shape ``(m, dim)`` → ``(m,)``.
    """
    picked = np.unique(np.linspace(0, len(path.ts) - 1, LABELLED).round().astype(int))
    marks = np.asarray(labels(path.ys[picked]))
    changed = np.nonzero(marks != marks[0])[0]
    if not changed.size:
        return float("nan"), None
    lo, hi = picked[int(changed[0]) - 1], picked[int(changed[0])]
    start = marks[0]
    t = _bisect(
        path, path.ts[lo], path.ts[hi], lambda y: labels(y[None])[0] != start, LABEL_BISECTIONS
    )
    return t, path.at(t)


def unstable_space(full: MarkovFullModel, w: float, h: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The negative eigenvalues (ascending, nats per weight²) and their eigenvectors (columns,
    shape ``(P, m)``) of the full Hessian at ``embed(e = ε, w)``, ``ε`` =
    :data:`~gradflow.systems.markov.full_spectrum.KINK_OFFSET` (the one-sided limit at the reduced
    set ``e = 0``, where every FFN input sits on the ReLU's kink), among the bottom
    :data:`UNSTABLE_PAIRS` of its spectrum (negative: below ``-10⁻⁶`` of the largest of those in
    magnitude).  The Hessian is formed whole (:func:`full_hessian`) and diagonalized by LAPACK:
    for the default model's 825 weights a few tenths of a second, where Lanczos on
    Hessian-vector products took about a second a run, held back by the cluster at 0."""
    x = np.asarray(embed_batch(full)(jnp.asarray([[KINK_OFFSET, w]]), jnp.asarray(h)))[0]
    vals, vecs = np.linalg.eigh(full_hessian(full, x, h))
    vals, vecs = vals[:UNSTABLE_PAIRS], vecs[:, :UNSTABLE_PAIRS]
    scale = max(float(np.max(np.abs(vals))), 1e-300)
    keep = vals < -1e-6 * scale
    return vals[keep], vecs[:, keep]


def saddle_alignment(direction: np.ndarray, space: np.ndarray) -> float:
    """``‖Vᵀu‖ / ‖u‖`` for ``u = direction`` and ``V = space`` (orthonormal columns): the
    cosine between a direction and a subspace (1 inside it, 0 orthogonal to it, 0 for an empty
    space or a zero direction)."""
    norm = float(np.linalg.norm(direction))
    if norm == 0 or space.shape[1] == 0:
        return 0.0
    return float(np.linalg.norm(space.T @ direction) / norm)


RISE_SHARE = 0.01
"""A run's projection climbed the reduced loss when its reduced loss rose, after its least value
on the path, by more than this share of the gap ``H(π) - H_rate`` (a reduced gradient flow never
raises its loss, in any metric)."""
SADDLE_COS = 0.5
"""A departure lies in the full saddle's unstable space when its cosine with that space is at
least this."""
EVIDENCE = (
    "stop",
    "turn_time",
    "turn_e",
    "turn_w",
    "turn_off",
    "rise",
    "off_max",
    "saddle_rate",
    "saddle_cos",
    *(f"cross_{k}_{m}" for m in ("euclidean", "induced") for k in ("time", "e", "w", "off")),
)
"""The evidence recorded per run (``nan`` where not measured: runs with noise)."""


def euclidean_basin(e: np.ndarray, w: np.ndarray, p: float, q: float) -> np.ndarray:
    """The canonical model's Euclidean basin label (``"local"``, ``"global"``) at ``e ≠ 0`` in
    closed form (``docs/systems/markov.md``, Basins): with ``E = e² − w² − sgn(w) ln|w|`` and
    ``E_sad = −(1 + ln 2)/2``, a point reaches the local set iff ``w < −1/√2`` and ``E < E_sad``
    for ``p + q < 1``, iff ``w ≥ 0`` or ``−1/√2 < w < 0`` and ``E < E_sad`` for ``p + q > 1``;
    every point reaches ``Γ*`` at ``p + q = 1``."""
    e, w = np.asarray(e, float), np.asarray(w, float)
    with np.errstate(divide="ignore"):
        energy = e**2 - w**2 - np.sign(w) * np.log(np.abs(w))
    below = energy < -(1 + np.log(2)) / 2
    corner = -1 / np.sqrt(2)
    if p + q < 1:
        local = (w < corner) & below
    elif p + q > 1:
        local = (w >= 0) | ((w > corner) & (w < 0) & below)
    else:
        local = np.zeros(np.shape(w), bool)
    return np.where(local, "local", "global")


FINE = FlowOptions(
    solver="Tsit5",
    controller=PID(rtol=1e-10, atol=1e-13),
    stop=StopRule(gtol=1e-12, t_max=1e6, max_steps=100_000),
)
"""The re-integration of the step that crosses a level (:func:`refined_crossing`)."""


def refined_crossing(land: FullLandscape, path: Path, level: float) -> float:
    """The first time the loss of a recorded full run reaches ``level``: the step that crosses
    it re-integrated by :func:`gradflow.slide` at :data:`FINE` tolerances from its start, and
    the crossing located on that short path (:func:`level_crossing`).  A run's recorded steps
    may be long where the flow is slow (1.1 time units for the run from ``(1.1, −2.5)`` at
    p, q = 0.2, 0.3, which slides on a kink there); ``nan`` if no recorded point reaches it."""
    below = np.nonzero(land.loss(path.ys) <= level)[0]
    if not below.size:
        return float("nan")
    k = int(below[0])
    if k == 0:
        return float(path.ts[0])
    fine = slide(
        land.kinks, path.ys[k - 1], land.h, FINE, decide_below=level, t0=path.ts[k - 1], record=True
    )
    short = Path(fine.ts, fine.thetas, -land.grad(fine.thetas))
    return level_crossing(short, lambda y: float(land.loss(y)), level)


def run_evidence(
    land: FullLandscape,
    path: Path,
    level: float,
    fate: str,
    labels: dict[str, Callable[[np.ndarray], np.ndarray]],
    refine: bool = True,
) -> dict[str, float]:
    """Where a recorded full run leaves the reduced prediction (:data:`EVIDENCE`).

    - ``stop``: for a global run, the crossing of ``level`` (:func:`refined_crossing`), else
      the last recorded time; ``nan`` without ``refine`` (a replayed path, whose run keeps its
      own stop);
    - ``turn_*``: the point of the path where the reduced loss of its projection is least: its
      time, projected ``(e, w)`` and relative distance from the reduced family; ``rise``: how much
      that reduced loss rose after it (nats; a reduced flow never raises it);
    - ``off_max``: the greatest relative distance from the reduced family along the path;
    - ``saddle_rate``, ``saddle_cos``: the lowest eigenvalue of the full Hessian at the reduced
      local set beside the turn, ``embed(ε, w_turn)`` (:func:`unstable_space`), and the cosine
      between the run's departure at the turn, its displacement from the family
      ``W − embed(project W)``, and that point's unstable space;
    - ``cross_*_<metric>``: where the projection first changes its reduced basin label in
      ``labels[metric]`` (states of the full model, a batch, → labels), when the full fate
      differs from the label at the start: time, projected ``(e, w)``, distance from the family.

    Args:
        land: the full landscape at the run's ``(p, q)``.
        path: the recorded run.
        level: the decision level, nats.
        fate: the run's fate (a name of :data:`~gradflow.systems.markov.fate.FATES`).
        labels: per metric, the reduced basin labels of a batch of full states.
        refine: locate a global run's crossing of ``level`` (its stop time).
    """
    full, h = land.full, land.h
    hj = jnp.asarray(h)
    projected = np.asarray(project_batch(full)(jnp.asarray(path.ys)))
    off = np.asarray(off_family(full)(jnp.asarray(path.ys), hj))
    reduced = full.reduced.bind(p=float(h[0]), q=float(h[1]))
    heights = np.asarray(reduced.loss(projected))
    k = int(np.argmin(heights))
    out = {
        "stop": float(path.ts[-1]),
        "turn_time": float(path.ts[k]),
        "turn_e": float(projected[k, 0]),
        "turn_w": float(projected[k, 1]),
        "turn_off": float(off[k]),
        "rise": float(heights[-1] - heights[k]),
        "off_max": float(off.max()),
    }
    if not refine:
        out["stop"] = float("nan")
    elif fate == "global":
        crossing = refined_crossing(land, path, level)
        out["stop"] = crossing if np.isfinite(crossing) else out["stop"]
    rates, space = unstable_space(full, out["turn_w"], h)
    out["saddle_rate"] = float(rates[0]) if rates.size else 0.0
    back = np.asarray(embed_batch(full)(jnp.asarray(projected[k : k + 1]), hj))[0]
    out["saddle_cos"] = saddle_alignment(path.ys[k] - back, space)
    for metric, label in labels.items():
        keys = [f"cross_{x}_{metric}" for x in ("time", "e", "w", "off")]
        out.update(dict.fromkeys(keys, float("nan")))
        start = label(path.ys[:1])[0]
        if start == fate:
            continue
        t, y = label_change(path, label)
        if y is not None:
            place = np.asarray(project_batch(full)(jnp.asarray(y[None])))[0]
            distance = float(np.asarray(off_family(full)(jnp.asarray(y[None]), hj))[0])
            out.update(zip(keys, (t, float(place[0]), float(place[1]), distance)))
    return out


def evidence_text(run: dict[str, float]) -> str:
    """One run's evidence (:func:`run_evidence`) in words, for its line in a fate map's report;
    empty where it was not recorded (``nan``)."""
    if np.isnan(run.get("rise", np.nan)):
        return ""
    text = (
        f" (at most {run['off_max']:.2g}); reduced loss least at t = {run['turn_time']:.4g}, "
        f"(e, w) = ({run['turn_e']:.3f}, {run['turn_w']:.3f}), {run['turn_off']:.2g} off, "
        f"then up {run['rise']:.3g} nats; full saddle at e = 0: λ = {run['saddle_rate']:.3g}, "
        f"departure cos {run['saddle_cos']:.2f}"
    )
    for metric in ("euclidean", "induced"):
        t = run[f"cross_time_{metric}"]
        if not np.isnan(t):
            text += (
                f"; crosses the {metric} basin boundary at t = {t:.4g}, (e, w) = "
                f"({run[f'cross_e_{metric}']:.3f}, {run[f'cross_w_{metric}']:.3f}), "
                f"{run[f'cross_off_{metric}']:.2g} off"
            )
    return text


def evidence_ranges(
    evidence: dict[str, np.ndarray],
    off_end: np.ndarray,
    fates: np.ndarray,
    reduced: dict[str, np.ndarray],
) -> dict[str, dict[str, list[float]]]:
    """Per metric, for the recorded runs that agree and those that do not, the range
    ``[min, max]`` of their distance from the family at the end (``off_end``) and along the way
    (``off_max``), of how far their projection climbed the reduced loss (``rise``, nats) and of
    the cosine of their departure with the full saddle's unstable space (``saddle_cos``); ranges
    of no run are left out.

    Args:
        evidence: per key of :data:`EVIDENCE`, shape ``(R, n, n)`` (``nan`` where not recorded).
        off_end: relative distance from the family at the end, shape ``(R, n, n)``.
        fates: the full fates' names, shape ``(R, n, n)``.
        reduced: per metric the predicted fates, shape ``(n, n)``.
    """
    recorded = ~np.isnan(evidence.get("rise", np.full(fates.shape, np.nan)))
    keys = ("off_max", "rise", "saddle_cos")
    values = {"off_end": off_end, **{k: evidence[k] for k in keys if k in evidence}}
    out: dict[str, dict[str, list[float]]] = {}
    for metric, predicted in reduced.items():
        agree = fates == np.asarray(predicted)[None]
        for name, group in (("agree", agree), ("mismatch", ~agree)):
            chosen = recorded & group
            if chosen.any():
                out[f"{metric} {name}"] = {
                    k: [float(v[chosen].min()), float(v[chosen].max())] for k, v in values.items()
                }
    return out
