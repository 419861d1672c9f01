"""Adding a model by the recipe of docs/architecture.md: a module with a factory and its entry in
``MODELS`` (its full model one value of the declaration) — and ``critical``, ``basins``,
``portrait`` and ``fate`` work on it, with answers worked out by hand.

**toy**: ``L(a, b) = ½(1 − ab)²``, the scalar depth-2 linear network, reduced from the width-2
network ``x ↦ W2·(W1 x)`` by ``embed(a, b) = (W1 = (a, 0)ᵀ, W2 = (b, 0))``.  By hand, with
``r = 1 − ab``: ``∇L = −r (b, a)``, zero on ``ab = 1`` (``L = 0``: global minima, two branches,
``a > 0`` and ``a < 0``) and at the origin (``L = ½``, Hessian ``[[0, −1], [−1, 0]]``,
eigenvalues ``±1``: a saddle).  ``s = a + b`` and ``d = a − b`` obey ``ṡ = r s``, ``ḋ = −r d``:
the line ``a + b = 0`` is the saddle's stable manifold, ``sign(a0 + b0)`` picks the branch, and
``a² − b² = s d`` is conserved.  The full gradient on the family, ``∂L/∂W1 = −r W2ᵀ = −r (b, 0)``,
``∂L/∂W2 = −r (a, 0)``, is tangent to it: the family is invariant, the full flow from
``embed(θ0)`` is the reduced flow, and (``J`` with orthonormal columns, ``G = I``) both metrics
predict it.  So every cell agrees, every run ends on the family (distance exactly 0) at the
point of ``ab = 1`` with ``a² − b² = a0² − b0²``.

**toy-bias**: the same reduced loss from ``f = w2 w1 + c`` with the bias ``c = 0`` dropped:
``L_full = ½(1 − w2 w1 − c)²``, ``embed(a, b) = (a, b, 0)``.  On the family ``∂L_full/∂c = −r``:
the family is not invariant off ``ab = 1``.  With ``σ(t) = ∫ r``: ``c = σ`` and
``(w1, w2) = (a0 cosh σ + b0 sinh σ, a0 sinh σ + b0 cosh σ)``, so the run stops at the first
root ``σ∞`` of ``1 − σ − [a0 b0 cosh 2σ + ½(a0² + b0²) sinh 2σ]``, at distance ``|σ∞|`` from the
family (``σ∞ = 1`` from the origin: ``c → 1`` while ``(w1, w2)`` stays 0, so the projection
stays on the reduced saddle, as the reduced flow does).  Every other start off ``ab = 1`` is a
mismatch: its projected end ``(w1, w2)`` has ``w1 w2 = 1 − σ∞``, on no reduced attractor, and the
reduced gradient there, ``−r (w2, w1)`` with ``r = 1 − w1 w2 = σ∞``, is not zero: evidence that
the run ended where no reduced flow ends (reason ``off-reduction``).  The projection never climbs
the reduced loss: ``d(1 − w1 w2)/dt = −r (w1² + w2²) ≤ 0``.
"""

from __future__ import annotations

import json
import textwrap

import numpy as np
import pytest
from scipy.optimize import brentq

import gradflow
from gradflow.systems import MODELS, ModelEntry

TOY_MODULE = '''\
"""Toy models: the scalar depth-2 linear network L(a, b) = ½(1 − ab)² and its full models."""

from __future__ import annotations

import functools

import jax.numpy as jnp
import sympy as sp

from gradflow import FullModel, ReducedModel

a, b = sp.symbols("a b", real=True)


def embed(theta, h):
    """(a, b) ↦ W1 = (a, 0)ᵀ, W2 = (b, 0)."""
    zero = jnp.zeros_like(theta[0])
    return {"W1": jnp.stack([theta[0], zero]), "W2": jnp.stack([theta[1], zero])}


def loss(params, h):
    """½(1 − W2·W1)²."""
    return 0.5 * (1 - params["W2"] @ params["W1"]) ** 2


def project(params):
    return jnp.stack([params["W1"][0], params["W2"][0]])


@functools.cache
def toy_model() -> ReducedModel:
    return ReducedModel(
        "toy",
        (a, b),
        (1 - a * b) ** 2 / 2,
        bounds={"a": (-2, 2), "b": (-2, 2)},
        full=FullModel(embed, loss, project=project),
        source="a depth-2 linear network",
    )


def embed_bias(theta, h):
    """(a, b) ↦ (w1, w2, c) = (a, b, 0)."""
    return {"w1": theta[0], "w2": theta[1], "c": jnp.zeros_like(theta[0])}


def loss_bias(params, h):
    """½(1 − w2 w1 − c)²."""
    return 0.5 * (1 - params["w2"] * params["w1"] - params["c"]) ** 2


@functools.cache
def toy_bias_model() -> ReducedModel:
    return ReducedModel(
        "toy-bias",
        (a, b),
        (1 - a * b) ** 2 / 2,
        bounds={"a": (-2, 2), "b": (-2, 2)},
        full=FullModel(embed_bias, loss_bias),
        source="a depth-2 linear network whose bias the reduction drops",
    )
'''


