"""The suite's report of where its XLA programs are built (``pytest --xla-report N``)."""

from __future__ import annotations

import json
from dataclasses import asdict

import jax
import jax.numpy as jnp
import numpy as np
from conftest import ProgramCount


def test_a_program_is_counted_once_at_the_test_that_builds_it() -> None:
    count = ProgramCount(sites={})
    count.listen()
    try:
        # a function no other test compiles, so that JAX traces, lowers and compiles it here
        jax.jit(lambda x: jnp.sin(x) * 3.25 + 0.0625)(np.arange(7.0)).block_until_ready()
    finally:
        count.stop()
    here = [site for site in count.sites if site.startswith("tests/test_xla_report.py:")]
    assert here == [
        "tests/test_xla_report.py:test_a_program_is_counted_once_at_the_test_that_builds_it (<lambda>)"
    ]
    programs, seconds = count.sites[here[0]]
    assert programs == 1 and seconds > 0
    assert count.compiled + count.cached >= 1
    # what a worker hands the controller is plain data (xdist sends it as such)
    assert json.loads(json.dumps(asdict(count)))["sites"] == count.sites


def test_the_workers_reports_add_up() -> None:
    total = ProgramCount(compiled=2, sites={"a (f)": [1, 0.5]})
    total.add(
        {"compiled": 3, "cached": 1, "stored": 0, "sites": {"a (f)": [2, 0.25], "b (g)": [1, 1.0]}}
    )
    assert (total.compiled, total.cached) == (5, 1)
    assert total.sites == {"a (f)": [3, 0.75], "b (g)": [1, 1.0]}
