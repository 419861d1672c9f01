"""scikit-learn's digits as token sequences (skipped without the optional extra)."""

from __future__ import annotations

import numpy as np
import pytest

from gradflow import GradflowError
from gradflow.systems.shallow_ntk.config import SweepConfig
from gradflow.systems.shallow_ntk.digits import digits_data

datasets = pytest.importorskip("sklearn.datasets")


def test_tokens_are_the_image_cut_in_pieces_scaled_to_unit_mean_square():
    """``d_s = 4`` tokens of 16 pixels: read back row by row they are the image times one positive
    scale, the one that makes the mean squared token norm exactly 1; the targets are the labels
    standardized over all 1797 images, so ``y (σ) + mean`` is the digit itself."""
    images, labels = datasets.load_digits(return_X_y=True)
    X, y = digits_data(12, 4, 16, seed=1)
    assert X.shape == (12, 4, 16) and y.shape == (12,)
    np.testing.assert_allclose(np.mean(np.sum(X**2, axis=2), axis=1), 1.0, rtol=1e-13)
    flat = X.reshape(12, 64)
    pick = np.random.default_rng(1).choice(len(labels), size=12, replace=False)
    scale = np.linalg.norm(flat, axis=1) / np.linalg.norm(images[pick], axis=1)
    np.testing.assert_allclose(flat, scale[:, None] * images[pick], rtol=1e-13)
    np.testing.assert_allclose(y * labels.std() + labels.mean(), labels[pick], atol=1e-12)


def test_pieces_that_do_not_tile_the_image_are_refused():
    with pytest.raises(GradflowError, match="d_s · d = 64"):
        digits_data(4, 4, 8)
    with pytest.raises(GradflowError, match="d_s · d = 64"):
        SweepConfig(data="digits", d_s=4, d=8)
