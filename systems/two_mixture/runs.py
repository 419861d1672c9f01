"""The runs of the two-mixture fate map: one cell is one training run, recorded lean.

A cell (plain data, :func:`run_cell`) is either

- ``"full"``: the full two-headed transformer of width ``m`` trained by gradient descent on the
  exact population loss.  The tokens are the frame ``U = I`` of ``R^{2K}`` (``d = 2K``): the
  dynamics on ``span U`` does not depend on ``d`` (the components of the weights off the span
  never move and never enter the loss), and the entries of ``W_Q U``, ``W_K U``, ``W U`` are
  ``N(0, ω²/m)`` for every ``d``.  The model is *padded* to a common width (rows of ``W_Q``,
  ``W_K`` and neurons beyond ``m`` are zero and the zero neurons have output weight 0): a zero
  row of ``W_K`` adds nothing to a score and gets a zero gradient row in ``W_Q``
  (``∂L/∂W_Q = W_K U G Uᵀ``) and vice versa, and a neuron with output weight 0 adds nothing to
  ``f`` and gets a zero gradient, so the padded run is the width-``m`` run exactly, and every
  width of a map shares one compiled program;
- ``"limit"``: the infinite-width reduced dynamics (:mod:`gradflow.systems.two_mixture.limit`).

With ``attention`` false the attention weights are frozen at their initialization (a limit run
then also carries the linear escape).  Every cell returns the same arrays: ``margins``
``(T, n)``, ``max_score`` ``(T,)``, ``tangent`` and ``drive`` ``(T,)`` (limit runs with the
attention frozen; NaN otherwise), ``deviation`` and ``drift`` (full runs; NaN otherwise).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree

from gradflow import FlowOptions, GradientDescent, GradientField, StopRule, flow

from .limit import limit_descent, limit_init
from .reduced import project
from .training import DIVERGENCE_RADIUS, conservation_drift
from .transformer import Head, MixtureConfig, MixtureTransformer, init_transformer, population_loss

__all__ = ["cell_config", "init_deviation", "padded", "run_cell"]


def cell_config(cell: dict[str, Any]) -> MixtureConfig:
    """The model of a cell: ``d = 2K``, the standard frame, the cell's ``m``, ``ω`` and options."""
    return MixtureConfig(
        K=int(cell["K"]),
        d=2 * int(cell["K"]),
        m=int(cell["m"]),
        omega=float(cell["omega"]),
        combine=cell["combine"],
        neurons=cell["neurons"],
        seed=int(cell["seed"]),
    )


def run_cell(cell: dict[str, Any]) -> dict[str, np.ndarray]:
    """Run one cell of the fate map (module docstring).

    Args:
        cell: ``kind`` (``"full"`` or ``"limit"``), ``K``, ``omega``, ``m`` (the limit's
            quadrature size for a limit cell), ``width`` (the padded width of full cells),
            ``attention`` (bool), ``combine``, ``neurons``, ``seed``, ``lr``, ``steps``,
            ``every``.

    Returns:
        The arrays of the module docstring, ``T = 1 + steps // every`` records.
    """
    config = cell_config(cell)
    lr, steps, every = float(cell["lr"]), int(cell["steps"]), int(cell["every"])
    if cell["kind"] == "limit":
        model, state = limit_init(config, config.m)
        path = limit_descent(model, state, lr, steps, every, bool(cell["attention"]))
        return {
            "margins": path.margins,
            "max_score": path.max_score,
            "tangent": path.tangent,
            "drive": path.drive,
            "deviation": np.nan,
            "drift": np.nan,
        }
    return _full_run(config, int(cell["width"]), lr, steps, every, bool(cell["attention"]))


def init_deviation(model: MixtureTransformer, config: MixtureConfig) -> float:
    """How far a finite initialization is from the limit's: the largest of ``‖P_Q/ω² - I‖₂``,
    ``‖P_K/ω² - I‖₂`` and ``‖N_hᵀ N_h/ω² - I‖₂`` over the heads (the limit has 0; for ``m``
    i.i.d. rows each is about ``2√(2K/m) + 2K/m``, the Marchenko–Pastur edge)."""
    state = project(model, config.frame())
    eye, w2 = np.eye(2 * config.K), config.omega**2
    grams = [*np.asarray(state.P_Q), *np.asarray(state.P_K)]
    grams += [np.asarray(N.T @ N) for N in state.N]
    return float(max(np.linalg.norm(g / w2 - eye, 2) for g in grams))


