"""A real data set for the shallow encoder: scikit-learn's handwritten digits as token sequences.

scikit-learn (the optional extra ``gradflow[digits]``) ships the UCI digits, 1797 images of
``8 × 8`` pixels with values ``0 … 16``, with the package. An image becomes ``d_s`` tokens of
``d = 64/d_s`` pixels each: its pixels read row by row and cut into ``d_s`` consecutive pieces
(``d_s = 8``: one token per image row; ``d_s = 4``: two rows per token). Each image is scaled so
that its tokens have mean squared norm 1, the scale of the synthetic tokens
(:func:`~gradflow.systems.shallow_ntk.encoder.synthetic_data`); the target is the digit's label,
standardized over the whole set (mean 0, variance 1). ``N`` images are drawn without replacement
by a seed.
"""

from __future__ import annotations

import numpy as np

from gradflow import GradflowError

__all__ = ["PIXELS", "digits_data"]

PIXELS = 64
"""Pixels per image: ``d_s · d`` must equal it."""


def digits_data(n_samples: int, d_s: int, d: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``N`` digit images as ``(X, y)`` of shapes ``(N, d_s, d)`` and ``(N,)`` (module docstring).

    Raises:
        GradflowError: ``d_s · d ≠ 64``, ``N`` above the 1797 images, or scikit-learn missing.
    """
    if d_s * d != PIXELS:
        raise GradflowError(
            f"d_s = {d_s}, d = {d}: the digits' {PIXELS} pixels need d_s · d = {PIXELS}"
        )
    try:
        from sklearn.datasets import load_digits
    except ImportError as err:
        raise GradflowError(
            "the digits data need scikit-learn: pip install 'gradflow[digits]'"
        ) from err
    images, labels = load_digits(return_X_y=True)
    if not 1 <= n_samples <= len(labels):
        raise GradflowError(f"N = {n_samples}: the digits hold 1 … {len(labels)} images")
    pick = np.random.default_rng(seed).choice(len(labels), size=n_samples, replace=False)
    X = images[pick].reshape(n_samples, d_s, d).astype(float)
    X /= np.sqrt(np.mean(np.sum(X**2, axis=2), axis=1))[:, None, None]
    y = (labels - labels.mean()) / labels.std()
    return X, y[pick]
