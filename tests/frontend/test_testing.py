"""tp.testing.assert_close: tolerances per dtype and clear failure messages."""
import numpy as np
import pytest

import tensorplug as tp


def test_close_values_pass():
    """Values within float32's default tolerance compare equal."""
    tp.testing.assert_close(tp.tensor([1.0, 2.0]), tp.tensor([1.0 + 1e-7, 2.0]))


def test_far_values_fail_with_the_worst_element():
    """A mismatch names the count and the greatest difference."""
    with pytest.raises(AssertionError, match=r"(?s)Mismatched elements: 1 / 3.*Greatest absolute difference: 0.5 at index \(2,\)"):
        tp.testing.assert_close(tp.tensor([1.0, 2.0, 3.0]), tp.tensor([1.0, 2.0, 3.5]))


def test_dtype_and_shape_are_checked():
    with pytest.raises(AssertionError, match="dtype"):
        tp.testing.assert_close(tp.ones(2), tp.ones(2, dtype=tp.float64))
    with pytest.raises(AssertionError, match="shape"):
        tp.testing.assert_close(tp.ones(2), tp.ones(3))


def test_integers_compare_exactly_and_nan_needs_equal_nan():
    """Integers have zero tolerance; NaN equals NaN only with equal_nan=True."""
    with pytest.raises(AssertionError):
        tp.testing.assert_close(tp.tensor([1, 2]), tp.tensor([1, 3]))
    nan = tp.tensor([float("nan")])
    with pytest.raises(AssertionError):
        tp.testing.assert_close(nan, nan)
    tp.testing.assert_close(nan, nan, equal_nan=True)


def test_containers_and_numpy_expected():
    """Lists and dicts compare elementwise; expected values may be NumPy arrays."""
    tp.testing.assert_close([tp.ones(2)], [tp.ones(2)])
    tp.testing.assert_close({"a": tp.zeros(1)}, {"a": tp.zeros(1)})
    tp.testing.assert_close(tp.tensor([0.5, 1.5]), np.array([0.5, 1.5]), check_dtype=False)
