"""Shared test set-up: float64 JAX (imported through gradflow), fixed seeds, a temp cwd helper."""

from __future__ import annotations

import numpy as np
import pytest

import gradflow  # noqa: F401  (enables float64 before any test builds an array)


@pytest.fixture
def rng() -> np.random.Generator:
    """A NumPy generator with a fixed seed."""
    return np.random.default_rng(20241129)
