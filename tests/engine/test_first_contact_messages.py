"""One-line answers to odd input, and printed numbers without rounding noise.

Each case is refused before any work (status 2, one line naming the value, no file written),
or prints what the mathematics gives: the critical point of ``x² + y²`` is ``(0, 0)`` exactly,
so a root finder's ``(-1e-39, 1e-40)`` prints as ``(0, 0)``; the three-scalar canonical model's
``Γ*`` on the slice ``a = 0.5`` has mirror points ``(±e, w, 0.5)`` equally near the centre, and
``critical`` and ``portrait`` print the same one.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import gradflow as gf
from gradflow._critical.merging import nearest_first
from gradflow._output.text import format_number, format_point
from gradflow.systems.markov import figure_fig1

LOSS = ["--loss", "x**2 + y**2"]


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (
            ["portrait", "--p", "0.5", "--q", "0.8", "--box", "-1e300", "1e300", "-3", "3"],
            "too wide",
        ),
        (["basins", *LOSS, "--box", "-3", "3", "-2e15", "3"], "[-1e+15, 1e+15]"),
        (["portrait", *LOSS, "--metric", "induced"], "has no full model"),
        (["portrait", *LOSS, "--out", "adir"], "'adir' is a folder, not a file"),
        (["basins", *LOSS, "--out", "adir"], "'adir' is a folder, not a file"),
        (["critical", "--loss", "(x - nan)**2 + y**2"], "'nan' is not a parameter name"),
        (["critical", "--loss", "x**2 + Inf*y**2"], "'Inf' is not a parameter name"),
        (["critical", "--loss", "(1 - x*y", "--params", "x,y"], "a bracket never closed"),
        (["portrait", "--loss", ""], "the loss is empty"),
        (["sweep", "--p", "0.05:0.95:0", "--q", "0.5"], "an integer COUNT ≥ 1"),
    ],
)
def test_odd_input_is_refused_in_one_line(cli, argv, named):
    (cli.folder / "adir").mkdir()
    run = cli(*argv)
    lines = run.err.strip().split("\n")
    assert run.code == 2, run
    assert len(lines) == 1 and named in lines[0], lines
    assert [p.name for p in cli.folder.iterdir()] == ["adir"]


def test_induced_metric_with_a_loss_is_answered_in_words(cli):
    run = cli("portrait", *LOSS, "--metric", "induced")
    assert "metric=" not in run.err and "'euclidean'" not in run.err
    assert "--metric" in run.err


def test_an_output_folder_that_refuses_files_is_named(cli):
    cli.assert_rejected(["portrait", *LOSS, "--out", "/proc/p.png"], "no file can be created")


@pytest.mark.parametrize(
    ("point", "printed"),
    [
        ((-1.027e-39, -9.66e-40), "(0, 0)"),
        ((0.8896, -1.027e-17), "(0.8896, 0)"),
        ((1e6, 1e-11), "(1e+06, 0)"),
        ((1e-9, -0.5), "(1e-09, -0.5)"),
    ],
)
def test_rounding_noise_prints_as_zero(point, printed):
    assert format_point(point) == printed


def test_an_enclosure_width_of_rounding_noise_prints_as_zero():
    assert format_number(9.9e-324, ".1e") == "0"
    assert format_number(2.5e-9, ".1e") == "2.5e-09"


def test_the_certificate_prints_no_subnormal_width(cli):
    run = cli("critical", *LOSS, "--certify")
    assert run.code == 0
    assert re.search(r"enclosure width 0,", run.out), run.out
    assert "e-3" not in run.out


def test_mirror_samples_tie_and_the_first_is_the_larger():
    mirror = np.array([[-0.9104, -1.121, 0.5], [0.9104 + 1e-9, -1.121, 0.5], [0.0, 3.0, 0.5]])
    center = np.array([0.0, 0.0, 0.5])
    assert nearest_first(mirror, center)[0].tolist() == mirror[1].tolist()
    assert nearest_first(mirror[[1, 0, 2]], center)[0].tolist() == mirror[1].tolist()


def _gamma_sample(text: str) -> str:
    line = next(row for row in text.splitlines() if row.startswith("global_min"))
    return line[line.rindex("(") :]


@pytest.mark.slow
def test_critical_and_portrait_print_the_same_sample_on_a_slice(cli):
    model = ["--model", "canonical-attention", "--p", "0.5", "--q", "0.8", "--fixed", "a=0.5"]
    critical = cli("critical", *model)
    portrait = cli("portrait", *model, "--no-basins", "--out", "p.png")
    assert critical.code == portrait.code == 0
    sample = _gamma_sample(critical.out)
    assert sample == _gamma_sample(portrait.out)
    e, w, a = (float(v) for v in sample.strip("()").split(","))
    assert e > 0 and a == 0.5


@pytest.mark.parametrize("grid", ["101", 10.5, True, 1])
def test_figure_config_refuses_a_grid_that_is_no_integer(grid):
    with pytest.raises(gf.GradflowError, match=r"^grid = .* must be an integer ≥ 2$"):
        figure_fig1.Config(grid=grid)


def test_a_jax_loss_taking_one_argument_is_refused():
    with pytest.raises(gf.GradflowError, match=r"cannot be called as fn\(θ, args\)"):
        gf.JaxLandscape(lambda th: th[0] ** 2 + th[1] ** 2, ("x", "y"))


def test_a_jax_loss_with_more_names_than_it_reads_is_refused():
    with pytest.raises(gf.GradflowError, match=r"names has 3 entries .* reads only θ\[0\], θ\[1\]"):
        gf.JaxLandscape(lambda th, _: th[0] ** 2 + th[1] ** 2, ("x", "y", "z"))


def test_a_jax_loss_that_does_not_read_an_inner_parameter_is_accepted():
    """``½y²`` over ``(x, y)``: a line of minima along x, a loss that need not read ``θ[0]``; only
    names past the last one the loss reads are taken for a mistake."""
    land = gf.JaxLandscape(lambda th, _: 0.5 * th[1] ** 2, ("x", "y"))
    assert land.param_names == ("x", "y")


def test_a_jax_loss_reading_past_its_names_is_refused():
    with pytest.raises(gf.GradflowError, match="index 2 is out of bounds"):
        gf.JaxLandscape(lambda th, _: th[0] ** 2 + th[2] ** 2, ("x", "y"))


def test_a_jax_loss_reading_the_whole_vector_is_accepted():
    land = gf.JaxLandscape(lambda th, _: 0.5 * th @ th, ("x", "y", "z"))
    assert land.param_names == ("x", "y", "z")


def test_a_loss_without_hyperparameters_is_shown_by_its_name():
    bound = gf.loss_model("(x**2 - 1)**2 + y**2").bind()
    assert repr(bound) == "L = (x**2 - 1)**2 + y**2"
