"""``gradflow bench train``: speed of the full Markov transformer.

Training: AdamW steps per second at d = 8, N = 256, batch 16, float32, one seed, p = 0.5,
q = 0.8, with batches sampled on the fly.  The steps run in compiled chunks (``lax.scan`` over
``--chunk`` steps, the way :func:`gradflow.analysis.markov_training.train` runs them); the
baseline, measured in the same run, is a Python loop calling one jitted step at a time.

Exact enumeration: one evaluation of the exact population loss over all 2^12 input sequences,
and of the loss with its gradient, float64 (what the reduced-vs-full checks call).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
from gradflow.models.markov_data import sample_chains
from gradflow.models.markov_transformer import exact_loss, sample_loss, standard_init

from gradflow.cli._common import format_table, print_json

from .markov_training import optimizer as adamw

P, Q = 0.5, 0.8
D, LENGTH, BATCH = 8, 256, 16
EXACT_LENGTH = 12


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--steps", type=int, default=400, help="timed training steps (default 400)")
    parser.add_argument(
        "--chunk", type=int, default=100, help="steps per compiled chunk (default 100)"
    )
    parser.add_argument(
        "--repeats", type=int, default=20, help="timed exact-loss evaluations (default 20)"
    )
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")


def _timed(fn: Callable[[], Any]) -> float:
    """Wall time (s) of ``fn()`` with its result ready."""
    begin = time.perf_counter()
    jax.block_until_ready(fn())
    return time.perf_counter() - begin


def _training(steps: int, chunk: int) -> dict[str, float]:
    optimizer = adamw(steps, 2e-3, 1e-3)
    model = standard_init(jax.random.key(0), D, LENGTH, attention="softmax")
    state = optimizer.init(model)

    def one_step(carry: tuple[Any, Any], key: jax.Array) -> tuple[tuple[Any, Any], jax.Array]:
        m, s = carry
        batch = sample_chains(key, P, Q, BATCH, LENGTH + 1)
        loss, grads = jax.value_and_grad(sample_loss)(m, batch)
        updates, s = optimizer.update(grads, s, m)
        return (eqx.apply_updates(m, updates), s), loss

    step = eqx.filter_jit(one_step)
    scan = eqx.filter_jit(lambda c, k: jax.lax.scan(one_step, c, jax.random.split(k, chunk)))
    carry = (model, state)
    compile_scan = _timed(lambda: scan(carry, jax.random.key(1)))
    compile_step = _timed(lambda: step(carry, jax.random.key(1)))
    chunks = max(1, steps // chunk)
    begin = time.perf_counter()
    for i in range(chunks):
        carry, losses = scan(carry, jax.random.key(10 + i))
    jax.block_until_ready(losses)
    scan_rate = chunks * chunk / (time.perf_counter() - begin)
    carry = (model, state)
    begin = time.perf_counter()
    for i in range(chunks * chunk):
        carry, loss = step(carry, jax.random.key(10_000 + i))
    jax.block_until_ready(loss)
    loop_rate = chunks * chunk / (time.perf_counter() - begin)
    return {
        "steps_timed": chunks * chunk,
        "scan_steps_per_s": scan_rate,
        "loop_steps_per_s": loop_rate,
        "scan_over_loop": scan_rate / loop_rate,
        "compile_scan_s": compile_scan,
        "compile_step_s": compile_step,
    }


def _exact(repeats: int) -> dict[str, float]:
    model = jax.tree.map(
        lambda x: x.astype(jnp.float64), standard_init(jax.random.key(2), D, EXACT_LENGTH)
    )
    p, q = jnp.asarray(P), jnp.asarray(Q)
    loss = jax.jit(lambda m: exact_loss(m, p, q))
    value_and_grad = jax.jit(jax.value_and_grad(lambda m: exact_loss(m, p, q)))
    compile_loss = _timed(lambda: loss(model))
    compile_grad = _timed(lambda: value_and_grad(model))
    loss_s = min(_timed(lambda: loss(model)) for _ in range(repeats))
    grad_s = min(_timed(lambda: value_and_grad(model)) for _ in range(repeats))
    return {
        "sequences": 2**EXACT_LENGTH,
        "loss_ms": 1e3 * loss_s,
        "loss_and_grad_ms": 1e3 * grad_s,
        "compile_loss_s": compile_loss,
        "compile_loss_and_grad_s": compile_grad,
    }


def run(args: argparse.Namespace) -> int:
    from gradflow import GradflowError

    for name in ("steps", "chunk", "repeats"):
        if getattr(args, name) < 1:
            raise GradflowError(f"--{name} {getattr(args, name)} must be ≥ 1")
    train = _training(args.steps, args.chunk)
    exact = _exact(args.repeats)
    record = {
        "settings": {
            "d": D,
            "N": LENGTH,
            "batch": BATCH,
            "dtype": "float32",
            "exact_N": EXACT_LENGTH,
        },
        "training": train,
        "exact": exact,
        "devices": [str(d) for d in jax.devices()],
    }
    if args.json:
        print_json(record)
        return 0
    print(
        f"full Markov transformer, d = {D}, N = {LENGTH}, batch {BATCH}, float32, AdamW, p = {P}, q = {Q}"
    )
    print(
        format_table(
            ["training", "steps/s", "compile (s)"],
            [
                [
                    f"lax.scan chunks of {args.chunk}",
                    f"{train['scan_steps_per_s']:.1f}",
                    f"{train['compile_scan_s']:.1f}",
                ],
                [
                    "one jitted step per Python call (baseline)",
                    f"{train['loop_steps_per_s']:.1f}",
                    f"{train['compile_step_s']:.1f}",
                ],
            ],
        )
    )
    print(f"  ratio scan / loop: {train['scan_over_loop']:.2f}")
    print(
        f"\nexact population loss, N = {EXACT_LENGTH} ({exact['sequences']:,} sequences), float64, best of {args.repeats}:"
    )
    print(
        f"  loss            {exact['loss_ms']:.2f} ms   (compile {exact['compile_loss_s']:.1f} s)"
    )
    print(
        f"  loss + gradient {exact['loss_and_grad_ms']:.2f} ms   (compile {exact['compile_loss_and_grad_s']:.1f} s)"
    )
    return 0
