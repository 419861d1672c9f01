"""Shared test set-up: float64 JAX (imported through gradflow), fixed seeds, the CLI in-process."""

from __future__ import annotations

import contextlib
import gc
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from gradflow.cli._setup import GC_YOUNGEST, _gradflow_cache, with_xla_flags

TEST_XLA_FLAGS = ("--xla_backend_optimization_level=0", "--xla_cpu_use_fusion_emitters=false")
"""How the test runs compile: most of the suite's CPU time is XLA compiling small programs that
then run for milliseconds (docs/performance.md, "Tests").

- LLVM's optimization level 0 compiles them in about half the time.
- XLA's older elemental emitters instead of its MLIR fusion emitters: the fusion emitters take
  about twice as long to compile, and at level 0 the batched integrator's rounds they emit run
  about five times slower (the canonical 81 × 81 basin map: 56 CPU s against 11).

The floating-point semantics are the same either way (no fast-math); results agree to rounding.
A flag that ``XLA_FLAGS`` already names is left alone, and one the installed XLA does not know
(it would abort the process) is left out (:func:`gradflow.cli._setup.with_xla_flags`)."""


os.environ["XLA_FLAGS"] = with_xla_flags(os.environ.get("XLA_FLAGS", ""), TEST_XLA_FLAGS)

import jax  # noqa: E402  (after XLA_FLAGS, which XLA reads when its backend starts)
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import gradflow  # noqa: E402, F401  (enables float64 before any test builds an array)
from gradflow.cli import main  # noqa: E402

SHARED_CACHE = "GRADFLOW_TEST_XLA_CACHE"
"""The environment variable naming the compilation cache of the test runs: a folder (kept), or
empty for a folder of this run alone (removed when it ends).  Unset: :func:`kept_cache`."""

CACHE_MIN_COMPILE_SECONDS = 0.0
"""Programs compiled in at least this long are written to the cache: every one, since the
suite compiles about 3,000 programs, most of them small, and the next run loads them all."""

CACHE_MAX_BYTES = 2 * 1024**3
"""A kept cache larger than this is emptied before a run (a whole run writes about 28 MB; each
change to the engine adds the programs it changes)."""


def kept_cache() -> str:
    """``$XDG_CACHE_HOME/gradflow/tests-xla`` (default ``~/.cache/gradflow/tests-xla``): where
    test runs keep their compiled programs for the next run, beside the command line's own
    cache (``gradflow/jax``), which tests never touch."""
    return str(_gradflow_cache() / "tests-xla")


def pytest_addoption(parser: pytest.Parser) -> None:
    """``--xla-report N``: after the run, the N call sites whose programs took the most
    seconds to build (tracing, lowering and XLA's compile, summed over the workers), to find
    where a cold run's time goes (docs/performance.md, "Tests")."""
    parser.addoption(
        "--xla-report",
        type=int,
        default=0,
        metavar="N",
        help="print the N call sites whose XLA programs took longest to build",
    )


def pytest_configure(config: pytest.Config) -> None:
    """One persistent compilation cache for the test runs, shared by a run's xdist workers and
    kept for the next run (:func:`kept_cache`, or ``$GRADFLOW_TEST_XLA_CACHE``): a program
    that tests compile in both workers (the canonical model's rounds, its loss and Hessian), or
    in the last run, is loaded instead of compiled.  JAX keys each program by its whole lowered
    module, the compile options and flags (the suite's LLVM level included) and the jax and
    jaxlib versions, so a kept program is the one compiling would give; the tests' results do
    not depend on the cache, only their time does.  ``GRADFLOW_TEST_XLA_CACHE=""``, or a home
    folder that cannot be written, gives the run a folder of its own, removed when it ends (a
    run as on a new machine).  The controlling process decides before the workers start; they
    inherit its environment, and so do the processes tests start (the notebook's kernel, the
    command line in a child process), which read JAX's settings from it.

    Each process also collects cyclic garbage less often, as the command line does
    (:data:`~gradflow.cli._setup.GC_YOUNGEST`): a whole run spent 17.8 CPU s in the collector,
    14.3 of them walking the imported libraries in full collections, and 8.7 s with it."""
    gc.set_threshold(GC_YOUNGEST, *gc.get_threshold()[1:])
    if os.environ.get(SHARED_CACHE) is None:
        os.environ[SHARED_CACHE] = _writable(kept_cache())
    if not os.environ[SHARED_CACHE]:
        os.environ[SHARED_CACHE] = tempfile.mkdtemp(prefix="gradflow-tests-xla-")
        config.stash[_OWNED] = os.environ[SHARED_CACHE]
    elif "PYTEST_XDIST_WORKER" not in os.environ:
        _empty_if_full(os.environ[SHARED_CACHE])
    os.makedirs(os.environ[SHARED_CACHE], exist_ok=True)
    # gradflow's own store and kept results too, from the start: a module- or session-scoped
    # fixture runs before the autouse fixture below sets it for each test
    os.environ["GRADFLOW_CACHE_DIR"] = os.environ[SHARED_CACHE]
    settings = {
        "jax_compilation_cache_dir": os.environ[SHARED_CACHE],
        "jax_persistent_cache_min_compile_time_secs": CACHE_MIN_COMPILE_SECONDS,
    }
    for name, value in settings.items():
        jax.config.update(name, value)
        os.environ[name.upper()] = str(value)


