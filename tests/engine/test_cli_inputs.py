"""Your own loss from the command line, and the bad-input matrix.

Every bad input, with a paper model and with ``--loss``, is one line on stderr naming what is
wrong, exit status 2, and no file written.  Sizes that cannot fit in memory are refused before
anything is allocated.
"""

from __future__ import annotations

import json
import textwrap

import numpy as np
import pytest

import gradflow

LOSS = ["--loss", "(x**2 - 1)**2 + y**2"]
PAPER = ["--p", "0.7", "--q", "0.6"]
HUGE = "100000"


def squares(n: int) -> str:
    """``(x - 1/n)**2 + … + (x - n/n)**2 + y**2``: n + 1 terms."""
    return " + ".join(f"(x - {k}/{n})**2" for k in range(1, n + 1)) + " + y**2"


BAD = [
    # the loss as text
    (["critical", "--loss", "(x**2 - 1"], "--loss: a bracket never closed at column 1"),
    (["portrait", "--loss", "x**2 +* y"], "--loss: invalid syntax"),
    (["basins", "--loss", "foo(x) + y**2"], "--loss: unknown function 'foo'"),
    (["flow", "--loss", "besselj(0, x)", "--init", "1"], "unknown function 'besselj'"),
    (["critical", "--loss", "__import__('os').system('x')"], "is not allowed at column 1"),
    (["critical", "--loss", "__import__('os')"], "unknown function '__import__'"),
    (["critical", "--loss", "x.real + y"], "attribute 'x.real' is not allowed"),
    (["critical", "--loss", "x^2 + y^2"], "write **"),
    # the column named is the offending character's (counted from 1, in characters)
    (["critical", "--loss", "x**2 + y^2"], "write ** (x**2) at column 9 of"),
    (["critical", "--loss", "é*x + y^2"], "write ** (x**2) at column 8 of"),
    (["critical", "--loss", "exp(x, base=2) + y"], "are not allowed at column 8 of"),
    (["critical", "--loss", "x**2 + y**"], "the loss ends unfinished at column 11 of"),
    (["critical", "--loss", "x +* y"], "invalid syntax at column 4 of"),
    (["critical", "--loss", "x**2 + y**2 + 1e400*x"], "number 1e400 is beyond the largest float"),
    (["basins", "--loss", "x**2 + y**2 + 10**400*x"], "10000000000000000000000…, beyond"),
    # the size of a loss
    (["critical", "--loss", squares(1000)], "has 5004 nodes in its expression tree; at most 2000"),
    (["critical", "--loss", squares(500)], "has 2504 nodes in its expression tree; at most 2000"),
    (["critical", "--loss", "(" * 300 + "x" + ")" * 300 + " + y"], "more than 200 nested brackets"),
    (
        ["critical", "--loss", "sin(" * 40 + "x" + ")" * 40 + " + y"],
        "more than 32 nested operations",
    ),
    (["critical", "--loss", "-" * 5000 + "x + y"], "nested too deeply to read"),
    (["critical", "--loss", "x + " * 30000 + "y"], "at most 100000 are read"),
    (["critical", "--loss", "k*x**2 + y**2", "--params", "x,y"], "symbol k of the loss is neither"),
    (["flow", "--loss", "k*x**2 + y**2", "--init", "1", "2"], "--init needs 3 numbers (k x y)"),
    (["critical", *LOSS, "--params", "x,z"], "parameter z is not in the loss"),
    (["basins", *LOSS, "--hyper", "k=1"], "hyperparameter k is not in the loss"),
    (["critical", *LOSS, "--model", "canonical"], "--model and --loss exclude each other"),
    (["critical", "--params", "x,y", *PAPER], "--params goes with --loss"),
    (["critical", "--loss", "x*y", "--hyper", "k"], "--hyper 'k': expected NAME=NUMBER"),
    (["critical", "--loss", "k*x**2", "--params", "x", "--hyper", "k=nan"], "must be a finite"),
    (["critical", "--loss", "k*x**2", "--params", "x", "--hyper", "k=1", "k=2"], "given twice"),
    (["portrait", "--loss", "x**2"], "a plane needs two"),
    (["basins", "--loss", "x**2"], "a plane needs two"),
    # a loss that is not real or not finite where the flow starts
    (["flow", "--loss", "sqrt(x) + y**2", "--init", "-1", "0"], "not finite at the initial point"),
    (["flow", "--loss", "log(x) + y**2", "--init", "0", "1"], "not finite at the initial point"),
    # hyperparameters of a paper model
    (["portrait", "--p", "1.2", "--q", "0.6"], "p = 1.2 is outside the valid range (0, 1)"),
    (["critical", "--p", "0", "--q", "0.6"], "p = 0 is outside the valid range (0, 1)"),
    (["basins", "--p", "nan", "--q", "0.6"], "p = nan is outside the valid range"),
    (
        ["flow", "--p", "0.7", "--q", "inf", "--init", "1", "1"],
        "q = inf is outside the valid range",
    ),
    (["critical", "--p", "abc", "--q", "0.6"], "p must be a number in (0, 1)"),
    (["critical", "--p", "0.7"], "needs a value for q"),
    (["basins", "--grid", "1001"], "model 'canonical' needs a value for p (--p VALUE, in (0, 1))"),
    (["basins", *PAPER, "--p", "0.6"], "--p is given twice; give it once"),
    (["portrait", *LOSS, "--grid", "5", "--grid", "6"], "--grid is given twice"),
    (["flow", *LOSS, "--init", "1", "2", "--init", "3", "4"], "--init is given twice"),
    (["figures", "local-to-global-fig1", "--grid", "3", "--grid", "4"], "--grid is given twice"),
    (["critical", *PAPER, "--hyper", "k=1"], "unknown hyperparameter(s) k"),
    (["critical", *PAPER, "--hyper", "p=0.5"], "--p and --hyper p=… give p twice"),
    (["critical", "--model", "nope", *PAPER], "--model 'nope' is not a known model"),
    (["critical", "--model", "missing.py:f", *PAPER], "file 'missing.py' does not exist"),
    # boxes and grids
    (["portrait", *PAPER, "--box", "3", "-3", "-3", "3"], "w min 3 must be below w max -3"),
    (["basins", *LOSS, "--box", "0", "1", "2", "2"], "y min 2 must be below y max 2"),
    (["basins", *LOSS, "--box", "0", "inf", "0", "1"], "both finite"),
    (
        ["basins", *PAPER, "--box", "-1e308", "1e308", "-1", "1"],
        "w from -1e+308 to 1e+308 is wider",
    ),
    (["critical", *LOSS, "--box", "1", "-1", "0", "1"], "x min 1 must be below x max -1"),
    (["portrait", *PAPER, "--grid", "1"], "--grid 1 must be an integer ≥ 2"),
    (["basins", *LOSS, "--grid", "1"], "--grid 1 must be an integer ≥ 2"),
    (["basins", *PAPER, "--grid", "ten"], "invalid int value: 'ten'"),
    (["basins", *LOSS, "--plane", "x", "x"], "the two axes must be different parameters"),
    (["basins", *LOSS, "--fixed", "z=1"], "unknown parameter 'z'"),
    (["critical", *LOSS, "--fixed", "x=nan"], "--fixed x=nan must be a finite number"),
    # initial points
    (["flow", *PAPER, "--init", "1"], "--init needs 2 numbers (e w), got 1"),
    (["flow", *LOSS, "--init", "1", "2", "3"], "--init needs 2 numbers (x y), got 3"),
    (["flow", *PAPER, "--init", "nan", "1"], "--init nan 1.0: every value must be finite"),
    (["flow", *LOSS, "--init", "1", "inf"], "--init 1.0 inf: every value must be finite"),
    (["flow", *PAPER, "--init", "1", "x"], "invalid float value: 'x'"),
    # outputs
    (["portrait", *LOSS, "--out", "figure.jpg"], "is written as .png or .pdf or .svg"),
    (["portrait", *LOSS, "--out", "missing/p.png"], "folder 'missing' does not exist"),
    (["basins", *PAPER, "--out", "missing/b.npz"], "folder 'missing' does not exist"),
    (["basins", *LOSS, "--out", "/proc/b.npz"], "cannot write in '/proc'"),
    (["figures", "local-to-global-fig1", "--out", "missing", "--grid", "1"], "grid"),
    # names
    (["figures", "no-such-figure"], "invalid choice: 'no-such-figure'"),
    (["bench", "no-such-bench"], "invalid choice: 'no-such-bench'"),
    (["no-such-command"], "invalid choice: 'no-such-command'"),
    # sizes beyond memory
    (["basins", *PAPER, "--grid", HUGE], "--grid 100000 needs about"),
    (["portrait", *LOSS, "--grid", HUGE], "--grid 100000 needs about"),
    (["figures", "local-to-global-fig1", "--grid", HUGE], "--grid 100000 needs about"),
    (["icl", "--k", HUGE], "--k 100000"),
    (["icl", "--T", "10000000", "--steps", "1"], "--T 10000000"),
    (["ntk", "--widths", "100000000"], "--widths 100000000"),
    (["train", "--p", "0.5", "--q", "0.8", "--seq-len", "1000000"], "--seq-len 1000000"),
    (["train", "--p", "0.5", "--q", "0.8", "--batch", "100000000"], "batch = 100000000"),
    (["mixture", "--m", "10000000000"], "--m 10000000000"),
]