@pytest.fixture
def toys(tmp_path_factory, monkeypatch):
    """The recipe: the module on the path, its entries in ``MODELS`` (as a user's line would)."""
    folder = tmp_path_factory.mktemp("toys")
    (folder / "gradflow_test_toys.py").write_text(textwrap.dedent(TOY_MODULE))
    monkeypatch.syspath_prepend(str(folder))
    for name, factory in (("toy", "toy_model"), ("toy-bias", "toy_bias_model")):
        entry = ModelEntry(f"gradflow_test_toys:{factory}", ("a", "b"), ("a", "b"), {}, full=True)
        monkeypatch.setitem(MODELS, name, entry)


def json_of(run):
    assert run.code == 0, run.err
    return json.loads(run.out)


def test_a_toy_model_added_by_the_recipe_runs_every_command(cli, toys):
    sets = {
        s["kind"]: s for s in json_of(cli("critical", "--model", "toy", "--json"))["critical_sets"]
    }
    assert sorted(sets) == ["global_min", "saddle"]
    curve = np.asarray(sets["global_min"]["points"])
    np.testing.assert_allclose(curve[:, 0] * curve[:, 1], 1.0, atol=1e-9)
    assert sets["global_min"]["dimension"] == 1 and sets["global_min"]["components"] == 2
    assert sets["saddle"]["points"] == [[0.0, 0.0]] and sets["saddle"]["loss"] == 0.5
    np.testing.assert_allclose(sets["saddle"]["hessian_eigenvalues"], [-1.0, 1.0], atol=1e-12)

    json_of(cli("basins", "--model", "toy", "--grid", "5", "--json"))
    data = _arrays(cli.folder / "basins.npz")
    branch = _branches(data["x"], data["y"])
    names = data["label_names"][data["labels"]]
    np.testing.assert_array_equal(names == "saddle", branch == 0)
    attractors = json.loads((cli.folder / "basins.json").read_text())["attractors"]
    sign = np.asarray([np.sign(attractors[i]["point"][0]) for i in data["attractor_ids"].ravel()])
    np.testing.assert_array_equal(sign, branch.ravel())

    portrait = json_of(cli("portrait", "--model", "toy", "--grid", "21", "--json"))
    assert portrait["fractions"]["saddle"] == pytest.approx(21 / 21**2)  # the line a + b = 0
    assert portrait["fractions"]["global_min"] == pytest.approx(1 - 1 / 21)

    fate = json_of(cli("fate", "--model", "toy", "--quick", "--json"))
    assert fate["system"] == "toy" and fate["cells"] == 2 * 25
    assert fate["agreement"] == {"euclidean σ=0": 1.0, "induced σ=0": 1.0}
    assert fate["mismatches"] == [] and fate["reasons"] == {}
    runs = _arrays(cli.folder / "fate.npz")
    assert (cli.folder / "fate.png").stat().st_size > 0
    assert np.all(runs["off_end"] == 0.0)  # an invariant family: never left, to the last bit
    a0, b0 = np.meshgrid(runs["x"], runs["y"])
    a, b = runs["projected"][0, ..., 0], runs["projected"][0, ..., 1]
    np.testing.assert_allclose(a**2 - b**2, a0**2 - b0**2, atol=1e-6)
    ends = _branches(runs["x"], runs["y"]) != 0
    # the runs stop at ‖∇L‖ = |1 − ab|·‖(a, b)‖ ≤ gtol (1e-6, relative to the loss's scale)
    np.testing.assert_allclose((a * b)[ends], 1.0, atol=1e-4)
    np.testing.assert_array_equal(np.sign(a[ends]), _branches(runs["x"], runs["y"])[ends])
    np.testing.assert_allclose(a[~ends], 0.0, atol=1e-5)


