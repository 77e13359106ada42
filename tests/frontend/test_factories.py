"""Tensor factories: dtype inference, values against NumPy, dtype=/device= arguments, errors."""
import time

import numpy as np
import pytest

import tensorplug as tp

DTYPES = [tp.bool, tp.uint8, tp.int8, tp.int16, tp.int32, tp.int64, tp.float16, tp.float32, tp.float64]


@pytest.mark.parametrize(
    "data, dtype, shape",
    [
        ([1.5, 2.0], tp.float32, (2,)),
        ([1, 2, 3], tp.int64, (3,)),
        ([True, False], tp.bool, (2,)),
        ([[1, 2], [3, 4]], tp.int64, (2, 2)),
        ([1, 2.5], tp.float32, (2,)),
        ([True, 2], tp.int64, (2,)),
        ([[]], tp.float32, (1, 0)),
        ([], tp.float32, (0,)),
        (np.array([1.0, 2.0]), tp.float64, (2,)),
        (np.array([1, 2], dtype=np.int32), tp.int32, (2,)),
        (np.array([1, 2], dtype=np.uint8), tp.uint8, (2,)),
        (np.array([0.5], dtype=np.float16), tp.float16, (1,)),
    ],
    ids=lambda v: repr(v) if not isinstance(v, tuple) else None,
)
def test_tensor_infers_dtype(data, dtype, shape):
    """tp.tensor: Python floats -> float32, ints -> int64, bools -> bool, NumPy arrays keep theirs."""
    t = tp.tensor(data)
    assert t.dtype is dtype
    assert tuple(t.shape) == shape
    np.testing.assert_array_equal(t.numpy(), np.asarray(data, dtype=dtype.name).reshape(shape))


@pytest.mark.parametrize(
    "value, dtype",
    [(3.5, tp.float32), (3, tp.int64), (True, tp.bool), (np.float64(2.5), tp.float64), (np.int32(7), tp.int32)],
    ids=repr,
)
def test_tensor_of_a_scalar_is_zero_dim(value, dtype):
    """tp.tensor(number) is a 0-d tensor with the number's dtype and value."""
    t = tp.tensor(value)
    assert t.shape == ()
    assert t.ndim == 0
    assert t.dtype is dtype
    assert t.item() == value


def test_tensor_of_zero_dim_numpy_array_is_zero_dim():
    """tp.tensor(np.array(2.0)) keeps the 0-d shape."""
    t = tp.tensor(np.array(2.0))
    assert t.shape == ()
    assert t.item() == 2.0


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_tensor_dtype_argument_converts(dtype):
    """tp.tensor(data, dtype=...) converts the values like NumPy's astype."""
    data = [[0, 1, 2], [3, 0, 1]]
    t = tp.tensor(data, dtype=dtype)
    assert t.dtype is dtype
    np.testing.assert_array_equal(t.numpy(), np.array(data).astype(dtype.name))


def test_tensor_of_floats_to_int_dtype_truncates():
    """tp.tensor([1.7, -1.7], dtype=int64) truncates toward zero (C cast)."""
    assert tp.tensor([1.7, -1.7], dtype=tp.int64).tolist() == [1, -1]


def test_tensor_copies_its_input():
    """tp.tensor copies a NumPy array and a tensor (no memory shared)."""
    a = np.zeros(3)
    t = tp.tensor(a)
    a[0] = 5
    assert t.tolist() == [0.0, 0.0, 0.0]
    u = tp.tensor(t)
    t.fill_(1.0)
    assert u.tolist() == [0.0, 0.0, 0.0]


def test_as_tensor_shares_numpy_memory():
    """tp.as_tensor of a NumPy array shares memory; with another dtype it converts."""
    a = np.zeros(3, dtype=np.float32)
    t = tp.as_tensor(a)
    a[1] = 7
    assert t.tolist() == [0.0, 7.0, 0.0]
    assert tp.as_tensor(a, dtype=tp.float64).dtype is tp.float64


@pytest.mark.parametrize("factory, value", [(tp.zeros, 0), (tp.ones, 1)])
@pytest.mark.parametrize("dtype", DTYPES + [None], ids=lambda d: getattr(d, "name", "default"))
def test_zeros_ones(factory, value, dtype):
    """zeros/ones take varargs or a tuple, dtype= (default float32) and device="cpu"."""
    t = factory(2, 3, dtype=dtype, device="cpu")
    expected_dtype = tp.float32 if dtype is None else dtype
    assert t.dtype is expected_dtype
    assert t.device.type == "cpu"
    assert t.shape == (2, 3)
    np.testing.assert_array_equal(t.numpy(), np.full((2, 3), value, dtype=expected_dtype.name))
    assert factory((2, 3), dtype=dtype).shape == (2, 3)
    assert factory([4]).shape == (4,)
    assert factory(()).shape == ()
    assert factory(0, 3).shape == (0, 3)


