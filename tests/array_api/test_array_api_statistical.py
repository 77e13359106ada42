"""Statistical and utility functions against NumPy: axes (None, int, tuple, ()), keepdims, dtypes."""
import warnings

import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

from array_api_support import SETTINGS, assert_matches

shapes = hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=4)


def _axis(data, ndim):
    """None, one axis (possibly negative), a tuple of distinct axes, or ()."""
    if ndim == 0:
        return data.draw(st.sampled_from([None, ()]))
    one = st.integers(-ndim, ndim - 1)
    several = st.lists(st.integers(0, ndim - 1), unique=True, max_size=ndim).map(tuple)
    return data.draw(st.one_of(st.none(), one, several))


def _values(data, dtype, shape):
    if np.dtype(dtype).kind == "f":
        return data.draw(hnp.arrays(dtype, shape, elements=st.floats(-100, 100, width=np.dtype(dtype).itemsize * 8)))
    if dtype == "bool":
        return data.draw(hnp.arrays(dtype, shape))
    return data.draw(hnp.arrays(dtype, shape, elements=st.integers(0, 3)))


@pytest.mark.parametrize("name", ["sum", "prod"])
@SETTINGS
@given(data=st.data())
def test_sum_prod(xp, name, data):
    dtype = data.draw(st.sampled_from(["bool", "int8", "int32", "int64", "float32", "float64"]))
    x = _values(data, dtype, data.draw(shapes))
    axis = _axis(data, x.ndim)
    keepdims = data.draw(st.booleans())
    got = getattr(xp, name)(xp.asarray(x), axis=axis, keepdims=keepdims)
    # the standard: signed integers and bool accumulate in the default integer dtype, floats keep theirs
    expected_dtype = "int64" if dtype != "float32" and dtype != "float64" else dtype
    expected = getattr(np, name)(x, axis=axis, keepdims=keepdims, dtype=expected_dtype)
    assert_matches(got, expected, rtol=1e-4 if dtype == "float32" else 1e-10)


def test_sum_dtype_argument_and_uint8(xp):
    x = xp.asarray([1, 2, 3], dtype=xp.int32)
    assert xp.sum(x).dtype is xp.int64
    assert xp.sum(x, dtype=xp.int32).dtype is xp.int32
    assert xp.sum(xp.asarray([1.0], dtype=xp.float32), dtype=xp.float64).dtype is xp.float64
    # no uint64 in tensorplug: unsigned sums widen to int64 (docs/array-api.md)
    assert xp.sum(xp.asarray([200, 100], dtype=xp.uint8)).numpy() == 300


@pytest.mark.parametrize("name", ["max", "min", "mean"])
@SETTINGS
@given(data=st.data())
def test_max_min_mean(xp, name, data):
    dtype = data.draw(st.sampled_from(["float32", "float64"] + ([] if name == "mean" else ["int16", "uint8"])))
    x = _values(data, dtype, data.draw(shapes))
    axis = _axis(data, x.ndim)
    keepdims = data.draw(st.booleans())
    got = getattr(xp, name)(xp.asarray(x), axis=axis, keepdims=keepdims)
    assert_matches(got, getattr(np, name)(x, axis=axis, keepdims=keepdims), rtol=1e-5 if dtype == "float32" else None)


def test_max_of_bool_and_nan_and_empty(xp):
    b = xp.asarray([[True, False], [False, False]])
    assert_matches(xp.max(b, axis=1), np.array([True, False]))
    assert_matches(xp.min(b, axis=(0, 1)), np.array(False))
    assert np.isnan(xp.max(xp.asarray([1.0, np.nan])).numpy())
    with pytest.raises(ValueError, match="no identity"):
        xp.max(xp.zeros((0, 3)), axis=0)


@pytest.mark.parametrize("name", ["std", "var"])
@SETTINGS
@given(data=st.data())
def test_std_var(xp, name, data):
    dtype = data.draw(st.sampled_from(["float32", "float64"]))
    x = _values(data, dtype, data.draw(shapes))
    axis = _axis(data, x.ndim)
    correction = data.draw(st.sampled_from([0, 1, 0.5, 2.0]))
    keepdims = data.draw(st.booleans())
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NumPy's "degrees of freedom <= 0"
        expected = getattr(np, name)(x, axis=axis, correction=correction, keepdims=keepdims)
    got = getattr(xp, name)(xp.asarray(x), axis=axis, correction=correction, keepdims=keepdims)
    assert_matches(got, expected, rtol=1e-3 if dtype == "float32" else 1e-9, atol=1e-3 if dtype == "float32" else 1e-9)


def test_moments_need_floats(xp):
    with pytest.raises(TypeError, match="floating-point"):
        xp.mean(xp.asarray([1, 2]))
    with pytest.raises(ValueError, match="non-negative"):
        xp.var(xp.asarray([1.0]), correction=-1)


@pytest.mark.parametrize("name", ["cumulative_sum", "cumulative_prod"])
@SETTINGS
@given(data=st.data())
def test_cumulative(xp, name, data):
    dtype = data.draw(st.sampled_from(["int8", "int64", "float32", "float64", "bool"]))
    x = _values(data, dtype, data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=4)))
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1)) if x.ndim > 1 else data.draw(st.sampled_from([None, 0, -1]))
    include_initial = data.draw(st.booleans())
    got = getattr(xp, name)(xp.asarray(x), axis=axis, include_initial=include_initial)
    out_dtype = dtype if dtype.startswith("float") else "int64"
    ref = getattr(np, name)(x, axis=axis, dtype=out_dtype, include_initial=include_initial)
    assert_matches(got, ref, rtol=1e-4 if dtype == "float32" else 1e-10)


def test_cumulative_needs_axis_for_nd(xp):
    with pytest.raises(ValueError, match="axis is required"):
        xp.cumulative_sum(xp.ones((2, 2)))


@pytest.mark.parametrize("name", ["all", "any"])
@SETTINGS
@given(data=st.data())
def test_all_any(xp, name, data):
    dtype = data.draw(st.sampled_from(["bool", "int32", "float32"]))
    x = _values(data, dtype, data.draw(shapes))
    axis = _axis(data, x.ndim)
    keepdims = data.draw(st.booleans())
    assert_matches(getattr(xp, name)(xp.asarray(x), axis=axis, keepdims=keepdims),
                   getattr(np, name)(x, axis=axis, keepdims=keepdims))


@SETTINGS
@given(data=st.data())
def test_diff(xp, data):
    dtype = data.draw(st.sampled_from(["int64", "float64", "bool"]))
    x = _values(data, dtype, data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=5)))
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    n = data.draw(st.integers(0, 3))
    edge_shape = list(x.shape)
    edge_shape[axis] = 1
    prepend = data.draw(st.none() | st.just(np.zeros(edge_shape, dtype=dtype)))
    kwargs = {} if prepend is None else {"prepend": xp.asarray(prepend)}
    ref_kwargs = {} if prepend is None else {"prepend": prepend}
    assert_matches(xp.diff(xp.asarray(x), axis=axis, n=n, **kwargs), np.diff(x, axis=axis, n=n, **ref_kwargs))
