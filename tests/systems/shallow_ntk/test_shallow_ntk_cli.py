"""``gradflow ntk``: bad input fails in one line with exit status 2 and writes nothing; the
assumption warnings name what fails; a small sweep writes its NPZ and JSON."""

from __future__ import annotations

import json

import numpy as np
import pytest

BAD = [
    (["--widths", "0"], "--widths"),
    (["--widths", "64,abc"], "--widths"),
    (["--widths", "-5"], "--widths"),
    (["--widths", "2.5"], "--widths"),
    (["--n-samples", "0"], "--n-samples"),
    (["--d-s", "1.5"], "--d-s"),
    (["--d", "-2"], "--d"),
    (["--steps", "0"], "--steps"),
    (["--scaling", "cubic"], "scaling 'cubic'"),
    (["--init", "lecun,xavier"], "init 'xavier'"),
    (["--eta", "2.5"], "eta = 2.5"),
    (["--out", "sweep.txt"], ".npz"),
]


@pytest.mark.parametrize(("argv", "named"), BAD)
def test_bad_input_is_one_line_exit_2_nothing_written(argv, named, cli):
    cli.assert_rejected(["ntk", *argv], named)


def test_small_sweep_warns_about_failed_assumptions_and_writes_npz_json(cli):
    out = cli.folder / "sweep.npz"
    argv = "ntk --n-samples 4 --d-s 2 --d 3 --widths 2,32 --steps 10 --scaling sqrt,linear --init ntk --json"
    captured = cli(*argv.split(), "--out", str(out))
    assert captured.code == 0
    warnings = [line for line in captured.err.splitlines() if "warning" in line]
    assert any("d = 3 < N = 4" in line and "linearly independent" in line for line in warnings)
    assert any("d_m = 2 < N = 4" in line and "α_0 = 0" in line for line in warnings)
    assert any(  # α_0 = 0 at d_m = 2 < N: Proposition 1's bound cannot hold there
        line.endswith("does not hold there") and "α_0² < d_m λ*/4 at d_m = 2" in line
        for line in warnings
    )
    report = json.loads(captured.out)
    runs = [(r["scaling"], r["d_m"]) for r in report["runs"]]
    assert runs == [("sqrt", 2), ("sqrt", 32), ("linear", 2), ("linear", 32)]
    assert report["runs"][0]["alpha0"] == 0.0 and report["runs"][0]["proposition1"] is False
    assert all(r["lambda_min"] >= r["tau1sq_alpha0sq"] for r in report["runs"])
    assert set(report["slopes"]) == {"ntk/sqrt", "ntk/linear"}
    with np.load(out) as data:
        assert data["losses"].shape == (4, 11)
        np.testing.assert_allclose(data["lambda_min"], [r["lambda_min"] for r in report["runs"]])
    assert json.loads(out.with_suffix(".json").read_text())["config"]["widths"] == [2, 32]
    assert out.with_suffix(".png").exists()
    text = cli(*argv.split()[:-1], "--out", str(cli.folder / "text.npz")).out
    header = next(
        line for line in text.splitlines() if line.split()[:3] == ["init", "scaling", "d_m"]
    )
    assert (
        header.split()
        == "init scaling d_m λ_min(K0) α0 τ1²α0² ‖K_T−K0‖/‖K0‖ ‖θ_T−θ0‖/‖θ0‖ ‖K0−K∞‖/‖K∞‖ ℓ0 ℓ_T ℓ_lin(T) bound".split()
    )
