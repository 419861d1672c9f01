"""Grids of cells on a Dask cluster (a real two-process ``LocalCluster``, one for the module):
the files of the serial run, a worker process killed mid-run, an interrupted run resumed, the
compiled programs of each worker."""

from __future__ import annotations

import json
import logging
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import jax
import numpy as np
import pytest

import gradflow
from gradflow import GradflowError, run_cells

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def client() -> Iterator[distributed.Client]:
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        yield client


def _entropy_rate(cell: tuple[float, float, str]) -> dict[str, object]:
    """The entropy rate of the two-state chain with flip probabilities ``p`` and ``q`` (nats),
    ``(q h(p) + p h(q)) / (p + q)`` with ``h`` the binary entropy, computed with JAX; each call
    appends its process id to ``marks/<p>-<q>`` first, and a ``kill`` or ``fail`` file there
    makes the first call of the cell :data:`ODD` raise once one cell is checkpointed in ``runs``
    beside ``marks``, or kill its own worker process once two are (noting which in
    ``marks/kept``)."""
    p, q, marks = cell
    log = Path(marks) / f"{p}-{q}"
    with log.open("a") as out:
        out.write(f"{os.getpid()}\n")
    first = len(log.read_text().splitlines()) == 1
    if (p, q) == ODD and first and (Path(marks) / "kill").exists():
        _note_kept(Path(marks), 2)
        os.kill(os.getpid(), signal.SIGKILL)
    if (p, q) == ODD and first and (Path(marks) / "fail").exists():
        _note_kept(Path(marks), 1)
        raise GradflowError("a cell that fails once")
    h = lambda x: -x * jax.numpy.log(x) - (1 - x) * jax.numpy.log1p(-x)  # noqa: E731
    return {"rate": (q * h(p) + p * h(q)) / (p + q), "pid": os.getpid()}


def _note_kept(marks: Path, least: int) -> None:
    """Wait (up to a minute) until ``least`` cells are checkpointed in ``runs`` beside
    ``marks``, and note which in ``marks/kept``."""
    runs = marks.parent / "runs"
    for _ in range(600):
        kept = sorted(p.name for p in runs.glob("cell*.npz"))
        if len(kept) >= least:
            break
        time.sleep(0.1)
    (marks / "kept").write_text(" ".join(kept))


GRID = [(p, q) for p in (0.1, 0.3, 0.5, 0.7) for q in (0.2, 0.5)]
"""Eight cells; at ``p = q = 0.5`` the chain is i.i.d. fair coins, rate ``log 2``."""
ODD = (0.3, 0.2)
"""The third cell: the one that kills its worker, or fails, the first time it runs."""


def _cells(marks: Path) -> list[tuple[float, float, str]]:
    marks.mkdir(exist_ok=True)
    return [(p, q, str(marks)) for p, q in GRID]


def _calls(marks: Path) -> dict[tuple[float, float], int]:
    """How often each cell has started (0: never)."""
    logs = {(p, q): marks / f"{p}-{q}" for p, q in GRID}
    return {
        cell: len(log.read_text().splitlines()) if log.exists() else 0 for cell, log in logs.items()
    }


def _check_rates(results: list[dict[str, np.ndarray]]) -> None:
    rates = {cell: float(r["rate"]) for cell, r in zip(GRID, results)}
    assert rates[(0.5, 0.5)] == pytest.approx(np.log(2), rel=1e-15)
    h3 = -0.3 * np.log(0.3) - 0.7 * np.log(0.7)
    assert rates[(0.7, 0.5)] == pytest.approx((0.5 * h3 + 0.7 * np.log(2)) / 1.2, rel=1e-14)


def test_cells_on_two_workers_give_the_files_of_the_serial_run(client, tmp_path) -> None:
    serial = run_cells(
        _entropy_rate,
        _cells(tmp_path / "a"),
        checkpoint=tmp_path / "one",
        manifest={"what": "rates"},
    )
    spread = run_cells(
        _entropy_rate,
        _cells(tmp_path / "b"),
        checkpoint=tmp_path / "two",
        manifest={"what": "rates"},
        client=client,
    )
    _check_rates(spread)
    for one, two in zip(serial, spread):
        assert one["rate"].tobytes() == two["rate"].tobytes()
    names = sorted(p.name for p in (tmp_path / "one").iterdir() if p.suffix == ".npz")
    assert names == [f"cell{i:05d}.npz" for i in range(len(GRID))]
    for name in names:
        a = np.load(tmp_path / "one" / name)
        b = np.load(tmp_path / "two" / name)
        assert a["rate"].tobytes() == b["rate"].tobytes()
    assert {int(r["pid"]) for r in spread} <= set(client.run(os.getpid).values())
    assert os.getpid() not in {int(r["pid"]) for r in spread}


