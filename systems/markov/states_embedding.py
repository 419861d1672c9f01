"""The rank-``(k − 1)`` init of the ``k``-state transformer: the binary model's canonical embedding
``embed(θ)`` (:mod:`gradflow.systems.markov.embedding`) carried over to ``k`` states.

The binary embedding puts every weight on one direction ``α``.  Here every weight lives on one
``(k − 1)``-dimensional subspace ``S`` of the width ``d``, the image of the centred one-hot
vectors ``c_i = e_i − 1/k`` (``i = 0 … k − 1``) of the states:

- ``S`` is spanned by the block indicators ``β_g = 1_{B_g}/√|B_g|`` (``g = 1 … k − 1``) of the
  ``k − 1`` blocks ``B_g`` of ``numpy.array_split(range(d), k − 1)``: vectors constant on each
  block, so that AdamW's coordinate-wise update keeps a weight inside ``S`` as the gradient does
  (see below).  At ``k = 2``: one block, ``β_1 = 1/√d = α``.
- The states map into ``S`` by ``U = B H`` (``d × k``), ``B = [β_1 … β_{k−1}]`` and ``H`` the
  Helmert rows ``v_g = √(g/(g + 1)) (e_g − (1/g) Σ_{i<g} e_i)``, an orthonormal basis of the
  vectors summing to 0; so ``UᵀU = I − J/k``, ``UUᵀ = P_S`` (the orthogonal projector onto
  ``S``), and the ``U c_i`` are the corners of a regular simplex.

At ``θ = (e, w)``, with ``ε = e/√2`` and the attention coordinate ``a = 0`` (as the binary
``--init canonical``), state 0 the reference (the binary model embeds its symbol 0 as 0, and the
chain's state 0 is the one leaving with ``p``):

    E[i] = ε U(e_i − e_0),   p_n = ε U c_0      (so u_n = ε U c_{x_n}, ‖u_i − u_j‖ = e),
    W_Q = W_K = d^{1/4} P_S,   W_V = P_S,   W_O = 0,
    W_1[j] = |w| κ_g γ_gᵀ,   W_2[:, j] = w κ_g γ_g     (hidden unit j in group G_g),
    b = the bias that minimises the population loss given the other weights,

where the ``4d`` hidden units are split into ``k − 1`` groups ``G_g``
(``numpy.array_split``), ``κ_g = 2/√|G_g|`` and ``γ_g = U c_g/‖c_g‖`` is the unit direction of
state ``g``: group ``g`` detects state ``g`` as the binary FFN detects the symbol 1, with the
binary gain ``|G_g| κ_g² = 4`` (``4d κ² = 4``, ``κ = 1/√d``).  At ``k = 2`` these are exactly
the weights of :func:`~gradflow.systems.markov.embedding.rank_one_transformer` with
``E = [0; eα]`` and ``b = (0, b_full)``.

Closed form (``e > 0``): after state 0 no unit fires and the logits are
``b_j − ε²(1 − δ_{j0})``; after state ``i ≥ 1`` only group ``i`` fires
(``⟨γ_g, u_i⟩ = ε √(k/(k−1)) (δ_{gi} − 1/k)``), ``z = (1 + 4w|w|) u`` and the logits are
``b_j + ε²(1 + 4w|w|) δ_{ji}``.  With ``W_O = 0`` the logits depend on the current state only.

Rank: ``E``, ``W_Q``, ``W_K``, ``W_V``, ``W_1``, ``W_2`` have rank exactly ``k − 1`` (``e, w ≠
0``); singular values ``ε√k`` and ``ε`` (``k − 2`` times) for ``E``, ``d^{1/4}`` for ``W_Q``,
``2|w|√(k/(k−1))`` (``k − 2`` times) and ``2|w|/√(k−1)`` for ``W_1`` and ``W_2``.  Every weight
maps ``S`` into ``S`` and vanishes on its complement, and every embedding lies in ``S``; so does
the gradient of the loss (the residual stream and the errors sent back through the tied
read-out stay in ``S``), and AdamW's coordinate-wise update of a matrix whose rows and columns
are constant on the blocks is constant on them too: training from this init keeps every weight
of rank ``≤ k − 1``, up to rounding.

Makkuva et al. ("Local to Global", NeurIPS 2024) give the binary rank-one init and, in their
discussion of the reviews, report trained weights of rank ``|S| − 1`` at ``|S| = 5``; they give no
multi-state init.  This one is this project's design (``docs/systems/markov.md``, "Multi-state
chains").
"""

