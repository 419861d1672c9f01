"""``import gradflow`` keeps compiled programs between runs, for the Python API as for the
command line: JAX's persistent compilation cache on in ``$GRADFLOW_CACHE_DIR``, and off with
``GRADFLOW_CACHE_DIR=""``.  Each case in a fresh interpreter, as a user's script starts."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

REPORT = (
    "import json, jax; c = jax.config; print(json.dumps([c.jax_enable_compilation_cache, "
    "c.jax_compilation_cache_dir, c.jax_persistent_cache_min_compile_time_secs]))"
)


def _settings(tmp_path, code: str, **env: str) -> list:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("JAX_")}
    clean.pop("GRADFLOW_CACHE_DIR", None)
    done = subprocess.run(
        [sys.executable, "-c", code + "; " + REPORT],
        env={**clean, "XDG_CACHE_HOME": str(tmp_path / "xdg"), **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("jax_first", [False, True])
def test_import_gradflow_turns_the_persistent_cache_on_in_its_folder(tmp_path, jax_first) -> None:
    code = ("import jax; " if jax_first else "") + "import gradflow"
    chosen = tmp_path / "kept"
    assert _settings(tmp_path, code, GRADFLOW_CACHE_DIR=str(chosen)) == [True, str(chosen), 0.0]
    assert chosen.is_dir()
    default = tmp_path / "xdg" / "gradflow" / "jax"
    assert _settings(tmp_path, code) == [True, str(default), 0.0]


def test_an_empty_gradflow_cache_dir_turns_it_off(tmp_path) -> None:
    enabled, *_ = _settings(tmp_path, "import gradflow", GRADFLOW_CACHE_DIR="")
    assert enabled is False


def test_a_jax_cache_folder_of_the_users_own_is_kept(tmp_path) -> None:
    mine = str(tmp_path / "mine")
    got = _settings(tmp_path, "import gradflow", JAX_COMPILATION_CACHE_DIR=mine)
    assert got[:2] == [True, mine]