def test_a_model_in_a_file_is_fate_mapped_without_a_registry_entry(cli, tmp_path):
    """``gradflow fate --model FILE.py:FACTORY``: the toy network's file alone, no entry in
    ``MODELS``.  Its family is invariant (module docstring), so both metrics predict every full
    run, and from the start ``(−1, 1)`` on the saddle's stable line ``a + b = 0`` the run ends
    at the saddle, the origin."""
    (tmp_path / "my_network.py").write_text(textwrap.dedent(TOY_MODULE))
    spec = f"{tmp_path / 'my_network.py'}:toy_model"
    fate = json_of(cli("fate", "--model", spec, "--grid", "2", "--json"))
    assert fate["system"] == spec and fate["cells"] == 2 * 4
    assert fate["agreement"] == {"euclidean σ=0": 1.0, "induced σ=0": 1.0}
    runs = _arrays(cli.folder / "fate.npz")
    on_line = np.isclose(runs["x"][:, None] + runs["y"][None, :], 0.0).T
    np.testing.assert_allclose(runs["projected"][0][on_line], 0.0, atol=1e-5)
    missing = cli("fate", "--model", f"{tmp_path / 'none.py'}:toy_model", "--grid", "2")
    assert missing.code == 2 and "does not exist" in missing.err


def test_a_plane_maps_full_runs_are_read_in_the_reduced_losss_scales(tmp_path):
    """The full landscape of a plane fate map takes the reduced loss's scales, so that a full
    run's flow-time budget and steady-state test are the reduced runs': measured on its
    weights' default ranges its time unit would be another (a full transformer's a thousandth
    of the reduced one, its runs cut off at once)."""
    from gradflow.systems.plane_fate import FullRuns, _full_landscape, _setup
    from gradflow.systems.plane_fate_config import ModelFateConfig

    (tmp_path / "my_network.py").write_text(textwrap.dedent(TOY_MODULE))
    config = ModelFateConfig(model=f"{tmp_path / 'my_network.py'}:toy_model", grid=2)
    land = _full_landscape(FullRuns(config, 0.0, 0))[0]
    reduced = gradflow.loss_scales(_setup(config)[0])
    assert gradflow.loss_scales(land) == reduced
    assert land.declared_scales == (reduced.length, reduced.gradient)


def _arrays(path):
    """The arrays of an NPZ file, read and the file closed."""
    with np.load(path) as stored:
        return dict(stored)


def _branches(xs, ys):
    """``sign(a0 + b0)`` per start (row = b): the branch of ``ab = 1`` reached, 0 the saddle."""
    a0, b0 = np.meshgrid(xs, ys)
    return np.sign(np.round(a0 + b0, 12))


def test_a_family_that_is_not_invariant_is_left_and_the_fate_map_says_so(cli, toys):
    fate = json_of(
        cli("fate", "--model", "toy-bias", "--grid", "3", "--box", "-1", "1", "-1", "1", "--json")
    )
    runs = _arrays(cli.folder / "fate.npz")
    a0, b0 = np.meshgrid(runs["x"], runs["y"])
    on_minima = np.isclose(a0 * b0, 1.0)  # r = 0: the run never moves
    assert fate["agreement"] == {"euclidean σ=0": 3 / 9, "induced σ=0": 3 / 9}
    assert fate["reasons"] == {"off-reduction": 2 * 6}
    assert {m["full"] for m in fate["mismatches"]} == {"no attractor"}
    from gradflow import loss_scales
    from gradflow.systems.model_specs import load_model

    scale = loss_scales(load_model("toy-bias").bind()).gradient
    moved = ~on_minima & ~((a0 == 0) & (b0 == 0))
    assert np.all(np.isnan(runs["evidence_rise"][0][~moved]))  # agreeing runs: not recorded
    for i, j in zip(*np.nonzero(~on_minima)):
        a, b = a0[i, j], b0[i, j]

        def residual(s, a=a, b=b):
            return 1 - s - (a * b * np.cosh(2 * s) + 0.5 * (a**2 + b**2) * np.sinh(2 * s))

        s = brentq(residual, 0.0, 3.0, xtol=1e-14)
        assert runs["off_end"][0, i, j] == pytest.approx(s, abs=1e-5)
        expected = (a * np.cosh(s) + b * np.sinh(s), a * np.sinh(s) + b * np.cosh(s))
        np.testing.assert_allclose(runs["projected"][0, i, j], expected, atol=1e-5)
        if moved[i, j]:
            end = runs["evidence_end_gradient"][0, i, j] * scale
            assert end == pytest.approx(s * np.hypot(*expected), rel=1e-4)
            assert abs(runs["evidence_rise"][0, i, j]) < 1e-8
    assert runs["off_end"][0, 1, 1] == pytest.approx(1.0, abs=1e-5)  # from the saddle: c → 1
    assert np.all(runs["off_end"][0][on_minima] == 0.0)


