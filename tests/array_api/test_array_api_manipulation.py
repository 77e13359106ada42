"""Manipulation functions against NumPy."""
import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

from array_api_support import SETTINGS, assert_matches

DTYPES = ["bool", "int8", "int64", "uint8", "float32", "float64"]
arrays = st.sampled_from(DTYPES).flatmap(
    lambda dt: hnp.arrays(dt, hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=4),
                          elements=hnp.from_dtype(np.dtype(dt), allow_nan=False) if dt != "bool" else None))


@SETTINGS
@given(x=arrays, data=st.data())
def test_broadcast_to_and_arrays(xp, x, data):
    # a new leading axis, and size-1 axes stretched
    source = tuple(1 if n and data.draw(st.booleans()) else n for n in x.shape)
    x = x[tuple(slice(0, n) for n in source)]
    target = (data.draw(st.integers(1, 2)),) + tuple(data.draw(st.integers(0, 3)) if n == 1 else n for n in source)
    assert_matches(xp.broadcast_to(xp.asarray(x), target), np.broadcast_to(x, target))
    other = np.zeros(target, dtype="int8")
    out = xp.broadcast_arrays(xp.asarray(x), xp.asarray(other))
    assert isinstance(out, list) and [tuple(o.shape) for o in out] == [target, target]


@SETTINGS
@given(data=st.data())
def test_concat_and_stack_promote(xp, data):
    d1, d2 = data.draw(st.sampled_from(["int8", "uint8", "int64"])), data.draw(st.sampled_from(["int8", "int32"]))
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, max_side=3))
    a = data.draw(hnp.arrays(d1, shape))
    b = data.draw(hnp.arrays(d2, shape))
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    assert_matches(xp.concat([xp.asarray(a), xp.asarray(b)], axis=axis), np.concat([a, b], axis=axis))
    assert_matches(xp.concat((xp.asarray(a), xp.asarray(b)), axis=None), np.concat([a, b], axis=None))
    s_axis = data.draw(st.integers(-len(shape) - 1, len(shape)))
    assert_matches(xp.stack([xp.asarray(a), xp.asarray(b)], axis=s_axis), np.stack([a, b], axis=s_axis))


@SETTINGS
@given(x=arrays, data=st.data())
def test_axis_shufflers(xp, x, data):
    t = xp.asarray(x)
    axis = data.draw(st.integers(-x.ndim - 1, x.ndim))
    assert_matches(xp.expand_dims(t, axis=axis), np.expand_dims(x, axis))
    flip_axis = data.draw(st.none() | st.integers(-x.ndim, x.ndim - 1))
    assert_matches(xp.flip(t, axis=flip_axis), np.flip(x, axis=flip_axis))
    perm = data.draw(st.permutations(range(x.ndim)))
    assert_matches(xp.permute_dims(t, tuple(perm)), np.permute_dims(x, tuple(perm)))
    src, dst = data.draw(st.integers(0, x.ndim - 1)), data.draw(st.integers(-x.ndim, x.ndim - 1))
    assert_matches(xp.moveaxis(t, src, dst), np.moveaxis(x, src, dst))
    assert_matches(xp.matrix_transpose(t), np.matrix_transpose(x)) if x.ndim >= 2 else None
    assert [u.numpy().tolist() for u in xp.unstack(t, axis=0)] == [u.tolist() for u in np.unstack(x, axis=0)]


@SETTINGS
@given(x=arrays, data=st.data())
def test_reshape_roll_squeeze_tile(xp, x, data):
    t = xp.asarray(x)
    assert_matches(xp.reshape(t, (-1,)), np.reshape(x, (-1,)))
    assert_matches(xp.reshape(t, (x.size,), copy=True), np.reshape(x, (x.size,)))
    shift = data.draw(st.integers(-5, 5))
    axis = data.draw(st.none() | st.integers(-x.ndim, x.ndim - 1))
    assert_matches(xp.roll(t, shift, axis=axis), np.roll(x, shift, axis=axis))
    expanded = np.expand_dims(x, 0)
    assert_matches(xp.squeeze(xp.asarray(expanded), axis=0), np.squeeze(expanded, axis=0))
    reps = tuple(data.draw(st.lists(st.integers(0, 2), min_size=1, max_size=3)))
    assert_matches(xp.tile(t, reps), np.tile(x, reps))


@SETTINGS
@given(x=arrays, data=st.data())
def test_repeat(xp, x, data):
    t = xp.asarray(x)
    n = data.draw(st.integers(0, 3))
    assert_matches(xp.repeat(t, n), np.repeat(x, n))
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    counts = np.array(data.draw(st.lists(st.integers(0, 3), min_size=x.shape[axis], max_size=x.shape[axis])),
                      dtype="int64")
    assert_matches(xp.repeat(t, xp.asarray(counts), axis=axis), np.repeat(x, counts, axis=axis))


def test_manipulation_errors(xp):
    x = xp.ones((2, 3))
    with pytest.raises(ValueError, match="cannot squeeze axis 0 of size 2"):
        xp.squeeze(x, axis=0)
    with pytest.raises(ValueError, match="copy=False"):
        xp.reshape(xp.matrix_transpose(x), (6,), copy=False)
    assert xp.reshape(x, (3, 2), copy=False).shape == (3, 2)
    with pytest.raises(ValueError, match="not a permutation"):
        xp.permute_dims(x, (0, 0))
    with pytest.raises(IndexError, match="out of bounds"):
        xp.flip(x, axis=2)
