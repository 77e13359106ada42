"""NumPy interop: zero-copy from_numpy and .numpy(), __array__, tolist, item, every dtype."""
import gc

import numpy as np
import pytest

import tensorplug as tp

DTYPES = [tp.bool, tp.uint8, tp.int8, tp.int16, tp.int32, tp.int64, tp.float16, tp.float32, tp.float64]


def _sample(dtype, shape=(2, 3)):
    values = np.arange(np.prod(shape)).reshape(shape) - 2
    return (values % 2 == 0) if dtype is tp.bool else values.astype(dtype.name)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_from_numpy_round_trip_every_dtype(dtype):
    """from_numpy keeps dtype, shape and values; .numpy() gives them back unchanged."""
    a = _sample(dtype)
    t = tp.from_numpy(a)
    assert t.dtype is dtype
    assert t.shape == a.shape
    back = t.numpy()
    assert back.dtype == a.dtype
    np.testing.assert_array_equal(back, a)
    np.testing.assert_array_equal(tp.tensor(a).numpy(), a)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_from_numpy_shares_memory_both_ways(dtype):
    """Writes through the array show in the tensor, and in-place tensor ops show in the array."""
    a = _sample(dtype)
    t = tp.from_numpy(a)
    a[0, 0] = a[1, 2]
    assert t[0, 0].item() == a[1, 2].item()
    t[1, 1] = t[0, 1].item()
    assert a[1, 1] == a[0, 1]
    t.zero_()
    assert not a.any()


def test_from_numpy_of_non_contiguous_view_shares_memory():
    """A strided NumPy view becomes a strided tensor over the same memory."""
    owner = np.arange(20.0).reshape(4, 5)
    a = owner[1:, ::2]
    t = tp.from_numpy(a)
    assert t.shape == (3, 3)
    assert t.stride() == (5, 2)
    np.testing.assert_array_equal(t.numpy(), a)
    t.fill_(-1.0)
    expected = np.arange(20.0).reshape(4, 5)
    expected[1:, ::2] = -1.0
    np.testing.assert_array_equal(owner, expected)


def test_from_numpy_of_transposed_array():
    """A Fortran-ordered (transposed) array keeps its strides and shares memory."""
    owner = np.arange(6, dtype=np.int32).reshape(2, 3)
    t = tp.from_numpy(owner.T)
    assert t.shape == (3, 2) and t.stride() == (1, 3)
    np.testing.assert_array_equal(t.numpy(), owner.T)
    t[0, 1] = 100
    assert owner[1, 0] == 100


def test_from_numpy_negative_strides_raise():
    """Negative strides (a[::-1]) raise ValueError suggesting a copy."""
    with pytest.raises(ValueError, match="negative"):
        tp.from_numpy(np.arange(5.0)[::-1])


def test_from_numpy_read_only_array_warns():
    """A read-only array is accepted with a UserWarning, as in PyTorch."""
    a = np.arange(3.0)
    a.flags.writeable = False
    with pytest.warns(UserWarning, match="not writable"):
        t = tp.from_numpy(a)
    assert t.tolist() == [0.0, 1.0, 2.0]


@pytest.mark.parametrize("np_dtype", [np.clongdouble, np.object_, "U3"])
def test_from_numpy_unsupported_dtype_raises(np_dtype):
    """Dtypes tensorplug lacks raise TypeError naming the dtype."""
    with pytest.raises(TypeError):
        tp.from_numpy(np.zeros(2, dtype=np_dtype))


def test_from_numpy_rejects_non_arrays():
    """from_numpy takes only np.ndarray."""
    with pytest.raises(TypeError):
        tp.from_numpy([1, 2, 3])


def test_from_numpy_keeps_the_array_alive():
    """The tensor keeps its NumPy memory alive after the array's last name is gone."""
    a = np.arange(1000.0)
    t = tp.from_numpy(a)
    del a
    gc.collect()
    junk = [np.full(1000, 7.0) for _ in range(20)]
    assert t.sum().item() == sum(range(1000))
    del junk


def test_numpy_is_zero_copy():
    """t.numpy() views the tensor's memory: writes go both ways."""
    t = tp.zeros(2, 3)
    n = t.numpy()
    n[1, 2] = 5.0
    assert t[1, 2].item() == 5.0
    t.add_(1)
    assert n[0, 0] == 1.0 and n[1, 2] == 6.0


def test_numpy_of_a_strided_view():
    """.numpy() of a strided view has the view's values and shares memory with the base."""
    t = tp.arange(12.0).view(3, 4)
    n = t.t()[1:, ::2].numpy()
    np.testing.assert_array_equal(n, np.arange(12.0).reshape(3, 4).T[1:, ::2])
    n[0, 0] = -1.0
    assert t[0, 1].item() == -1.0