def test_what_follows_from_a_full_model_on_a_circle():
    """``embed(θ, h) = h₀(cos θ, sin θ)``, the circle of radius ``r = h₀``, with
    ``L_full(W) = W₀``: ``J = r(−sin θ, cos θ)``, so ``G = JᵀJ = r²``; ``Jᵀ∇L_full = −r sin θ``;
    the point ``ρ(cos φ, sin φ)`` projects by least squares to ``θ = φ`` at distance ``|ρ − r|``."""
    import jax.numpy as jnp

    import gradflow as gf

    full = gf.FullModel(
        embed=lambda t, h: h[0] * jnp.stack([jnp.cos(t[0]), jnp.sin(t[0])]),
        loss=lambda w, h: w[0],
    )
    h, theta = jnp.asarray([1.5]), jnp.asarray([0.7])
    np.testing.assert_allclose(full.induced_metric(theta, h), [[1.5**2]], atol=1e-14)
    np.testing.assert_allclose(full.pulled_gradient(theta, h), [-1.5 * np.sin(0.7)], atol=1e-14)
    point = 4.0 * jnp.asarray([np.cos(1.1), np.sin(1.1)])
    np.testing.assert_allclose(full.projection(point, h, theta), [1.1], atol=1e-12)
    assert float(full.family_distance(point, h, theta)) == pytest.approx(4.0 - 1.5, abs=1e-12)


WELLS_MODULE = '''\
"""A toy fate system: a double well whose full model has a coordinate the reduction drops.

Reduced: ``L(x) = (x² − 1)²``; the flow from ``x0 ≠ 0`` ends in the well ``sign(x0)``.  Full:
``L(x, y) = ((x + y)² − 1)² + (x − y)²``, started at ``(x0, s)``; ``u = x + y`` never changes
sign, so the run ends in the well ``sign(x0 + s)``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

import gradflow
from gradflow.systems.fate import FateCell, FateResult


@dataclass(frozen=True)
class WellsConfig:
    """The map's axes: starts ``x0`` in [-0.75, 0.75] and the full start's offsets ``s``."""

    QUICK: ClassVar[dict[str, Any]] = {"starts": 4}
    starts: int = field(default=8, metadata={"help": "starts x0 in [-0.75, 0.75]"})
    offsets: tuple[float, ...] = field(
        default=(0.0, 0.5), metadata={"help": "the full start's y0, comma-separated"}
    )

    def __post_init__(self) -> None:
        if self.starts < 2:
            raise gradflow.GradflowError(f"starts = {self.starts} must be at least 2")

    def xs(self) -> np.ndarray:
        return np.linspace(-0.75, 0.75, self.starts)

    def estimate(self) -> gradflow.Estimate:
        flows = self.starts * len(self.offsets)
        return gradflow.Estimate(
            size=f"{flows} flows of the full model",
            seconds=5.0 + 0.01 * flows,
            basis="5 s to compile, 0.01 s a flow",
            memory=8.0 * 16 * flows,
        )


def _full_loss(theta, args):
    x, y = theta[0], theta[1]
    return ((x + y) ** 2 - 1) ** 2 + (x - y) ** 2


@functools.cache
def _landscape() -> gradflow.JaxLandscape:
    return gradflow.JaxLandscape(_full_loss, ("x", "y"))


def _cell(cell: dict) -> dict:
    starts = np.stack([cell["xs"], np.full(len(cell["xs"]), cell["s"])], axis=1)
    ends = gradflow.flow_endpoints(_landscape(), starts, progress=False).endpoints
    return {"u": ends.sum(axis=1)}


def _well(value: float) -> str:
    return "right" if value > 0 else "left"


@dataclass(frozen=True)
class WellsFate(FateResult):
    config: WellsConfig
    u: np.ndarray

    system = "toy-wells"
    axes = ("s", "x0")

    def cells(self):
        return [
            FateCell(
                {"s": s, "x0": x0},
                _well(x0),
                _well(u),
                _well(x0) == _well(u),
                group=f"s={s:g}",
                reason=None if _well(x0) == _well(u) else "assumption",
                detail=f"the full start is off the family by {s:g}",
            )
            for s, row in zip(self.config.offsets, self.u)
            for x0, u in zip(self.config.xs(), row)
        ]

    def arrays(self):
        return {"u": self.u, "x0": self.config.xs()}

    def figure(self):
        from matplotlib.figure import Figure

        fig = Figure(figsize=(4, 3))
        fig.add_subplot().imshow(np.sign(self.u))
        return fig

    def details(self):
        return {"offsets": list(self.config.offsets)}


def fate_map(config: WellsConfig, checkpoint=None, **cell_options) -> WellsFate:
    cells = [{"xs": config.xs().tolist(), "s": s} for s in config.offsets]
    manifest = {"system": "toy-wells", "starts": config.starts, "offsets": config.offsets}
    done = gradflow.run_cells(
        _cell, cells, checkpoint=checkpoint, manifest=manifest, **cell_options
    )
    return WellsFate(config, np.array([d["u"] for d in done]))
'''