from __future__ import annotations

import math

import equinox as eqx
import jax.numpy as jnp
import numpy as np

from gradflow import GradflowError

from .ranges import check_attention, check_length, check_states, check_width
from .states import check_kernel, stationary
from .states_transformer import StatesTransformer, states_logits

_logits = eqx.filter_jit(states_logits)
""":func:`states_logits` compiled whole (op by op, each operation's shape is a program of its
own)."""

__all__ = ["helmert", "optimal_bias", "state_map", "states_canonical_init"]


def helmert(k: int) -> np.ndarray:
    """The Helmert rows ``v_g = √(g/(g + 1)) (e_g − (1/g) Σ_{i<g} e_i)``, ``g = 1 … k − 1``:
    an orthonormal basis of ``{x ∈ R^k : Σ x = 0}``, shape ``(k − 1, k)``.

    Raises:
        GradflowError: ``k`` outside ``2 …`` :data:`~gradflow.systems.markov.ranges.MAX_STATES`.
    """
    k = check_states(k)
    rows = np.zeros((k - 1, k))
    for g in range(1, k):
        rows[g - 1, :g] = -1.0 / g
        rows[g - 1, g] = 1.0
        rows[g - 1] *= math.sqrt(g / (g + 1))
    return rows


def state_map(k: int, d: int) -> np.ndarray:
    """``U = B H``, shape ``(d, k)``: the states' centred one-hot vectors into the subspace ``S``
    of the block indicators (module docstring); ``UᵀU = I − J/k``, ``UUᵀ = P_S``.

    Raises:
        GradflowError: ``k`` or ``d`` out of range, or ``d < k − 1`` (``S`` needs ``k − 1``
            blocks).
    """
    k, d = check_states(k), check_width(d)
    if d < k - 1:
        raise GradflowError(
            f"width d = {d} is below k − 1 = {k - 1}: the rank-(k − 1) init needs d ≥ k − 1"
        )
    blocks = np.zeros((d, k - 1))
    for g, block in enumerate(np.array_split(np.arange(d), k - 1)):
        blocks[block, g] = 1.0 / math.sqrt(block.size)
    return blocks @ helmert(k)


