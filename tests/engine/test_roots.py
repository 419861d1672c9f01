"""The numerical search for ``∇L = 0`` (a batched Levenberg–Marquardt loop written for it) against
critical points worked out by hand and against optimistix's ``LevenbergMarquardt``, the library
it replaced, as the reference."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import gradflow as gf
from gradflow._critical.roots import ROOT_STEPS, ROOT_TOL, numerical_solutions

BOX = np.array([[-2.0, 2.0], [-2.0, 2.0]])
STARTS = 256


def double_well(t: jax.Array, c: float) -> jax.Array:
    """``c((x² − 1)² + y²)``: minima (±1, 0), a saddle at the origin."""
    return c * ((t[0] ** 2 - 1) ** 2 + t[1] ** 2)


def cubic(t: jax.Array, _: object = None) -> jax.Array:
    """``x³/3 − x + y²``, unbounded below: a minimum at (1, 0), a saddle at (−1, 0)."""
    return t[0] ** 3 / 3 - t[0] + t[1] ** 2


def depth_two(t: jax.Array, _: object = None) -> jax.Array:
    """``(1 − xy)²``: minima on the hyperbola xy = 1, a saddle at the origin."""
    return (1 - t[0] * t[1]) ** 2


def himmelblau(t: jax.Array, _: object = None) -> jax.Array:
    """Himmelblau's function: four minima, four saddles and a maximum in [−5, 5]²."""
    return (t[0] ** 2 + t[1] - 11) ** 2 + (t[0] + t[1] ** 2 - 7) ** 2


def distinct(points: np.ndarray, tol: float = 1e-7) -> np.ndarray:
    """The points of ``points`` (shape ``(n, dim)``) at least ``tol`` apart, sorted."""
    kept: list[np.ndarray] = []
    for p in points[np.lexsort(points.T[::-1])]:
        if all(np.max(np.abs(p - q)) > tol for q in kept):
            kept.append(p)
    return np.array(kept)


def roots(fn, box: np.ndarray = BOX, fn_args: object = 1.0) -> np.ndarray:
    names = tuple("xyz"[: len(box)])
    land = gf.JaxLandscape(fn, names, fn_args=fn_args)
    return numerical_solutions(land, box, STARTS, seed=0)


@pytest.mark.parametrize(
    ("fn", "expected"),
    [
        (double_well, [[-1.0, 0.0], [0.0, 0.0], [1.0, 0.0]]),
        (cubic, [[-1.0, 0.0], [1.0, 0.0]]),
    ],
    ids=["double well", "x³/3 − x + y²"],
)
def test_every_isolated_critical_point_is_found_and_nothing_else(fn, expected) -> None:
    found = roots(fn)
    assert len(found) > STARTS // 2
    np.testing.assert_allclose(distinct(found), expected, atol=1e-9)


def test_roots_of_a_curve_of_minima_lie_on_it() -> None:
    """``(1 − xy)²``: every root is the saddle (0, 0) or on ``xy = 1``, and both branches of the
    hyperbola are reached."""
    found = roots(depth_two)
    on_curve = np.abs(found[:, 0] * found[:, 1] - 1) < 1e-9
    at_saddle = np.all(np.abs(found) < 1e-9, axis=1)
    assert np.all(on_curve | at_saddle)
    assert at_saddle.any()
    assert (found[on_curve, 0] > 0).any() and (found[on_curve, 0] < 0).any()


@pytest.mark.parametrize("c", [1e-6, 1e6])
def test_the_roots_do_not_depend_on_the_loss_scale(c: float) -> None:
    """Each start's residual is ``∇L / ‖∇L(θ0)‖``: the same iteration at every scale."""
    np.testing.assert_allclose(roots(double_well, fn_args=c), roots(double_well), atol=1e-12)


def test_a_pinned_coordinate_finds_only_the_critical_points_on_its_slice() -> None:
    """``x² + y² + (z − 1)²`` has one critical point, (0, 0, 1): on the slice z = 1 it is found,
    on z = 0 nothing is (the search still asks the whole gradient to vanish)."""

    def bowl(t: jax.Array, _: object = None) -> jax.Array:
        return t[0] ** 2 + t[1] ** 2 + (t[2] - 1) ** 2

    on = roots(bowl, np.array([[-2.0, 2.0], [-2.0, 2.0], [1.0, 1.0]]))
    np.testing.assert_allclose(distinct(on), [[0.0, 0.0, 1.0]], atol=1e-9)
    assert len(roots(bowl, np.array([[-2.0, 2.0], [-2.0, 2.0], [0.0, 0.0]]))) == 0


