"""The reduced dynamics of the two-mixture transformer: attention state and neurons on the signal span.

Every token lies in the signal span ``span U``, ``U = [c_1..c_K, v_1..v_K]`` (orthonormal,
``d × 2K``).  The loss therefore sees a head's query and key maps only through the ``2K × 2K``
score matrix

    B = S_Kᵀ S_Q,    S_Q = W_Q U,  S_K = W_K U,    B[a, b] = s(u_a, u_b) = u_aᵀ W_Kᵀ W_Q u_b

(row ``a`` the key direction, column ``b`` the query direction), and a neuron ``w`` only through
its alignments ``U^T w = (⟨w, c_j⟩, ⟨w, v_j⟩)``.  With ``G = ∂L/∂B`` (same indexing) the full
gradient is ``∂L/∂W_Q = W_K U G Uᵀ``, ``∂L/∂W_K = W_Q U Gᵀ Uᵀ``, so along the gradient flow
``dS_Q/dt = -S_K G``, ``dS_K/dt = -S_Q Gᵀ`` and, with ``P_Q = S_Qᵀ S_Q``, ``P_K = S_Kᵀ S_K``,

    dB/dt   = -(G P_Q + P_K G),
    dP_Q/dt = -(Gᵀ B + Bᵀ G),
    dP_K/dt = -(G Bᵀ + B Gᵀ).

Per head the state is ``(B, P_Q, P_K)`` (for ``K = 2``: 16 scores and 10 + 10 independent
entries of the symmetric ``P``) plus the neuron alignments ``N = W U`` (``m × 2K``), with
``dN/dt = -∂L/∂N``.  This system is closed and exact: it is the full flow seen through ``U``
(not an approximation), so the full model's projected flow must follow it to integrator
precision.  :func:`derive_score_equations` derives the three equations in SymPy from the chain
rule; :func:`attention_inputs` writes each sample's attention-averaged input ``u(B)`` in SymPy
(the reference the vectorized :func:`attention_average` is tested against).  With the
``"tied"`` heads option (``B^- = -B^+``) one attention state remains, driven by
``G = G^+ - G^-``.  Gradient descent maps the state exactly too
(:meth:`ReducedMixture.descent_step`, with second-order terms in the step).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import sympy as sp
from jax.flatten_util import ravel_pytree

from gradflow import FlowOptions, GradientField, Trajectory, flow

from .data import ZERO_SLOT, Population
from .transformer import MixtureConfig, MixtureTransformer, logistic_loss, output_signs

__all__ = [
    "ReducedMixture",
    "ReducedState",
    "attention_average",
    "attention_inputs",
    "attention_weights",
    "derive_score_equations",
    "infinite_width_state",
    "project",
    "score_symbols",
    "score_velocity",
]


def derive_score_equations(p: int, r: int) -> dict[str, tuple[sp.Matrix, sp.Matrix]]:
    """Derive ``dB/dt, dP_Q/dt, dP_K/dt`` from the flow on ``S_Q, S_K`` by the chain rule (SymPy).

    The loss is linearized at the current point, ``L ≈ tr(Gᵀ B)`` with ``B = S_Kᵀ S_Q``, so the
    flow of the full maps is ``dS/dt = -∂ tr(Gᵀ B)/∂S`` entry by entry; the time derivatives of
    ``B``, ``P_Q``, ``P_K`` follow by the product rule.

    Args:
        p: rows of ``S_Q, S_K`` (the head dimension of the symbolic check).
        r: the span dimension ``2K``.

    Returns:
        ``{"B": (derived, closed), "P_Q": …, "P_K": …}``: the chain-rule result and the closed
        form ``-(G P_Q + P_K G)``, ``-(Gᵀ B + Bᵀ G)``, ``-(G Bᵀ + B Gᵀ)``, as ``r × r`` SymPy
        matrices in the symbols ``q_ij, k_ij, g_ij``.  They are equal as polynomials.
    """
    SQ = sp.Matrix(p, r, lambda i, j: sp.Symbol(f"q_{i}{j}", real=True))
    SK = sp.Matrix(p, r, lambda i, j: sp.Symbol(f"k_{i}{j}", real=True))
    G = sp.Matrix(r, r, lambda i, j: sp.Symbol(f"g_{i}{j}", real=True))
    B, PQ, PK = SK.T * SQ, SQ.T * SQ, SK.T * SK
    linear_loss = (G.T * B).trace()
    dSQ = -sp.Matrix(p, r, lambda i, j: sp.diff(linear_loss, SQ[i, j]))
    dSK = -sp.Matrix(p, r, lambda i, j: sp.diff(linear_loss, SK[i, j]))
    derived = {
        "B": dSK.T * SQ + SK.T * dSQ,
        "P_Q": dSQ.T * SQ + SQ.T * dSQ,
        "P_K": dSK.T * SK + SK.T * dSK,
    }
    closed = {
        "B": -(G * PQ + PK * G),
        "P_Q": -(G.T * B + B.T * G),
        "P_K": -(G * B.T + B * G.T),
    }
    return {name: (derived[name].expand(), closed[name].expand()) for name in derived}


def score_velocity(
    B: jax.Array, P_Q: jax.Array, P_K: jax.Array, G: jax.Array
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """The closed score equations: ``(dB/dt, dP_Q/dt, dP_K/dt)``, each shape ``(..., 2K, 2K)``.

    ``dB/dt = -(G P_Q + P_K G)``, ``dP_Q/dt = -(Gᵀ B + Bᵀ G)``, ``dP_K/dt = -(G Bᵀ + B Gᵀ)`` with
    ``G = ∂L/∂B`` (:func:`derive_score_equations`).
    """
    T = lambda M: jnp.swapaxes(M, -1, -2)  # noqa: E731
    return -(G @ P_Q + P_K @ G), -(T(G) @ B + T(B) @ G), -(G @ T(B) + B @ T(G))


def score_symbols(K: int) -> sp.Matrix:
    """The ``2K × 2K`` score symbols ``B[a, b] = s(u_a, u_b)``, named ``s_{a}{b}`` with slots
    ``c1..cK, v1..vK`` (e.g. ``s_v1c1`` is the score of key ``v_1`` for query ``c_1``)."""
    names = [f"c{k + 1}" for k in range(K)] + [f"v{k + 1}" for k in range(K)]
    return sp.Matrix(2 * K, 2 * K, lambda a, b: sp.Symbol(f"s_{names[a]}{names[b]}", real=True))


def attention_inputs(pop: Population, B: sp.Matrix) -> sp.Matrix:
    """Each sample's attention output averaged over queries, ``u(B)``, in ``U`` coordinates (SymPy).

    A token is ``σ u_a`` (slot ``a``, sign ``σ``), so key ``i`` scores query ``j`` by
    ``σ_i σ_j B[a_i, a_j]`` (0 for a zero filler token) and

        u = (1/L) Σ_j Σ_i softmax_i(σ_i σ_j B[a_i, a_j]) σ_i e_{a_i}.

    Args:
        pop: the population (slots and signs of its tokens).
        B: the ``2K × 2K`` score matrix (symbols or numbers).

    Returns:
        Shape ``(n, 2K)``: row ``s`` is ``u`` of sample ``s``.
    """
    rows = [
        _sample_input(slots, signs, B, 2 * pop.K).T
        for slots, signs in zip(pop.slots.tolist(), pop.signs.tolist())
    ]
    return sp.Matrix.vstack(*rows)


def _sample_input(slots: list[int], signs: list[int], B: sp.Matrix, r: int) -> sp.Matrix:
    """``u(B)`` of one sample (:func:`attention_inputs`), an ``r × 1`` SymPy matrix."""
    L = len(slots)
    tokens = [
        sp.zeros(r, 1) if a == ZERO_SLOT else sign * sp.eye(r)[:, a]
        for a, sign in zip(slots, signs)
    ]
    scores = [
        [
            sp.S.Zero
            if ZERO_SLOT in (slots[i], slots[j])
            else signs[i] * signs[j] * B[slots[i], slots[j]]
            for j in range(L)
        ]
        for i in range(L)
    ]
    u = sp.zeros(r, 1)
    for j in range(L):
        weights = [sp.exp(scores[i][j]) for i in range(L)]
        total = sp.Add(*weights)
        for weight, token in zip(weights, tokens):
            u += weight / total * token
    return u / L


class ReducedState(eqx.Module):
    """The reduced state: attention state per attention map and neuron alignments per head.

    Attributes:
        B: scores, shape ``(H, 2K, 2K)`` (``H = 2`` heads, ``1`` when tied).
        P_Q: ``S_Qᵀ S_Q``, shape ``(H, 2K, 2K)``, symmetric.
        P_K: ``S_Kᵀ S_K``, shape ``(H, 2K, 2K)``, symmetric.
        N: neuron alignments ``N[h, r] = Uᵀ w_{h,r}``, shape ``(2, m, 2K)``.
    """

    B: jax.Array
    P_Q: jax.Array
    P_K: jax.Array
    N: jax.Array


def project(model: MixtureTransformer, U: np.ndarray) -> ReducedState:
    """The reduced state of a full model: ``B = Uᵀ W_Kᵀ W_Q U``, ``P = Uᵀ Wᵀ W U``, ``N = W U``.

    Args:
        model: the full model (tied or not).
        U: the signal frame, shape ``(d, 2K)``.
    """
    U = jnp.asarray(U)
    maps = model.attention_maps()
    if model.heads[1].W_Q is None:
        maps = maps[:1]
    SQ = jnp.stack([wq @ U for wq, _ in maps])
    SK = jnp.stack([wk @ U for _, wk in maps])
    T = lambda M: jnp.swapaxes(M, -1, -2)  # noqa: E731
    return ReducedState(
        B=T(SK) @ SQ, P_Q=T(SQ) @ SQ, P_K=T(SK) @ SK, N=jnp.stack([h.W @ U for h in model.heads])
    )


def infinite_width_state(config: MixtureConfig, key: jax.Array | None = None) -> ReducedState:
    """The ``m → ∞`` limit of the initial attention state with finite-``m`` neurons.

    ``B = 0`` and ``P_Q = P_K = ω² I`` (the law of large numbers over the ``d_head = m`` rows of
    ``N(0, ω²/m)`` maps); the neuron alignments are i.i.d. ``N(0, ω²/m)``, shape ``(2, m, 2K)``.
    """
    key = jax.random.PRNGKey(config.seed) if key is None else key
    r, H = 2 * config.K, 1 if config.combine == "tied" else 2
    eye = jnp.broadcast_to(config.omega**2 * jnp.eye(r), (H, r, r))
    N = config.omega / np.sqrt(config.m) * jax.random.normal(key, (2, config.m, r), jnp.float64)
    return ReducedState(B=jnp.zeros((H, r, r)), P_Q=eye, P_K=eye, N=N)


def attention_weights(B: jax.Array, coords: jax.Array) -> jax.Array:
    """The attention mass on each token averaged over the queries, ``α_i = (1/L) Σ_j att_ij``.

    Args:
        B: scores, shape ``(2K, 2K)``.
        coords: tokens in ``U`` coordinates, shape ``(n, L, 2K)`` (:meth:`Population.coordinates`).

    Returns:
        Shape ``(n, L)``: ``α_i = (1/L) Σ_j softmax_i(x_iᵀ B x_j)``; each row sums to 1.
    """
    S = jnp.einsum("nia,ab,njb->nij", coords, B, coords)
    return jax.nn.softmax(S, axis=1).mean(axis=2)


def attention_average(B: jax.Array, coords: jax.Array) -> jax.Array:
    """``u(B)`` of every sample, vectorized: the JAX form of :func:`attention_inputs`.

    Args:
        B: scores, shape ``(2K, 2K)``.
        coords: tokens in ``U`` coordinates, shape ``(n, L, 2K)`` (:meth:`Population.coordinates`).

    Returns:
        Shape ``(n, 2K)``: ``u = (1/L) Σ_j Σ_i softmax_i(x_iᵀ B x_j) x_i = Σ_i α_i x_i`` per
        sample (:func:`attention_weights`).
    """
    return jnp.einsum("ni,nia->na", attention_weights(B, coords), coords)


class ReducedMixture(eqx.Module):
    """The reduced model: loss and velocity of a :class:`ReducedState`.

    Attributes:
        coords: the population's tokens in ``U`` coordinates, shape ``(n, L, 2K)``.
        y: labels, shape ``(n,)``.
        out: output signs times head signs, shape ``(2, m)``.
        kappa: readout scale ``κ``.
        tied: whether the heads share one attention state (``B^- = -B^+``).
        neurons: what the neurons read, ``"average"`` or ``"tokens"``
            (:data:`~gradflow.systems.two_mixture.model_config.NEURONS`).
    """

    coords: jax.Array
    y: jax.Array
    out: jax.Array
    kappa: float = eqx.field(static=True)
    tied: bool = eqx.field(static=True)
    neurons: str = eqx.field(static=True, default="average")

    @classmethod
    def from_config(cls, config: MixtureConfig) -> ReducedMixture:
        """The reduced model of the full model with this configuration."""
        pop = config.population()
        return cls(
            coords=jnp.asarray(pop.coordinates(), jnp.float64),
            y=jnp.asarray(pop.y, jnp.float64),
            out=jnp.asarray(output_signs(config)),
            kappa=config.kappa,
            tied=config.combine == "tied",
            neurons=config.neurons,
        )

    def head_scores(self, B: jax.Array) -> jax.Array:
        """The score matrices of the two heads, shape ``(2, 2K, 2K)``."""
        return jnp.concatenate([B, -B]) if self.tied else B

    def logits(self, B: jax.Array, N: jax.Array) -> jax.Array:
        """``f`` of every sample, shape ``(n,)``, from scores ``B`` and neuron alignments ``N``."""
        alpha = jax.vmap(attention_weights, in_axes=(0, None))(self.head_scores(B), self.coords)
        if self.neurons == "tokens":
            act = jnp.einsum(
                "hrni,hni->hrn", jax.nn.relu(jnp.einsum("hrk,nik->hrni", N, self.coords)), alpha
            )
        else:
            u = jnp.einsum("hni,nik->hnk", alpha, self.coords)
            act = jax.nn.relu(jnp.einsum("hrk,hnk->hrn", N, u))
        return self.kappa * jnp.einsum("hr,hrn->n", self.out, act)

    def loss(self, state: ReducedState) -> jax.Array:
        """The population loss (nats) at a reduced state."""
        return self._loss_of(state.B, state.N)

    def _loss_of(self, B: jax.Array, N: jax.Array) -> jax.Array:
        return jnp.mean(logistic_loss(self.y * self.logits(B, N)))

    def gradients(self, state: ReducedState) -> tuple[jax.Array, jax.Array]:
        """``(G, ∂L/∂N)``: the driving gradient ``G = ∂L/∂B`` per attention map, shape
        ``(H, 2K, 2K)`` (row key, column query), and the neurons' gradient, shape ``(2, m, 2K)``."""
        return jax.grad(self._loss_of, (0, 1))(state.B, state.N)

    def velocity(
        self, state: ReducedState, train: tuple[bool, bool] = (True, True)
    ) -> ReducedState:
        """``d(state)/dt`` along the full model's gradient flow.

        Args:
            state: the reduced state.
            train: ``(attention, neurons)``: which parts move (the staged schedule freezes one).
        """
        G, gN = self.gradients(state)
        dB, dPQ, dPK = score_velocity(state.B, state.P_Q, state.P_K, G)
        zero = jnp.zeros_like
        if not train[0]:
            dB, dPQ, dPK = zero(dB), zero(dPQ), zero(dPK)
        return ReducedState(B=dB, P_Q=dPQ, P_K=dPK, N=-gN if train[1] else zero(gN))

    def descent_step(
        self, state: ReducedState, lr: float, train: tuple[bool, bool] = (True, True)
    ) -> ReducedState:
        """One step of gradient descent on the full weights, seen through ``U`` (exact).

        Full descent ``S_Q ← S_Q - η S_K G``, ``S_K ← S_K - η S_Q Gᵀ`` maps the attention state to

            B ← B - η(G P_Q + P_K G) + η² G Bᵀ G,
            P_Q ← P_Q - η(Gᵀ B + Bᵀ G) + η² Gᵀ P_K G,
            P_K ← P_K - η(G Bᵀ + B Gᵀ) + η² G P_Q Gᵀ,

        and ``N ← N - η ∂L/∂N``: the projection of full gradient descent, not an approximation.

        Args:
            state: the reduced state.
            lr: the step ``η`` (flow-time units per step).
            train: ``(attention, neurons)`` switches.
        """
        return self.update(state, *self.gradients(state), lr, train)

    def update(
        self,
        state: ReducedState,
        G: jax.Array,
        gN: jax.Array,
        lr: float,
        train: tuple[bool, bool] = (True, True),
    ) -> ReducedState:
        """:meth:`descent_step` with the gradients ``(G, ∂L/∂N)`` of :meth:`gradients` given."""
        T = lambda M: jnp.swapaxes(M, -1, -2)  # noqa: E731
        dB, dPQ, dPK = score_velocity(state.B, state.P_Q, state.P_K, G)
        a, n = (float(flag) for flag in train)
        return ReducedState(
            B=state.B + a * (lr * dB + lr**2 * G @ T(state.B) @ G),
            P_Q=state.P_Q + a * (lr * dPQ + lr**2 * T(G) @ state.P_K @ G),
            P_K=state.P_K + a * (lr * dPK + lr**2 * G @ state.P_Q @ T(G)),
            N=state.N - n * lr * gN,
        )

    def descend(
        self,
        state0: ReducedState,
        lr: float,
        steps: int,
        every: int = 1,
        train: tuple[bool, bool] = (True, True),
    ) -> ReducedState:
        """Gradient descent for ``steps`` steps from ``state0``, recording every ``every``-th state.

        Returns:
            The recorded states stacked on a leading axis of length ``1 + steps // every``
            (the first is ``state0``); flow time of record ``i`` is ``i · every · η``.
        """
        path = _descend_reduced(self, state0, lr, steps, every, train)
        return jax.tree.map(lambda x0, xs: jnp.concatenate([x0[None], xs]), state0, path)

    def flow(
        self,
        state0: ReducedState,
        ts: np.ndarray,
        options: FlowOptions | None = None,
        train: tuple[bool, bool] = (True, True),
    ) -> tuple[Trajectory, Callable[[np.ndarray], ReducedState]]:
        """Integrate the reduced dynamics with the engine (:func:`gradflow.flow` of a field).

        The engine follows ``dθ/dt = -grad(θ)``; here ``grad`` is minus :meth:`velocity` (the
        full gradient pushed through ``U``, a preconditioned gradient of the reduced loss) on
        flat states.  The field is cached per state shape and ``train``, so repeated flows
        compile once.

        Args:
            state0: initial state.
            ts: flow times to record (ascending, from 0), time units of the full flow.
            options: solver and stopping rule.
            train: ``(attention, neurons)`` switches.

        Returns:
            ``(trajectory, unravel)``: the path over flat states and the function that turns one
            row back into a :class:`ReducedState`.
        """
        field, unravel = _reduced_field(
            state0.B.shape[0], state0.N.shape[1], state0.B.shape[-1], train
        )
        return flow(field, ravel_pytree(state0)[0], options, args=self, ts=ts), unravel


