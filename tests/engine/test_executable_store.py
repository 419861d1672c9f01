"""The store of compiled executables: a program is loaded, not compiled, only where everything
it depends on is the same — its loss, its options, the XLA flags — and a loaded program gives
the bits the compiled one gave.

Each "process" here is a fresh build of the same programs (the engine's per-process caches
bypassed with ``__wrapped__``) against one store folder, as a second run of a script sees it.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import sympy as sp

from gradflow import PID, FlowOptions, GradientField, StopRule, in_metric, loss_model
from gradflow._compiled.files import store_folder
from gradflow._compiled.store import StoredProgram
from gradflow._flow.batched import _own_round, _round_function
from gradflow._landscape.metric import metric_key
from gradflow._landscape.scales import unit_field
from gradflow._symbolic.compiled import compile_loss

X, Y, A = sp.symbols("x y a", real=True)
POINTS = np.array([[0.5, -1.0], [2.0, 0.25], [-1.5, 3.0]])
H = np.array([3.0])


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv("GRADFLOW_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache" / "executables"


def _fresh(loss: sp.Expr):
    """``compile_loss`` as a new process builds it (its per-process cache bypassed)."""
    return compile_loss.__wrapped__((X, Y), (A,), loss)


def test_a_second_build_loads_every_program_and_computes_the_same_bits(store) -> None:
    """``L = x² + a·y⁴`` at a = 3: ``∇L = (2x, 4a·y³)``, ``∇²L = diag(2, 12a·y²)``; the loaded
    programs give these bit for bit as the compiled ones do."""
    loss = X**2 + A * Y**4
    first = _fresh(loss)
    outs = [np.asarray(first.grad(POINTS, H)), np.asarray(first.hessian(POINTS, H))]
    x, y = POINTS[:, 0], POINTS[:, 1]
    np.testing.assert_allclose(outs[0], np.stack([2 * x, 12 * y**3], axis=1), rtol=1e-15)
    np.testing.assert_allclose(outs[1][:, 1, 1], 36 * y**2, rtol=1e-15)
    assert (first.grad.compiles, first.hessian.compiles) == (1, 1)
    assert len(list(store.iterdir())) == 2
    again = _fresh(loss)
    repeat = [np.asarray(again.grad(POINTS, H)), np.asarray(again.hessian(POINTS, H))]
    assert (again.grad.loads, again.grad.compiles) == (1, 0)
    assert (again.hessian.loads, again.hessian.compiles) == (1, 0)
    for a, b in zip(outs, repeat):
        assert a.tobytes() == b.tobytes()


def test_a_changed_loss_compiles_its_own_program(store) -> None:
    """``x² + a·y⁴`` and ``x² + a·y²`` share every signature but not their programs:
    ``∂L/∂y`` at y = −1, a = 3 is −12 for one and −6 for the other."""
    quartic = _fresh(X**2 + A * Y**4)
    assert quartic.grad(POINTS, H)[0, 1] == -12.0
    quadratic = _fresh(X**2 + A * Y**2)
    assert quadratic.grad(POINTS, H)[0, 1] == -6.0
    assert (quadratic.grad.loads, quadratic.grad.compiles) == (0, 1)


def test_changed_xla_flags_compile_again(store, monkeypatch) -> None:
    loss = X**2 + A * Y**4
    _fresh(loss).grad(POINTS, H)
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_enable_fast_math=false")
    flagged = _fresh(loss)
    flagged.grad(POINTS, H)
    assert (flagged.grad.loads, flagged.grad.compiles) == (0, 1)


def test_an_integrator_round_is_kept_per_option(store) -> None:
    """The batched Tsit5 round of ``L = x² + a·y²``: the same options load, another ``rtol``
    compiles; both reach the minimum (0, 0) from (1, 1)."""
    model = loss_model("x**2 + a*y**2", None, ["a"]).bind(a=1.0)
    field = unit_field(model.field)
    args = (model.args, 1.0)
    starts, zeros = np.array([[1.0, 1.0]] * 4), np.zeros(4)

    def run(rtol: float) -> tuple[StoredProgram, np.ndarray]:
        control, stop = PID(rtol=rtol, atol=1e-9), StopRule(gtol=1.0, max_steps=500)
        options = FlowOptions(solver="Tsit5", controller=control, stop=stop)
        advance = _own_round.__wrapped__(field, options, 500, False)
        y, *_ = advance(starts, zeros, zeros, (args, -np.inf, 1e-8))
        return advance, np.asarray(y)

    first, y1 = run(1e-6)
    assert isinstance(first, StoredProgram) and first.compiles == 1
    np.testing.assert_allclose(y1, 0.0, atol=1e-6)
    again, y2 = run(1e-6)
    assert (again.loads, again.compiles) == (1, 0) and y1.tobytes() == y2.tobytes()
    other, y3 = run(1e-7)
    assert (other.loads, other.compiles) == (0, 1)
    np.testing.assert_allclose(y3, 0.0, atol=1e-6)


def _diagonal_metric(first: float, weights: np.ndarray | None = None):
    """``G(θ) = diag(1 + first·x², 1)``, times ``diag(weights)`` where given (a constant the
    function captures)."""

    def metric(theta, h):
        g = jnp.diag(jnp.stack([1.0 + first * theta[0] ** 2, jnp.ones_like(theta[0])]))
        return g if weights is None else g * jnp.asarray(weights)

    return metric


def test_a_metric_is_named_by_what_it_computes() -> None:
    """A metric's key is what it computes: the same metric written twice has one key; another
    coefficient, or another value of a captured array, has another; a field without a key
    (a JAX function's), or a metric computed on the host, gives none."""
    field = loss_model("x**2 + a*y**2", None, ["a"]).bind(a=1.0).field
    h = np.array([1.0])

    def key(metric, of=field):
        found = metric_key(of, metric, 2, h)
        return None if found is None else found()

    same = key(_diagonal_metric(1.0))
    assert same == key(_diagonal_metric(1.0))
    assert key(_diagonal_metric(2.0)) != same
    ones, other = np.ones(2), np.array([1.0, 2.0])
    assert key(_diagonal_metric(1.0, ones)) == key(_diagonal_metric(1.0, ones.copy()))
    assert key(_diagonal_metric(1.0, other)) != key(_diagonal_metric(1.0, ones))
    assert "0x" not in same
    assert key(_diagonal_metric(1.0), of=GradientField.from_loss(lambda t, a: t @ t)) is None

    def from_the_host(theta, h):
        shape = jax.ShapeDtypeStruct((2, 2), theta.dtype)
        return jax.pure_callback(lambda t: np.eye(2, dtype=t.dtype), shape, theta)

    assert key(from_the_host) is None  # no derivative to trace: its programs are not kept


def test_a_round_in_a_metric_is_kept_per_metric(store) -> None:
    """The Tsit5 round of ``L = x² + a·y²`` in ``G = diag(1 + c·x², 1)``: the same metric built
    again loads its program and gives the same bits, another ``c`` compiles; every flow ends at
    the minimum (0, 0), where ``G⁻¹∇L = 0``."""
    model = loss_model("x**2 + a*y**2", None, ["a"]).bind(a=1.0)
    starts, zeros = np.array([[1.0, 1.0], [-0.5, 2.0]] * 2), np.zeros(4)
    control, stop = PID(rtol=1e-6, atol=1e-9), StopRule(gtol=1.0, max_steps=500)
    options = FlowOptions(solver="Tsit5", controller=control, stop=stop)

    def run(first: float) -> tuple[StoredProgram, np.ndarray]:
        field = in_metric(model, _diagonal_metric(first)).field
        advance = _own_round.__wrapped__(unit_field(field), options, 500, False)
        y, *_ = advance(starts, zeros, zeros, ((model.args, 1.0), -np.inf, 1e-8))
        return advance, np.asarray(y)

    first, y1 = run(1.0)
    assert isinstance(first, StoredProgram) and first.compiles == 1
    np.testing.assert_allclose(y1, 0.0, atol=1e-6)
    again, y2 = run(1.0)
    assert (again.loads, again.compiles) == (1, 0) and y1.tobytes() == y2.tobytes()
    other, y3 = run(3.0)
    assert (other.loads, other.compiles) == (0, 1)
    np.testing.assert_allclose(y3, 0.0, atol=1e-6)


def test_the_store_is_off_with_the_cache(monkeypatch) -> None:
    monkeypatch.setenv("GRADFLOW_CACHE_DIR", "")
    assert store_folder() is None
    assert not isinstance(_fresh(X**2 + A * Y**4).grad, StoredProgram)


def test_compiles_in_two_threads_at_once_leave_jax_s_cache_on(store) -> None:
    """Each stored program is compiled past JAX's persistent cache; two threads compiling at
    the same time (a portrait traces its separatrices beside its basin map) must still leave
    the cache in use for every other compile, and each program gives its own loss's gradient
    (``∂(x² + a·y^k)/∂y = k·a·y^(k−1)``)."""
    from concurrent.futures import ThreadPoolExecutor

    import jax.extend
    from jax._src import compilation_cache

    backend = jax.extend.backend.get_backend()
    assert compilation_cache.is_cache_used(backend)

    def grad_y(power: int) -> np.ndarray:
        return np.asarray(_fresh(X**2 + A * Y**power).grad(POINTS, H))[:, 1]

    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(grad_y, (2, 3, 4, 5, 6, 7, 8, 9)))
    for power, got in zip(range(2, 10), results):
        np.testing.assert_allclose(got, power * 3.0 * POINTS[:, 1] ** (power - 1), rtol=1e-14)
    assert compilation_cache.is_cache_used(backend)


