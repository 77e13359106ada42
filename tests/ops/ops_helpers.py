"""Helpers shared by the op-library tests: layouts and comparison with a reference."""
import numpy as np

import tensorplug as tp


def as_layout(values: np.ndarray, layout: str) -> tp.Tensor:
    """A tensor holding ``values``: contiguous, transposed (same values, reversed strides) or
    sliced out of a bigger tensor (every other element on the last dim)."""
    if layout == "contiguous" or values.ndim == 0:
        return tp.tensor(values)
    if layout == "transposed":
        order = tuple(reversed(range(values.ndim)))
        t = tp.tensor(np.ascontiguousarray(values.transpose(order))).permute(order)
    else:
        big = np.zeros(values.shape[:-1] + (2 * values.shape[-1],), dtype=values.dtype)
        big[..., ::2] = values
        t = tp.tensor(big)[..., ::2]
    return t


def check(actual, expected, rtol=1e-6, atol=1e-6, dtype=None):
    """Compare a tensor with a NumPy array (or torch tensor): shape, dtype when given, values."""
    assert isinstance(actual, tp.Tensor)
    expected = np.asarray(expected.detach().numpy() if hasattr(expected, "detach") else expected)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    if dtype is not None:
        assert actual.dtype is dtype
    got = (actual.float() if actual.dtype is tp.bfloat16 else actual).detach().numpy()
    if got.dtype.kind in "biu" or expected.dtype.kind in "biu":
        np.testing.assert_array_equal(got, expected)
    else:
        np.testing.assert_allclose(got.astype(np.float64), expected.astype(np.float64), rtol=rtol, atol=atol, equal_nan=True)
