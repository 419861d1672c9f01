"""The command line answers ``--help`` and rejects bad input without importing JAX.

Every command, figure and benchmark is asked for its ``--help`` and given an option it does not
have, and the option checks of the configuration dataclasses are exercised with one out-of-range
value per family; all of it in one fresh interpreter (importing JAX takes about a second, so
this is what keeps ``--help`` instant).  Times are measured by ``gradflow bench startup``, not
here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from gradflow.cli import COMMANDS, bench, figures

HEAVY = (
    "jax",
    "jaxlib",
    "equinox",
    "diffrax",
    "optax",
    "optimistix",
    "matplotlib",
    "torch",
    "dask",
    "distributed",
)
"""Libraries a command may import only once its arguments are accepted."""

REJECTED = [
    ["portrait", "--p", "2", "--q", "0.5"],
    ["train", "--p", "2", "--q", "0.5"],
    ["compare", "--p", "0.5", "--q", "0"],
    ["icl", "--prior", "beta"],
    ["icl", "--k", "1"],
    ["ntk", "--widths", "0"],
    ["mixture", "--k", "1"],
    ["figures", "two-mixture", "--k", "1"],
    ["figures", "shallow-ntk", "--widths", "0"],
    ["bench", "train", "--length", "1"],
    ["bench", "ntk", "--width", "0"],
    ["sweep", "--p", "0.1:1.2:3", "--q", "0.5"],
    ["sweep", "--p", "0.1:0.9:3"],
    ["sweep", "--p", "0.1:0.9:3", "--q", "0.5", "--grid", "0"],
    ["sweep", "--p", "0.1:0.9:3", "--q", "0.5", "--workers", "0"],
    ["fate", "--workers", "-1"],
    ["fate", "--model", "canonical-bias", "--hyper", "p=2", "q=0.5"],
    ["sweep", "--loss", "x**2 + a*y**2", "--hyper", "a=1:2:3", "--plane", "x", "x"],
    ["portrait", "--loss", "x**2 + y**2 + z**2", "--fixed", "x=1"],
    ["flow", "--loss", "x**2 + y**2", "--init", "1", "2", "3"],
]
"""Out-of-range values that the configurations' own checks refuse (exit status 2): every value
of a sweep's axis against its range, and a loss's plane, slice and start by its grammar."""


def _argv_lists() -> list[list[str]]:
    """``--help`` and an unknown option for every command, figure and benchmark, then
    :data:`REJECTED`."""
    entries = [[name] for name in COMMANDS if name not in ("figures", "bench")]
    entries += [["figures", name] for name in figures.SUBCOMMANDS]
    entries += [["bench", name] for name in bench.SUBCOMMANDS]
    helps = [[]] + [[*entry, "--help"] for entry in entries]
    unknown = [[*entry, "--no-such-option"] for entry in entries]
    return helps + unknown + REJECTED


CHILD = """
import json, sys
from gradflow.cli import main

heavy, report = tuple(sys.argv[1].split(",")), []
for argv in json.loads(sys.argv[2]):
    try:
        code = main(argv)
    except SystemExit as stop:
        code = stop.code
    loaded = sorted({m.split(".")[0] for m in sys.modules} & set(heavy))
    report.append([argv, code, loaded])
    if loaded:
        break
print(json.dumps(report))
"""


def test_help_and_rejected_arguments_import_no_jax(tmp_path) -> None:
    argvs = _argv_lists()
    run = subprocess.run(
        [sys.executable, "-c", CHILD, ",".join(HEAVY), json.dumps(argvs)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=True,
    )
    report = json.loads(run.stdout.strip().splitlines()[-1])
    for argv, code, loaded in report:
        assert not loaded, f"gradflow {' '.join(argv)} imported {', '.join(loaded)}"
        help_asked = not argv or argv[-1] == "--help"
        assert code == (0 if help_asked else 2), (argv, code)
    assert len(report) == len(argvs)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_bench_startup_times_every_help_and_the_main_job(cli) -> None:
    code, out, _ = cli("bench", "startup", "--repeats", "1", "--json")
    report = json.loads(out)
    assert code == 0
    helps = report["help_seconds"]
    expected = {f"gradflow {' '.join(argv)}" for argv in _argv_lists() if argv[-1:] == ["--help"]}
    assert set(helps) == expected | {"gradflow --help"}
    assert 0 < report["warm_seconds"] and 0 < report["cold_seconds"]
    assert 0 < report["floor_seconds"] < report["warm_seconds"]


MAIN_JOB = """
import sys
import gradflow
from gradflow.cli import main

code = main(["portrait", "--p", "0.7", "--q", "0.6", "--no-basins", "--out", sys.argv[1]])
gradflow.default_basin_options()
print(code, "|", ",".join(sorted({m.split(".")[0] for m in sys.modules} & {"diffrax", "equinox",
      "optimistix", "lineax", "optax"})))
