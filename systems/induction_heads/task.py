"""The ICL-MC task's settings, checked without importing JAX: priors over transition matrices,
the sizes ``k`` and ``T``, the positional mixings of the minimal model.

Source: Edelman, Edelman, Goel, Malach, Tsilivis, "The Evolution of Statistical Induction Heads:
In-Context Learning Markov Chains" (NeurIPS 2024), §2 and §5; the priors are described in
:mod:`gradflow.systems.induction_heads.data`, which re-exports everything here.  JAX is imported inside the
sampling methods, so the command line checks a prior's spelling before JAX is loaded.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gradflow import GradflowError

if TYPE_CHECKING:
    import jax

__all__ = [
    "MAX_DOUBLY_STOCHASTIC_K",
    "MIXINGS",
    "PRIOR_NAMES",
    "Dirichlet",
    "DoublyStochastic",
    "Mixture",
    "Prior",
    "Unigram",
    "check_mixing",
    "check_sizes",
    "doubly_stochastic_mixture",
    "parse_prior",
]

MIXINGS = ("softmax", "linear")
"""The two positional mixings of the authors' code."""

MAX_DOUBLY_STOCHASTIC_K = 4
"""Largest k for the doubly-stochastic prior: the rejection sampler accepts a fraction
of proposals equal to the volume of ``B_k`` in its free coordinates (measured on 2·10⁶ draws:
1 for k = 2, 0.125 for k = 3, 9.5e-4 for k = 4, 1e-6 for k = 5)."""


class Prior:
    """A prior over k-state transition matrices.

    Subclasses are frozen dataclasses (hashable, so a prior is a static argument of jitted
    functions) and implement :meth:`draw`.
    """

    name: str = ""

    def matrices(self, key: jax.Array, n: int, k: int) -> jax.Array:
        """``n`` transition matrices, shape ``(n, k, k)``, float64 (jitted :meth:`draw`, compiled
        once per prior and sizes)."""
        return _jitted_draw()(self, key, n, k)

    def draw(self, key: jax.Array, n: int, k: int) -> jax.Array:
        """``n`` transition matrices, shape ``(n, k, k)``, float64."""
        raise NotImplementedError

    def check(self, k: int) -> None:
        """Raise :class:`GradflowError` if the prior cannot be sampled with ``k`` states."""


def _simplex_rows(key: jax.Array, shape: tuple[int, ...], k: int) -> jax.Array:
    """``Dirichlet(1_k)`` vectors of shape ``shape + (k,)``: normalized i.i.d. Exp(1) draws."""
    import jax
    import jax.numpy as jnp

    g = jax.random.exponential(key, shape + (k,), dtype=jnp.float64)
    return g / g.sum(-1, keepdims=True)


@dataclass(frozen=True)
class Dirichlet(Prior):
    """Rows of ``P`` i.i.d. ``Dirichlet(1_k)``: the paper's prior."""

    name: str = "dirichlet"

    def draw(self, key: jax.Array, n: int, k: int) -> jax.Array:
        return _simplex_rows(key, (n, k), k)


@dataclass(frozen=True)
class Unigram(Prior):
    """Every row of ``P`` equal to one ``π ~ Dirichlet(1_k)``: i.i.d. tokens from ``π``."""

    name: str = "unigram"

    def draw(self, key: jax.Array, n: int, k: int) -> jax.Array:
        import jax.numpy as jnp

        pi = _simplex_rows(key, (n,), k)
        return jnp.broadcast_to(pi[:, None, :], (n, k, k))


def _complete_doubly_stochastic(block: jax.Array) -> jax.Array:
    """The ``k × k`` matrix with free block ``block`` (``(k-1) × (k-1)``) and unit row/column sums.

    Last column ``1 - Σ_j X_ij``, last row ``1 - Σ_i X_ij``, corner ``Σ_ij X_ij - (k - 2)``.
    """
    import jax.numpy as jnp

    k = block.shape[-1] + 1
    col = 1.0 - block.sum(-1, keepdims=True)
    top = jnp.concatenate([block, col], axis=-1)
    row = 1.0 - top.sum(-2, keepdims=True)
    return jnp.concatenate([top, row], axis=-2).reshape(block.shape[:-2] + (k, k))


