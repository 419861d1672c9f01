"""The command line: JSON outputs parse with the documented fields; bad input exits 2, writes nothing."""

from __future__ import annotations

import json

import numpy as np
import pytest

import gradflow

BAD = [
    ["portrait", "--p", "1.2", "--q", "0.6"],
    ["portrait", "--p", "0.7", "--q", "0"],
    ["portrait", "--p", "0.7", "--q", "0.6", "--box", "3", "-3", "-3", "3"],
    ["portrait", "--p", "0.7", "--q", "0.6", "--grid", "1"],
    ["portrait", "--p", "0.7", "--q", "0.6", "--out", "figure.jpg"],
    ["portrait", "--p", "0.7"],
    ["basins", "--p", "0.7", "--q", "0.6", "--grid", "1"],
    ["basins", "--p", "0.7", "--q", "0.6", "--grid", "ten"],
    ["basins", "--p", "0.7", "--q", "0.6", "--box", "0", "1", "2", "2"],
    ["critical", "--p", "abc", "--q", "0.6"],
    ["critical", "--p", "nan", "--q", "0.6"],
    ["flow", "--p", "0.7", "--q", "0.6", "--init", "1"],
    ["flow", "--p", "0.7", "--q", "0.6", "--init", "nan", "1"],
    ["flow", "--p", "0.7", "--q", "0.6", "--init", "1", "x"],
    ["figures", "no-such-figure"],
    ["portrait", "--p", "0.7", "--q", "0.6", "--fixed", "a=0.5"],
    ["portrait", "--model", "canonical-attention", "--p", "0.5", "--q", "0.8", "--fixed", "w=1"],
    ["basins", "--model", "canonical-attention", "--p", "0.5", "--q", "0.8", "--plane", "w", "w"],
    ["basins", "--model", "canonical-attention", "--p", "0.5", "--q", "0.8", "--fixed", "a=nan"],
]


@pytest.mark.parametrize("argv", BAD, ids=[" ".join(a) for a in BAD])
def test_bad_input_is_a_one_line_error_with_status_2_and_no_output(argv, cli) -> None:
    cli.assert_rejected(argv, "error")


@pytest.mark.parametrize(
    "argv, computes",
    [
        (["portrait", "--p", "0.7", "--q", "0.6", "--out", "missing/x.png"], "portrait"),
        (["basins", "--p", "0.7", "--q", "0.6", "--out", "missing/b.npz"], "basins"),
    ],
)
def test_missing_output_folder_is_rejected_before_any_work(argv, computes, cli, monkeypatch):
    def no_work(*args, **kwargs):
        raise AssertionError("the command computed before checking --out")

    monkeypatch.setattr(gradflow, computes, no_work)
    cli.assert_rejected(argv, "folder 'missing' does not exist")


def test_out_of_range_message_names_the_value_and_the_range(cli) -> None:
    message = "p = 1.2 is outside the valid range (0, 1)"
    cli.assert_rejected(["critical", "--p", "1.2", "--q", "0.6"], message)


def test_critical_json(cli) -> None:
    run = cli("critical", "--p", "0.5", "--q", "0.8", "--json")
    assert run.code == 0
    data = json.loads(run.out)
    assert data["model"] == "canonical" and data["hyperparameters"] == {"p": 0.5, "q": 0.8}
    assert data["entropy_rate"] == pytest.approx(0.619015, abs=5e-7)
    assert data["unigram_loss"] == pytest.approx(0.666278, abs=5e-7)
    kinds = [s["kind"] for s in data["critical_sets"]]
    assert sorted(kinds) == ["global_min", "local_max", "local_min", "saddle"]
    for s in data["critical_sets"]:
        assert set(s) >= {"kind", "dimension", "loss", "points", "equation", "hessian_eigenvalues"}
        assert len(s["hessian_eigenvalues"]) == 2 and all(len(p) == 2 for p in s["points"])
    (saddle,) = [s for s in data["critical_sets"] if s["kind"] == "saddle"]
    assert saddle["dimension"] == 0
    assert saddle["points"][0] == pytest.approx([0.0, -1 / np.sqrt(2)], abs=1e-12)