@pytest.mark.parametrize("argv, named", BAD, ids=[" ".join(a)[:70] for a, _ in BAD])
def test_bad_input_is_one_line_exit_2_and_no_file(argv, named, cli) -> None:
    cli.assert_rejected(argv, named)


def test_the_matrix_covers_every_model_command_with_a_paper_model_and_a_loss() -> None:
    assert len(BAD) >= 40
    for command in ("portrait", "critical", "basins", "flow"):
        used = [argv for argv, _ in BAD if argv[0] == command]
        assert any("--loss" in a for a in used) and any("--p" in a for a in used), command


def test_depth_two_linear_network_from_the_command_line(cli) -> None:
    """L = (1 - xy)²: ∇L = -2(1 - xy)(y, x) vanishes on the hyperbola xy = 1 (L = 0, a curve of
    global minima: L ≥ 0) and at the origin, where the Hessian is [[0, -2], [-2, 0]] with
    eigenvalues ±2: a saddle of Morse index 1 with L = 1."""
    run = cli("critical", "--loss", "(1 - x*y)**2", "--params", "x,y", "--json")
    assert run.code == 0
    data = json.loads(run.out)
    assert data["loss"] == "(-x*y + 1)**2" and data["parameters"] == ["x", "y"]
    (curve,) = [s for s in data["critical_sets"] if s["kind"] == "global_min"]
    points = np.array(curve["points"])
    assert curve["dimension"] == 1 and np.allclose(points[:, 0] * points[:, 1], 1.0)
    (saddle,) = [s for s in data["critical_sets"] if s["kind"] == "saddle"]
    assert saddle["dimension"] == 0 and saddle["morse_index"] == 1
    assert saddle["points"] == [[0.0, 0.0]] and saddle["loss"] == 1.0
    np.testing.assert_allclose(saddle["hessian_eigenvalues"], [-2.0, 2.0], atol=1e-12)
    assert data["bounded_below"] is True