@dataclass(frozen=True)
class DoublyStochastic(Prior):
    """``P`` uniform on the Birkhoff polytope ``B_k``, by rejection.

    The free block ``X = P[:k-1, :k-1]`` determines ``P`` affinely, so ``X`` uniform on
    ``[0, 1]^{(k-1)²}`` conditioned on the completed matrix being non-negative is uniform on
    ``B_k``.  Each sequence redraws until accepted (a vmapped ``while_loop``).
    """

    name: str = "doubly-stochastic"

    def check(self, k: int) -> None:
        if k > MAX_DOUBLY_STOCHASTIC_K:
            raise GradflowError(
                f"k = {k}: the doubly-stochastic prior is sampled by rejection and needs "
                f"2 ≤ k ≤ {MAX_DOUBLY_STOCHASTIC_K}"
            )

    def draw(self, key: jax.Array, n: int, k: int) -> jax.Array:
        import jax
        import jax.numpy as jnp

        self.check(k)

        def one(key: jax.Array) -> jax.Array:
            def propose(key: jax.Array) -> jax.Array:
                return _complete_doubly_stochastic(
                    jax.random.uniform(key, (k - 1, k - 1), dtype=jnp.float64)
                )

            def rejected(state: tuple[jax.Array, jax.Array]) -> jax.Array:
                return jnp.any(state[1] < 0)

            def redraw(state: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, jax.Array]:
                key, sub = jax.random.split(state[0])
                return key, propose(sub)

            key, sub = jax.random.split(key)
            return jax.lax.while_loop(rejected, redraw, (key, propose(sub)))[1]

        return jax.vmap(one)(jax.random.split(key, n))


@dataclass(frozen=True)
class Mixture(Prior):
    """Each sequence's matrix drawn from ``components[c]`` with probability ``weights[c]``."""

    components: tuple[Prior, ...]
    weights: tuple[float, ...]
    name: str = "mixture"

    def __post_init__(self) -> None:
        if len(self.components) != len(self.weights) or not self.components:
            raise GradflowError(
                "a mixture needs one weight per component and at least one component"
            )
        if any(not 0.0 <= w <= 1.0 for w in self.weights) or abs(sum(self.weights) - 1.0) > 1e-12:
            raise GradflowError(f"mixture weights {self.weights} must lie in [0, 1] and sum to 1")

    def check(self, k: int) -> None:
        for component, weight in zip(self.components, self.weights):
            if weight > 0:
                component.check(k)

    def draw(self, key: jax.Array, n: int, k: int) -> jax.Array:
        import jax
        import jax.numpy as jnp

        which_key, *keys = jax.random.split(key, len(self.components) + 1)
        which = jax.random.choice(
            which_key, len(self.components), (n,), p=jnp.asarray(self.weights)
        )
        out = jnp.zeros((n, k, k))
        for c, (component, weight) in enumerate(zip(self.components, self.weights)):
            if weight > 0:
                out = jnp.where((which == c)[:, None, None], component.draw(keys[c], n, k), out)
        return out


PRIOR_NAMES = ("dirichlet", "doubly-stochastic", "unigram", "mixture:RHO")
"""Spellings :func:`parse_prior` accepts; ``RHO`` is the share of doubly-stochastic sequences."""


def doubly_stochastic_mixture(rho: float) -> Prior:
    """A share ``rho ∈ [0, 1]`` of doubly-stochastic sequences, the rest Dirichlet.

    Raises:
        GradflowError: ``rho`` outside ``[0, 1]``.
    """
    if not 0.0 <= rho <= 1.0:
        raise GradflowError(f"mixture proportion {rho!r} must lie in [0, 1]")
    return Mixture((DoublyStochastic(), Dirichlet()), (float(rho), 1.0 - float(rho)))


def parse_prior(spec: str) -> Prior:
    """The prior named ``spec``: ``dirichlet``, ``doubly-stochastic``, ``unigram`` or ``mixture:ρ``.

    Raises:
        GradflowError: an unknown name, or a mixture proportion that is not a number in [0, 1].
    """
    simple = {
        "dirichlet": Dirichlet(),
        "doubly-stochastic": DoublyStochastic(),
        "unigram": Unigram(),
    }
    if spec in simple:
        return simple[spec]
    name, sep, value = spec.partition(":")
    if name == "mixture" and sep:
        try:
            rho = float(value)
        except ValueError:
            raise GradflowError(
                f"prior {spec!r}: the mixture proportion must be a number in [0, 1]"
            ) from None
        return doubly_stochastic_mixture(rho)
    raise GradflowError(f"unknown prior {spec!r}; choose one of {', '.join(PRIOR_NAMES)}")


def check_sizes(k: int, T: int) -> None:
    """Raise :class:`GradflowError` unless ``k ≥ 2`` states and ``T ≥ 2`` tokens."""
    if int(k) != k or k < 2:
        raise GradflowError(f"k = {k!r}: the number of states must be an integer ≥ 2")
    if int(T) != T or T < 2:
        raise GradflowError(f"T = {T!r}: the sequence length must be an integer ≥ 2")


def check_mixing(mixing: str) -> None:
    """Raise :class:`GradflowError` unless ``mixing`` is ``softmax`` or ``linear``."""
    if mixing not in MIXINGS:
        raise GradflowError(
            f"unknown positional mixing {mixing!r}; choose one of {', '.join(MIXINGS)}"
        )


@functools.cache
def _jitted_draw() -> Any:
    """:meth:`Prior.draw` jitted with the prior and the sizes static."""
    import jax

    return jax.jit(lambda prior, key, n, k: prior.draw(key, n, k), static_argnums=(0, 2, 3))