def _writable(folder: str) -> str:
    """``folder``, created if missing, or ``""`` where it cannot be (a read-only home)."""
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError:
        return ""
    return folder if os.access(folder, os.W_OK) else ""


def _empty_if_full(folder: str) -> None:
    """Remove ``folder`` if its files (gradflow's store of executables, ``executables/``,
    included) pass :data:`CACHE_MAX_BYTES` (JAX's own size limit keeps
    access times that the command line's runs in child processes, which share the folder, do
    not write)."""
    sizes = (
        os.path.getsize(os.path.join(root, name))
        for root, _, names in os.walk(folder)
        for name in names
    )
    if sum(sizes) > CACHE_MAX_BYTES:
        shutil.rmtree(folder, ignore_errors=True)


BACKEND_EVENT = "/jax/core/compile/backend_compile_duration"
"""Recorded by JAX for every program handed to XLA: compiled, or loaded from its cache."""
BUILD_EVENTS = (
    "/jax/core/compile/jaxpr_trace_duration",
    "/jax/core/compile/jaxpr_to_mlir_module_duration",
    BACKEND_EVENT,
)
"""The three steps of building a program that JAX times: tracing it to a jaxpr, lowering the
jaxpr to MLIR, and XLA's compile (or its load from JAX's cache)."""
REPO = Path(__file__).resolve().parent.parent
"""The project's folder: :func:`call_site` names the innermost frame of the code under it."""
CACHE_HIT_EVENT = "/jax/compilation_cache/cache_hits"
"""Recorded by JAX for every program loaded from its persistent compilation cache."""


@dataclass
class ProgramCount:
    """The XLA programs a process of the run built: ``compiled`` by XLA, ``cached`` loaded from
    JAX's persistent cache, ``stored`` executables loaded from gradflow's store (no tracing)."""

    compiled: int = 0
    cached: int = 0
    stored: int = 0
    sites: dict[str, list[float]] | None = None
    """With ``--xla-report``: per call site, the programs built there (compiled, or loaded
    from JAX's cache) and the seconds spent tracing, lowering and compiling them (each step's
    wall time in its thread)."""

    def listen(self) -> None:
        """Count from now on, through ``jax.monitoring`` (each backend program, minus those
        JAX's cache served, is a compile)."""
        from gradflow._compiled.store import LOAD_EVENT

        def on_event(event: str, **_: object) -> None:
            if event == CACHE_HIT_EVENT:
                self.cached += 1
                self.compiled -= 1
            elif event == LOAD_EVENT:
                self.stored += 1

        def on_duration(event: str, seconds: float, **kwargs: object) -> None:
            if event == BACKEND_EVENT:
                self.compiled += 1
            if self.sites is not None and event in BUILD_EVENTS:
                site = self.sites.setdefault(call_site(kwargs.get("fun_name")), [0, 0.0])
                site[0] += event == BACKEND_EVENT
                site[1] += seconds

        jax.monitoring.register_event_listener(on_event)
        jax.monitoring.register_event_duration_secs_listener(on_duration)
        self._listeners = (on_event, on_duration)

    def stop(self) -> None:
        """Count no more (the listeners of :meth:`listen` removed)."""
        on_event, on_duration = self._listeners
        jax.monitoring.unregister_event_listener(on_event)
        jax.monitoring.unregister_event_duration_listener(on_duration)

    def add(self, other: dict[str, Any]) -> None:
        for name, value in other.items():
            if name != "sites":
                setattr(self, name, getattr(self, name) + value)
            elif value is not None:
                for site, (programs, seconds) in value.items():
                    mine = self.sites.setdefault(site, [0, 0.0])
                    mine[0] += programs
                    mine[1] += seconds


