"""PyTorch's type promotion (torch.result_type): categories, priority groups, default dtype.

Expected dtypes are derived in this file from the documented algorithm, never from tensorplug:
operands fall in three priority groups (tensors with dims > zero-dim tensors > Python numbers);
a lower group only takes part when its category (bool < integer < floating) is higher, and a
Python float that takes part contributes the default dtype.
"""
import itertools

import numpy as np
import pytest

import tensorplug as tp

DTYPES = [tp.bool, tp.uint8, tp.int8, tp.int16, tp.int32, tp.int64, tp.float16, tp.float32, tp.float64]


def _category(dtype):
    return 0 if dtype is tp.bool else (2 if dtype.is_floating_point else 1)


def reference_promote(a, b):
    """promote_types: the higher category wins across categories; within one, NumPy's lattice."""
    if _category(a) != _category(b):
        return a if _category(a) > _category(b) else b
    name = np.promote_types(np.dtype(a.name), np.dtype(b.name)).name
    return getattr(tp, name)


@pytest.fixture
def default_float64():
    """Make float64 the default dtype for one test, and restore float32 afterwards."""
    tp.set_default_dtype(tp.float64)
    try:
        yield
    finally:
        tp.set_default_dtype(tp.float32)


def _tensor(dtype, zero_dim=False):
    values = np.array([1, 0, 1]) if dtype is tp.bool else np.array([1, 2, 3])
    t = tp.tensor(values.astype(dtype.name))
    return t[0] if zero_dim else t


@pytest.mark.parametrize("a, b", list(itertools.product(DTYPES, DTYPES)), ids=lambda d: d.name)
def test_promote_types_table(a, b):
    """tp.promote_types gives PyTorch's result for every pair of dtypes."""
    assert tp.promote_types(a, b) is reference_promote(a, b)


@pytest.mark.parametrize("a, b", list(itertools.product(DTYPES, DTYPES)), ids=lambda d: d.name)
def test_tensor_plus_tensor_with_dims(a, b):
    """Two tensors with dims add in promote_types(a, b), with the right values."""
    if a is tp.bool and b is tp.bool:
        expected_dtype = tp.bool
    else:
        expected_dtype = reference_promote(a, b)
    result = tp.add(_tensor(a), _tensor(b))
    assert result.dtype is expected_dtype
    expected = _tensor(a).numpy().astype(np.float64) + _tensor(b).numpy().astype(np.float64)
    if expected_dtype is tp.bool:
        expected = expected != 0
    np.testing.assert_array_equal(result.numpy(), expected.astype(expected_dtype.name))


@pytest.mark.parametrize("dim_dtype, zero_dtype", list(itertools.product(DTYPES, DTYPES)), ids=lambda d: d.name)
def test_zero_dim_tensor_takes_part_only_from_a_higher_category(dim_dtype, zero_dtype):
    """A 0-d tensor changes the result dtype only when its category is higher than the dims tensor's."""
    if _category(zero_dtype) > _category(dim_dtype):
        expected = reference_promote(dim_dtype, zero_dtype)
    else:
        expected = dim_dtype
    assert tp.maximum(_tensor(dim_dtype), _tensor(zero_dtype, zero_dim=True)).dtype is expected
    assert tp.maximum(_tensor(zero_dtype, zero_dim=True), _tensor(dim_dtype)).dtype is expected


@pytest.mark.parametrize("a, b", list(itertools.product(DTYPES, DTYPES)), ids=lambda d: d.name)
def test_two_zero_dim_tensors_promote_normally(a, b):
    """Two 0-d tensors are one priority group: plain promote_types."""
    assert tp.maximum(_tensor(a, True), _tensor(b, True)).dtype is reference_promote(a, b)


SCALAR_CASES = [
    # (tensor dtype, Python number, expected result dtype with float32 default)
    (tp.int32, 2.5, tp.float32),
    (tp.int64, 2.5, tp.float32),
    (tp.uint8, 2.5, tp.float32),
    (tp.bool, 2.5, tp.float32),
    (tp.float16, 1.0, tp.float16),
    (tp.float16, 2, tp.float16),
    (tp.float64, 2.5, tp.float64),
    (tp.int8, 3, tp.int8),
    (tp.uint8, 3, tp.uint8),
    (tp.int16, True, tp.int16),
    (tp.int32, 7, tp.int32),
    (tp.bool, 1, tp.int64),
    (tp.bool, True, tp.bool),
    (tp.float32, True, tp.float32),
]