def test_a_killed_worker_loses_no_finished_cell_and_its_cell_runs_again(client, tmp_path) -> None:
    marks = tmp_path / "marks"
    cells = _cells(marks)
    (marks / "kill").touch()
    folder = tmp_path / "runs"
    results = run_cells(
        _entropy_rate, cells, checkpoint=folder, manifest={"what": "rates"}, client=client
    )
    _check_rates(results)
    calls = _calls(marks)
    kept = (marks / "kept").read_text().split()
    assert len(kept) >= 2
    assert calls[ODD] == 2
    assert all(calls[GRID[int(name[4:9])]] == 1 for name in kept)
    assert all(n <= 2 for n in calls.values())
    killed = int((marks / "0.3-0.2").read_text().split()[0])
    assert int(results[GRID.index(ODD)]["pid"]) != killed
    assert len(list(folder.glob("cell*.npz"))) == len(GRID)
    client.wait_for_workers(2, timeout=60)


def test_an_interrupted_run_resumes_from_its_checkpoint(client, tmp_path) -> None:
    marks = tmp_path / "marks"
    cells = _cells(marks)
    (marks / "fail").touch()
    folder = tmp_path / "runs"
    with pytest.raises(GradflowError, match="fails once"):
        run_cells(
            _entropy_rate, cells, checkpoint=folder, manifest={"what": "rates"}, client=client
        )
    kept = {p.name for p in folder.glob("cell*.npz")}
    before_failure = set((marks / "kept").read_text().split())
    assert before_failure and before_failure <= kept and "cell00002.npz" not in kept
    before = _calls(marks)
    results = run_cells(
        _entropy_rate, cells, checkpoint=folder, manifest={"what": "rates"}, client=client
    )
    _check_rates(results)
    after = _calls(marks)
    again = {GRID.index(c) for c in GRID if after[c] > before[c]}
    assert again == {i for i in range(len(GRID)) if f"cell{i:05d}.npz" not in kept}