def call_site(name: object) -> str:
    """``file:function (name)`` of the innermost frame of the project's own code that is
    building a program (the program's function ``name``, as tracing names it; lowering and
    compiling name it ``jit(name)``): the engine's call, not JAX's machinery nor the store of
    executables, which only passes a program on."""
    name = str(name).removeprefix("jit(").removesuffix(")")
    frame = sys._getframe(2)
    while frame is not None:
        path = Path(frame.f_code.co_filename)
        if path.is_relative_to(REPO) and ".venv" not in path.parts:
            relative = path.relative_to(REPO)
            if relative.as_posix() not in ("gradflow/_compiled/store.py", "tests/conftest.py"):
                return f"{relative.as_posix()}:{frame.f_code.co_name} ({name})"
        frame = frame.f_back
    return f"outside the project ({name})"


_PROGRAMS = pytest.StashKey[ProgramCount]()


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    """Each process of the run (the controller without xdist, each xdist worker) counts the
    programs it builds."""
    count = ProgramCount(sites={} if session.config.getoption("xla_report") else None)
    count.listen()
    session.config.stash[_PROGRAMS] = count


def pytest_sessionfinish(session: pytest.Session) -> None:
    """A worker hands its count to the controller (xdist's ``workeroutput``)."""
    output = getattr(session.config, "workeroutput", None)
    if output is not None:
        output["xla_programs"] = asdict(session.config.stash[_PROGRAMS])


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: object, error: object) -> None:
    """The controller adds up its workers' counts."""
    counted = getattr(node, "workeroutput", {}).get("xla_programs")
    if counted:
        node.config.stash[_PROGRAMS].add(counted)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The run's XLA programs, printed last, so that a change that makes the suite compile
    more shows: ``XLA programs: N compiled, M from JAX's persistent cache, K executables from
    gradflow's store``."""
    count = terminalreporter.config.stash.get(_PROGRAMS, None)
    if count is None:
        return
    if count.sites:
        top = sorted(count.sites.items(), key=lambda item: -item[1][1])
        shown = top[: terminalreporter.config.getoption("xla_report")]
        total = sum(seconds for _, seconds in count.sites.values())
        terminalreporter.write_sep(
            "=", f"building XLA programs: {total:.0f} s in all, by call site"
        )
        for site, (programs, seconds) in shown:
            terminalreporter.write_line(f"{seconds:8.1f} s {int(programs):5d} programs  {site}")
    terminalreporter.write_line(
        f"XLA programs: {count.compiled} compiled, {count.cached} from JAX's persistent "
        f"cache, {count.stored} executables from gradflow's store"
    )


def pytest_unconfigure(config: pytest.Config) -> None:
    owned = config.stash.get(_OWNED, None)
    if owned is not None:
        shutil.rmtree(owned, ignore_errors=True)
        os.environ.pop(SHARED_CACHE, None)
        os.environ.pop("GRADFLOW_CACHE_DIR", None)


_OWNED = pytest.StashKey[str]()


@contextlib.contextmanager
def programs_that_run_long() -> Iterator[None]:
    """Programs first compiled inside the block get LLVM's optimization level 3 instead of the
    suite's level 0 (:data:`TEST_XLA_FLAGS`): for tests whose programs run for seconds (a
    basin map's 32 rounds of 16,384 members, 50,000 importance samples at each of 8 positions),
    where level 0 halves the compile time but doubles the run time.  Not where compiling
    dominates: 300 training steps of a transformer take longer in all at level 3.

    Floating-point semantics are the same at every level (no fast-math), but the levels may
    fuse multiplications and additions differently, so results agree to rounding, not always
    bit for bit.  A program already
    compiled keeps its level; one compiled here keeps level 3 in later tests.  Where JAX's
    compiler module no longer has ``get_compile_options`` (a private function) the block
    changes nothing."""
    from jax._src import compiler

    original = getattr(compiler, "get_compile_options", None)
    if original is None:
        yield
        return

    def get_compile_options(*args, **kwargs):
        options = original(*args, **kwargs)
        options.executable_build_options.debug_options.xla_backend_optimization_level = 3
        return options

    compiler.get_compile_options = get_compile_options
    try:
        yield
    finally:
        compiler.get_compile_options = original


@pytest.fixture(scope="session")
def long_programs() -> Callable[[], contextlib.AbstractContextManager[None]]:
    """:func:`programs_that_run_long`, for ``with long_programs(): …`` around a test's long
    computation."""
    return programs_that_run_long