def test_p_plus_q_one_is_valid_and_said(cli) -> None:
    run = cli("critical", "--p", "0.4", "--q", "0.6")
    assert run.code == 0 and "every critical point is a global minimum" in run.out


def test_flow_json(cli) -> None:
    run = cli("flow", "--p", "0.9", "--q", "0.9", "--init", "0.5", "-0.5", "--json")
    assert run.code == 0
    data = json.loads(run.out)
    assert data["init"] == [0.5, -0.5] and data["converged"] is True
    assert data["reached"] == "global_min"
    assert data["loss"] == pytest.approx(0.325083, abs=5e-7)
    assert len(data["endpoint"]) == 2 and data["time"] > 0


def test_basins_json_and_npz(cli, tmp_path) -> None:
    argv = "basins --p 0.1 --q 0.1 --grid 7 --box -2 2 -1 1 --json".split()
    run = cli(*argv)
    assert run.code == 0
    data = json.loads(run.out)
    assert data["grid"] == [7, 7] and data["box"] == [-2.0, 2.0, -1.0, 1.0]
    assert sum(data["fractions"].values()) == pytest.approx(1.0)
    assert set(data["fractions"]) >= {
        "global_min",
        "local_min",
        "local_max",
        "saddle",
        "diverged",
        "not_converged",
    }
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "basins.csv",
        "basins.json",
        "basins.npz",
        "basins.png",
    ]
    with np.load(tmp_path / "basins.npz") as stored:
        saved = {k: stored[k] for k in stored.files}
    assert saved["labels"].shape == (7, 7) and saved["attractor_ids"].shape == (7, 7)
    shares = {a["id"]: a["fraction"] for a in data["attractors"]}
    assert sum(shares.values()) + data["fractions"]["diverged"] == pytest.approx(1.0)
    reached = np.bincount(saved["attractor_ids"][saved["attractor_ids"] >= 0])
    for i, count in enumerate(reached):
        assert shares[i] == pytest.approx(count / 49)
    np.testing.assert_allclose(saved["x"], np.linspace(-2, 2, 7))
    assert json.loads((tmp_path / "basins.json").read_text())["hyperparameters"] == {
        "p": 0.1,
        "q": 0.1,
    }


def test_portrait_writes_figure_and_data(cli, tmp_path) -> None:
    run = cli(*"portrait --p 0.7 --q 0.6 --grid 9 --out pic.svg".split())
    assert run.code == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pic.json", "pic.npz", "pic.svg"]
    meta = json.loads((tmp_path / "pic.json").read_text())
    assert meta["model"] == "canonical" and meta["hyperparameters"] == {"p": 0.7, "q": 0.6}
    assert meta["grid"] == [9, 9] and {"jax", "diffrax", "sympy"} <= set(meta["versions"])
    assert meta["solver"][0]["solver"] == "Tsit5"
    assert "global_min" in run.out and "attractor" in run.out and "Γ*" in run.out


def test_portrait_of_an_iid_chain_says_every_critical_point_is_global(cli, tmp_path) -> None:
    """p + q = 1 is valid input: c* = 0 and every critical point is a global minimum."""
    run = cli(*"portrait --p 0.3 --q 0.7 --no-basins --out iid.png".split())
    assert run.code == 0 and "every critical point is a global minimum" in run.out
    meta = json.loads((tmp_path / "iid.json").read_text())
    assert {s["kind"] for s in meta["critical_sets"]} == {"global_min"}
    assert any("every critical point is a global minimum" in n for n in meta["notes"])


ATTENTION = ["critical", "--model", "canonical-attention", "--p", "0.5", "--q", "0.8"]


