"""Searching, sorting, set and indexing functions against NumPy."""
import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

from array_api_support import SETTINGS, assert_matches

# Few distinct values make ties, which exercise stability, first occurrences and counts.
VALUE_DTYPES = ["int8", "int64", "uint8", "float32", "float64"]


def small_arrays(min_dims=1, min_side=0, nan=False):
    def build(dt):
        if dt.startswith("float"):
            elements = st.sampled_from([-1.5, 0.0, -0.0, 2.0, 7.0] + ([np.nan] if nan else []))
        else:
            elements = st.integers(0, 4)
        return hnp.arrays(dt, hnp.array_shapes(min_dims=min_dims, max_dims=3, min_side=min_side, max_side=5),
                          elements=elements)
    return st.sampled_from(VALUE_DTYPES).flatmap(build)


@SETTINGS
@given(x=small_arrays(min_side=1, nan=True), data=st.data())
def test_argmax_argmin(xp, x, data):
    axis = data.draw(st.none() | st.integers(-x.ndim, x.ndim - 1))
    keepdims = data.draw(st.booleans())
    for name in ("argmax", "argmin"):
        assert_matches(getattr(xp, name)(xp.asarray(x), axis=axis, keepdims=keepdims),
                       getattr(np, name)(x, axis=axis, keepdims=keepdims))


@SETTINGS
@given(x=small_arrays(min_dims=0), data=st.data())
def test_count_nonzero_and_nonzero(xp, x, data):
    axis = data.draw(st.none() | (st.integers(-x.ndim, x.ndim - 1) if x.ndim else st.none()))
    keepdims = data.draw(st.booleans())
    assert_matches(xp.count_nonzero(xp.asarray(x), axis=axis, keepdims=keepdims),
                   np.count_nonzero(x, axis=axis, keepdims=keepdims).astype("int64"))
    if x.ndim:
        got = xp.nonzero(xp.asarray(x))
        assert isinstance(got, tuple) and len(got) == x.ndim
        for g, e in zip(got, np.nonzero(x)):
            assert_matches(g, e.astype("int64"))
    else:
        with pytest.raises(ValueError, match="0-d"):
            xp.nonzero(xp.asarray(x))


@SETTINGS
@given(data=st.data())
def test_where(xp, data):
    s = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=3, max_dims=3, max_side=3))
    cond = data.draw(hnp.arrays(bool, s.input_shapes[0]))
    a = data.draw(hnp.arrays("int8", s.input_shapes[1]))
    b = data.draw(hnp.arrays("float32", s.input_shapes[2], elements=st.floats(-5, 5, width=32)))
    assert_matches(xp.where(xp.asarray(cond), xp.asarray(a), xp.asarray(b)), np.where(cond, a, b))
    assert_matches(xp.where(xp.asarray(cond), xp.asarray(a), 3), np.where(cond, a, np.int8(3)))
    assert_matches(xp.where(xp.asarray(cond), 1.5, xp.asarray(b)), np.where(cond, np.float32(1.5), b))


@SETTINGS
@given(data=st.data())
def test_searchsorted(xp, data):
    dtype = data.draw(st.sampled_from(["int64", "float32", "float64"]))
    elements = st.integers(-5, 5) if dtype == "int64" else st.sampled_from([-2.0, 0.0, 1.5, 3.0, np.nan])
    haystack = np.sort(data.draw(hnp.arrays(dtype, st.integers(0, 8), elements=elements)))
    needles = data.draw(hnp.arrays(dtype, hnp.array_shapes(min_dims=0, max_dims=2, max_side=4), elements=elements))
    side = data.draw(st.sampled_from(["left", "right"]))
    assert_matches(xp.searchsorted(xp.asarray(haystack), xp.asarray(needles), side=side),
                   np.searchsorted(haystack, needles, side=side).astype("int64"))
    order = np.argsort(-np.arange(len(haystack)))  # a sorter that reverses a reversed copy
    assert_matches(xp.searchsorted(xp.asarray(haystack[::-1].copy()), xp.asarray(needles), side=side,
                                   sorter=xp.asarray(order)),
                   np.searchsorted(haystack[::-1], needles, side=side, sorter=order).astype("int64"))


@SETTINGS
@given(x=small_arrays(nan=True), data=st.data())
def test_sort_and_argsort_are_stable(xp, x, data):
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    assert_matches(xp.sort(xp.asarray(x), axis=axis), np.sort(x, axis=axis, stable=True))
    assert_matches(xp.argsort(xp.asarray(x), axis=axis), np.argsort(x, axis=axis, stable=True))
    if not np.isnan(x).any() if x.dtype.kind == "f" else True:
        # descending and stable: equal elements keep their order
        flipped = np.flip(x, axis=axis)
        expected = np.flip(x.shape[axis] - 1 - np.argsort(flipped, axis=axis, stable=True), axis=axis)
        assert_matches(xp.argsort(xp.asarray(x), axis=axis, descending=True), expected.astype("int64"))
        assert_matches(xp.sort(xp.asarray(x), axis=axis, descending=True), np.flip(np.sort(x, axis=axis), axis=axis))


@SETTINGS
@given(x=small_arrays(min_dims=0, nan=True))
def test_unique_functions(xp, x):
    t = xp.asarray(x)
    ref = np.unique_all(x)
    got = xp.unique_all(t)
    assert got._fields == ("values", "indices", "inverse_indices", "counts")
    assert_matches(got.values, ref.values)
    assert_matches(got.indices, ref.indices.astype("int64"))
    assert_matches(got.inverse_indices, ref.inverse_indices.astype("int64"))
    assert_matches(got.counts, ref.counts.astype("int64"))
    # NumPy's unique_values may be unordered (the standard leaves the order open); tp's is sorted
    assert_matches(xp.unique_values(t), np.unique(x, equal_nan=False))
    counts = xp.unique_counts(t)
    assert_matches(counts.counts, np.unique_counts(x).counts.astype("int64"))
    inverse = xp.unique_inverse(t)
    assert_matches(inverse.inverse_indices, np.unique_inverse(x).inverse_indices.astype("int64"))


def test_unique_treats_each_nan_as_distinct(xp):
    out = xp.unique_counts(xp.asarray([np.nan, 1.0, np.nan, -0.0, 0.0]))
    np.testing.assert_array_equal(out.values.numpy(), [0.0, 1.0, np.nan, np.nan])
    np.testing.assert_array_equal(out.counts.numpy(), [2, 1, 1, 1])


@SETTINGS
@given(x=small_arrays(min_side=1), data=st.data())
def test_take_and_take_along_axis(xp, x, data):
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    n = x.shape[axis]
    idx = np.array(data.draw(st.lists(st.integers(-n, n - 1), max_size=6)), dtype="int64")
    kwargs = {"axis": axis} if x.ndim > 1 or data.draw(st.booleans()) else {}
    assert_matches(xp.take(xp.asarray(x), xp.asarray(idx), **kwargs), np.take(x, idx, axis=axis))
    shape = list(x.shape)
    shape[axis] = data.draw(st.integers(0, 3))
    along = data.draw(hnp.arrays("int64", tuple(shape), elements=st.integers(0, n - 1)))
    assert_matches(xp.take_along_axis(xp.asarray(x), xp.asarray(along), axis=axis),
                   np.take_along_axis(x, along, axis=axis))


def test_take_needs_axis_for_nd(xp):
    with pytest.raises(ValueError, match="axis is required"):
        xp.take(xp.ones((2, 2)), xp.asarray([0]))