@pytest.fixture
def rng() -> np.random.Generator:
    """A NumPy generator with a fixed seed."""
    return np.random.default_rng(20241129)


@pytest.fixture(autouse=True)
def _run_compilation_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """CLI runs in tests, in-process or in a child process, use the run's shared compilation
    cache, never the user's cache folder: a child process running the canonical model reuses
    the programs the workers compiled.  (:func:`pytest_configure` sets it for the whole run;
    this puts it back after a test that changed it.)"""
    monkeypatch.setenv("GRADFLOW_CACHE_DIR", os.environ[SHARED_CACHE])


@dataclass(frozen=True)
class CliRun:
    """Exit status, stdout and stderr of one ``gradflow`` run."""

    code: int
    out: str
    err: str

    def __iter__(self):
        """Unpack as ``code, out, err = cli(...)``."""
        return iter((self.code, self.out, self.err))


class Cli:
    """``gradflow`` run in-process, in an empty working folder (``folder``)."""

    def __init__(self, folder: Path, capsys: pytest.CaptureFixture) -> None:
        self.folder = folder
        self._capsys = capsys

    def __call__(self, *argv: str) -> CliRun:
        try:
            code = main(list(argv))
        except SystemExit as stop:
            code = stop.code
        out, err = self._capsys.readouterr()
        return CliRun(int(code), out, err)

    def assert_rejected(self, argv: list[str], named: str) -> None:
        """Bad input: exit status 2, one line on stderr containing ``named``, no file written.

        A progress bar redrawn with carriage returns before the error is part of that line.
        """
        run = self(*argv)
        lines = run.err.strip().split("\n")
        assert run.code == 2, run
        assert len(lines) == 1 and named in lines[0], lines
        assert list(self.folder.iterdir()) == []


@pytest.fixture
def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> Cli:
    """Run the CLI with ``tmp_path`` as the working folder."""
    monkeypatch.chdir(tmp_path)
    return Cli(tmp_path, capsys)


@pytest.fixture
def hand_made_fate() -> Callable[..., object]:
    """A builder of a canonical fate map on a 2 × 2 grid from outcomes given by hand, nothing
    run: ``build(fates, reduced, **arrays)`` with the four fates (row-major, row = ``e``), the
    predictions per metric, and optionally ``steps``, ``descent``, ``off_start``, ``off_end`` and
    the keys of :data:`~gradflow.systems.markov.departure.EVIDENCE` per run."""
    from gradflow.systems.markov.departure import EVIDENCE
    from gradflow.systems.markov.fate import FATES, FateConfig, FateMap

    def build(fates: list[str], reduced: dict[str, list[str]], **arrays: list[float]) -> FateMap:
        shape = (1, 2, 2)
        zeros = np.zeros(shape)
        given = {k: np.asarray(v, float).reshape(shape) for k, v in arrays.items()}
        return FateMap(
            config=FateConfig(p=0.5, q=0.8, grid=2, sigma=(0.0,), length=4),
            ws=np.array([-1.0, 1.0]),
            es=np.array([0.5, 1.0]),
            runs=((0.0, 0),),
            fates=np.array([FATES.index(f) for f in fates]).reshape(shape),
            times=zeros,
            losses=zeros,
            steps=given.get("steps", zeros).astype(int),
            descent=given.get("descent", zeros).astype(int),
            sliding=zeros,
            projected=np.zeros(shape + (2,)),
            off_start=given.get("off_start", zeros),
            off_end=given.get("off_end", zeros),
            reduced={m: np.array(v).reshape(2, 2) for m, v in reduced.items()},
            references={"unigram_loss": 0.7, "entropy_rate": 0.6},
            evidence={k: v for k, v in given.items() if k in EVIDENCE},
        )

    return build


def _can_write(folder: Path) -> bool:
    try:
        with tempfile.TemporaryFile(dir=folder):
            return True
    except OSError:
        return False


@pytest.fixture
def unwritable(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """An existing folder in which no file can be created: a temporary folder with mode 0o555
    (not the ``cli`` fixture's working folder), or, where that does not stop the user (root), a
    read-only system folder (``/sys``, ``/proc``)."""
    folder = tmp_path_factory.mktemp("ro")
    folder.chmod(0o555)
    candidates = [folder, Path("/sys"), Path("/proc")]
    found = next((c for c in candidates if c.is_dir() and not _can_write(c)), None)
    if found is None:
        pytest.skip("no folder here refuses new files to this user")
    yield found
    folder.chmod(0o755)
