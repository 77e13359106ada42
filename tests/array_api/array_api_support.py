"""Helpers of the array API tests: hypothesis settings and comparison with the NumPy reference
(NumPy 2.x's main namespace is array API compliant). The devices come from tests/conftest.py."""
import numpy as np
from hypothesis import HealthCheck, settings

# Short and reproducible in CI: few examples, a fixed seed, no per-example deadline.
SETTINGS = settings(
    max_examples=12, derandomize=True, deadline=None, database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
)


def to_numpy(x) -> np.ndarray:
    return x.cpu().numpy()


def assert_matches(got, expected, *, rtol=None, atol=0.0, check_dtype=True):
    """``got`` (a tensor) equals the NumPy ``expected`` in shape, dtype (by name) and values
    (NaNs in the same places; floats within rtol, by default a few ulps of the dtype)."""
    expected = np.asarray(expected)
    actual = to_numpy(got)
    assert actual.shape == expected.shape, f"shape {actual.shape} != NumPy's {expected.shape}"
    if check_dtype:
        assert actual.dtype == expected.dtype, f"dtype {actual.dtype} != NumPy's {expected.dtype}"
    if expected.dtype.kind in "fc":
        if rtol is None:
            rtol = 1e-5 if expected.dtype in (np.float32, np.complex64) else 1e-12
        np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol, equal_nan=True)
    else:
        np.testing.assert_array_equal(actual, expected)