def test_the_roots_are_optimistixs() -> None:
    """From the same seeded starts in [−5, 5]², optimistix's ``LevenbergMarquardt`` (same
    residual, tolerances and step budget) and the search find the same nine critical points
    of Himmelblau's function."""
    import optimistix as optx

    box = np.array([[-5.0, 5.0], [-5.0, 5.0]])
    landscape = gf.JaxLandscape(himmelblau, ("x", "y"))
    field = landscape.field
    y0 = np.random.default_rng(0).uniform(box[:, 0], box[:, 1], size=(STARTS, 2))
    scale = np.linalg.norm(landscape.grad(y0), axis=1)
    solver = optx.LevenbergMarquardt(rtol=ROOT_TOL, atol=ROOT_TOL)

    def residual(y: jax.Array, s: jax.Array) -> jax.Array:
        return field.grad(y, None) / s

    def one(start: jax.Array, s: jax.Array) -> jax.Array:
        return optx.least_squares(
            residual, solver, start, args=s, max_steps=ROOT_STEPS, throw=False
        ).value

    reference = np.asarray(jax.jit(jax.vmap(one))(jnp.asarray(y0), jnp.asarray(scale)))
    gradients = np.linalg.norm(landscape.grad(reference), axis=1)
    expected = distinct(reference[gradients < 1e-9])
    assert len(expected) == 9
    np.testing.assert_allclose(distinct(roots(himmelblau, box)), expected, atol=1e-9)


def flat_cubic(t: jax.Array, a: jax.Array) -> jax.Array:
    """``c((x − b)³/3 + εx + y²/2)`` with ``a = (c, ε, b)``: ``∂L/∂x = c((x − b)² + ε)``."""
    c, eps, b = a[0], a[1], a[2]
    return c * ((t[0] - b) ** 3 / 3 + eps * t[0] + t[1] ** 2 / 2)


@pytest.mark.parametrize(
    ("c", "eps", "b"),
    [(1.0, 1e-7, 1.0), (1e-6, 1e-7, 1.0), (1e6, 1e-7, 1.0), (1.0, 1e-9, -2.0)],
)
def test_a_minimum_of_the_gradient_norm_is_not_a_root(c: float, eps: float, b: float) -> None:
    """``∂L/∂x = c((x − b)² + ε) ≥ cε > 0``: no critical point anywhere, at any scale ``c``.  The
    root finder stops at ``(b, 0)``, where ``‖∇L‖ = cε`` is a minimum; there the Hessian
    ``c·diag(0, 1)`` leaves the whole gradient in its kernel, unexplained by a Newton step."""
    assert len(roots(flat_cubic, fn_args=jnp.array([c, eps, b]))) == 0


@pytest.mark.parametrize("c", [1e-6, 1e6])
def test_a_degenerate_root_is_kept(c: float) -> None:
    """With ``ε = 0``, ``∂L/∂x = c(x − 1)²`` vanishes (doubly) at ``x = 1``: the degenerate
    critical point ``(1, 0)`` is found at every scale, and nothing else."""
    found = roots(flat_cubic, fn_args=jnp.array([c, 0.0, 1.0]))
    assert len(found) > 0
    np.testing.assert_allclose(found, np.broadcast_to([1.0, 0.0], found.shape), atol=1e-6)


@pytest.mark.parametrize(("dim", "batch"), [(2, 257), (400, 1)])
def test_a_root_search_pads_to_the_searchs_batch_unless_its_jacobians_would_be_huge(
    dim: int, batch: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``L = ½‖θ − c‖²`` has its one root at ``c``.  One start of a two-parameter loss runs in
    the default search's batch (256 + 1: one program for both); one start of a 400-parameter
    loss runs alone, since that batch's Jacobians would hold 257·200·400² entries."""
    from gradflow._critical import roots

    c = np.linspace(-1.0, 1.0, dim)
    names = [f"t{i}" for i in range(dim)]
    landscape = gf.JaxLandscape(lambda th, _: 0.5 * jnp.sum((th - c) ** 2), names)
    batches = []
    search = roots._batched_root(landscape.field)

    def recorded(y0, *args):
        batches.append(y0.shape[0])
        return search(y0, *args)

    monkeypatch.setattr(roots, "_batched_root", lambda field: recorded)
    start = np.zeros((1, dim))
    ys = roots.root_search(landscape, start, np.ones(1), np.ones(dim, bool), np.zeros(dim))
    assert batches == [batch]
    np.testing.assert_allclose(ys, c[None], atol=1e-12)