"""


def test_the_main_job_imports_no_ode_or_optimisation_library(tmp_path) -> None:
    """The canonical portrait runs on the package's own batched integrator and the closed-form
    critical sets, so it never pays for importing diffrax, equinox, optimistix or optax: its
    critical sets, separatrices, streamlines and drawing run here (the basin map, whose
    compilation would take most of a minute with the compilation cache off, is left out, but
    its integration stages are built)."""
    run = subprocess.run(
        [sys.executable, "-c", MAIN_JOB, str(tmp_path / "p.png")],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=True,
    )
    code, loaded = run.stdout.splitlines()[-1].split("|")
    assert code.strip() == "0" and loaded.strip() == ""
    assert (tmp_path / "p.png").stat().st_size > 0


def test_xla_flags_are_tried_once_and_unknown_ones_left_out(tmp_path, monkeypatch) -> None:
    """XLA aborts a process on a flag it does not know: a made-up flag is tried in a child
    process and left out, the answer is kept per jaxlib version, and the next call tries
    nothing."""
    from gradflow.cli import _setup

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    made_up = "--xla_gradflow_no_such_flag=true"
    assert _setup.known_xla_flags([made_up]) == []
    assert _setup.with_xla_flags("--xla_dump_to=/x", [made_up]) == "--xla_dump_to=/x"

    def never(flags):
        raise AssertionError(f"tried {flags} again")

    monkeypatch.setattr(_setup, "_xla_accepts", never)
    assert _setup.known_xla_flags([made_up]) == []
    assert (tmp_path / "gradflow" / "xla-flags.json").exists()


def _compile_one_program(env: dict[str, str]) -> None:
    """In a child process with ``env``: :func:`~gradflow.cli._setup.configure_jax`, then one
    jitted program (``2x + 1`` at 3), whose value is checked."""
    script = (
        "from gradflow.cli._setup import configure_jax; configure_jax(); import jax; "
        "print(float(jax.jit(lambda x: x * 2.0 + 1.0)(3.0)))"
    )
    run = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
    )
    assert run.stdout.strip() == "7.0"


def test_the_cache_turned_off_is_off_also_where_jax_s_environment_turns_it_on(tmp_path) -> None:
    """``GRADFLOW_CACHE_DIR=""`` turns the compilation cache off: a program compiled after
    :func:`~gradflow.cli._setup.configure_jax` is not written to the folder that
    ``JAX_COMPILATION_CACHE_DIR`` names (with every program written, were the cache on)."""
    folder = tmp_path / "jax-cache"
    folder.mkdir()
    env = {
        **os.environ,
        "GRADFLOW_CACHE_DIR": "",
        "JAX_COMPILATION_CACHE_DIR": str(folder),
        "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
    }
    _compile_one_program(env)
    assert list(folder.iterdir()) == []


@pytest.mark.parametrize("named", [True, False])
def test_the_cache_folder_named_by_gradflow_wins_over_jax_s_and_jax_s_over_the_default(
    tmp_path, named
) -> None:
    """With ``JAX_COMPILATION_CACHE_DIR`` in the environment (as a process started by a gradflow
    process inherits it), a program compiled after
    :func:`~gradflow.cli._setup.configure_jax` is written to ``GRADFLOW_CACHE_DIR`` where that is
    set, and to JAX's folder where it is not."""
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    theirs.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "GRADFLOW_CACHE_DIR"}
    env |= {"JAX_COMPILATION_CACHE_DIR": str(theirs), "XDG_CACHE_HOME": str(tmp_path / "home")}
    if named:
        env["GRADFLOW_CACHE_DIR"] = str(ours)
    _compile_one_program(env)
    written, untouched = (ours, theirs) if named else (theirs, tmp_path / "home")
    assert any(written.iterdir())
    assert not untouched.exists() or not any(untouched.rglob("*cache*"))


def test_a_command_freezes_the_objects_only_when_the_interpreter_exits() -> None:
    """After ``main`` returns nothing is frozen (a Python caller's garbage is still collected);
    at the exit, once the handlers registered after ``main`` began have run, every live object
    is frozen, so that the shutdown's collections skip them."""
    code = (
        "import atexit, gc\n"
        "atexit.register(lambda: print('at exit', gc.get_freeze_count() > 0))\n"
        "from gradflow.cli import main\n"
        "main(['models'])\n"
        "print('after main', gc.get_freeze_count())\n"
    )
    assert _last_two_lines(code) == ["after main 0", "at exit True"]


def test_the_process_s_own_command_freezes_what_its_imports_create() -> None:
    """Run as the process's command, ``main`` imports each new module with the collector paused
    and freezes what it made: after it, the modules it loaded are in the permanent generation
    (``gc.get_freeze_count()``), the collector is on again and ``import`` is Python's own; a
    module loaded after it is not frozen.  Called from Python with ``argv`` (the test above),
    nothing is frozen."""
    code = (
        "import builtins, gc, sys\n"
        "original = builtins.__import__\n"
        "sys.argv = ['gradflow', 'models']\n"
        "from gradflow.cli import main\n"
        "assert 'gradflow.cli.models' not in sys.modules\n"
        "main()\n"
        "frozen = gc.get_freeze_count()\n"
        "assert 'graphlib' not in sys.modules\n"
        "import graphlib\n"
        "print(frozen > 1000, gc.isenabled(), builtins.__import__ is original)\n"
        "print(gc.get_freeze_count() == frozen)\n"
    )
    assert _last_two_lines(code) == ["True True True", "True"]


def _last_two_lines(code: str) -> list[str]:
    """The last two lines ``python -c CODE`` prints, in a fresh interpreter."""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return done.stdout.splitlines()[-2:]


def test_a_command_collects_garbage_less_often_and_restores_the_thresholds(monkeypatch) -> None:
    """During a command the youngest generation's threshold is ``GC_YOUNGEST``; after it (also
    after a refused argument) the caller's thresholds are back."""
    import gc

    import gradflow.cli.models
    from gradflow.cli import main
    from gradflow.cli._setup import GC_YOUNGEST

    seen = []
    monkeypatch.setattr(gradflow.cli.models, "run", lambda args: seen.append(gc.get_threshold()))
    before = gc.get_threshold()
    try:
        gc.set_threshold(321, 9, 8)
        assert main(["models"]) == 0
        assert seen == [(GC_YOUNGEST, 9, 8)]
        assert gc.get_threshold() == (321, 9, 8)
        assert main(["portrait", "--p", "1.5"]) == 2
        assert gc.get_threshold() == (321, 9, 8)
    finally:
        gc.set_threshold(*before)