def test_a_fate_system_added_by_the_recipe_runs_from_the_command_line(cli, tmp_path, monkeypatch):
    """The fate-system recipe of docs/architecture.md: a module with a no-JAX configuration
    (``QUICK``), ``fate_map`` over cells of :func:`gradflow.run_cells` returning a
    :class:`FateResult`, and one entry in ``FATE_SYSTEMS``.  By hand (the module docstring),
    with the quick starts ``x0 ∈ {−0.75, −0.25, 0.25, 0.75}``: at ``s = 0`` every run ends in
    the well of ``x0``; at ``s = 0.5`` the start ``x0 = −0.25`` has ``x0 + s = 0.25 > 0`` and
    ends in the other well, the one mismatch."""
    from gradflow.systems.fate import FATE_SYSTEMS, FateSystem

    (tmp_path / "gradflow_test_wells.py").write_text(WELLS_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    system = FateSystem(
        "gradflow_test_wells:WellsConfig", "gradflow_test_wells:fate_map", "a toy double well"
    )
    monkeypatch.setitem(FATE_SYSTEMS, "toy-wells", system)
    fate = json_of(cli("fate", "--model", "toy-wells", "--quick", "--json"))
    assert fate["system"] == "toy-wells" and fate["cells"] == 8
    assert fate["agreement"] == {"s=0": 1.0, "s=0.5": 0.75}
    assert [(m["coords"], m["full"]) for m in fate["mismatches"]] == [
        ({"s": 0.5, "x0": -0.25}, "right")
    ]
    u = _arrays(cli.folder / "fate.npz")["u"]
    np.testing.assert_allclose(np.abs(u), 1.0, atol=1e-5)  # every run ends at a well, |x + y| = 1
    assert (cli.folder / "fate.png").stat().st_size > 0


@pytest.mark.parametrize(
    ("rise", "end", "reason"),
    [(0.5, 0.0, "off-reduction"), (0.0, 0.01, "off-reduction"), (0.005, 5e-4, "unexplained")],
)
def test_the_plane_map_names_off_reduction_only_from_evidence(rise, end, reason):
    """A hand-made 2 × 2 plane map (nothing run): a run that did not finish is ``slow-corner``, one
    the other metric predicts ``metric``; a run that disagrees with both is ``off-reduction`` only
    where its projection climbed more than :data:`RISE_SHARE` (0.01 loss scales) or it ended where
    the reduced gradient exceeds :data:`END_GRADIENT` (1e-3 gradient scales), else
    ``unexplained``."""
    from gradflow.systems.plane_fate import ModelFateMap
    from gradflow.systems.plane_fate_config import ModelFateConfig

    config = ModelFateConfig(model="canonical-bias", hyper=("p=0.5", "q=0.8"), grid=2)
    glob, loc = "global_min #0", "local_min #1"
    full = np.array([[["not_converged", glob], [glob, "no attractor"]]])
    nan = np.nan
    evidence = {
        "rise": np.array([[[nan, nan], [rise, 0.0]]]),
        "end_gradient": np.array([[[nan, nan], [end, 0.0]]]),
    }
    zeros = np.zeros((1, 2, 2))
    fate = ModelFateMap(
        config=config,
        params=("e", "w", "b"),
        plane=("w", "e"),
        xs=np.array([0.0, 1.0]),
        ys=np.array([0.0, 1.0]),
        runs=((0.0, 0),),
        full=full,
        status=np.zeros((1, 2, 2), dtype=int),
        times=zeros,
        losses=zeros,
        projected=np.zeros((1, 2, 2, 3)),
        off_start=zeros,
        off_end=zeros,
        reduced={
            "euclidean": np.array([[glob, glob], [loc, loc]]),
            "induced": np.array([[glob, loc], [loc, loc]]),
        },
        attractors=(),
        evidence=evidence,
    )
    reasons = [c.reason for c in fate.cells() if c.group == "induced σ=0"]
    assert reasons == ["slow-corner", "metric", reason, "unexplained"]
    detail = [c.detail for c in fate.cells() if c.group == "induced σ=0"][2]
    assert f"climbed {rise:.3g} (loss scales)" in detail
