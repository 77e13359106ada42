"""Indexing t[...] and t[...] = v (basic and advanced) and the gather/scatter family, vs NumPy."""
import numpy as np
import pytest

import tensorplug as tp


def _np_index(i):
    return np.array(i)


def _tp_index(i):
    if np.ndim(i) == 0:  # a 0-d index tensor, built without relying on tp.tensor(scalar)
        return tp.tensor([i]).reshape(())
    return tp.tensor(i)


# Each case is a function of a maker that turns a Python list into an index array (NumPy) or
# index tensor (tensorplug); lists are also used as they are.
READ_CASES = {
    "int": lambda I: 1,
    "negative_int": lambda I: -1,
    "two_ints": lambda I: (1, -2),
    "three_ints": lambda I: (0, 2, 3),
    "slice": lambda I: slice(1, 3),
    "slice_step": lambda I: (slice(None, None, 2), slice(1, None, 2)),
    "slice_negative_bounds": lambda I: (slice(-2, None), slice(None, -1)),
    "slice_out_of_range_bounds": lambda I: (slice(-10, 10), slice(3, 100)),
    "empty_slice": lambda I: slice(2, 1),
    "none": lambda I: None,
    "none_middle": lambda I: (slice(None), None, 1),
    "ellipsis": lambda I: (Ellipsis, 1),
    "ellipsis_none": lambda I: (None, Ellipsis, slice(None, None, 2)),
    "ellipsis_alone": lambda I: Ellipsis,
    "int_list": lambda I: [0, 2, 2],
    "int_tensor": lambda I: I([2, 0]),
    "negative_index_tensor": lambda I: I([-1, -3]),
    "2d_index_tensor": lambda I: I([[0, 1], [2, 2]]),
    "bool_mask_first_dim": lambda I: I([True, False, True]),
    "bool_mask_full": lambda I: I(np.arange(60).reshape(3, 4, 5) % 3 == 0),
    "bool_mask_two_dims": lambda I: I(np.arange(12).reshape(3, 4) % 5 == 1),
    "mask_then_slice": lambda I: (I([False, True, True]), slice(1, 3)),
    "slice_then_index": lambda I: (slice(None), I([3, 0])),
    "adjacent_advanced": lambda I: (slice(None), I([0, 3]), I([1, 4])),
    "non_adjacent_advanced": lambda I: (I([0, 2]), slice(None), I([1, 4])),
    "broadcast_advanced": lambda I: (I([[0], [2]]), I([1, 3])),
    "advanced_and_int": lambda I: (I([0, 2]), 1),
    "int_splits_advanced": lambda I: (I([0, 2]), slice(1, 3), I([4, 0])),
    "advanced_with_ellipsis": lambda I: (Ellipsis, I([0, 4])),
    "advanced_with_none": lambda I: (None, I([1, 2]), slice(None, None, 3)),
    "scalar_index_tensor": lambda I: I(1),
}


@pytest.fixture
def data():
    """A (3, 4, 5) float64 tensor with distinct values, and the same values in NumPy."""
    values = np.arange(60, dtype=np.float64).reshape(3, 4, 5)
    return tp.tensor(values), values


@pytest.mark.parametrize("name", list(READ_CASES))
def test_getitem_matches_numpy(data, name):
    """t[index] has NumPy's shape and values, including where advanced dims go."""
    t, a = data
    case = READ_CASES[name]
    result = t[case(_tp_index)]
    expected = a[case(_np_index)]
    assert tuple(result.shape) == expected.shape
    np.testing.assert_array_equal(result.numpy(), expected)


@pytest.mark.parametrize("name", list(READ_CASES))
def test_getitem_of_a_transposed_tensor(name):
    """Indexing a non-contiguous tensor gives NumPy's result on the same view."""
    base = np.arange(60, dtype=np.int32).reshape(5, 4, 3)
    t = tp.tensor(base).permute(2, 1, 0)
    a = base.transpose(2, 1, 0)
    case = READ_CASES[name]
    np.testing.assert_array_equal(t[case(_tp_index)].numpy(), a[case(_np_index)])


