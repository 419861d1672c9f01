"""Training the full single-layer transformer on a Markov chain, several seeds at once.

AdamW (β = (0.9, 0.95), weight decay 1e-3) with a cosine one-cycle schedule (warm-up over the
first 10 % of the steps), as in the paper's experiments (Makkuva et al., "Local to Global",
NeurIPS 2024, Appendix); batches are sampled afresh at every step with ``jax.random``.  The seeds
train in parallel (``jax.vmap``); steps run in compiled chunks of ``eval_every`` (``lax.scan``).

After every chunk: the test loss of each seed, estimated without sampling the targets
(:func:`conditional_loss` on a fixed evaluation set, unbiased for the population loss, with its
standard error over the sequences), and the weights projected onto the canonical coordinates
``(e, w, a, b)`` with their rank-one diagnostics.  A non-finite training loss stops the run: the
result keeps the finite chunks before it and names the step.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax

from gradflow import GradflowError, format_table, progress_bar

from .chain import entropy_rate, unigram_loss
from .chain import p as p_sym
from .chain import q as q_sym
from .config import INITS, TrainConfig, switching_field
from .data import sample_chains
from .embedding import canonical_coordinates, paper_init, rank_one_diagnostics
from .transformer import MarkovTransformer, conditional_loss, sample_loss, standard_init

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = [
    "INITS",
    "TrainConfig",
    "TrainResult",
    "initial_model",
    "optimizer",
    "draw_reference_losses",
    "references",
    "switching_field",
    "train",
    "training_rates",
]


@dataclass(frozen=True)
class TrainResult:
    """What a run recorded.

    Attributes:
        config: the run's settings.
        train_loss: minibatch loss at every step, shape ``(seeds, steps_done)``, nats.
        eval_steps: steps at which the evaluations were made (0 = the init), shape ``(m,)``.
        test_loss: estimated population loss, shape ``(seeds, m)``, nats.
        test_se: its standard error, shape ``(seeds, m)``.
        coords: projected ``(e, w, a, b)``, shape ``(seeds, m, 4)``.
        diagnostics: rank-one diagnostics by name, each ``(seeds, m)``.
        nan_step: the first step (1-based) whose loss was not finite, or ``None``.
        references: ``H(π)`` and the entropy rate (nats).
    """

    config: TrainConfig
    train_loss: np.ndarray
    eval_steps: np.ndarray
    test_loss: np.ndarray
    test_se: np.ndarray
    coords: np.ndarray
    diagnostics: dict[str, np.ndarray]
    nan_step: int | None
    references: dict[str, float] = field(default_factory=dict)

    @property
    def steps_done(self) -> int:
        """Steps whose losses are recorded (all of them unless a NaN stopped the run)."""
        return int(self.train_loss.shape[1])

    def summary(self) -> dict[str, Any]:
        """Steps done, the NaN step, final test loss per seed (nats) with its standard error,
        final coordinates, the references."""
        return {
            "steps_done": self.steps_done,
            "nan_step": self.nan_step,
            "final_test_loss": self.test_loss[:, -1],
            "final_test_se": self.test_se[:, -1],
            "final_coordinates": self.coords[:, -1],
            **self.references,
        }

    def metadata(self) -> dict[str, Any]:
        """``{"config": the settings, **summary()}``."""
        return {"config": vars(self.config), **self.summary()}

    def arrays(self) -> dict[str, np.ndarray]:
        """Loss curves, test losses with standard errors, coordinates, diagnostics (for NPZ)."""
        out = {
            "train_loss": self.train_loss,
            "eval_steps": self.eval_steps,
            "test_loss": self.test_loss,
            "test_se": self.test_se,
            "coords": self.coords,
            "coordinate_names": np.array(["e", "w", "a", "b"]),
        }
        out.update({f"diagnostic_{k}": v for k, v in self.diagnostics.items()})
        return out

    def figure(self) -> Figure:
        """The run drawn: (a) the loss against the step — each seed's minibatch training loss
        thin, its test loss with ± one standard error, ``H(π)`` and the entropy rate (nats);
        (b) each seed's trajectory projected onto the canonical ``(w, e)`` plane, from its
        start (dot) to its last evaluation (cross)."""
        from matplotlib.figure import Figure

        c, ref = self.config, self.references
        fig = Figure(figsize=(10.0, 4.2), layout="constrained")
        loss_ax, path_ax = fig.subplots(1, 2, width_ratios=(1.4, 1.0))
        colors = [f"C{i % 10}" for i in range(c.seeds)]
        steps = np.arange(1, self.steps_done + 1)
        for i, color in enumerate(colors):
            seed = f"seed {c.seed0 + i}"
            loss_ax.plot(steps, self.train_loss[i], color=color, lw=0.5, alpha=0.35)
            loss_ax.errorbar(
                self.eval_steps,
                self.test_loss[i],
                yerr=self.test_se[i],
                color=color,
                lw=1.4,
                marker="o",
                ms=2.5,
                label=f"{seed}: test loss ± s.e. (thin: minibatch loss)",
            )
            w, e = self.coords[i, :, 1], self.coords[i, :, 0]
            path_ax.plot(w, e, color=color, lw=1.2, label=seed)
            path_ax.plot(w[0], e[0], "o", color=color, ms=4)
            path_ax.plot(w[-1], e[-1], "X", color=color, ms=7)
        draw_reference_losses(loss_ax, ref)
        loss_ax.set_xlabel("step")
        loss_ax.set_ylabel("loss (nats)")
        loss_ax.legend(fontsize=7, loc="best")
        loss_ax.set_title("(a) loss", fontsize=9)
        path_ax.set_xlabel("$w$")
        path_ax.set_ylabel("$e$", rotation=0, ha="right")
        path_ax.set_title("(b) projected canonical trajectory (• start, × end)", fontsize=9)
        path_ax.legend(fontsize=7, loc="best")
        stopped = (
            "" if self.nan_step is None else f", stopped at step {self.nan_step} (loss not finite)"
        )
        fig.suptitle(
            f"single-layer transformer on a Markov chain, p = {c.p:g}, q = {c.q:g}, init {c.init}: "
            f"{self.steps_done} steps{stopped}\nN = {c.length}, d = {c.d}, batch {c.batch}, "
            f"{c.attention} attention, AdamW, lr {c.lr:g}",
            fontsize=9.5,
        )
        return fig

    def text(self) -> str:
        """The settings, one table row per seed (final test loss, coordinates), the references."""
        c, ref = self.config, self.references
        rows = [
            [
                c.seed0 + i,
                f"{self.test_loss[i, -1]:.6f} ± {self.test_se[i, -1]:.6f}",
                *(f"{v:.4g}" for v in self.coords[i, -1]),
            ]
            for i in range(c.seeds)
        ]
        return "\n".join(
            [
                f"trained {c.seeds} seed(s), init {c.init}, p = {c.p:g}, q = {c.q:g}: {self.steps_done} steps, "
                f"N = {c.length}, d = {c.d}, batch {c.batch}, {c.attention} attention",
                format_table(["seed", "test loss (nats) ± s.e.", "e", "w", "a", "b"], rows),
                f"  unigram loss H(π)      = {ref['unigram_loss']:.6f} nats",
                f"  bigram (entropy rate)  = {ref['entropy_rate']:.6f} nats",
            ]
        )


def references(p: float, q: float) -> dict[str, float]:
    """``H(π)`` (unigram loss) and the entropy rate (bigram loss) in nats."""
    subs = {p_sym: p, q_sym: q}
    return {
        "unigram_loss": float(unigram_loss.subs(subs)),
        "entropy_rate": float(entropy_rate.subs(subs)),
    }


def draw_reference_losses(ax: Axes, refs: dict[str, float]) -> None:
    """The two reference losses of :func:`references` as labelled horizontal lines on ``ax``:
    ``H(π)`` (the unigram plateau, dashed) and the entropy rate (the global minimum, dotted)."""
    ax.axhline(
        refs["unigram_loss"],
        color="#555555",
        ls="--",
        lw=1.2,
        label=f"unigram loss H(π) = {refs['unigram_loss']:.4f}",
    )
    ax.axhline(
        refs["entropy_rate"],
        color="black",
        ls=":",
        lw=1.4,
        label=f"bigram loss (entropy rate) = {refs['entropy_rate']:.4f}",
    )


def initial_model(config: TrainConfig, key: jax.Array) -> MarkovTransformer:
    """The float32 initial weights of one seed."""
    if config.init == "standard":
        return standard_init(key, config.d, config.length, attention=config.attention)
    if config.init == "paper":
        return paper_init(key, config.d, config.length, attention=config.attention)
    from .reduced import canonical_model

    model = canonical_model()
    full = model.full.embed(
        jnp.asarray(config.theta0),
        model.bind(p=config.p, q=config.q).h,
        d=config.d,
        length=config.length,
        attention=config.attention,
    )
    return jax.tree.map(lambda x: x.astype(jnp.float32), full)


def optimizer(
    steps: int, lr: float | jax.Array, weight_decay: float
) -> optax.GradientTransformation:
    """AdamW(0.9, 0.95) with a cosine one-cycle schedule peaking at ``lr`` after 10 % of the steps.

    The schedule's shape (peak 1) sits inside AdamW and the peak ``lr`` is a final scaling, so
    ``lr`` may be a traced array: runs that differ only in ``lr`` share one compilation.
    """
    shape = optax.cosine_onecycle_schedule(transition_steps=steps, peak_value=1.0, pct_start=0.1)
    return optax.chain(
        optax.adamw(shape, b1=0.9, b2=0.95, weight_decay=weight_decay), optax.scale(lr)
    )


@eqx.filter_jit
def _initial_states(models: MarkovTransformer, optim: tuple[int, float]) -> Any:
    return jax.vmap(optimizer(optim[0], 1.0, optim[1]).init)(models)


@eqx.filter_jit
def _evaluate(models: MarkovTransformer, inputs: jax.Array, pq: jax.Array) -> tuple[Any, ...]:
    """Test loss, its standard error, coordinates and diagnostics of each seed."""

    def one(model: MarkovTransformer) -> tuple[Any, ...]:
        per_sequence = conditional_loss(model, inputs, pq[0], pq[1])
        se = jnp.std(per_sequence) / jnp.sqrt(per_sequence.shape[0])
        return jnp.mean(per_sequence), se, canonical_coordinates(model), rank_one_diagnostics(model)

    return jax.vmap(one)(models)


@eqx.filter_jit
def _chunk(
    models: MarkovTransformer,
    states: Any,
    keys: jax.Array,
    pq: jax.Array,
    shape: tuple[int, int],
    lr: jax.Array,
    optim: tuple[int, float],
    count: int,
) -> tuple[MarkovTransformer, Any, jax.Array]:
    """``count`` AdamW steps of every seed on fresh batches of ``shape = (batch, N + 1)``."""
    adamw = optimizer(optim[0], lr, optim[1])

    def one_step(carry: tuple[Any, Any], key: jax.Array) -> tuple[tuple[Any, Any], jax.Array]:
        model, state = carry
        batch = sample_chains(key, pq[0], pq[1], *shape)
        loss, grads = jax.value_and_grad(sample_loss)(model, batch)
        updates, state = adamw.update(grads, state, model)
        return (optax.apply_updates(model, updates), state), loss

    def seed_chunk(
        model: MarkovTransformer, state: Any, key: jax.Array
    ) -> tuple[Any, Any, jax.Array]:
        (model, state), losses = jax.lax.scan(
            one_step, (model, state), jax.random.split(key, count)
        )
        return model, state, losses

    if keys.shape[0] > 1:
        return jax.vmap(seed_chunk)(models, states, keys)
    # one seed: the same step without the batch axis (vmap's layout copies cost 10-20 % on CPU)
    first = jax.tree.map(lambda a: a[0], (models, states, keys))
    return jax.tree.map(lambda a: a[None], seed_chunk(*first))


class _StepArguments(NamedTuple):
    """The arguments of :func:`_chunk` between the keys and the count."""

    pq: jax.Array
    shape: tuple[int, int]
    lr: jax.Array
    optim: tuple[int, float]


def _setup(
    config: TrainConfig, initial: MarkovTransformer | None
) -> tuple[_StepArguments, MarkovTransformer, Any, jax.Array]:
    """``(step arguments, models, optimizer states, data keys)`` of a run."""
    step = _StepArguments(
        pq=jnp.asarray([config.p, config.q], jnp.float32),
        shape=(config.batch, config.length + 1),
        lr=jnp.asarray(config.lr, jnp.float32),
        optim=(config.steps, config.weight_decay),
    )
    seed_keys = jnp.stack([jax.random.key(config.seed0 + i) for i in range(config.seeds)])
    init_keys, data_keys = _split(seed_keys)
    models = (
        initial
        if initial is not None
        else eqx.filter_jit(jax.vmap(lambda k: initial_model(config, k)))(init_keys)
    )
    return step, models, _initial_states(models, step.optim), data_keys


def train(
    config: TrainConfig, *, initial: MarkovTransformer | None = None, progress: bool | None = None
) -> TrainResult:
    """Train ``config.seeds`` models in parallel; see the module docstring.

    Args:
        config: the run.
        initial: stacked initial weights (leading axis = seeds) replacing ``config.init``.
        progress: progress bar on stderr with the current mean loss (default: after 1.5 s).

    Returns:
        The recorded curves; ``nan_step`` set if a non-finite loss stopped the run.

    Raises:
        GradflowError: ``config.states > 2`` (that model trains with
            :func:`gradflow.systems.markov.states_training.train_states`).
    """
    if config.states > 2:
        raise GradflowError(
            f"states = {config.states}: train() is the binary model; use "
            "gradflow.systems.markov.states_training.train_states"
        )
    step, models, states, data_keys = _setup(config, initial)
    eval_inputs = sample_chains(
        jax.random.key(2**31 - 1 - config.seed0),
        config.p,
        config.q,
        config.eval_batch,
        config.length,
    )
    records = [_evaluate(models, eval_inputs, step.pq)]
    eval_steps, losses, nan_step, done = [0], [], None, 0
    with progress_bar(config.steps, "step", enabled=progress, desc=f"train {config.init}") as bar:
        while done < config.steps:
            count = min(config.eval_every, config.steps - done)
            data_keys, sub = _split(data_keys)
            new_models, new_states, chunk_losses = _chunk(models, states, sub, *step, count)
            chunk_losses = np.asarray(chunk_losses)
            bad = ~np.isfinite(chunk_losses)
            if bad.any():
                first = int(np.argmax(bad.any(axis=0)))
                losses.append(chunk_losses[:, :first])
                nan_step = done + first + 1
                break
            models, states = new_models, new_states
            losses.append(chunk_losses)
            done += count
            records.append(_evaluate(models, eval_inputs, step.pq))
            eval_steps.append(done)
            bar.update(count)
            bar.set_postfix(loss=f"{float(chunk_losses[:, -1].mean()):.4f}")
    test, se, coords, diags = jax.tree.map(
        lambda *xs: np.stack([np.asarray(x) for x in xs], axis=1), *records
    )
    return TrainResult(
        config=config,
        train_loss=np.concatenate(losses, axis=1) if losses else np.zeros((config.seeds, 0)),
        eval_steps=np.asarray(eval_steps),
        test_loss=test,
        test_se=se,
        coords=coords,
        diagnostics=diags,
        nan_step=nan_step,
        references=references(config.p, config.q),
    )


def training_rates(
    lengths: tuple[int, ...],
    rounds: int,
    *,
    chunk: int = 25,
    d: int = 8,
    batch: int = 16,
    p: float = 0.5,
    q: float = 0.8,
    attention: Literal["softmax", "linear"] = "softmax",
    progress: bool | None = False,
) -> dict[int, list[float]]:
    """Training steps per second of :func:`train`'s compiled step at each length, wall clock, one
    seed: one rate per timed chunk, the lengths taken in turn.

    The step :func:`train` runs (fresh batch, loss and gradient, AdamW), ``chunk`` steps per
    compiled ``lax.scan``.  Every length's first chunk (compilation) runs before any timing; then
    each of the ``rounds`` times one chunk of every length, so that the chunks of one round share
    the machine's load and their ratio is the cost ratio of the lengths under the same
    conditions.  Standard init, float32, default ``lr`` and weight decay, a schedule of
    ``rounds × chunk`` steps.

    Args:
        lengths: positions ``N``.
        rounds: timed chunks per length.
        chunk: steps per compiled chunk.
        progress: a progress bar over the compilations and rounds on stderr (``None``: after
            1.5 s).

    Returns:
        ``{N: [steps/s of round 1, …]}``.

    Raises:
        GradflowError: ``rounds`` or ``chunk`` below 1, other settings as :class:`TrainConfig`.
    """
    for name, value in (("rounds", rounds), ("chunk", chunk)):
        if value < 1:
            raise GradflowError(f"{name} = {value} must be ≥ 1")
    runs = {}
    rates: dict[int, list[float]] = {n: [] for n in lengths}
    with progress_bar(len(lengths) + rounds, "stage", enabled=progress, desc="bench") as bar:
        for n in lengths:
            config = TrainConfig(
                p,
                q,
                steps=rounds * chunk,
                length=n,
                d=d,
                batch=batch,
                eval_every=chunk,
                attention=attention,
            )
            step, models, states, keys = _setup(config, None)
            keys, sub = _split(keys)
            models, states, losses = _chunk(models, states, sub, *step, chunk)
            jax.block_until_ready(losses)
            runs[n] = [step, models, states, keys]
            bar.update(1)
        for _ in range(rounds):
            for n, run in runs.items():
                step, models, states, keys = run
                begin = time.perf_counter()
                keys, sub = _split(keys)
                models, states, losses = _chunk(models, states, sub, *step, chunk)
                jax.block_until_ready(losses)
                rates[n].append(chunk / (time.perf_counter() - begin))
                run[1:] = models, states, keys
            bar.update(1)
    return rates


@jax.jit
def _split(keys: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Advance each seed's data key; return ``(next_keys, keys_for_this_chunk)``."""
    pairs = jax.vmap(lambda k: jax.random.split(k, 2))(keys)
    return pairs[:, 0], pairs[:, 1]
