"""Training runs on ICL-MC: the transformer, the minimal model and the reduced ``(a, b, v)`` flow.

Every run records, at evaluation steps, the test loss and the distance to each strategy
(:func:`gradflow.systems.induction_heads.strategies.metrics`) on a fixed evaluation batch drawn from the
Dirichlet prior (the task), whatever the training prior (or, with
``RunSpec.evaluate_on = "training"``, from the training prior), plus model-specific traces:

- minimal and reduced: ``theta`` = ``(a, b, v…)`` (for the minimal model the projection of
  ``W`` on ``{aI + b11ᵀ}``); for the minimal model ``off_family`` = ``‖W - proj W‖_F``; for the
  reduced model on a fixed sample ``field``, its ``G⁻¹∇L``, and ``grad_se``, the Monte-Carlo standard error of
  each component (spread over the ``batch`` independent sequences);
- transformer: ``lag_profile``, the layer-1 attention mass at each lag ``m = 0 … T-1``, averaged
  over evaluation sequences and positions ``i ≥ m``; ``layer_scores``, the previous-token score of
  layer 1 and the induction score of layer 2 (:mod:`.layers`).

Training batches are drawn afresh at every step inside the jitted step (``lax.scan`` over the
steps between evaluations).  The transformer trains in float32 with AdamW (the paper's optimizer,
lr 5e-4, betas (0.9, 0.95), weight decay 0.1); the minimal model with plain SGD (its gradient flow
is what the reduced model integrates); the reduced model by the engine (diffrax flow or gradient
descent) on one fixed sample, or by SGD on the minimal model's batches.  ``RunSpec.optimizer`` swaps the trainer
of the first two (:func:`optimizer_of`), ``init_scale``, ``a0`` and ``b0`` their start
(:func:`minimal_start`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax

from gradflow import PID, FlowOptions, GradflowError, GradientDescent, StopRule, flow, progress_bar
from gradflow.systems.induction_heads import minimal as mm
from gradflow.systems.induction_heads import transformer as tr

from .config import MODELS, RunSpec
from .data import Dirichlet, ICLBatch, Prior, sample
from .layers import layer_scores
from .reduction import metric_inverse
from .strategies import metrics

__all__ = [
    "MODELS",
    "History",
    "RunSpec",
    "evaluation_batch",
    "train",
    "train_minimal",
    "train_reduced",
    "train_transformer",
    "training_step",
    "minimal_setup",
    "minimal_start",
    "optimizer_of",
    "transformer_setup",
    "flow_reduced",
]


@dataclass(frozen=True)
class History:
    """What a run recorded at its evaluation steps (``n`` of them, step 0 included).

    Attributes:
        steps: ``(n,)`` optimizer steps (reduced: ``flow time / lr``).
        test_last, test_mean: ``(n,)`` test loss ``E KL(P_{x_t,·} ‖ p_θ)``, nats.
        distance_last, distance_mean: ``(n, 3)`` distances to uniform, unigram, bigram, nats.
        traces: model-specific arrays with leading axis ``n`` (module docstring).
    """

    steps: np.ndarray
    test_last: np.ndarray
    test_mean: np.ndarray
    distance_last: np.ndarray
    distance_mean: np.ndarray
    traces: dict[str, np.ndarray]

    def arrays(self, prefix: str = "") -> dict[str, np.ndarray]:
        """All arrays by name (with ``prefix``), for NPZ output."""
        out = {
            "steps": self.steps,
            "test_last": self.test_last,
            "test_mean": self.test_mean,
            "distance_last": self.distance_last,
            "distance_mean": self.distance_mean,
            **self.traces,
        }
        return {prefix + k: np.asarray(v) for k, v in out.items()}


EVAL_SEED = 20240214


def evaluation_batch(k: int, T: int, n: int, prior: Prior | None = None) -> ICLBatch:
    """The fixed evaluation batch: ``n`` sequences of ``prior`` (default Dirichlet, the task),
    seed :data:`EVAL_SEED`."""
    return sample(jax.random.key(EVAL_SEED), Dirichlet() if prior is None else prior, n, k, T)


def _evaluation(spec: RunSpec) -> ICLBatch:
    """The evaluation batch of ``spec``: the task's, or its training prior's
    (``evaluate_on``)."""
    prior = spec.prior if spec.evaluate_on == "training" else None
    return evaluation_batch(spec.k, spec.T, spec.eval_n, prior)


def _history(records: list[dict[str, Any]], steps: list[float], spec: RunSpec) -> History:
    """Stack the records; a run whose metrics stopped being finite is an error, not a phase.

    Raises:
        GradflowError: the run diverged (non-finite predictions), naming the step and ``lr``.
    """
    stacked = {key: np.stack([np.asarray(r[key]) for r in records]) for key in records[0]}
    m = stacked.pop("metrics")
    bad = ~np.all(np.isfinite(m), axis=1)
    if bad.any():
        raise GradflowError(
            f"the {spec.model} run diverged (non-finite predictions by step {steps[int(np.argmax(bad))]:g}); "
            f"lower --lr (now {spec.step_size:g})"
        )
    return History(
        steps=np.asarray(steps),
        test_last=m[:, 0],
        test_mean=m[:, 1],
        distance_last=m[:, 2:5],
        distance_mean=m[:, 5:8],
        traces=stacked,
    )


def _metric_vector(probs: jax.Array, batch: ICLBatch) -> jax.Array:
    out = metrics(probs.astype(jnp.float64), batch)
    return jnp.concatenate(
        [jnp.stack([out.test_last, out.test_mean]), out.distance_last, out.distance_mean]
    )


def training_step(
    loss: Callable[[Any, ICLBatch], jax.Array],
    optimizer: optax.GradientTransformation,
    draw: Callable[[jax.Array], ICLBatch],
) -> Callable[[tuple, None], tuple[tuple, None]]:
    """One optimizer step on a fresh batch, as a ``lax.scan`` body over ``(params, opt_state, key)``."""

    def step(state: tuple, _: None) -> tuple[tuple, None]:
        params, opt_state, key = state
        key, sub = jax.random.split(key)
        grads = eqx.filter_grad(loss)(params, draw(sub))
        updates, opt_state = optimizer.update(grads, opt_state, eqx.filter(params, eqx.is_array))
        return (eqx.apply_updates(params, updates), opt_state, key), None

    return step


def _optimize(
    loss: Callable[[Any, ICLBatch], jax.Array],
    params: Any,
    optimizer: optax.GradientTransformation,
    draw: Callable[[jax.Array], ICLBatch],
    key: jax.Array,
    spec: RunSpec,
    observe: Callable[[Any], dict[str, jax.Array]],
    progress: bool | None,
) -> History:
    """SGD-type training with fresh batches, evaluated every ``spec.eval_every`` steps."""
    step = training_step(loss, optimizer, draw)

    @eqx.filter_jit
    def advance(state, length):
        return jax.lax.scan(step, state, None, length=length)[0]

    observe_jit = eqx.filter_jit(observe)
    state = (params, optimizer.init(eqx.filter(params, eqx.is_array)), key)
    records, steps, done = [observe_jit(params)], [0], 0
    with progress_bar(
        spec.steps, "step", enabled=progress, desc=f"{spec.model} seed {spec.seed}"
    ) as bar:
        while done < spec.steps:
            length = min(spec.eval_every, spec.steps - done)
            state = advance(state, length)
            done += length
            records.append(observe_jit(state[0]))
            steps.append(done)
            bar.update(length)
    return _history(records, steps, spec)


def _draw(spec: RunSpec, dtype: Any) -> Callable[[jax.Array], ICLBatch]:
    def draw(key: jax.Array) -> ICLBatch:
        batch = sample(key, spec.prior, spec.batch, spec.k, spec.T)
        return ICLBatch(x=batch.x, P=batch.P.astype(dtype))

    return draw


def optimizer_of(spec: RunSpec) -> optax.GradientTransformation:
    """The trainer of ``spec`` (:data:`~gradflow.systems.induction_heads.config.OPTIMIZERS`) with step
    ``spec.step_size``: plain SGD, SGD with momentum 0.9, Adam or AdamW (betas (0.9, 0.95),
    AdamW's weight decay 0.1)."""
    lr = spec.step_size
    return {
        "sgd": lambda: optax.sgd(lr),
        "momentum": lambda: optax.sgd(lr, momentum=0.9),
        "adam": lambda: optax.adam(lr, b1=0.9, b2=0.95),
        "adamw": lambda: optax.adamw(lr, b1=0.9, b2=0.95, weight_decay=0.1),
    }[spec.trainer]()


def minimal_start(spec: RunSpec) -> mm.Minimal:
    """The minimal model's start: ``W = a0 I + b0 11ᵀ``, ``v`` as in
    :func:`~gradflow.systems.induction_heads.minimal.initial`, plus ``N(0, init_scale²)`` on every entry of
    ``W`` and ``v`` (drawn from the key ``fold_in(key(seed), 1)``, apart from the batches')."""
    start = mm.initial(spec.k, spec.T, spec.n_lags, spec.mixing)
    W = start.W + spec.a0 * jnp.eye(spec.k) + spec.b0 * jnp.ones((spec.k, spec.k))
    if not spec.init_scale:
        return mm.Minimal(W=W, v=start.v)
    k_W, k_v = jax.random.split(jax.random.fold_in(jax.random.key(spec.seed), 1))
    return mm.Minimal(
        W=W + spec.init_scale * jax.random.normal(k_W, W.shape),
        v=start.v + spec.init_scale * jax.random.normal(k_v, start.v.shape),
    )


def minimal_setup(
    spec: RunSpec,
) -> tuple[Callable, mm.Minimal, optax.GradientTransformation, Callable]:
    """``(loss, initial parameters, optimizer, draw)`` of the minimal model's training."""

    def loss(params: mm.Minimal, batch: ICLBatch) -> jax.Array:
        return mm.minimal_loss(params, batch, spec.mixing)

    return loss, minimal_start(spec), optimizer_of(spec), _draw(spec, jnp.float64)


def train_minimal(spec: RunSpec, progress: bool | None = None) -> History:
    """The minimal model trained by its optimizer (SGD, step ``lr``, by default) from
    :func:`minimal_start`, fresh batches each step."""
    evalb = _evaluation(spec)

    def observe(params: mm.Minimal) -> dict[str, jax.Array]:
        probs = jax.nn.softmax(mm.minimal_logits(params, evalb.x, spec.mixing))
        return {
            "metrics": _metric_vector(probs, evalb),
            "theta": mm.project(params),
            "off_family": mm.family_residual(params.W),
        }

    loss, params, trainer, draw = minimal_setup(spec)
    return _optimize(
        loss, params, trainer, draw, jax.random.key(spec.seed), spec, observe, progress
    )


def lag_profile(model: tr.ICLTransformer, x: jax.Array) -> jax.Array:
    """Layer-1 attention mass at each lag ``m``, averaged over sequences and positions ``i ≥ m``."""
    T = x.shape[1]

    def one(seq: jax.Array) -> jax.Array:
        h = jax.vmap(model.norms[0])(model.embed[seq])
        return model.layers[0].pattern(h)

    att = jax.vmap(one)(x).mean(0)
    lag = jnp.arange(T)[:, None] - jnp.arange(T)[None, :]
    mass = jnp.zeros(T).at[jnp.clip(lag, 0, T - 1)].add(jnp.where(lag >= 0, att, 0.0))
    return mass / (T - jnp.arange(T))


def _float32(model: Any) -> Any:
    return jax.tree.map(lambda a: a.astype(jnp.float32) if eqx.is_inexact_array(a) else a, model)


def transformer_setup(
    spec: RunSpec,
) -> tuple[Callable, tr.ICLTransformer, optax.GradientTransformation, Callable, jax.Array]:
    """``(loss, float32 model, optimizer, draw, data key)`` of the transformer's training; the
    weights drawn with standard deviation ``init_scale`` (default 0.02)."""
    k_init, k_data = jax.random.split(jax.random.key(spec.seed))
    std = 0.02 if spec.init_scale is None else spec.init_scale
    model = _float32(tr.init_transformer(k_init, spec.k, spec.T, spec.d, std=std))

    def loss(model: tr.ICLTransformer, batch: ICLBatch) -> jax.Array:
        return mm.cross_entropy(tr.transformer_logits(model, batch.x), batch)

    return loss, model, optimizer_of(spec), _draw(spec, jnp.float32), k_data


def train_transformer(spec: RunSpec, progress: bool | None = None) -> History:
    """The transformer in float32, trained by its optimizer (AdamW: lr, betas (0.9, 0.95),
    weight decay 0.1, by default)."""
    evalb = _evaluation(spec)
    loss, model, trainer, draw, key = transformer_setup(spec)

    def observe(model: tr.ICLTransformer) -> dict[str, jax.Array]:
        probs = jax.nn.softmax(tr.transformer_logits(model, evalb.x))
        return {
            "metrics": _metric_vector(probs, evalb),
            "lag_profile": lag_profile(model, evalb.x[:64]),
            "layer_scores": layer_scores(model, evalb.x[:64]),
        }

    return _optimize(loss, model, trainer, draw, key, spec, observe, progress)


def train_reduced(spec: RunSpec, progress: bool | None = None) -> History:
    """The reduced ``(a, b, v)`` dynamics trained by SGD on fresh batches (``solver = "sgd"``).

    Each step ``θ ← θ - lr (G⁻¹∇_{(a,b)} L, ∇_v L)`` on a fresh batch of ``spec.batch``
    sequences, drawn from the same key as the minimal model's batches (:func:`train_minimal`
    with the same spec sees the same sequences).  A sequence's reduced loss is invariant under
    relabelling the states, so each step is the image in ``(a, b, v)`` of the minimal model's
    SGD step on the batch with all its ``k!`` relabellings, on which the family
    ``{aI + b11ᵀ}`` is exactly invariant: the minimal model trained on the same batches differs
    from it only by the part of its gradient off the family.  Starts at the projection of the
    minimal model's start; records ``theta``.
    """
    evalb = _evaluation(spec)
    G_inv = jnp.asarray(metric_inverse(spec.k))

    def loss(theta: jax.Array, batch: ICLBatch) -> jax.Array:
        return mm.reduced_loss(theta, batch, spec.mixing)

    def in_metric(updates: jax.Array, params: Any = None) -> jax.Array:
        return updates.at[:2].set(G_inv @ updates[:2])

    def observe(theta: jax.Array) -> dict[str, jax.Array]:
        probs = jax.nn.softmax(mm.reduced_logits(theta, evalb.x, spec.k, spec.mixing))
        return {"metrics": _metric_vector(probs, evalb), "theta": theta}

    trainer = optax.chain(optax.stateless(in_metric), optax.sgd(spec.step_size))
    theta0 = mm.project(minimal_start(spec))
    draw = _draw(spec, jnp.float64)
    return _optimize(
        loss, theta0, trainer, draw, jax.random.key(spec.seed), spec, observe, progress
    )


def flow_reduced(spec: RunSpec, progress: bool | None = None) -> History:
    """The reduced ``(a, b, v)`` dynamics on a fixed sample, integrated by the engine.

    The sample is ``spec.batch`` sequences from the training prior.  Each sequence's reduced
    loss is invariant under relabelling the states (``U`` and ``C`` are equivariant and the
    target row is relabelled with them), so this flow is, to rounding, the flow on the sample
    with all its ``k!`` relabellings, on which the family ``{aI + b11ᵀ}`` is exactly invariant:
    the image of the minimal model's gradient flow there, at ``1/k!`` of the cost.  The start is the
    projection of the minimal model's (:func:`minimal_start`).  ``solver = "flow"``
    integrates ``dθ/dt = -G⁻¹∇L`` with diffrax (Tsit5) to flow time ``lr · steps``;
    ``solver = "gd"`` takes ``steps`` gradient-descent steps of size ``lr`` in the same metric.
    """
    evalb = _evaluation(spec)
    data = sample(jax.random.key(spec.seed), spec.prior, spec.batch, spec.k, spec.T)
    field = mm.reduced_field(spec.mixing)
    theta0 = mm.project(minimal_start(spec))
    n_eval = -(-spec.steps // spec.eval_every)
    eval_steps = np.minimum(np.arange(n_eval + 1) * spec.eval_every, spec.steps).astype(float)
    lr = spec.step_size
    with progress_bar(1, "run", enabled=progress, desc=f"reduced seed {spec.seed}") as bar:
        if spec.solver == "gd":
            descent = FlowOptions(solver=GradientDescent(lr), stop=StopRule(max_steps=spec.steps))
            traj = flow(field, theta0, descent, args=data)
            thetas = traj.thetas[np.minimum(eval_steps.astype(int), len(traj.thetas) - 1)]
        else:
            options = FlowOptions(
                solver=diffrax.Tsit5(),
                controller=PID(rtol=1e-6, atol=1e-8),
                stop=StopRule(gtol=1e-9, t_max=lr * spec.steps, max_steps=100_000),
            )
            traj = flow(field, theta0, options, args=data, ts=lr * eval_steps)
            thetas = traj.thetas
            eval_steps = traj.ts / lr
        bar.update(1)

    single = jax.tree.map(lambda arr: arr[:, None], data)

    @jax.jit
    def observe(theta: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
        probs = jax.nn.softmax(mm.reduced_logits(theta, evalb.x, spec.k, spec.mixing))
        per_sequence = jax.vmap(field.grad, in_axes=(None, 0))(theta, single)
        return (
            _metric_vector(probs, evalb),
            per_sequence.mean(0),
            per_sequence.std(0) / jnp.sqrt(spec.batch),
        )

    records = []
    for th in thetas:
        m, g, se = observe(jnp.asarray(th))
        records.append({"metrics": m, "theta": th, "field": g, "grad_se": se})
    return _history(records, list(eval_steps), spec)


def train(spec: RunSpec, progress: bool | None = None) -> History:
    """Run ``spec`` with the trainer of its model."""
    if spec.model == "reduced" and spec.solver == "sgd":
        return train_reduced(spec, progress)
    runner = {"minimal": train_minimal, "transformer": train_transformer, "reduced": flow_reduced}
    return runner[spec.model](spec, progress)