def _is_basic(index):
    items = index if isinstance(index, tuple) else (index,)
    return all(i is None or i is Ellipsis or isinstance(i, (int, slice)) for i in items)


BASIC = [n for n, case in READ_CASES.items() if _is_basic(case(_np_index))]


@pytest.mark.parametrize("name", BASIC)
def test_basic_indexing_returns_a_view(data, name):
    """Ints, slices, None and Ellipsis give a view sharing storage with the tensor."""
    t, _ = data
    result = t[READ_CASES[name](_tp_index)]
    assert result.untyped_storage() is t.untyped_storage()


@pytest.mark.parametrize("name", ["int_list", "int_tensor", "bool_mask_first_dim", "adjacent_advanced"])
def test_advanced_indexing_returns_a_copy(data, name):
    """Advanced indexing copies: writing into the result leaves the tensor alone."""
    t, a = data
    result = t[READ_CASES[name](_tp_index)]
    result.fill_(-1.0)
    np.testing.assert_array_equal(t.numpy(), a)


# (index case, value maker): the value is a Python number or an array NumPy broadcasts.
WRITE_CASES = {
    "int_scalar": (lambda I: 1, lambda shape: -1.0),
    "slice_scalar": (lambda I: (slice(None), slice(1, 3)), lambda shape: 7.0),
    "step_tensor": (lambda I: (slice(None, None, 2), 1), lambda shape: np.arange(10.0).reshape(shape)),
    "broadcast_row": (lambda I: (slice(None), 2), lambda shape: np.arange(5.0) * -1),
    "ellipsis_column": (lambda I: (Ellipsis, 0), lambda shape: np.arange(4.0).reshape(1, 4)),
    "none_index": (lambda I: (None, 0), lambda shape: np.full(shape, 3.0)),
    "int_list_scalar": (lambda I: [0, 2], lambda shape: 5.0),
    "int_tensor_values": (lambda I: I([2, 0]), lambda shape: np.arange(40.0).reshape(shape)),
    "index_tensor_broadcast_value": (lambda I: I([1, 2]), lambda shape: np.arange(5.0)),
    "mask_scalar": (lambda I: I(np.arange(60).reshape(3, 4, 5) % 4 == 0), lambda shape: 0.5),
    "mask_values": (lambda I: I(np.arange(60).reshape(3, 4, 5) % 7 == 0), lambda shape: np.arange(float(shape[0]))),
    "mask_first_dim": (lambda I: I([True, False, True]), lambda shape: np.arange(20.0).reshape(4, 5)),
    "adjacent_advanced": (lambda I: (slice(None), I([0, 3]), I([1, 4])), lambda shape: np.arange(6.0).reshape(shape)),
    "non_adjacent_advanced": (lambda I: (I([0, 2]), slice(None), I([1, 4])), lambda shape: np.arange(8.0).reshape(shape)),
    "non_adjacent_broadcast_value": (lambda I: (I([0, 2]), slice(None), I([1, 4])), lambda shape: np.arange(4.0)),
    "negative_index_tensor": (lambda I: (I([-1]), -1), lambda shape: 9.0),
}


@pytest.mark.parametrize("name", list(WRITE_CASES))
def test_setitem_matches_numpy(data, name):
    """t[index] = value writes what NumPy's a[index] = value writes (with broadcasting)."""
    t, a = data
    index, make_value = WRITE_CASES[name]
    shape = a[index(_np_index)].shape
    value = make_value(shape)
    expected = a.copy()
    expected[index(_np_index)] = value
    version = t._version
    t[index(_tp_index)] = tp.tensor(value) if isinstance(value, np.ndarray) else value
    np.testing.assert_array_equal(t.numpy(), expected)
    assert t._version > version


def test_setitem_through_a_view_writes_the_base():
    """Setting items of a strided view changes the base tensor."""
    a = np.zeros((4, 6))
    t = tp.tensor(a)
    view = t[1:, ::2]
    view[[0, 2], 1] = 5.0
    a[1:, ::2][[0, 2], 1] = 5.0
    np.testing.assert_array_equal(t.numpy(), a)