def test_critical_on_a_slice_finds_the_sets_on_it(cli) -> None:
    run = cli(*ATTENTION, "--fixed", "a=0.5", "--json")
    assert run.code == 0
    data = json.loads(run.out)
    assert data["fixed"] == {"a": 0.5}
    kinds = sorted(s["kind"] for s in data["critical_sets"])
    assert kinds == ["global_min", "local_max", "local_min", "saddle"]
    for s in data["critical_sets"]:
        assert all(point[2] == 0.5 for point in s["points"]), s["name"]
    (saddle,) = [s for s in data["critical_sets"] if s["kind"] == "saddle"]
    assert saddle["points"][0] == pytest.approx([0.0, -1 / np.sqrt(2), 0.5], abs=1e-12)
    text = cli(*ATTENTION, "--fixed", "a=0.5")
    assert text.code == 0 and "on the slice a = 0.5" in text.out


@pytest.mark.parametrize(
    "extra, named",
    [
        (["--fixed", "z=0.5"], "unknown parameter 'z' of model 'canonical-attention'"),
        (["--fixed", "a=nan"], "--fixed a=nan must be a finite number"),
        (["--fixed", "a"], "expected NAME=NUMBER"),
        (
            ["--fixed", "w=1", "--box", "-2", "1", "-2", "2"],
            "fixed w = 1.0: w is an axis of the plane",
        ),
    ],
)
def test_critical_rejects_a_bad_slice(extra, named, cli) -> None:
    cli.assert_rejected([*ATTENTION, *extra], named)


@pytest.mark.slow
def test_bench_basins_reports_every_baseline_and_the_cost_per_trajectory(cli) -> None:
    run = cli(
        "bench", "basins", "--grid", "6", "--lsoda-samples", "2", "--rk45-samples", "1", "--json"
    )
    assert run.code == 0
    data = json.loads(run.out)
    assert data["grid"] == 6 and data["cores"] >= 1
    assert set(data["baselines"]) == {"scipy_rk45", "scipy_lsoda"}
    warm = data["seconds_without_compile"]
    assert data["us_per_trajectory"] == pytest.approx(1e6 * warm / 36)
    lsoda = data["baselines"]["scipy_lsoda"]
    assert lsoda["extrapolated_seconds"] == pytest.approx(lsoda["ms_per_trajectory"] * 36 / 1e3)


def test_flow_to_a_degenerate_minimum_converges_when_the_flow_says_so(cli, tmp_path) -> None:
    """``x⁴ + y⁴`` from ``(1, 1)``: ``x' = -4x³`` gives ``x(t) = (1 + 8t)^{-1/2}``, and
    ``‖∇L‖₂ = 4√2 x³`` meets the steady-state test ``‖∇L‖₂ ≤ gtol·g`` first at
    ``t* = (x*^{-2} - 1)/8`` with ``x* = (gtol·g / 4√2)^{1/3}``: the flow reaches the global
    minimum ``(0, 0)``, algebraically, and is written with its picture."""
    run = cli("flow", "--loss", "x**4 + y**4", "--init", "1", "1", "--json")
    assert run.code == 0, run.err
    data = json.loads(run.out)
    g = gradflow.loss_scales(gradflow.loss_model("x**4 + y**4").bind()).gradient
    x_star = (1e-8 * g / (4 * np.sqrt(2))) ** (1 / 3)
    t_star = (x_star**-2 - 1) / 8
    assert data["converged"] is True and data["reached"] == "global_min"
    assert t_star <= data["time"] <= 1.1 * t_star
    assert data["endpoint"] == pytest.approx([(1 + 8 * data["time"]) ** -0.5] * 2, rel=1e-3)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["flow.json", "flow.npz", "flow.png"]
    with np.load(tmp_path / "flow.npz") as saved:
        assert saved["thetas"][0].tolist() == [1.0, 1.0] and saved["ts"][0] == 0
    short = cli("flow", "--loss", "x**4 + y**4", "--init", "1", "1", "--t-max", "100", "--json")
    assert json.loads(short.out)["status"] == "not_converged"
    assert json.loads(short.out)["solver"]["t_max"] == 100
