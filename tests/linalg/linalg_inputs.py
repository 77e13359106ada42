"""Inputs for tests/linalg: well-conditioned matrices, and tolerances per dtype."""
import numpy as np


def general(shape, rng=None):
    """Square matrices far from singular: random entries plus n on the diagonal."""
    rng = rng or np.random.default_rng(0)
    n = shape[-1]
    return rng.standard_normal(shape) + n * np.eye(n)


def spd(shape, rng=None):
    """Symmetric positive-definite matrices with distinct eigenvalues."""
    rng = rng or np.random.default_rng(1)
    x = rng.standard_normal(shape)
    return x @ np.swapaxes(x, -1, -2) + shape[-1] * np.eye(shape[-1])


def tolerance(dtype):
    return dict(rtol=1e-4, atol=1e-4) if dtype == "float32" else dict(rtol=1e-9, atol=1e-10)