def _ffn(k: int, d: int, w: float, directions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(W_1, W_2)``: the ``4d`` hidden units in ``k − 1`` groups, group ``g`` reading and
    writing the unit direction of state ``g`` (a column of ``directions``) with gain 4."""
    w1, w2 = np.zeros((4 * d, d)), np.zeros((d, 4 * d))
    for g, units in enumerate(np.array_split(np.arange(4 * d), k - 1)):
        kappa = 2.0 / math.sqrt(units.size)
        w1[units] = abs(w) * kappa * directions[:, g]
        w2[:, units] = w * kappa * directions[:, g][:, None]
    return w1, w2


def optimal_bias(logits: np.ndarray, kernel: np.ndarray) -> np.ndarray:
    """The bias ``b`` (``b_0 = 0``) minimising ``Σ_i π_i CE(P[i], logits[i] + b)``, nats: the
    population loss of a model whose logits depend on the current state only (``logits[i]``
    after state ``i``, shape ``(k, k)``).  Damped Newton on ``b_1 … b_{k−1}`` (the loss is
    convex and invariant under adding a constant to ``b``), to a gradient below 1e-14.

    Returns:
        ``b``, shape ``(k,)``, float64.
    """
    P = check_kernel(kernel)
    pi, f = stationary(P), np.asarray(logits, np.float64)

    def loss(b: np.ndarray) -> float:
        z = f + b
        top = z.max(axis=1, keepdims=True)
        log_soft = z - top - np.log(np.exp(z - top).sum(axis=1, keepdims=True))
        return float(-np.sum(pi[:, None] * P * log_soft))

    b = np.zeros(P.shape[0])
    for _ in range(100):
        z = f + b
        soft = np.exp(z - z.max(axis=1, keepdims=True))
        soft /= soft.sum(axis=1, keepdims=True)
        grad = (pi @ (soft - P))[1:]
        if np.abs(grad).max() < 1e-14:
            break
        hess = (np.diag(pi @ soft) - np.einsum("i,ij,ik->jk", pi, soft, soft))[1:, 1:]
        step, t, now = np.linalg.solve(hess, grad), 1.0, loss(b)
        while t > 1e-12 and loss(b - t * np.concatenate([[0.0], step])) > now:
            t /= 2
        b = b - t * np.concatenate([[0.0], step])
    return b


def states_canonical_init(
    k: int,
    d: int,
    length: int,
    theta: tuple[float, float],
    kernel: np.ndarray,
    *,
    attention: str = "softmax",
    dtype: jnp.dtype = jnp.float32,
) -> StatesTransformer:
    """The rank-``(k − 1)`` weights at ``θ = (e, w)`` of the module docstring (tied read-out,
    ``W_O = 0``), the bias optimal for ``kernel`` (:func:`optimal_bias`); built in float64, then
    cast to ``dtype``.

    Args:
        k: states; d: width (``≥ k − 1``); length: positions ``N``.
        theta: ``(e, w)``: the distance between any two token embeddings, and the FFN coordinate
            (gain ``1 + 4w|w|`` on each state's direction).
        kernel: the chain's ``(k, k)`` kernel (the bias depends on it, as the binary
            ``embed(θ, h)`` on ``h = (p, q)``).
        attention: the returned model's attention kind (``W_O = 0``: the same loss for both).
        dtype: the weights' dtype.

    Raises:
        GradflowError: invalid ``k``, ``d``, ``length``, ``attention``, ``d < k − 1``, a
            ``θ`` that is not two finite numbers, or a kernel that is not ``(k, k)``
            row-stochastic.
    """
    U = state_map(k, d)
    check_length(length)
    check_attention(attention)
    if len(theta) != 2 or not all(math.isfinite(float(v)) for v in theta):
        raise GradflowError(f"θ = {theta!r} must be two finite numbers (e, w)")
    if check_kernel(kernel).shape != (k, k):
        raise GradflowError(f"kernel of shape {np.shape(kernel)} is not ({k}, {k})")
    e, w = (float(v) for v in theta)
    eps, centred = e / math.sqrt(2), np.eye(k) - 1.0 / k
    projector, simplex = U @ U.T, U @ centred
    w1, w2 = _ffn(k, d, w, simplex[:, 1:] * math.sqrt(k / (k - 1)))
    weights = {
        "E": eps * (U.T - U.T[:1]),
        "positions": np.broadcast_to(eps * simplex[:, 0], (length, d)),
        "W_Q": d**0.25 * projector,
        "W_K": d**0.25 * projector,
        "W_V": projector,
        "W_O": np.zeros((d, d)),
        "W_1": w1,
        "W_2": w2,
    }
    model = StatesTransformer(
        **{n: jnp.asarray(v, jnp.float64) for n, v in weights.items()},
        b=jnp.zeros((k,), jnp.float64),
        unembed=None,
        attention=attention,
    )
    after = np.asarray(_logits(model, jnp.arange(k)[:, None]))[:, 0]
    bias = jnp.asarray(optimal_bias(after, kernel), jnp.float64)
    model = StatesTransformer(**{**vars(model), "b": bias})
    return StatesTransformer(
        **{n: v.astype(dtype) if hasattr(v, "astype") else v for n, v in vars(model).items()}
    )