@functools.partial(jax.jit, static_argnums=(2, 3, 4, 5))
def _descend_reduced(
    model: ReducedMixture,
    state0: ReducedState,
    lr: float,
    steps: int,
    every: int,
    train: tuple[bool, bool],
) -> ReducedState:
    def block(state: ReducedState, _: None) -> tuple[ReducedState, ReducedState]:
        state = jax.lax.fori_loop(0, every, lambda _, s: model.descent_step(s, lr, train), state)
        return state, state

    return jax.lax.scan(block, state0, None, length=steps // every)[1]


@functools.cache
def _reduced_field(
    H: int, m: int, r: int, train: tuple[bool, bool]
) -> tuple[GradientField, Callable[[jax.Array], ReducedState]]:
    """The engine field of the reduced dynamics on flat states of the given shapes."""
    square = jnp.zeros((H, r, r))
    _, unravel = ravel_pytree(
        ReducedState(B=square, P_Q=square, P_K=square, N=jnp.zeros((2, m, r)))
    )

    def minus_velocity(theta: jax.Array, model: ReducedMixture) -> jax.Array:
        return -ravel_pytree(model.velocity(unravel(theta), train))[0]

    def loss(theta: jax.Array, model: ReducedMixture) -> jax.Array:
        return model.loss(unravel(theta))

    return GradientField(loss=jax.jit(loss), grad=jax.jit(minus_velocity)), unravel