@pytest.mark.parametrize(
    "fill, dtype, expected",
    [(2, None, tp.int64), (2.5, None, tp.float32), (True, None, tp.bool), (3, tp.float64, tp.float64), (1.9, tp.int32, tp.int32)],
    ids=repr,
)
def test_full(fill, dtype, expected):
    """full() infers the dtype from the fill value as PyTorch does; dtype= overrides."""
    t = tp.full((2, 2), fill, dtype=dtype)
    assert t.dtype is expected
    np.testing.assert_array_equal(t.numpy(), np.full((2, 2), fill).astype(expected.name))


def test_empty_has_shape_and_dtype():
    """empty() allocates the right shape and dtype (values are unspecified)."""
    t = tp.empty(3, 4, dtype=tp.int16)
    assert t.shape == (3, 4) and t.dtype is tp.int16 and t.is_contiguous()
    assert tp.empty((2,)).dtype is tp.float32


@pytest.mark.parametrize(
    "args, kwargs",
    [((5,), {}), ((2, 9), {}), ((2, 9, 3), {}), ((10, 0, -3), {}), ((0,), {}), ((-3, 3), {}),
     ((0.0, 1.0, 0.1), {}), ((1, 2.5, 0.5), {}), ((0, 5), {"dtype": tp.float64}), ((5.0,), {}),
     ((0, 10, 3), {"dtype": tp.int16})],
    ids=str,
)
def test_arange_matches_numpy(args, kwargs):
    """arange: int arguments give int64, any float gives float32, values as np.arange."""
    t = tp.arange(*args, **kwargs)
    all_int = all(isinstance(v, int) for v in args)
    expected_dtype = kwargs.get("dtype", tp.int64 if all_int else tp.float32)
    assert t.dtype is expected_dtype
    expected = np.arange(*args, dtype=np.float64 if not all_int else np.int64)
    np.testing.assert_allclose(t.numpy().astype(np.float64), expected, rtol=1e-6, atol=1e-6)
    assert t.shape == expected.shape


def test_arange_errors():
    """arange with a zero step or a step of the wrong sign raises RuntimeError."""
    with pytest.raises(RuntimeError):
        tp.arange(0, 5, 0)
    with pytest.raises(RuntimeError):
        tp.arange(0, 5, -1)
    with pytest.raises(RuntimeError):
        tp.arange(0, float("inf"))