def test_setitem_converts_value_dtype():
    """Values of another dtype are converted to the tensor's dtype (floats truncate into ints)."""
    t = tp.zeros(4, dtype=tp.int32)
    t[1:3] = tp.tensor([2.7, -3.2])
    t[tp.tensor([0])] = tp.tensor([9.9], dtype=tp.float64)
    assert t.tolist() == [9, 2, -3, 0]
    assert t.dtype is tp.int32


def test_setitem_with_a_list_value():
    """A nested list value is converted to a tensor first."""
    t = tp.zeros(2, 3)
    t[:, 1:] = [[1.0, 2.0], [3.0, 4.0]]
    assert t.tolist() == [[0.0, 1.0, 2.0], [0.0, 3.0, 4.0]]


# PyTorch (as NumPy) drops a value's leading size-1 dims before broadcasting it into the target:
# CleanRL's PPO writes `advantages[t] = lastgaelam = delta + ...` with a (1, envs) delta into a row.
@pytest.mark.parametrize("index, value_shape", [
    (1, (1, 4)), (0, (1, 1, 4)), ((slice(None),), (1, 3, 4)), (([0, 2],), (1, 2, 4)), ((1, slice(2, 3)), (1, 1, 1)),
])
def test_setitem_drops_the_values_leading_ones(index, value_shape):
    value = np.arange(np.prod(value_shape), dtype=np.float64).reshape(value_shape) + 1
    expected = np.zeros((3, 4))
    expected[index] = value
    actual = tp.zeros(3, 4, dtype=tp.float64)
    actual[index] = tp.tensor(value)
    np.testing.assert_array_equal(actual.numpy(), expected)


def test_setitem_of_a_value_with_leading_ones_passes_its_gradient():
    row = tp.ones(1, 4, requires_grad=True)
    target = tp.zeros(3, 4)
    target[1] = row * 2
    target.sum().backward()
    np.testing.assert_array_equal(row.grad.numpy(), np.full((1, 4), 2.0))


def test_setitem_of_a_value_with_more_rows_still_raises():
    target = tp.zeros(3, 4)
    with pytest.raises(RuntimeError, match=r"\[2, 4\].*\[4\]"):
        target[1] = tp.ones(2, 4)


@pytest.mark.parametrize("index", [3, -4, (0, 5), (slice(None), 4)], ids=str)
def test_out_of_range_int_raises(index):
    """An int index outside the dim raises IndexError for reads and writes."""
    t = tp.zeros(3, 4)
    with pytest.raises(IndexError):
        t[index]
    with pytest.raises(IndexError):
        t[index] = 1.0