def test_params_choose_the_order_and_the_horizontal_axis(cli, tmp_path) -> None:
    """--params y,x puts y first: the plane's horizontal axis and the order of every point."""
    run = cli(
        "basins", "--loss", "(x**2 - 1)**2 + 2*y**2", "--params", "y,x", "--grid", "5", "--json"
    )
    assert run.code == 0
    data = json.loads(run.out)
    assert data["plane"] == ["y", "x"] and data["parameters"] == ["y", "x"]
    wells = sorted(a["point"] for a in data["attractors"] if a["kind"] == "global_min")
    assert wells == [[0.0, -1.0], [0.0, 1.0]]


def test_a_hyperparameter_of_a_loss(cli) -> None:
    """L = (x² - k)² + y² with k = 4: minima at x = ±2 (L = 0), saddle at the origin (L = 16)."""
    run = cli(
        "critical", "--loss", "(x**2 - k)**2 + y**2", "--params", "x,y", "--hyper", "k=4", "--json"
    )
    data = json.loads(run.out)
    assert data["hyperparameters"] == {"k": 4.0}
    minima = sorted(s["points"][0][0] for s in data["critical_sets"] if s["kind"] == "global_min")
    assert minima == [-2.0, 2.0]


def test_a_model_from_a_file(cli, tmp_path) -> None:
    (tmp_path / "mine.py").write_text(
        textwrap.dedent(
            """
            import sympy as sp
            from gradflow import ReducedModel

            def tilted():
                x, y = sp.symbols("x y", real=True)
                return ReducedModel("tilted", (x, y), (x**2 - 1)**2 + y**2 + x / 4)
            """
        )
    )
    run = cli("critical", "--model", "mine.py:tilted", "--json")
    data = json.loads(run.out)
    assert data["model"] == "tilted"
    (tmp_path / "mine.py").unlink()
    # ∂L/∂x = 4x(x² - 1) + 1/4 = 0 has three real roots: minima near x = ±1, a saddle near 0.
    # L is coercive (x⁴ + y² leads), so its infimum is the lower minimum, the one at x < 0
    # (the tilt x/4 lowers it): L ≈ -0.254 there against ≈ 0.246 at x > 0.
    roots = sorted(np.roots([4, 0, -4, 0.25]).real)
    sets = sorted(data["critical_sets"], key=lambda s: s["points"][0][0])
    np.testing.assert_allclose([s["points"][0][0] for s in sets], roots, atol=1e-9)
    assert [s["kind"] for s in sets] == ["global_min", "saddle", "local_min"]


