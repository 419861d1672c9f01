"""The training step of the single-layer Markov transformer written in PyTorch, to time it.

Same model as :mod:`gradflow.systems.markov.transformer` (``u_n = x_n e + p_n``, one causal
softmax head with ``1/√d`` scores, residual ReLU FFN of width ``4d`` without biases, tied logit
``⟨e, z_n⟩ + b``, binary cross-entropy), same init (N(0, 0.02²), output projections
N(0, 0.02²/2)), same optimizer (AdamW, β = (0.9, 0.95), ε = 1e-8, decoupled weight decay, cosine
one-cycle schedule with 10 % warm-up), float32, eager (``scaled_dot_product_attention`` with
``is_causal``), a fresh batch every step from a vectorized sampler (:func:`sample_chains`).
PyTorch is optional: it is imported inside the functions, and :func:`torch_available` says
whether it can be.
"""

from __future__ import annotations

import math
import time
from typing import Any

from gradflow import GradflowError

from .data import check_length, check_switching

__all__ = ["sample_chains", "torch_available", "torch_steps_per_second"]

STD = 0.02
WARMUP_STEPS = 3
"""Untimed steps before the clock starts (allocator and thread-pool warm-up)."""


def torch_available() -> bool:
    """Whether ``import torch`` succeeds."""
    try:
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


def sample_chains(generator: Any, p: float, q: float, batch: int, length: int) -> Any:
    """``batch`` binary Markov chains of ``length`` symbols, first symbol from ``π``, no Python loop.

    Each step draws one uniform ``u_n``; the next symbol is ``u_n < P(1 | x_{n-1})``, so step ``n``
    is a map of ``{0, 1}``: constant where ``u_n < p`` and ``u_n < 1 - q`` agree, else the
    identity or the swap.  A symbol is the value of the last constant map before it, swapped
    once per swap since then (a running maximum and a running sum).  The same uniforms give the
    same chain as the step-by-step sampler.

    Args:
        generator: a ``torch.Generator``.
        p: switching probability ``P(1|0)``.
        q: switching probability ``P(0|1)``.

    Returns:
        ``int64`` tensor ``(batch, length)`` of 0/1.
    """
    import torch

    u = torch.rand(batch, length, generator=generator)
    first = u[:, :1] < p / (p + q)
    image_of_0 = torch.cat([first, u[:, 1:] < p], dim=1)
    image_of_1 = torch.cat([first, u[:, 1:] < 1 - q], dim=1)
    positions = torch.arange(length).expand(batch, length)
    last_constant = torch.cummax(torch.where(image_of_0 == image_of_1, positions, 0), dim=1).values
    swaps = torch.cumsum(image_of_0 & ~image_of_1, dim=1)
    parity = (swaps - swaps.gather(1, last_constant)) % 2
    return image_of_0.gather(1, last_constant).long() ^ parity


def _model(d: int, length: int, generator: Any) -> dict[str, Any]:
    """Parameters of the standard init, float32 leaf tensors."""
    import torch

    out_std = STD / math.sqrt(2)
    shapes = {
        "e": ((d,), STD),
        "positions": ((length, d), STD),
        "W_Q": ((d, d), STD),
        "W_K": ((d, d), STD),
        "W_V": ((d, d), STD),
        "W_O": ((d, d), out_std),
        "W_1": ((4 * d, d), STD),
        "W_2": ((d, 4 * d), out_std),
    }
    params = {
        name: (std * torch.randn(shape, generator=generator)).requires_grad_()
        for name, (shape, std) in shapes.items()
    }
    params["b"] = torch.zeros((), requires_grad=True)
    return params


def _loss(params: dict[str, Any], sequences: Any) -> Any:
    """Mean binary cross-entropy of the logits of ``sequences[:, :-1]`` against ``[:, 1:]``."""
    import torch
    import torch.nn.functional as F

    x, target = sequences[:, :-1], sequences[:, 1:]
    e = params["e"]
    u = x[..., None].to(e.dtype) * e + params["positions"][: x.shape[1]]
    q, k, v = (u @ params[w].T for w in ("W_Q", "W_K", "W_V"))
    att = F.scaled_dot_product_attention(q[:, None], k[:, None], v[:, None], is_causal=True)[:, 0]
    y = u + att @ params["W_O"].T
    z = y + torch.relu(y @ params["W_1"].T) @ params["W_2"].T
    return F.binary_cross_entropy_with_logits(z @ e + params["b"], target.to(e.dtype))


def torch_steps_per_second(
    length: int,
    steps: int,
    *,
    d: int = 8,
    batch: int = 16,
    p: float = 0.5,
    q: float = 0.8,
    lr: float = 2e-3,
    weight_decay: float = 1e-3,
    seed: int = 0,
    threads: int | None = None,
) -> float:
    """Training steps per second of the PyTorch step (module docstring), wall clock.

    :data:`WARMUP_STEPS` untimed steps, then ``steps`` timed ones, each sampling its batch, taking
    the gradient and stepping AdamW and its schedule (over ``WARMUP_STEPS + steps`` steps).

    Args:
        length: positions ``N`` (chains of ``N + 1`` symbols).
        steps: timed steps, at least 20 (the warm-up of the schedule must last one step).
        threads: PyTorch's intra-op threads during the run (default: its own setting, one per
            core).  On a machine shared with other jobs, OpenMP's spin-waiting can make the
            multi-threaded run many times slower: ``threads=1`` (or ``OMP_WAIT_POLICY=PASSIVE``
            set before PyTorch starts) avoids it.

    Raises:
        GradflowError: invalid settings.
        ImportError: PyTorch is not installed.
    """
    import torch

    check_length(length)
    check_switching(p, q)
    if isinstance(steps, bool) or int(steps) != steps or steps < 20:
        raise GradflowError(f"steps = {steps!r} must be an integer ≥ 20")
    if threads is not None and (
        isinstance(threads, bool) or int(threads) != threads or threads < 1
    ):
        raise GradflowError(f"threads = {threads!r} must be an integer ≥ 1")
    generator = torch.Generator().manual_seed(seed)
    params = _model(d, length, generator)
    optimizer = torch.optim.AdamW(
        params.values(), lr=lr, betas=(0.9, 0.95), eps=1e-8, weight_decay=weight_decay
    )
    schedule = torch.optim.lr_scheduler.OneCycleLR(
        optimizer,
        max_lr=lr,
        total_steps=WARMUP_STEPS + steps,
        pct_start=0.1,
        anneal_strategy="cos",
        cycle_momentum=False,
        div_factor=25.0,
        final_div_factor=1e4,
    )

    def step() -> None:
        loss = _loss(params, sample_chains(generator, p, q, batch, length + 1))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        schedule.step()

    default_threads = torch.get_num_threads()
    torch.set_num_threads(default_threads if threads is None else int(threads))
    try:
        for _ in range(WARMUP_STEPS):
            step()
        begin = time.perf_counter()
        for _ in range(steps):
            step()
        return steps / (time.perf_counter() - begin)
    finally:
        torch.set_num_threads(default_threads)