class _Keys(logging.Handler):
    """The persistent compilation cache's key of every program a process compiles or loads."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.hits: list[str] = []
        self.misses: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if message.startswith("Persistent compilation cache hit"):
            self.hits.append(message.rsplit(" ", 1)[-1])
        elif message.startswith("Persistent compilation cache miss"):
            self.misses.append(message.rsplit(" ", 1)[-1])


def _count_compiles() -> None:
    jax.config.update("jax_log_compiles", True)
    handler = _Keys()
    logging.getLogger("jax._src.compiler").addHandler(handler)
    jax._gradflow_test_keys = handler  # type: ignore[attr-defined]


def _compiles() -> tuple[list[str], list[str]]:
    handler = jax._gradflow_test_keys  # type: ignore[attr-defined]
    return list(handler.hits), list(handler.misses)


@pytest.mark.slow
def test_a_sweep_on_two_workers_writes_the_serial_files_and_compiles_each_program_once(
    client, tmp_path
) -> None:
    """The double well ``(x² − a)² + y²`` over ``a``: for ``a < 0`` one minimum, at the origin,
    with ``L = a² > 0`` above the proven bound ``L ≥ 0`` (so a local minimum: the whole grid);
    for ``a = 1`` the global minima ``(±1, 0)`` and the saddle at the origin, whose stable
    manifold ``x = 0`` is one column of the 9 × 9 grid on ``[−3, 3]²`` (global-minimum share
    8/9).  The serial run fills the persistent cache; the workers load every program from it,
    and each worker loads each program once, over two sweeps."""
    model = gradflow.loss_model("(x**2 - a)**2 + y**2", ["x", "y"], ["a"], name="double well")
    axes = {"a": [-0.5, 0.5, 1.0, 2.0]}
    options = {"region": gradflow.Region.of(model, 9), "progress": False, "bifurcations": False}
    serial = gradflow.sweep(model, axes, checkpoint=tmp_path / "one", **options)
    client.run(_count_compiles)
    spread = gradflow.sweep(model, axes, checkpoint=tmp_path / "two", client=client, **options)
    for name in sorted(p.name for p in (tmp_path / "one").glob("cell-*.npz")):
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes()
    assert json.dumps(serial.metadata()) == json.dumps(spread.metadata())
    for key, value in serial.arrays().items():
        assert value.tobytes() == spread.arrays()[key].tobytes(), key
    assert spread.fraction("local_min")[0] == 1.0
    assert spread.fraction("global_min")[2] == pytest.approx(8 / 9, abs=1e-15)
    gradflow.sweep(model, axes, client=client, **options)
    for hits, misses in client.run(_compiles).values():
        assert len(set(hits + misses)) == len(hits + misses)
        assert not misses


def test_the_sweep_command_on_a_running_cluster_writes_the_files_of_the_serial_run(
    client, cli
) -> None:
    sweep = ["sweep", "--loss", "(x**2 - a)**2 + y**2", "--params", "x,y", "--grid", "9"]
    sweep += ["--hyper", "a=-0.5,1"]
    client.wait_for_workers(2, timeout=60)
    assert cli(*sweep, "--out", "one.npz").code == 0
    address = client.scheduler_info()["address"]
    run = cli(*sweep, "--out", "two.npz", "--scheduler", address)
    assert run.code == 0, run.err
    assert f"cells on the Dask cluster at {address} (2 workers now); dashboard http" in run.err
    for suffix in (".npz", ".json"):
        assert Path(f"one{suffix}").read_bytes() == Path(f"two{suffix}").read_bytes()


def test_workers_get_the_client_s_jax_settings_and_one_with_other_xla_flags_is_refused() -> None:
    from types import SimpleNamespace

    from gradflow._cells.cluster import JaxSettings, jax_settings

    settings = jax_settings()
    assert settings["JAX_ENABLE_X64"] == "1"
    assert settings["JAX_COMPILATION_CACHE_DIR"] == jax.config.jax_compilation_cache_dir
    assert settings["XLA_FLAGS"] == os.environ.get("XLA_FLAGS", "")
    worker = SimpleNamespace(address="tcp://worker:1")
    JaxSettings(settings).setup(worker)
    other = {**settings, "XLA_FLAGS": "--xla_cpu_enable_fast_math=true"}
    with pytest.raises(GradflowError, match="tcp://worker:1 started JAX with XLA_FLAGS="):
        JaxSettings(other).setup(worker)


@pytest.mark.slow
def test_the_fate_command_on_a_running_cluster_writes_the_files_of_the_serial_run(
    client, cli
) -> None:
    fate = ["fate", "--model", "shallow-ntk", "--n-samples", "4", "--widths", "2,8"]
    fate += ["--seeds", "1", "--steps", "60", "--init", "lecun,ntk"]
    client.wait_for_workers(2, timeout=60)
    assert cli(*fate, "--out", "one.npz").code == 0
    run = cli(*fate, "--out", "two.npz", "--scheduler", client.scheduler_info()["address"])
    assert run.code == 0, run.err
    for suffix in (".npz", ".json", ".png"):
        assert Path(f"one{suffix}").read_bytes() == Path(f"two{suffix}").read_bytes()


@pytest.mark.slow
def test_the_canonical_fate_map_on_a_running_cluster_writes_the_files_of_the_serial_run(
    client, cli
) -> None:
    """The canonical map at ``p + q < 1`` (runs that slide along the ReLU's kinks), its rows
    and reduced predictions cells on two workers: the serial run's NPZ, JSON and PNG, byte for
    byte; 3 × 3 runs, each compared in two metrics."""
    fate = ["fate", "--quick", "--p", "0.2", "--q", "0.3", "--grid", "3", "--length", "4"]
    client.wait_for_workers(2, timeout=60)
    assert cli(*fate, "--out", "one.npz").code == 0
    run = cli(
        *fate, "--out", "two.npz", "--json", "--scheduler", client.scheduler_info()["address"]
    )
    assert run.code == 0, run.err
    record = json.loads(run.out)
    assert record["cells"] == 18 and sum(record["counts"].values()) == 9
    for suffix in (".npz", ".json", ".png"):
        assert Path(f"one{suffix}").read_bytes() == Path(f"two{suffix}").read_bytes()
