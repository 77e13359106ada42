"""Creation functions against NumPy: default dtypes, devices, copies."""
import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

import tensorplug as tp
from array_api_support import SETTINGS, assert_matches


def test_asarray_default_dtypes(xp):
    assert xp.asarray(True).dtype is xp.bool
    assert xp.asarray([1, 2]).dtype is xp.int64
    assert xp.asarray([1, 2.5]).dtype is tp.get_default_dtype()
    assert xp.asarray([[True, False]]).dtype is xp.bool
    assert xp.asarray([]).dtype is tp.get_default_dtype()
    assert xp.asarray([1, 2], dtype=xp.float64).dtype is xp.float64


def test_asarray_refuses_out_of_range_ints(xp):
    with pytest.raises(OverflowError, match="out of range"):
        xp.asarray(2**63)
    with pytest.raises(OverflowError, match="out of range"):
        xp.asarray([1, 300], dtype=xp.uint8)
    assert xp.asarray([-(2**63), 2**63 - 1]).numpy().tolist() == [-(2**63), 2**63 - 1]
    with pytest.raises(OverflowError, match="out of range"):
        xp.full((2,), 256, dtype=xp.uint8)
    with pytest.raises(OverflowError, match="out of range"):
        xp.full_like(xp.zeros(2, dtype=xp.int8), -129)


def test_asarray_copy_semantics(xp):
    x = xp.asarray([1.0, 2.0])
    assert xp.asarray(x) is x
    assert xp.asarray(x, copy=True) is not x
    with pytest.raises(ValueError, match="copy=False"):
        xp.asarray(x, dtype=xp.float64, copy=False)
    with pytest.raises(ValueError, match="copy=False"):
        xp.asarray([1, 2], copy=False)
    buffer = np.arange(3.0)
    shared = xp.asarray(buffer, copy=False)
    buffer[0] = 7.0
    assert shared.numpy()[0] == 7.0
    copied = xp.asarray(buffer, copy=True)
    buffer[0] = 8.0
    assert copied.numpy()[0] == 7.0
    assert xp.asarray([xp.asarray(1.0), xp.asarray(2.0)]).shape == (2,)


@SETTINGS
@given(x=st.sampled_from(["bool", "int8", "uint8", "int32", "float32", "float64"]).flatmap(
    lambda dt: hnp.arrays(dt, hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3))))
def test_asarray_from_numpy_and_dlpack(xp, x):
    assert_matches(xp.asarray(x), x)
    assert_matches(xp.from_dlpack(x), x)


def test_from_dlpack_copy_and_device(xp, device):
    x = np.arange(4, dtype=np.float32)
    y = xp.from_dlpack(x, device=device)
    assert y.device.type == device
    np.testing.assert_array_equal(y.cpu().numpy(), x)


@SETTINGS
@given(start=st.integers(-10, 10), stop=st.integers(-10, 10), step=st.integers(-3, 3).filter(bool))
def test_arange_integers(xp, start, stop, step):
    assert_matches(xp.arange(start, stop, step), np.arange(start, stop, step))
    assert_matches(xp.arange(stop), np.arange(stop))


@SETTINGS
@given(start=st.floats(-10, 10), stop=st.floats(-10, 10), step=st.floats(0.25, 3))
def test_arange_floats_length_and_values(xp, start, stop, step):
    got = xp.arange(start, stop, step, dtype=xp.float64)
    expected = np.arange(start, stop, step, dtype=np.float64)
    assert got.shape == expected.shape
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12, atol=1e-12)


def test_arange_rejects_zero_step(xp):
    with pytest.raises(ValueError, match="step"):
        xp.arange(0, 5, 0)


@SETTINGS
@given(shape=hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3),
       dtype=st.sampled_from(["bool", "int16", "float32", "float64"]))
def test_filled_factories(xp, shape, dtype):
    dt = getattr(xp, dtype)
    assert_matches(xp.zeros(shape, dtype=dt), np.zeros(shape, dtype=dtype))
    assert_matches(xp.ones(shape, dtype=dt), np.ones(shape, dtype=dtype))
    assert xp.empty(shape, dtype=dt).shape == shape
    base = xp.zeros(shape, dtype=dt)
    assert_matches(xp.zeros_like(base), np.zeros(shape, dtype=dtype))
    assert_matches(xp.ones_like(base, dtype=xp.int8), np.ones(shape, dtype="int8"))
    assert xp.empty_like(base).dtype is dt
    assert_matches(xp.full(shape, 3, dtype=dt), np.full(shape, 3, dtype=dtype))
    assert_matches(xp.full_like(base, 1), np.full(shape, 1, dtype=dtype))


def test_full_infers_dtype(xp):
    assert xp.full((2,), True).dtype is xp.bool
    assert xp.full((2,), 3).dtype is xp.int64
    assert xp.full((2,), 3.5).dtype is tp.get_default_dtype()
    assert xp.zeros(3).dtype is tp.get_default_dtype()


@SETTINGS
@given(n=st.integers(0, 5), m=st.none() | st.integers(0, 5), k=st.integers(-6, 6))
def test_eye(xp, n, m, k):
    assert_matches(xp.eye(n, m, k=k, dtype=xp.float64), np.eye(n, m, k=k))


@SETTINGS
@given(start=st.floats(-100, 100), stop=st.floats(-100, 100), num=st.integers(0, 20), endpoint=st.booleans())
def test_linspace(xp, start, stop, num, endpoint):
    got = xp.linspace(start, stop, num, dtype=xp.float64, endpoint=endpoint)
    expected = np.linspace(start, stop, num, endpoint=endpoint)
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12, atol=1e-12)
    if endpoint and num > 1:
        assert got.numpy()[-1] == stop


@SETTINGS
@given(sizes=st.lists(st.integers(0, 4), min_size=0, max_size=3), indexing=st.sampled_from(["xy", "ij"]))
def test_meshgrid(xp, sizes, indexing):
    arrays = [np.arange(n, dtype=np.float32) for n in sizes]
    got = xp.meshgrid(*[xp.asarray(a) for a in arrays], indexing=indexing)
    expected = np.meshgrid(*arrays, indexing=indexing)
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert_matches(g, e)


@SETTINGS
@given(x=hnp.arrays("int32", hnp.array_shapes(min_dims=2, max_dims=4, max_side=4)), k=st.integers(-4, 4))
def test_tril_triu(xp, x, k):
    assert_matches(xp.tril(xp.asarray(x), k=k), np.tril(x, k=k))
    assert_matches(xp.triu(xp.asarray(x), k=k), np.triu(x, k=k))


def test_same_device_by_another_name_needs_no_copy(xp, device):
    x = xp.ones(2, device=device)
    assert xp.asarray(x, device=device, copy=False) is x
    assert xp.astype(x, x.dtype, copy=False, device=device) is x
    assert xp.asarray(x, device=x.device, copy=False) is x


def test_factories_on_devices(xp, device):
    for made in (xp.zeros(3, device=device), xp.ones((2,), device=device), xp.full((2,), 1.5, device=device),
                 xp.arange(4, device=device), xp.eye(2, device=device), xp.linspace(0, 1, 3, device=device),
                 xp.asarray([1, 2], device=device), xp.empty(2, device=device)):
        assert made.device.type == device