@pytest.mark.parametrize("index", [[3], [-4], [0, 1, 7]], ids=str)
@pytest.mark.parametrize("size", [3, 50_000])
def test_out_of_range_index_tensor_raises(index, size):
    """An index tensor with a value outside the dim raises IndexError, reading and writing."""
    t = tp.zeros(3, 4)
    idx = tp.tensor(index * (size // len(index) if size > 3 else 1))
    with pytest.raises(IndexError):
        t[idx]
    with pytest.raises(IndexError):
        t[idx] = 1.0
    with pytest.raises(IndexError):
        t[:, tp.tensor([0, 4])]


def test_too_many_indices_raise():
    """More indices than dims raise IndexError."""
    with pytest.raises(IndexError):
        tp.zeros(2, 3)[0, 0, 0]


def test_float_index_tensor_raises():
    """Float index tensors are not indices: IndexError."""
    t = tp.zeros(3)
    with pytest.raises(IndexError):
        t[tp.tensor([0.0, 1.0])]
    with pytest.raises(IndexError):
        t[tp.tensor([1.0])] = 2.0
    with pytest.raises(IndexError):
        t[1.0]


def test_mask_of_wrong_shape_raises():
    """A bool mask whose shape does not match the indexed dims raises IndexError."""
    with pytest.raises(IndexError):
        tp.zeros(3, 4)[tp.tensor([True, False])]


def test_index_tensor_of_each_integer_dtype():
    """int64 and int32 index tensors index (uint8 and bool are masks); PyTorch 2.13 refuses int8
    and int16 (test_index_tensor_of_a_refused_dtype_raises_naming_it)."""
    a = np.arange(10.0)
    t = tp.tensor(a)
    for dtype in (tp.int64, tp.int32):
        np.testing.assert_array_equal(t[tp.tensor([3, 1, -1], dtype=dtype)].numpy(), a[[3, 1, -1]])
    np.testing.assert_array_equal(t[tp.tensor(a > 6)].numpy(), a[a > 6])


def test_large_index_tensor_and_mask():
    """Index tensors and masks over 50k elements (parallel kernels) match NumPy."""
    rng = np.random.default_rng(9)
    a = rng.uniform(size=60_000)
    t = tp.tensor(a)
    idx = rng.integers(-60_000, 60_000, 50_000)
    np.testing.assert_array_equal(t[tp.tensor(idx)].numpy(), a[idx])
    mask = a > 0.3
    np.testing.assert_array_equal(t[tp.tensor(mask)].numpy(), a[mask])
    t[tp.tensor(mask)] = 0.0
    expected = a.copy()
    expected[mask] = 0.0
    np.testing.assert_array_equal(t.numpy(), expected)


# --- the gather/scatter family -----------------------------------------------------------------
@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("dtype", [tp.float32, tp.int64, tp.bool, tp.float16], ids=lambda d: d.name)
def test_gather_matches_take_along_axis(dim, dtype):
    """gather(t, dim, index) is np.take_along_axis (index may be smaller off dim)."""
    rng = np.random.default_rng(10)
    a = rng.integers(0, 5, (3, 4)).astype(dtype.name)
    size = a.shape[dim]
    index = rng.integers(0, size, (3, 4))
    if dim == 0:
        index = index[:2]
    expected = np.take_along_axis(a, index, axis=dim)
    result = tp.gather(tp.tensor(a), dim, tp.tensor(index))
    assert result.dtype is dtype
    np.testing.assert_array_equal(result.numpy(), expected)
    transposed = tp.tensor(np.ascontiguousarray(a.T)).t()  # same values, non-contiguous
    np.testing.assert_array_equal(transposed.gather(dim, tp.tensor(index)).numpy(), expected)


def _scatter_reference(base, dim, index, src, add):
    out = base.copy()
    for pos in np.ndindex(*index.shape):
        target = list(pos)
        target[dim] = index[pos]
        value = src[pos] if isinstance(src, np.ndarray) else src
        if add:
            out[tuple(target)] += value
        else:
            out[tuple(target)] = value
    return out


@pytest.mark.parametrize("dim", [0, 1])
def test_scatter_matches_loop_reference(dim):
    """scatter writes src[pos] at index[pos] along dim (distinct targets)."""
    base = np.zeros((3, 4))
    index = np.array([[0, 1, 2, 0], [2, 0, 1, 1]]) if dim == 0 else np.array([[3, 1], [0, 2], [1, 3]])
    src = np.arange(12.0).reshape(3, 4) + 1
    result = tp.scatter(tp.tensor(base), dim, tp.tensor(index), tp.tensor(src))
    np.testing.assert_array_equal(result.numpy(), _scatter_reference(base, dim, index, src, add=False))
    scalar = tp.scatter(tp.tensor(base), dim, tp.tensor(index), value=2.5)
    np.testing.assert_array_equal(scalar.numpy(), _scatter_reference(base, dim, index, 2.5, add=False))


@pytest.mark.parametrize("dtype", [tp.float64, tp.int64], ids=lambda d: d.name)
def test_scatter_add_accumulates_duplicates(dtype):
    """scatter_add sums every src element sent to the same place (like np.add.at)."""
    base = np.ones((3, 4)).astype(dtype.name)
    index = np.array([[0, 0, 2, 0], [0, 1, 2, 2], [1, 1, 1, 1]])
    src = np.arange(12).reshape(3, 4).astype(dtype.name)
    result = tp.scatter_add(tp.tensor(base), 0, tp.tensor(index), tp.tensor(src))
    np.testing.assert_array_equal(result.numpy(), _scatter_reference(base, 0, index, src, add=True))
    t = tp.tensor(base)
    t.scatter_add_(0, tp.tensor(index), tp.tensor(src))
    np.testing.assert_array_equal(t.numpy(), result.numpy())


def test_scatter_does_not_modify_input_but_scatter_underscore_does():
    """scatter returns a new tensor; scatter_ writes in place and bumps the version."""
    t = tp.zeros(3)
    out = tp.scatter(t, 0, tp.tensor([1]), tp.tensor([5.0]))
    assert t.tolist() == [0.0, 0.0, 0.0] and out.tolist() == [0.0, 5.0, 0.0]
    version = t._version
    t.scatter_(0, tp.tensor([2]), tp.tensor([7.0]))
    assert t.tolist() == [0.0, 0.0, 7.0]
    assert t._version > version


@pytest.mark.parametrize("op", ["gather", "scatter"])
def test_gather_scatter_out_of_range_index_raises(op):
    """An index value outside the dim raises IndexError from gather and scatter."""
    t = tp.zeros(3, 4)
    index = tp.tensor([[0, 5]])
    with pytest.raises(IndexError):
        if op == "gather":
            tp.gather(t, 1, index)
        else:
            tp.scatter(t, 1, index, tp.ones(1, 2))
    with pytest.raises(IndexError):
        tp.gather(t, 0, tp.tensor([[-4, 0]]))


def test_gather_index_dtype_must_be_int32_or_int64():
    """gather takes an int32 index, as PyTorch 2.13; an int8 or float one raises RuntimeError."""
    assert tp.gather(tp.tensor([5.0, 6.0, 7.0]), 0, tp.tensor([2, 0], dtype=tp.int32)).tolist() == [7.0, 5.0]
    with pytest.raises(RuntimeError, match="int32/int64"):
        tp.gather(tp.zeros(3), 0, tp.tensor([0], dtype=tp.int8))
    with pytest.raises(RuntimeError):
        tp.gather(tp.zeros(3), 0, tp.tensor([0.0]))


@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("index_dtype", [tp.int64, tp.int32], ids=lambda d: d.name)
def test_index_select_matches_take(dim, index_dtype):
    """index_select(t, dim, idx) is np.take(a, idx, axis=dim)."""
    a = np.arange(12.0).reshape(3, 4)
    idx = np.array([2, 0, 2]) if a.shape[dim] > 2 else np.array([1, 0])
    result = tp.index_select(tp.tensor(a), dim, tp.tensor(idx, dtype=index_dtype))
    np.testing.assert_array_equal(result.numpy(), np.take(a, idx, axis=dim))
    with pytest.raises(IndexError):
        tp.index_select(tp.tensor(a), dim, tp.tensor([7]))
    with pytest.raises(RuntimeError):
        tp.index_select(tp.tensor(a), dim, tp.tensor([0.0]))


@pytest.mark.parametrize("shape", [(6,), (3, 4), (2, 3, 4), (0, 3), ()], ids=str)
@pytest.mark.parametrize("dtype", [tp.float32, tp.int64, tp.bool], ids=lambda d: d.name)
def test_nonzero_matches_argwhere(shape, dtype):
    """nonzero() is np.argwhere; nonzero(as_tuple=True) and where(c) are np.nonzero."""
    rng = np.random.default_rng(12)
    a = rng.integers(0, 3, shape).astype(dtype.name) if shape else np.array(1, dtype=dtype.name)
    t = tp.tensor(a.reshape(-1)).reshape(shape)
    result = tp.nonzero(t)
    assert result.dtype is tp.int64
    np.testing.assert_array_equal(result.numpy(), np.argwhere(a))
    if shape:
        for got, expected in zip(tp.nonzero(t, as_tuple=True), np.nonzero(a)):
            np.testing.assert_array_equal(got.numpy(), expected)
        for got, expected in zip(tp.where(t != 0), np.nonzero(a)):
            np.testing.assert_array_equal(got.numpy(), expected)


def test_nonzero_of_a_large_strided_tensor():
    """nonzero on 60k elements viewed with a step matches np.argwhere."""
    rng = np.random.default_rng(13)
    a = rng.integers(0, 4, (400, 300))
    t = tp.tensor(a)[:, ::2]
    np.testing.assert_array_equal(tp.nonzero(t).numpy(), np.argwhere(a[:, ::2]))


def test_take_indexes_the_flattened_tensor():
    """take(t, idx) is np.take(a, idx) on the flattened values, with idx's shape."""
    a = np.arange(12.0).reshape(3, 4)
    idx = np.array([[0, 11], [-1, 5]])
    np.testing.assert_array_equal(tp.take(tp.tensor(a), tp.tensor(idx)).numpy(), np.take(a, idx))
    np.testing.assert_array_equal(tp.take(tp.tensor(a).t(), tp.tensor(idx)).numpy(), np.take(a.T, idx))
    with pytest.raises(IndexError):
        tp.take(tp.tensor(a), tp.tensor([12]))


def test_index_put_accumulate():
    """index_put_(..., accumulate=True) adds duplicates like np.add.at."""
    a = np.zeros(5)
    idx = np.array([0, 1, 1, 4, 1])
    vals = np.arange(5.0) + 1
    t = tp.tensor(a)
    t.index_put_((tp.tensor(idx),), tp.tensor(vals), accumulate=True)
    np.add.at(a, idx, vals)
    np.testing.assert_array_equal(t.numpy(), a)


# NumPy arrays and scalars and ranges as indices, read as PyTorch reads them (a program after
# pytorch/examples' mnist_forward_forward writes `x_[range(x.shape[0]), y] = x.max()`); each
# against NumPy indexing with the same objects.
NUMPY_AND_RANGE_CASES = {
    "int_array": lambda: np.array([0, 2, 3]),
    "int_array_and_int": lambda: (np.array([0, 2]), 1),
    "bool_array": lambda: np.array([True, False, True, False, True]),
    "range": lambda: range(1, 4),
    "range_and_list": lambda: (range(2), [1, 2]),
    "numpy_int_scalar": lambda: np.int64(-1),
    "zero_dim_array": lambda: np.array(2),
    "slice_then_array": lambda: (slice(None), np.array([3, 0])),
    "two_arrays": lambda: (np.array([[0], [4]]), np.array([1, 2, 3])),
}


@pytest.mark.parametrize("name", sorted(NUMPY_AND_RANGE_CASES))
def test_numpy_arrays_and_ranges_as_indices(name, device):
    data = np.arange(20.0).reshape(5, 4)
    index = NUMPY_AND_RANGE_CASES[name]()
    t = tp.tensor(data, device=device)
    np.testing.assert_array_equal(t[index].cpu().numpy(), data[index])
    want = data.copy()
    want[index] = -1.0
    t[index] = -1.0
    np.testing.assert_array_equal(t.cpu().numpy(), want)


# Found by tools/fuzz_native.py: a uint64 index 2**64 - 1 was read as int64 -1, the last
# element, where PyTorch refuses it (int64 and int32 index, uint8 and bool are masks; PyTorch 2.13
# refuses int8 and int16 too).
@pytest.mark.parametrize("dtype", ["int8", "int16", "uint16", "uint32", "uint64", "float32", "complex64"])
def test_index_tensor_of_a_refused_dtype_raises_naming_it(dtype):
    x = tp.arange(4.0)
    index = tp.tensor([1], dtype=getattr(tp, dtype))
    with pytest.raises(IndexError, match=f"must be long, int, byte or bool tensors, got {dtype}"):
        x[index]
    with pytest.raises(IndexError, match=f"got {dtype}"):
        x[index] = 5.0


def test_int32_and_int64_index_tensors_still_index():
    x = np.arange(5.0)
    for dtype in (tp.int32, tp.int64):
        assert tp.arange(5.0)[tp.tensor([4, 0, -1], dtype=dtype)].tolist() == x[[4, 0, -1]].tolist()