@pytest.mark.parametrize("dtype, number, expected", SCALAR_CASES, ids=str)
@pytest.mark.parametrize("zero_dim", [False, True], ids=["dims", "zero_dim"])
def test_tensor_plus_python_number(dtype, number, expected, zero_dim):
    """A Python number only changes the dtype when its category is higher (floats: default dtype)."""
    t = _tensor(dtype, zero_dim)
    assert tp.add(t, number).dtype is expected
    assert tp.add(number, t).dtype is expected
    assert (t * number).dtype is expected
    assert (number * t).dtype is expected


def test_python_float_value_is_exact_in_the_result():
    """int32 tensor + 2.5 computes in float32 and keeps the fraction."""
    result = tp.tensor([1, 2], dtype=tp.int32) + 2.5
    np.testing.assert_array_equal(result.numpy(), np.array([3.5, 4.5], dtype=np.float32))


def test_documented_result_type_examples():
    """The examples of torch.result_type's documentation give the documented dtypes."""
    assert (tp.tensor([1, 2], dtype=tp.int32) + 1.0).dtype is tp.float32
    assert (tp.tensor([1, 2], dtype=tp.uint8) + tp.tensor(1)).dtype is tp.uint8
    assert (tp.tensor([1], dtype=tp.int8) + tp.tensor([1], dtype=tp.uint8)).dtype is tp.int16


def test_int_tensor_plus_zero_dim_float64_gives_float64():
    """A 0-d float64 tensor takes part with its own dtype (not the default) against an int tensor."""
    result = tp.tensor([1, 2]) + tp.tensor([0.5], dtype=tp.float64).reshape(())
    assert result.dtype is tp.float64
    np.testing.assert_array_equal(result.numpy(), [1.5, 2.5])


def test_float32_tensor_plus_zero_dim_float64_stays_float32():
    """Same category: the tensor with dims decides."""
    zero_dim = tp.ones((), dtype=tp.float64)
    assert (tp.ones(3) + zero_dim).dtype is tp.float32
    assert (tp.ones(3, dtype=tp.float16) + zero_dim).dtype is tp.float16


def test_integer_true_division_gives_default_float():
    """int / int, int / number and bool / bool divide in float32."""
    a, b = tp.tensor([7, -7]), tp.tensor([2, 2])
    assert (a / b).dtype is tp.float32
    np.testing.assert_array_equal((a / b).numpy(), [3.5, -3.5])
    assert (a / 2).dtype is tp.float32
    assert (2 / a).dtype is tp.float32
    assert (tp.tensor([True]) / tp.tensor([True])).dtype is tp.float32
    assert tp.sqrt(tp.tensor([4])).dtype is tp.float32


@pytest.mark.parametrize("dtype", [tp.float16, tp.float64])
def test_float_division_keeps_float_dtype(dtype):
    """Division of float tensors keeps their dtype."""
    assert (tp.ones(2, dtype=dtype) / 3).dtype is dtype


@pytest.mark.parametrize("op", ["eq", "ne", "lt", "le", "gt", "ge"])
@pytest.mark.parametrize("a, b", [(tp.uint8, tp.int8), (tp.int64, tp.float32), (tp.bool, tp.float16), (tp.float64, tp.int32)],
                         ids=str)
def test_comparisons_give_bool(op, a, b):
    """Comparisons give bool whatever the operand dtypes."""
    assert getattr(tp, op)(_tensor(a), _tensor(b)).dtype is tp.bool
    assert getattr(tp, op)(_tensor(a), 2.5).dtype is tp.bool


def test_comparison_computes_in_the_promoted_dtype():
    """uint8 255 vs int8 -1 compare as int16 (unequal); a float literal rounds to float32."""
    assert (tp.tensor([255], dtype=tp.uint8) == tp.tensor([-1], dtype=tp.int8)).tolist() == [False]
    assert (tp.tensor([255], dtype=tp.uint8) > tp.tensor([-1], dtype=tp.int8)).tolist() == [True]
    assert (tp.tensor([0.1]) == 0.1).tolist() == [True]  # 0.1 becomes float32(0.1)
    assert (tp.tensor([0.1], dtype=tp.float64) == tp.tensor([0.1])).tolist() == [False]
    # int64 2**24 + 1 vs a Python float: both become float32 2**24.
    assert (tp.tensor([2**24 + 1]) == 16777217.0).tolist() == [True]
    assert (tp.tensor([2]) < 2.5).tolist() == [True]


def test_set_default_dtype_changes_python_float_promotion(default_float64):
    """With a float64 default, int tensor + 2.5 and int / int are float64; float tensors keep theirs."""
    assert tp.get_default_dtype() is tp.float64
    assert (tp.tensor([1, 2], dtype=tp.int32) + 2.5).dtype is tp.float64
    assert (tp.tensor([1]) / tp.tensor([2])).dtype is tp.float64
    assert (tp.ones(2, dtype=tp.float32) + 2.5).dtype is tp.float32
    assert (tp.ones(2, dtype=tp.float16) + 2.5).dtype is tp.float16
    assert tp.tensor([1.5]).dtype is tp.float64
    assert tp.zeros(2).dtype is tp.float64
    assert tp.exp(tp.tensor([1])).dtype is tp.float64