@pytest.mark.parametrize("start, end, steps", [(0, 1, 5), (-2, 3, 11), (1, 1, 1), (0, 1, 0), (3, -3, 4)])
@pytest.mark.parametrize("dtype", [None, tp.float64])
def test_linspace_matches_numpy(start, end, steps, dtype):
    """linspace gives np.linspace's values in float32 (default) or the asked dtype."""
    t = tp.linspace(start, end, steps, dtype=dtype)
    expected_dtype = dtype or tp.float32
    assert t.dtype is expected_dtype
    np.testing.assert_allclose(t.numpy(), np.linspace(start, end, steps), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("n, m", [(3, None), (2, 4), (4, 2), (0, None), (1, 1)])
@pytest.mark.parametrize("dtype", [None, tp.int64, tp.bool])
def test_eye_matches_numpy(n, m, dtype):
    """eye(n, m) is NumPy's identity, in the asked dtype."""
    t = tp.eye(n, m, dtype=dtype)
    expected_dtype = dtype or tp.float32
    assert t.dtype is expected_dtype
    np.testing.assert_array_equal(t.numpy(), np.eye(n, m, dtype=expected_dtype.name))


@pytest.mark.parametrize("like, value", [(tp.zeros_like, 0), (tp.ones_like, 1), (lambda t, **k: tp.full_like(t, 7, **k), 7)])
def test_like_factories(like, value):
    """*_like copy shape, dtype and device from the input; dtype= overrides; layout is contiguous."""
    src = tp.zeros(4, 3, dtype=tp.int32).t()
    t = like(src)
    assert t.shape == (3, 4) and t.dtype is tp.int32 and t.device == src.device
    assert t.is_contiguous()
    np.testing.assert_array_equal(t.numpy(), np.full((3, 4), value, dtype=np.int32))
    f = like(src, dtype=tp.float64, device="cpu")
    assert f.dtype is tp.float64
    np.testing.assert_array_equal(f.numpy(), np.full((3, 4), value, dtype=np.float64))
    e = tp.empty_like(src)
    assert e.shape == (3, 4) and e.dtype is tp.int32


def test_requires_grad_argument():
    """Float factories accept requires_grad=True; integer ones refuse it."""
    assert tp.zeros(2, requires_grad=True).requires_grad
    assert tp.tensor([1.0], requires_grad=True).requires_grad
    with pytest.raises(RuntimeError):
        tp.zeros(2, dtype=tp.int64, requires_grad=True)


def test_device_argument_forms():
    """device="cpu", tp.device("cpu") and the default all make CPU tensors."""
    for dev in ("cpu", tp.device("cpu"), None):
        t = tp.ones(2, device=dev)
        assert t.device.type == "cpu"
        assert t.is_cpu


@pytest.mark.parametrize("factory", [tp.empty, tp.zeros, tp.ones, tp.rand, tp.randn])
def test_negative_dimension_raises(factory):
    """A negative size raises RuntimeError naming the negative dimension."""
    with pytest.raises(RuntimeError, match="negative dimension"):
        factory(-1)
    with pytest.raises(RuntimeError, match="negative dimension -2"):
        factory(3, -2)


@pytest.mark.parametrize("size", [2**62, 2**40, (2**31, 2**31)], ids=str)
def test_huge_tensor_raises_quickly(size):
    """A tensor too large to exist raises RuntimeError or MemoryError at once; nothing crashes."""
    start = time.perf_counter()
    with pytest.raises((RuntimeError, MemoryError)):
        tp.empty(*size) if isinstance(size, tuple) else tp.empty(size)
    assert time.perf_counter() - start < 2.0


def test_bad_size_type_raises():
    """A non-integer size raises TypeError."""
    with pytest.raises(TypeError):
        tp.zeros(2.5)
    with pytest.raises(TypeError):
        tp.zeros("3")


def test_ragged_data_raises():
    """Nested lists of unequal lengths cannot make a tensor."""
    with pytest.raises((ValueError, TypeError)):
        tp.tensor([[1, 2], [3]])


def test_non_numeric_data_raises():
    """Strings and other objects cannot make a tensor."""
    with pytest.raises(TypeError):
        tp.tensor(["a", "b"])
    with pytest.raises(TypeError):
        tp.tensor([object()])


@pytest.mark.parametrize("name, fill", [("new_zeros", 0.0), ("new_ones", 1.0), ("new_empty", None)])
@pytest.mark.parametrize("size", [(2, 3), ((2, 3),), ([2, 3],)], ids=["varargs", "tuple", "list"])
def test_new_factories_take_sizes_as_varargs_or_one_sequence(name, fill, size):
    """t.new_zeros(2, 3) and t.new_zeros((2, 3)) both give a (2, 3) tensor of t's dtype and device,
    as PyTorch's word_language_model writes weight.new_zeros(nlayers, bsz, nhid) (issue 13)."""
    base = tp.ones(4, dtype=tp.float64)
    made = getattr(base, name)(*size)
    assert made.shape == (2, 3) and made.dtype == tp.float64 and made.device == base.device
    if fill is not None:
        np.testing.assert_array_equal(made.numpy(), np.full((2, 3), fill))


def test_new_empty_strided_matches_pytorch():
    """t.new_empty_strided(size, stride) (missing before; found by a probe against PyTorch 2.13):
    the strides asked for, t's dtype and device unless given, and not requiring grad."""
    torch = pytest.importorskip("torch", reason="PyTorch 2.13 is the reference here")
    for L in (torch, tp):
        base = L.ones(4, dtype=L.float64, requires_grad=True)
        made = base.new_empty_strided((2, 3), (1, 2))
        assert (tuple(made.shape), made.stride(), made.dtype, made.requires_grad) == ((2, 3), (1, 2), L.float64, False)
        assert base.new_empty_strided([2], [3], dtype=L.int32).dtype == L.int32
        with pytest.raises(TypeError):
            base.new_empty_strided((2, 2), (1, 2), L.int32)  # dtype is keyword-only


# Found by tools/fuzz_native.py: a narrowing conversion in tp.tensor (1e300 to float32, to
# bfloat16 or float8) raised NumPy's "overflow encountered in cast" RuntimeWarning, an error under
# warnings-as-errors; PyTorch converts silently to inf (or the float8 type's overflow value).
def test_tensor_narrowing_to_a_float_dtype_is_silent():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert tp.tensor([1e300, -1e300, 1.0], dtype=tp.float32).tolist() == [float("inf"), float("-inf"), 1.0]
        assert tp.tensor(np.array([1e300]), dtype=tp.float16).tolist() == [float("inf")]
        assert tp.tensor([1e300], dtype=tp.bfloat16).tolist() == [float("inf")]
        assert tp.tensor([1e300], dtype=tp.float8_e4m3fn).tolist() == [448.0]


# PyTorch 2.13 has no bool kernel for the ranges ("arange_cpu" not implemented for 'Bool') and
# reads a Python type given to Tensor.type() as a type name it does not know.
@pytest.mark.parametrize("make", [lambda: tp.arange(3, dtype=tp.bool), lambda: tp.linspace(0, 1, 3, dtype=tp.bool),
                                  lambda: tp.logspace(0, 1, 3, dtype=tp.bool)])
def test_ranges_of_bool_are_refused(make):
    with pytest.raises(NotImplementedError, match=r"(arange|linspace|logspace)\(\): not implemented for dtype bool"):
        make()


@pytest.mark.parametrize("python_type", [bool, int, float, object])
def test_type_of_a_python_type_is_an_invalid_type_name(python_type):
    with pytest.raises(ValueError, match=f"invalid type: '{python_type.__name__}'"):
        tp.ones(2).type(python_type)
