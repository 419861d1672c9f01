"""Training the ``k``-state single-layer transformer, several seeds at once, and the rank of what it
learned.

The optimizer, schedule, batches and evaluation of :func:`gradflow.systems.markov.training.train`
(AdamW(0.9, 0.95), cosine one-cycle, fresh batches every step, the test loss with the next symbol
integrated out on a fixed evaluation set) on the chain of
:func:`gradflow.systems.markov.states.switching_kernel`.  At the end, the singular values of every
weight matrix and its numerical rank: the number of singular values above
:data:`RANK_RTOL` times the largest.  The claim it tests (Makkuva et al., "Local to Global",
NeurIPS 2024, the authors' discussion of the reviews): with ``|S| = 5`` states the trained
weights have rank ``|S| − 1`` and the loss reaches the entropy rate, not the unigram plateau.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax

from gradflow import GradflowError, format_table, progress_bar

from .config import TrainConfig
from .states import (
    entropy_rate,
    one_state_entropy,
    sample_states,
    stationary,
    switching_kernel,
    unigram_entropy,
)
from .states_embedding import states_canonical_init
from .states_transformer import (
    StatesTransformer,
    states_conditional_loss,
    states_logits,
    states_sample_loss,
    states_standard_init,
)
from .training import draw_reference_losses, optimizer

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = [
    "MATRICES",
    "RANK_RTOL",
    "StatesTrainResult",
    "init_name",
    "numerical_rank",
    "top_energy",
    "train_states",
]

MATRICES = ("E", "W_Q", "W_K", "W_V", "W_O", "W_1", "W_2")
"""The weight matrices whose singular values are reported."""
RANK_RTOL = 0.1
"""Relative tolerance of :func:`numerical_rank`: singular values below a tenth of the largest
count as zero.  The standard init's own spectrum (N(0, 0.02²) entries, ``d = 8``) spreads its
singular values over about a decade, so a matrix that learned ``r`` directions shows ``r``
values far above that floor; the reported values let a reader apply another tolerance."""


def numerical_rank(singular_values: np.ndarray, rtol: float = RANK_RTOL) -> np.ndarray:
    """Number of singular values above ``rtol`` times the largest, along the last axis."""
    s = np.asarray(singular_values)
    return np.sum(s > rtol * s[..., :1], axis=-1)


def top_energy(singular_values: np.ndarray, r: int) -> np.ndarray:
    """``Σ_{i≤r} σ_i² / Σ_i σ_i²`` along the last axis (descending ``σ``): the share of the squared
    Frobenius norm in the top ``r`` directions, 1 for a matrix of rank ``≤ r`` (the binary
    model's rank-one energy at ``r = 1``); NaN for a zero matrix (the canonical init's
    ``W_O``), whose share is undefined."""
    s2 = np.asarray(singular_values) ** 2
    total = s2.sum(axis=-1)
    return np.divide(
        s2[..., :r].sum(axis=-1), total, out=np.full(total.shape, np.nan), where=total > 0
    )


@dataclass(frozen=True)
class StatesTrainResult:
    """What a ``k``-state run recorded.

    Attributes:
        config: the run's settings (``config.states`` = ``k``).
        train_loss: minibatch loss at every step, ``(seeds, steps)``, nats.
        eval_steps: steps of the evaluations (0 = the init), ``(m,)``.
        test_loss, test_se: estimated population loss and its standard error, ``(seeds, m)``.
        singular_values: per matrix of :data:`MATRICES`, ``(seeds, 2, r)``: at the init and at
            the end, descending.
        predictions: the trained model's mean predicted law of the next state after each
            state, over the positions of the evaluation set, ``(seeds, k, k)`` (row ``i``: after
            state ``i``; the kernel's row at the entropy rate, ``π`` on the unigram plateau).
        references: ``unigram_loss`` (``H(π)``), ``entropy_rate`` and ``one_state_loss``
            (:func:`~gradflow.systems.markov.states.one_state_entropy`: one state told from
            the lumped rest), nats.
    """

    config: TrainConfig
    train_loss: np.ndarray
    eval_steps: np.ndarray
    test_loss: np.ndarray
    test_se: np.ndarray
    singular_values: dict[str, np.ndarray]
    predictions: np.ndarray
    references: dict[str, float] = field(default_factory=dict)

    def ranks(self) -> dict[str, np.ndarray]:
        """Numerical rank of each matrix at the end, per seed (:func:`numerical_rank`)."""
        return {name: numerical_rank(s[:, -1]) for name, s in self.singular_values.items()}

    def energies(self) -> dict[str, np.ndarray]:
        """Per matrix, :func:`top_energy` of its top ``k − 1`` directions at the init and the
        end, shape ``(seeds, 2)``."""
        return {n: top_energy(s, self.config.states - 1) for n, s in self.singular_values.items()}

    def gaps(self) -> np.ndarray:
        """Final test loss minus the entropy rate, per seed, nats."""
        return self.test_loss[:, -1] - self.references["entropy_rate"]

    def summary(self) -> dict[str, Any]:
        """Final test losses, their gaps to the entropy rate and to ``H(π)``, the ranks at
        :data:`RANK_RTOL` and the final singular values (seed by seed), the references."""
        return {
            "steps_done": int(self.train_loss.shape[1]),
            "states": self.config.states,
            "final_test_loss": self.test_loss[:, -1],
            "final_test_se": self.test_se[:, -1],
            "gap_to_entropy_rate": self.gaps(),
            "gap_to_unigram": self.test_loss[:, -1] - self.references["unigram_loss"],
            "rank_rtol": RANK_RTOL,
            "ranks": self.ranks(),
            "top_energy_init": {n: e[:, 0] for n, e in self.energies().items()},
            "top_energy": {n: e[:, -1] for n, e in self.energies().items()},
            "final_singular_values": {n: s[:, -1] for n, s in self.singular_values.items()},
            "prediction_after_state": self.predictions,
            **self.references,
        }

    def metadata(self) -> dict[str, Any]:
        """``{"config": the settings, **summary()}``."""
        return {"config": vars(self.config), **self.summary()}

    def arrays(self) -> dict[str, np.ndarray]:
        """Loss curves, test losses, singular values at the init and the end, the final
        predictions after each state (for NPZ)."""
        out = {
            "train_loss": self.train_loss,
            "eval_steps": self.eval_steps,
            "test_loss": self.test_loss,
            "test_se": self.test_se,
            "prediction_after_state": self.predictions,
        }
        out.update({f"singular_values_{n}": s for n, s in self.singular_values.items()})
        return out

    def text(self) -> str:
        """One row per seed: final test loss, its gap to the entropy rate, and each matrix's rank;
        then each matrix's energy in its top ``k − 1`` directions, init → end."""
        c, ref, ranks, energies = self.config, self.references, self.ranks(), self.energies()
        rows = [
            [
                c.seed0 + i,
                f"{self.test_loss[i, -1]:.5f} ± {self.test_se[i, -1]:.5f}",
                f"{self.gaps()[i]:+.5f}",
                *(int(ranks[n][i]) for n in MATRICES),
            ]
            for i in range(c.seeds)
        ]
        return "\n".join(
            [
                f"trained {c.seeds} seed(s) on a {c.states}-state chain (p = {c.p:g}, q = {c.q:g}), "
                f"{init_name(c)}: {self.train_loss.shape[1]} steps, N = {c.length}, d = {c.d}, "
                f"batch {c.batch}, {c.attention} attention",
                format_table(
                    [
                        "seed",
                        "test loss (nats) ± s.e.",
                        "− entropy rate",
                        *(f"rank {n}" for n in MATRICES),
                    ],
                    rows,
                ),
                f"  ranks: singular values above {RANK_RTOL:g} × the largest (all values in the JSON)",
                f"  energy of the top k − 1 = {c.states - 1} singular values, init → end "
                "(min–max over seeds):",
                *(f"    {n:<4} {_span(e[:, 0])} → {_span(e[:, -1])}" for n, e in energies.items()),
                f"  unigram loss H(π)       = {ref['unigram_loss']:.6f} nats",
                f"  one state from the rest = {ref['one_state_loss']:.6f} nats "
                "(one state told from the others, lumped)",
                f"  bigram (entropy rate)   = {ref['entropy_rate']:.6f} nats",
            ]
        )

    def figure(self) -> Figure:
        """(a) each seed's test loss against the step with ``H(π)`` and the entropy rate;
        (b) the final singular values of each matrix relative to its largest (one marker per
        seed), log scale, with the rank tolerance."""
        from matplotlib.figure import Figure

        c = self.config
        fig = Figure(figsize=(10.0, 4.2), layout="constrained")
        loss_ax, sv_ax = fig.subplots(1, 2)
        for i in range(c.seeds):
            loss_ax.errorbar(
                self.eval_steps,
                self.test_loss[i],
                yerr=self.test_se[i],
                color=f"C{i % 10}",
                marker="o",
                ms=2.5,
                lw=1.2,
                label=f"seed {c.seed0 + i}: test loss ± s.e.",
            )
        draw_reference_losses(loss_ax, self.references)
        loss_ax.axhline(
            self.references["one_state_loss"],
            color="#999999",
            ls="-.",
            lw=1.0,
            label=f"one state from the rest = {self.references['one_state_loss']:.4f}",
        )
        loss_ax.set_xlabel("step")
        loss_ax.set_ylabel("loss (nats)")
        loss_ax.legend(fontsize=7)
        loss_ax.set_title("(a) loss", fontsize=9)
        for j, name in enumerate(MATRICES):
            s = self.singular_values[name][:, -1]
            rel = s / s[:, :1]
            for i in range(c.seeds):
                x = j + 0.12 * (i - (c.seeds - 1) / 2) + np.zeros(rel.shape[1])
                sv_ax.plot(x, rel[i], "o", ms=3.5, color=f"C{i % 10}", alpha=0.8)
        sv_ax.axhline(
            RANK_RTOL, color="black", ls="--", lw=1.0, label=f"rank tolerance {RANK_RTOL:g}"
        )
        sv_ax.set_yscale("log")
        sv_ax.set_xticks(range(len(MATRICES)), MATRICES)
        sv_ax.set_ylabel("σ_i / σ_1")
        sv_ax.legend(fontsize=7)
        sv_ax.set_title("(b) singular values at the end (one colour per seed)", fontsize=9)
        fig.suptitle(
            f"single-layer transformer on a {c.states}-state chain, p = {c.p:g}, q = {c.q:g}, "
            f"{init_name(c)}: {self.train_loss.shape[1]} steps\nN = {c.length}, d = {c.d}, "
            f"batch {c.batch}, {c.attention} attention, AdamW, lr {c.lr:g}",
            fontsize=9.5,
        )
        return fig


def _span(energies: np.ndarray) -> str:
    """``min–max`` of energies over the seeds; ``zero matrix`` where every one is undefined."""
    if np.isnan(energies).all():
        return "zero matrix"
    return f"{np.nanmin(energies):.3f}–{np.nanmax(energies):.3f}"


def _singular_values(models: StatesTransformer) -> dict[str, np.ndarray]:
    """Descending singular values of each matrix of :data:`MATRICES`, per seed."""
    return {
        name: np.asarray(
            jax.vmap(lambda m: jnp.linalg.svd(m, compute_uv=False))(getattr(models, name))
        )
        for name in MATRICES
    }


@eqx.filter_jit
def _chunk(models, states, keys, chain, shape, lr, optim, count):  # noqa: ANN001, ANN202
    """``count`` AdamW steps of every seed on fresh batches of ``shape = (batch, N + 1)``."""
    adamw = optimizer(optim[0], lr, optim[1])

    def one_step(carry, key):  # noqa: ANN001, ANN202
        model, state = carry
        batch = sample_states(key, chain[0], chain[1], *shape)
        loss, grads = jax.value_and_grad(states_sample_loss)(model, batch)
        updates, state = adamw.update(grads, state, model)
        return (optax.apply_updates(model, updates), state), loss

    def seed_chunk(model, state, key):  # noqa: ANN001, ANN202
        (model, state), losses = jax.lax.scan(
            one_step, (model, state), jax.random.split(key, count)
        )
        return model, state, losses

    return jax.vmap(seed_chunk)(models, states, keys)


@eqx.filter_jit
def _evaluate(models: StatesTransformer, inputs: jax.Array, kernel: jax.Array) -> tuple[Any, Any]:
    def one(model: StatesTransformer) -> tuple[Any, Any]:
        per_sequence = states_conditional_loss(model, inputs, kernel)
        return jnp.mean(per_sequence), jnp.std(per_sequence) / jnp.sqrt(per_sequence.shape[0])

    return jax.vmap(one)(models)


def _initial_models(
    config: TrainConfig, kernel: np.ndarray, init_keys: jax.Array
) -> StatesTransformer:
    """The float32 initial weights, stacked over the seeds: the standard init drawn per seed, or
    the rank-``(k − 1)`` canonical init at ``config.theta0``, the same for every seed (the
    seeds then differ in their batches only, as the binary model's canonical init)."""
    if config.init == "standard":
        return eqx.filter_vmap(
            lambda k: states_standard_init(
                k, config.states, config.d, config.length, attention=config.attention
            )
        )(init_keys)
    one = states_canonical_init(
        config.states,
        config.d,
        config.length,
        config.theta0,
        kernel,
        attention=config.attention,
    )
    return jax.tree.map(lambda x: jnp.broadcast_to(x, (config.seeds, *x.shape)), one)


def init_name(config: TrainConfig) -> str:
    """The init in words: ``standard init`` or ``rank-(k − 1) init θ0 = (e, w)``."""
    if config.init == "standard":
        return "standard init"
    e, w = config.theta0
    return f"rank-{config.states - 1} init θ0 = ({e:g}, {w:g})"


@eqx.filter_jit
def _predictions(models: StatesTransformer, inputs: jax.Array) -> jax.Array:
    """Per seed, the mean softmax of the logits after each state over ``inputs``, ``(k, k)``."""

    def one(model: StatesTransformer) -> jax.Array:
        probabilities = jax.nn.softmax(states_logits(model, inputs), axis=-1)
        current = jax.nn.one_hot(inputs, model.states, dtype=probabilities.dtype)
        sums = jnp.einsum("bni,bnj->ij", current, probabilities)
        return sums / jnp.maximum(current.sum(axis=(0, 1)), 1.0)[:, None]

    return jax.vmap(one)(models)


def train_states(config: TrainConfig, *, progress: bool | None = None) -> StatesTrainResult:
    """Train ``config.seeds`` ``k``-state models (``k = config.states``) from the standard init
    or (``config.init == "canonical"``) the rank-``(k − 1)`` init of
    :func:`~gradflow.systems.markov.states_embedding.states_canonical_init`.

    Args:
        config: the run; ``states ≥ 2`` (at 2 the ``k``-state model with both embedding rows
            learned, not the binary model of :func:`~gradflow.systems.markov.training.train`).
        progress: progress bar on stderr (default: after 1.5 s).

    Returns:
        The recorded curves and singular values.

    Raises:
        GradflowError: a non-finite training loss (named with its step).
    """
    kernel = switching_kernel(config.states, config.p, config.q)
    pi = stationary(kernel)
    chain = (jnp.asarray(kernel, jnp.float32), jnp.asarray(pi, jnp.float32))
    keys = jnp.stack([jax.random.key(config.seed0 + i) for i in range(config.seeds)])
    pairs = jax.vmap(lambda k: jax.random.split(k, 2))(keys)
    init_keys, data_keys = pairs[:, 0], pairs[:, 1]
    models = _initial_models(config, kernel, init_keys)
    states = jax.vmap(optimizer(config.steps, 1.0, config.weight_decay).init)(models)
    inputs = sample_states(
        jax.random.key(2**31 - 1 - config.seed0), *chain, config.eval_batch, config.length
    )
    shape, lr = (config.batch, config.length + 1), jnp.asarray(config.lr, jnp.float32)
    optim = (config.steps, config.weight_decay)
    first_values = _singular_values(models)
    records, eval_steps, losses, done = [_evaluate(models, inputs, chain[0])], [0], [], 0
    with progress_bar(
        config.steps, "step", enabled=progress, desc=f"train k = {config.states}"
    ) as bar:
        while done < config.steps:
            count = min(config.eval_every, config.steps - done)
            pairs = jax.vmap(lambda k: jax.random.split(k, 2))(data_keys)
            data_keys, sub = pairs[:, 0], pairs[:, 1]
            models, states, chunk_losses = _chunk(
                models, states, sub, chain, shape, lr, optim, count
            )
            chunk_losses = np.asarray(chunk_losses)
            if not np.isfinite(chunk_losses).all():
                step = done + int(np.argmax((~np.isfinite(chunk_losses)).any(axis=0))) + 1
                raise GradflowError(f"the training loss is not finite at step {step}")
            losses.append(chunk_losses)
            done += count
            records.append(_evaluate(models, inputs, chain[0]))
            eval_steps.append(done)
            bar.update(count)
            bar.set_postfix(loss=f"{float(chunk_losses[:, -1].mean()):.4f}")
    last_values = _singular_values(models)
    return StatesTrainResult(
        config=config,
        train_loss=np.concatenate(losses, axis=1),
        eval_steps=np.asarray(eval_steps),
        test_loss=np.stack([np.asarray(r[0]) for r in records], axis=1),
        test_se=np.stack([np.asarray(r[1]) for r in records], axis=1),
        singular_values={n: np.stack([first_values[n], last_values[n]], axis=1) for n in MATRICES},
        predictions=np.asarray(_predictions(models, inputs)),
        references={
            "unigram_loss": unigram_entropy(kernel),
            "entropy_rate": entropy_rate(kernel),
            "one_state_loss": one_state_entropy(kernel)[0],
        },
    )