def test_default_dtype_is_restored():
    """The default dtype is float32 outside the fixture (tests do not leak it)."""
    assert tp.get_default_dtype() is tp.float32
    assert tp.tensor([1.5]).dtype is tp.float32


def test_set_default_dtype_rejects_integers():
    """Only floating dtypes can be the default dtype."""
    with pytest.raises(TypeError):
        tp.set_default_dtype(tp.int64)
    assert tp.get_default_dtype() is tp.float32


INPLACE_DOWNCASTS = [
    (tp.int64, 2.5),
    (tp.int32, "float32"),
    (tp.int64, "float64"),
    (tp.bool, 1),
    (tp.bool, "int8"),
    (tp.uint8, 0.5),
]


@pytest.mark.parametrize("dtype, other", INPLACE_DOWNCASTS, ids=str)
def test_inplace_downcast_raises(dtype, other):
    """In-place ops whose result category is higher than self's raise and leave self untouched."""
    t = _tensor(dtype)
    before = t.numpy().copy()
    version = t._version
    operand = other if not isinstance(other, str) else _tensor(getattr(tp, other))
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type"):
        t.add_(operand)
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type"):
        t += operand
    np.testing.assert_array_equal(t.numpy(), before)
    assert t._version == version


def test_inplace_same_category_is_allowed():
    """In-place ops that only narrow within a category write in self's dtype."""
    a = tp.tensor([1, 2], dtype=tp.int32)
    a += tp.tensor([10, 20])  # int64 operand
    assert a.dtype is tp.int32 and a.tolist() == [11, 22]
    h = tp.tensor([1.0, 2.0], dtype=tp.float16)
    h.mul_(tp.tensor([0.5, 0.25], dtype=tp.float64))
    assert h.dtype is tp.float16 and h.tolist() == [0.5, 0.5]
    u = tp.tensor([1, 2], dtype=tp.uint8)
    u += tp.tensor([1, 1], dtype=tp.int8)  # computed in int16, written back as uint8
    assert u.dtype is tp.uint8 and u.tolist() == [2, 3]
    f = tp.tensor([1.0, 2.0])
    f += tp.tensor([1, 2])
    assert f.dtype is tp.float32 and f.tolist() == [2.0, 4.0]


def test_out_argument_downcast_raises():
    """out= of a lower category than the result raises, and a higher one receives the values."""
    out = tp.zeros(2, dtype=tp.int64)
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type"):
        tp.add(tp.tensor([1.5, 2.5]), 1, out=out)
    out_f = tp.zeros(2, dtype=tp.float64)
    tp.add(tp.tensor([1, 2]), 1, out=out_f)
    assert out_f.tolist() == [2.0, 3.0]


def test_where_promotes_its_two_branches():
    """where(cond, int tensor, 2.5) is float32; where(cond, int8, uint8) is int16."""
    cond = tp.tensor([True, False])
    assert tp.where(cond, tp.tensor([1, 2]), 2.5).dtype is tp.float32
    assert tp.where(cond, tp.tensor([1, 2], dtype=tp.int8), tp.tensor([3, 4], dtype=tp.uint8)).dtype is tp.int16
    assert tp.where(cond, tp.tensor([1, 2]), 2.5).tolist() == [1.0, 2.5]


def test_reductions_promote_integers_to_int64():
    """sum/cumsum of int and bool tensors are int64; of float16 stay float16."""
    assert tp.sum(tp.tensor([1, 2], dtype=tp.int8)).dtype is tp.int64
    assert tp.sum(tp.tensor([True, True])).dtype is tp.int64
    assert tp.cumsum(tp.tensor([1, 2], dtype=tp.uint8), 0).dtype is tp.int64
    assert tp.sum(tp.ones(3, dtype=tp.float16)).dtype is tp.float16


def test_type_as_takes_the_other_tensors_dtype_and_device():
    """t.type_as(other) is t converted to other's dtype (and device, as a PyTorch type string names
    it), as the distributions' log_prob code writes it (issue 13)."""
    ints = tp.tensor([1, 2, 3])
    converted = ints.type_as(tp.zeros(1, dtype=tp.float64))
    assert converted.dtype == tp.float64 and converted.device == ints.device
    np.testing.assert_array_equal(converted.numpy(), np.array([1.0, 2.0, 3.0]))
    same = converted.type_as(converted)
    assert same.dtype == tp.float64
