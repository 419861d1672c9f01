"""One code per outcome: a trajectory's status, what it reached and a basin map's label agree.

The losses are worked out by hand:

- the double well ``(x² − 1)² + y²``: global minima at ``(±1, 0)``, a saddle at the origin whose
  stable manifold is the line ``x = 0`` (there ``∂L/∂x = 4x(x² − 1) = 0``, so the flow keeps
  ``x = 0`` exactly and ``y`` decays to 0);
- ``x² + y² − y⁴/4``, unbounded below: a local minimum at the origin, saddles at ``(0, ±√2)``;
  along ``y`` the flow is ``ẏ = −2y + y³``, so ``|y|`` shrinks to 0 below ``√2`` and blows up
  above it in finite time, whatever ``x`` (``ẋ = −2x``);
- ``|x| + y²``: one minimum, on the kink ``x = 0`` (``0 ∈ ∂L`` at the origin), where the flow
  slides along the kink.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

import gradflow
from gradflow import KINDS, LABELS, GradflowError, Kind, Outcome

API = Path(__file__).resolve().parents[2] / "docs" / "api.md"


def test_a_kind_and_its_outcome_share_one_code() -> None:
    assert [k.code for k in Kind] == [0, 1, 2, 3, 4]
    assert [int(o) for o in Outcome] == list(range(9))
    for kind in Kind:
        assert kind.outcome.kind is kind and kind.outcome.name == kind.name
    for outcome in (Outcome.DIVERGED, Outcome.NOT_CONVERGED, Outcome.NON_SMOOTH):
        assert outcome.kind is None
    assert Outcome.CONVERGED.kind is None
    assert KINDS == ("global_min", "local_min", "saddle", "local_max", "degenerate")
    assert LABELS == (*KINDS, "diverged", "not_converged", "non_smooth")


def test_members_are_written_by_their_names() -> None:
    """Every output keeps the names: ``str``, formatting, JSON (values and keys), NumPy."""
    assert str(Kind.GLOBAL_MIN) == "global_min" and f"{Kind.SADDLE}" == "saddle"
    assert Kind.LOCAL_MAX == "local_max" and Kind("degenerate") is Kind.DEGENERATE
    assert json.dumps({Kind.SADDLE: [Kind.LOCAL_MIN]}) == '{"saddle": ["local_min"]}'
    assert np.array([Kind.GLOBAL_MIN]).tolist() == ["global_min"]
    assert str(Outcome.NOT_CONVERGED) == "not_converged" and f"{Outcome.GLOBAL_MIN}" == "global_min"
    assert Outcome.of("non_smooth") is Outcome.NON_SMOOTH
    with pytest.raises(GradflowError, match="unknown outcome 'sadle'; outcomes are global_min, "):
        Outcome.of("sadle")


def test_the_api_page_lists_every_outcome_with_its_message() -> None:
    rows = re.findall(r"^\| (\d) \| `(\w+)` \| *(?:`(\w+)`)? *\| (.+) \|$", API.read_text(), re.M)
    assert [
        (int(code), name, kind or None, message.replace("\\|", "|"))
        for code, name, kind, message in rows
    ] == [(int(o), o.name, None if o.kind is None else str(o.kind), o.message) for o in Outcome]


WELL = "(x**2 - 1)**2 + y**2"
UNBOUNDED = "x**2 + y**2 - y**4/4"
KINK = "abs(x) + y**2"


def well_outcome(x: float, y: float) -> Outcome:
    return Outcome.SADDLE if x == 0 else Outcome.GLOBAL_MIN


def unbounded_outcome(x: float, y: float) -> Outcome:
    return Outcome.LOCAL_MIN if abs(y) < np.sqrt(2) else Outcome.DIVERGED


def kink_outcome(x: float, y: float) -> Outcome:
    return Outcome.GLOBAL_MIN


CASES = {
    "double well": (WELL, (-1.5, 1.5, -1.0, 1.0), (3, 3), well_outcome),
    "unbounded below": (UNBOUNDED, (-1.0, 1.0, -2.0, 2.0), (2, 3), unbounded_outcome),
    "kink": (KINK, (-1.0, 1.0, -1.0, 1.0), (2, 2), kink_outcome),
}
"""Each loss with its box, its grid (a column ``x = 0`` on the saddle's stable manifold, rows
``y = ±2`` beyond ``±√2``) and its outcome at a start ``(x, y)``."""


@pytest.fixture(scope="module", params=list(CASES))
def case(request) -> tuple[gradflow.BoundModel, gradflow.BasinMap, object]:
    text, box, grid, expected = CASES[request.param]
    model = gradflow.loss_model(text, ["x", "y"]).bind()
    region = gradflow.Region.of(model, grid=grid, box=box)
    return model, gradflow.basins(model, region=region, progress=False), expected


def test_a_basin_maps_labels_are_its_points_single_trajectory_outcomes(case) -> None:
    """At every grid point the map's label is the outcome worked out by hand and the outcome
    one trajectory from it reached, with the same code."""
    model, bm, expected = case
    for j, y in enumerate(bm.ys):
        for i, x in enumerate(bm.xs):
            path = gradflow.flow(model, [x, y], critical=bm.critical)
            assert bm.labels[j, i] == path.reached == expected(x, y), (x, y)
            assert LABELS[bm.labels[j, i]] == str(path.reached)
            if path.attractor is not None:
                assert path.attractor.id == bm.attractor_ids[j, i]
                assert path.attractor.kind.outcome is path.reached