def padded(model: MixtureTransformer, width: int) -> MixtureTransformer:
    """``model`` padded to ``width`` neurons and attention rows (module docstring), with the
    readout scale folded into the output weights (``κ = 1`` in the padded model)."""
    m = model.heads[0].W.shape[0]

    def pad(a: jax.Array | None) -> jax.Array | None:
        return None if a is None else jnp.zeros((width, a.shape[1])).at[: a.shape[0]].set(a)

    heads = tuple(Head(pad(h.W_Q), pad(h.W_K), pad(h.W)) for h in model.heads)
    out = jnp.zeros((2, width)).at[:, :m].set(model.kappa * model.out)
    return MixtureTransformer(heads=heads, out=out, kappa=1.0, neurons=model.neurons)


def _full_run(
    config: MixtureConfig, width: int, lr: float, steps: int, every: int, attention: bool
) -> dict[str, np.ndarray]:
    model0 = init_transformer(config)
    trained, fixed = padded(model0, width).split()
    field, unravel, summarize = _padded_programs(config.K, width, config.combine, config.neurons)
    pop = config.population()
    X, y = jnp.asarray(pop.tokens(config.frame())), jnp.asarray(pop.y, jnp.float64)
    args = (fixed, X, y, jnp.asarray(float(attention)))
    stop = StopRule(max_steps=steps, divergence_radius=DIVERGENCE_RADIUS)
    descent = FlowOptions(solver=GradientDescent(lr), stop=stop)
    ts = lr * every * np.arange(steps // every + 1)
    path = flow(field, ravel_pytree(trained)[0], descent, args=args, ts=ts)
    margins, score = summarize(jnp.asarray(path.thetas), fixed, X, y)
    ends = [eqx.combine(unravel(jnp.asarray(path.thetas[i])), fixed) for i in (0, -1)]
    nan = np.full(len(score), np.nan)
    return {
        "margins": np.asarray(margins),
        "max_score": np.asarray(score),
        "tangent": nan,
        "drive": nan,
        "deviation": init_deviation(model0, config),
        "drift": float(conservation_drift(ends)[-1].max()),
    }


@functools.cache
def _padded_programs(
    K: int, width: int, combine: str, neurons: str
) -> tuple[GradientField, Callable, Callable]:
    """``(field, unravel, summarize)`` of the padded full model, shared by every cell of a
    shape: the field's ``args = (fixed, X, y, attention)`` (``attention`` 1 or 0 scales the
    attention weights' gradient), ``summarize(thetas, fixed, X, y) -> (margins, max |B|)``."""
    config = MixtureConfig(K=K, d=2 * K, m=width, combine=combine, neurons=neurons)
    template = padded(init_transformer(config), width)
    trained, _ = template.split()
    _, unravel = ravel_pytree(trained)
    neurons_only = jax.tree.map(jnp.zeros_like, trained)
    neurons_only = eqx.tree_at(
        lambda t: [h.W for h in t.heads], neurons_only, [jnp.ones_like(h.W) for h in trained.heads]
    )
    mask = ravel_pytree(neurons_only)[0]

    def loss(theta: jax.Array, args: tuple) -> jax.Array:
        fixed, X, y, _ = args
        return population_loss(eqx.combine(unravel(theta), fixed), X, y)

    full_grad = jax.grad(loss)

    def grad(theta: jax.Array, args: tuple) -> jax.Array:
        return full_grad(theta, args) * (mask + (1.0 - mask) * args[3])

    frame = jnp.eye(2 * K)

    def summary(theta: jax.Array, fixed: Any, X: jax.Array, y: jax.Array) -> tuple:
        model = eqx.combine(unravel(theta), fixed)
        return y * jax.vmap(model)(X), jnp.abs(project(model, frame).B).max()

    summarize = jax.jit(jax.vmap(summary, in_axes=(0, None, None, None)))
    return GradientField(loss=jax.jit(loss), grad=jax.jit(grad)), unravel, summarize
