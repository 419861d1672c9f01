"""Long checks of the shallow encoder's NTK (``pytest -m slow``): the limiting kernel of every
initialization and of the hidden-layer network, GD approaching the kernel dynamics, and the quick
fate map from the command line."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from gradflow.systems.shallow_ntk import limit as ntk_limit
from gradflow.systems.shallow_ntk import ntk
from gradflow.systems.shallow_ntk.encoder import init_encoder, synthetic_data
from gradflow.systems.shallow_ntk.sweep import run_width
from gradflow.systems.shallow_ntk.threshold import fit_slope

pytestmark = pytest.mark.slow


@pytest.mark.parametrize(
    ("init", "hidden", "widths"),
    [
        ("lecun", False, (256, 1024, 4096)),
        ("he", False, (256, 1024, 4096)),
        ("ntk", True, (64, 256, 1024)),
        ("lecun", True, (64, 256, 1024)),
    ],
)
def test_limit_kernel_of_every_init_and_of_the_hidden_layer(init, hidden, widths):
    """``τ0 = d_m^{-1}``: ``‖K - K∞‖_F / ‖K∞‖_F`` falls like ``d_m^{-1/2}`` (law of large numbers
    over the units), for the leading-order kernel of LeCun/He init and for the network with ``W_H``."""
    X, _ = synthetic_data(jax.random.PRNGKey(11), 6, 3, 8)
    errors = []
    for d_m in widths:
        limit = ntk_limit.limit_kernel(X, init, d_m, hidden=hidden)["total"]
        per_seed = []
        for seed in range(6):
            model = init_encoder(
                jax.random.PRNGKey(seed), 8, d_m, init=init, scaling="linear", hidden=hidden
            )
            K = ntk.empirical_ntk(model, X)["total"]
            per_seed.append(np.linalg.norm(K - limit) / np.linalg.norm(limit))
        errors.append(np.mean(per_seed))
    assert errors[0] > errors[1] > errors[2]
    assert -0.75 < fit_slope(np.array(widths), np.array(errors)) < -0.3


@pytest.mark.parametrize(("init", "scaling"), [("lecun", "sqrt"), ("ntk", "linear")])
def test_gd_approaches_linearized_gd_as_width_grows(init, scaling):
    """In the kernel regime GD tracks the linearized network ever more closely: the gap between
    the GD loss and linearized GD (same step, kernel frozen at ``K_0``) shrinks with ``d_m``, and
    the loss bound of Wu et al. (2023) holds at the larger widths."""
    X, y = synthetic_data(jax.random.PRNGKey(0), 16, 4, 16)
    runs = [run_width(X, y, d_m, init=init, scaling=scaling, steps=200) for d_m in (64, 1024, 4096)]
    gaps = [r.nonlinearity_gap for r in runs]
    assert gaps[2] < gaps[0] / 5
    assert runs[1].bound_holds and runs[2].bound_holds
    assert runs[2].kernel_change < runs[0].kernel_change / 10


def test_gd_approaches_the_reduced_model_as_width_grows():
    """Reduced vs full dynamics: GD of the network against GD with the limiting kernel ``K∞``
    (NTK init, ``τ0 = d_m^{-1}``, same step and ``f_0``): the loss gap shrinks with ``d_m``."""
    X, y = synthetic_data(jax.random.PRNGKey(0), 16, 4, 16)
    runs = [run_width(X, y, d_m, init="ntk", scaling="linear", steps=200) for d_m in (64, 4096)]
    assert runs[1].limit_gap < runs[0].limit_gap / 3
    assert runs[1].limit_error < runs[0].limit_error / 4  # d_m^{-1/2}: 8× expected


def test_quick_fate_map_runs_from_the_command_line(cli):
    """``gradflow fate --model shallow-ntk --quick --json``: the small map of the fate
    contract, every (init, scaling) with its agreement and its fitted exponent."""
    import json

    code, out, err = cli("fate", "--model", "shallow-ntk", "--quick", "--json")
    assert code == 0, err
    record = json.loads(out)
    assert len(record["agreement"]) == 6 and set(record["exponents"]) == set(record["agreement"])
    assert record["cells"] == 6 * 2 * 4 * 2