def test_models_lists_every_model_with_its_ranges(cli) -> None:
    run = cli("models", "--json")
    models = {m["name"]: m for m in json.loads(run.out)["models"]}
    assert models["canonical"]["hyperparameters"] == {"p": "(0, 1)", "q": "(0, 1)"}
    assert models["canonical-attention"]["parameters"] == ["e", "w", "a"]
    assert all(m["full_model"] for m in models.values())  # each embeds in the transformer


def test_plugin_models_come_from_the_entry_point_group(cli, monkeypatch, tmp_path) -> None:
    """A package registering ``double-well = "plugin_wells:double_well"`` under the group
    ``gradflow.models``: the commands accept ``--model double-well`` and 'models' lists it."""
    import importlib.metadata

    (tmp_path / "plugin_wells.py").write_text(
        textwrap.dedent(
            """
            import sympy as sp
            from gradflow import ReducedModel

            def double_well():
                x, y = sp.symbols("x y", real=True)
                return ReducedModel("double-well", (x, y), (x**2 - 1)**2 + y**2, source="a plugin")
            """
        )
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    point = importlib.metadata.EntryPoint(
        "double-well", "plugin_wells:double_well", "gradflow.models"
    )
    real = importlib.metadata.entry_points
    monkeypatch.setattr(
        importlib.metadata,
        "entry_points",
        lambda **kw: [point] if kw.get("group") == "gradflow.models" else real(**kw),
    )
    names = [m["name"] for m in json.loads(cli("models", "--json").out)["models"]]
    assert "double-well" in names and "canonical" in names
    data = json.loads(cli("critical", "--model", "double-well", "--json").out)
    assert sorted(s["kind"] for s in data["critical_sets"]) == [
        "global_min",
        "global_min",
        "saddle",
    ]


def test_the_same_command_twice_writes_identical_json(cli, tmp_path) -> None:
    argv = ["basins", *LOSS, "--grid", "5"]
    assert cli(*argv).code == 0
    first = (tmp_path / "basins.json").read_bytes()
    assert cli(*argv).code == 0
    assert (tmp_path / "basins.json").read_bytes() == first


def test_ctrl_c_exits_130_and_writes_nothing(cli, monkeypatch) -> None:
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(gradflow, "basins", interrupted)
    run = cli("basins", *LOSS, "--grid", "5")
    assert run.code == 130 and "interrupted" in run.err
    assert list(cli.folder.iterdir()) == []


def test_negative_numbers_in_exponent_notation_are_values_not_options(cli) -> None:
    """``-1e-3`` is a number: (x² - 1)² + y² from (10⁻³, -10⁻³) flows into the well x = 1
    (∂L/∂x = 4x(x² - 1) < 0 for 0 < x < 1), y → 0."""
    run = cli("flow", *LOSS, "--params", "x,y", "--init", "1e-3", "-1e-3", "--json")
    assert run.code == 0, run.err
    record = json.loads(run.out)
    assert record["init"] == [1e-3, -1e-3]
    np.testing.assert_allclose(record["endpoint"], [1.0, 0.0], atol=1e-6)
    run = cli("basins", *LOSS, "--box", "-1e0", "1e0", "-2e-1", "2e-1", "--grid", "3", "--json")
    assert run.code == 0, run.err
    assert json.loads(run.out)["box"] == [-1.0, 1.0, -0.2, 0.2]


def test_a_loss_without_params_names_in_one_line_the_symbols_made_parameters(cli) -> None:
    run = cli("critical", "--loss", "(x**2 - 1)**2 + k*y**2", "--json")
    assert run.code == 0 and json.loads(run.out)["parameters"] == ["k", "x", "y"]
    (line,) = run.err.strip().split("\n")
    assert "its parameters are k, x, y" in line and "--hyper" in line
    run = cli("critical", "--loss", "(x**2 - 1)**2 + k*y**2", "--hyper", "k=2", "--json")
    assert run.code == 0 and json.loads(run.out)["parameters"] == ["x", "y"] and run.err == ""


def test_a_sweep_says_its_size_and_estimate_before_it_starts(cli, monkeypatch) -> None:
    """Two cells of 3 × 3 flows: 18 flows, 15 s to start and 2 × (0.4 s + 9 × 10 µs) ≈ 16 s."""

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(gradflow, "sweep", interrupted)
    loss = ["--loss", "(x**2 - 1)**2 + k*y**2", "--params", "x,y"]
    run = cli("sweep", *loss, "--hyper", "k=1,2", "--grid", "3")
    assert run.code == 130
    assert "2 cells × 3² = 18 flows: about 16 s on 2 CPU cores" in run.err.split("\n")[0]


def test_help_marks_the_hyperparameters_the_paper_models_require(cli) -> None:
    run = cli("basins", "--help")
    assert run.code == 0
    text = " ".join(run.out.split())
    for name in ("p", "q"):
        assert (
            f"--{name} {name.upper()} hyperparameter {name}; required with the models canonical"
            in text
        )


@pytest.mark.slow
def test_the_largest_sum_of_squares_compiled_has_one_minimum_at_the_mean(cli) -> None:
    """Σ_k (x - k/n)² + y², k = 1 … n, has ∇L = (2 Σ_k (x - k/n), 2y) = 0 only at x = mean(k/n) =
    (n + 1)/(2n), y = 0, a minimum (Hessian diag(2n, 2)); L there = Σ_k (k/n)² - n x² =
    (n + 1)(2n + 1)/(6n) - (n + 1)²/(4n).  n = 399 is the largest sum of at most 2,000 nodes
    (5n + 4), the most the command line compiles."""
    n = 399
    run = cli("critical", "--loss", squares(n), "--params", "x,y", "--json")
    assert run.code == 0, run.err
    (only,) = json.loads(run.out)["critical_sets"]
    assert only["points"] == [[(n + 1) / (2 * n), 0.0]] and only["morse_index"] == 0
    np.testing.assert_allclose(only["hessian_eigenvalues"], [2.0, 2.0 * n])
    expected = (n + 1) * (2 * n + 1) / (6 * n) - (n + 1) ** 2 / (4 * n)
    np.testing.assert_allclose(only["loss"], expected, rtol=1e-12)
    assert "2004 nodes" in cli("critical", "--loss", squares(n + 1)).err


def test_bare_gradflow_prints_the_help_and_version_is_known(cli) -> None:
    run = cli()
    assert run.code == 0 and "COMMAND" in run.out and "portrait" in run.out
    run = cli("--version")
    assert run.code == 0 and run.out.startswith("gradflow ")