def test_numpy_keeps_the_storage_alive():
    """The array from .numpy() stays valid after the tensor dies and memory is reused."""
    t = tp.arange(1000, dtype=tp.int64)
    n = t.numpy()
    del t
    gc.collect()
    others = [tp.full((1000,), 7, dtype=tp.int64) for _ in range(20)]
    np.testing.assert_array_equal(n, np.arange(1000))
    del others


def test_numpy_of_requires_grad_tensor_raises():
    """.numpy() on a tensor that requires grad raises; detach().numpy() works."""
    t = tp.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="detach"):
        t.numpy()
    np.testing.assert_array_equal(t.detach().numpy(), [1.0, 1.0])


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_array_protocol(dtype):
    """np.asarray(t) and np.array(t, dtype=...) give the tensor's values."""
    a = _sample(dtype)
    t = tp.tensor(a)
    np.testing.assert_array_equal(np.asarray(t), a)
    assert np.asarray(t).dtype == a.dtype
    np.testing.assert_array_equal(np.array(t, dtype=np.float64), a.astype(np.float64))
    np.testing.assert_array_equal(np.asarray(t.t()), a.T)


def test_array_protocol_with_requires_grad():
    """np.asarray works on a tensor that requires grad (as a detached view)."""
    t = tp.ones(2, requires_grad=True)
    np.testing.assert_array_equal(np.asarray(t), [1.0, 1.0])


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_tolist_gives_python_numbers(dtype):
    """tolist() gives nested lists of Python bool/int/float equal to NumPy's tolist()."""
    a = _sample(dtype)
    result = tp.tensor(a).tolist()
    assert result == a.tolist()
    python_type = bool if dtype is tp.bool else (float if dtype.is_floating_point else int)
    assert all(type(x) is python_type for row in result for x in row)
    assert tp.tensor(a).t().tolist() == a.T.tolist()


def test_tolist_of_zero_dim_is_a_number():
    """tolist() of a 0-d tensor is a plain number."""
    assert tp.ones(()).tolist() == 1.0
    assert tp.zeros((), dtype=tp.int64).tolist() == 0


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_item(dtype):
    """item() of a one-element tensor (any ndim) is the Python number of the right type."""
    value = _sample(dtype, (1, 1, 1))
    t = tp.tensor(value)
    got = t.item()
    assert got == value.item()
    assert type(got) is type(value.item())
    assert tp.tensor(value.reshape(1)).reshape(()).item() == value.item()


def test_item_of_multi_element_raises():
    """item() of more than one element raises RuntimeError."""
    with pytest.raises(RuntimeError):
        tp.zeros(2).item()
    with pytest.raises(RuntimeError):
        tp.zeros(0).item()


def test_float_int_bool_conversions():
    """float(t), int(t), bool(t) of a one-element tensor; bool() of several raises."""
    t = tp.tensor([2.5])
    assert float(t) == 2.5 and int(t) == 2 and bool(t) is True
    with pytest.raises(RuntimeError):
        bool(tp.ones(2))
    assert [10, 20, 30][tp.tensor([1])] == 20  # __index__ for integer tensors
    with pytest.raises(TypeError):
        [10, 20][tp.tensor([1.0])]


def test_float16_values_survive_the_round_trip():
    """float16 extremes, subnormals, inf and nan round-trip bit for bit."""
    a = np.array([65504, -65504, 6e-8, np.inf, -np.inf, np.nan, -0.0], dtype=np.float16)
    back = tp.from_numpy(a).clone().numpy()
    np.testing.assert_array_equal(back.view(np.uint16), a.view(np.uint16))


def test_integer_extremes_survive_the_round_trip():
    """int64 and uint8 extremes round-trip through tensor() and tolist() exactly."""
    big = [2**63 - 1, -(2**63), 2**53 + 1]
    assert tp.tensor(big).tolist() == big
    assert tp.tensor([0, 255], dtype=tp.uint8).tolist() == [0, 255]


def test_numpy_scalars_count_as_python_numbers():
    """np.float32(2) and friends mix with tensors as the Python number of their kind (PyTorch's rule):
    the tensor's dtype wins within its category, a float scalar makes an integer tensor float."""
    assert (tp.ones(2, dtype=tp.int32) * np.float32(2)).dtype == tp.float32
    assert (tp.ones(2, dtype=tp.float16) * np.float32(2)).dtype == tp.float16
    assert (tp.ones(2, dtype=tp.int8) + np.int64(3)).dtype == tp.int8
    assert (tp.ones(2, dtype=tp.int8) > np.bool_(True)).dtype == tp.bool
    assert tp.where(tp.ones(2) > 0, np.float32(1.5), 0).tolist() == [1.5, 1.5]
    assert (tp.arange(4, dtype=tp.int32) ^ np.int32(3)).tolist() == [3, 2, 1, 0]
    assert tp.full((2,), np.float32(3)).dtype == tp.float32