def test_threads_asking_for_a_new_program_at_once_make_it_once(store) -> None:
    """Four threads call a fresh build's gradient of ``x² + a·y⁴`` with one new signature at
    once: one compiles it, the others wait for it (none compiles it again), and all get
    ``(2x, 4a·y³)``."""
    import threading

    grad = _fresh(X**2 + A * Y**4).grad
    start, outs = threading.Barrier(4), []

    def ask() -> None:
        start.wait()
        outs.append(np.asarray(grad(POINTS, H)))

    threads = [threading.Thread(target=ask) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert (grad.compiles, grad.loads) == (1, 0)
    x, y = POINTS[:, 0], POINTS[:, 1]
    for out in outs:
        np.testing.assert_array_equal(out, np.stack([2 * x, 12 * y**3], axis=1))


LAPACK_CHILD = """
import jax.monitoring
import gradflow

traced = []
jax.monitoring.register_event_duration_secs_listener(
    lambda event, duration, fun_name="", **kw: traced.append(fun_name)
    if event == "/jax/core/compile/jaxpr_trace_duration" else None
)
path = gradflow.flow(gradflow.loss_model(LOSS).bind(), [1.0, 1.0, 1.0])
print(path.endpoint.tobytes().hex(), path.status.name, "run" in traced)
"""


def test_a_stored_trajectory_that_factors_runs_in_a_new_process(store) -> None:
    """The Rodas4 trajectory of ``L = x²/2 + 2y² + z² + xy/8`` LU-factors ``I/(hγ) − ∂F`` at
    every step with LAPACK (three parameters: two are solved by Cramer's rule), which JAX binds
    only while it lowers such a step.  A new process loads the stored program without lowering
    it (it traces no path program) and ends where this one did, bit for bit, at the minimum
    (0, 0, 0) (a trajectory's program that factored crashed with a segmentation fault when
    nothing bound LAPACK first)."""
    import os
    import subprocess
    import sys

    import gradflow
    from gradflow import Outcome

    loss = "x**2/2 + 2*y**2 + z**2 + x*y/8"
    files = len(list(store.iterdir())) if store.exists() else 0
    here = gradflow.flow(gradflow.loss_model(loss).bind(), [1.0, 1.0, 1.0])
    assert here.status is Outcome.CONVERGED and len(list(store.iterdir())) > files
    np.testing.assert_allclose(here.endpoint, 0.0, atol=1e-6)
    child = subprocess.run(
        [sys.executable, "-c", f"LOSS = {loss!r}\n{LAPACK_CHILD}"],
        env=dict(os.environ),
        capture_output=True,
        text=True,
        check=False,
    )
    assert child.returncode == 0, child.stderr[-2000:]
    assert child.stdout.split() == [here.endpoint.tobytes().hex(), "CONVERGED", "False"]


def test_the_root_search_and_the_newton_test_are_kept(store) -> None:
    """The double well ``(x² − 1)² + y²``: Levenberg–Marquardt from (0.8, 0.3) and (−1.3,
    −0.2) ends at its minima (±1, 0), and the Newton test of a stage accepts (1 + 10⁻⁶, 0) with
    the limit (1, 0).  A second build of each program loads it and gives the same bits."""
    from gradflow._critical.roots import _batched_root
    from gradflow._flow.newton_finish import newton_finish

    model = loss_model("(x**2 - 1)**2 + y**2").bind()
    starts, scales = np.array([[0.8, 0.3], [-1.3, -0.2]]), np.ones(2)
    free, pinned = np.ones(2, dtype=bool), np.zeros(2)
    stage = FlowOptions(solver="Tsit5")
    near = np.array([[1.0 + 1e-6, 0.0]])

    def build() -> tuple[StoredProgram, StoredProgram, list[np.ndarray]]:
        root = _batched_root.__wrapped__(model.field)
        finish = newton_finish.__wrapped__(model.field, stage)
        roots = np.asarray(root(starts, model.args, scales, free, pinned))
        ok, limit = finish(near, model.args, -np.inf, 1e-8)
        return root, finish, [roots, np.asarray(ok), np.asarray(limit)]

    root, finish, first = build()
    assert (root.compiles, finish.compiles) == (1, 1)
    np.testing.assert_allclose(first[0], [[1.0, 0.0], [-1.0, 0.0]], atol=1e-12)
    assert first[1].tolist() == [True]
    np.testing.assert_allclose(first[2], [[1.0, 0.0]], atol=1e-12)
    root, finish, again = build()
    assert (root.loads, root.compiles, finish.loads, finish.compiles) == (1, 0, 1, 0)
    for a, b in zip(first, again):
        assert a.tobytes() == b.tobytes()


def test_an_implicit_round_through_diffrax_is_kept(store) -> None:
    """The vectorized Kvaerno5 round on ``L = x² + a·y²`` at a = 1: 30 steps from (1, 1) move
    towards the minimum (both coordinates shrink, neither changes sign); a second build loads
    the round and gives the same bits."""
    model = loss_model("x**2 + a*y**2", None, ["a"]).bind(a=1.0)
    field = unit_field(model.field)
    starts, zeros = np.array([[1.0, 1.0]] * 4), np.zeros(4)
    options = FlowOptions(solver="Kvaerno5", stop=StopRule(gtol=1e-8, max_steps=500))

    def run() -> tuple[StoredProgram, np.ndarray]:
        advance = _round_function.__wrapped__(field, options, 30, False)
        y, *_ = advance(starts, zeros, zeros, (model.args, 1.0), -np.inf)
        return advance, np.asarray(y)

    first, y1 = run()
    assert isinstance(first, StoredProgram) and first.compiles == 1
    assert np.all((y1 > 0) & (y1 < 1))
    again, y2 = run()
    assert (again.loads, again.compiles) == (1, 0) and y1.tobytes() == y2.tobytes()
