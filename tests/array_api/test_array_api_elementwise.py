"""Element-wise functions against NumPy, over hypothesis-drawn shapes, dtypes and values (special
values included for floats)."""
import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

from array_api_support import SETTINGS, assert_matches

FLOATS = ["float32", "float64"]
INTS = ["int8", "int16", "int32", "int64", "uint8"]


def float_arrays(dtype, shape, *, min_value=None, max_value=None, specials=True):
    width = 32 if dtype == "float32" else 64
    elements = st.floats(min_value=min_value, max_value=max_value, width=width,
                         allow_nan=specials and min_value is None and max_value is None,
                         allow_infinity=specials and min_value is None and max_value is None)
    return hnp.arrays(dtype, shape, elements=elements)


def int_arrays(dtype, shape, *, min_value=None, max_value=None):
    info = np.iinfo(dtype)
    lo = info.min if min_value is None else max(min_value, int(info.min))
    hi = info.max if max_value is None else min(max_value, int(info.max))
    return hnp.arrays(dtype, shape, elements=st.integers(lo, hi))


shapes = hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)

# name -> (NumPy reference, dtypes, value range): the standard defines these for floating inputs
# only (a NumPy reference is then exact up to rounding).
UNARY_FLOAT = {
    "acos": np.arccos, "acosh": np.arccosh, "asin": np.arcsin, "asinh": np.arcsinh, "atan": np.arctan,
    "atanh": np.arctanh, "cos": np.cos, "cosh": np.cosh, "exp": np.exp, "expm1": np.expm1, "log": np.log,
    "log1p": np.log1p, "log2": np.log2, "log10": np.log10, "sin": np.sin, "sinh": np.sinh, "sqrt": np.sqrt,
    "tan": np.tan, "tanh": np.tanh, "reciprocal": np.reciprocal, "signbit": np.signbit,
}
# defined for every numeric dtype (and keep integer dtypes)
UNARY_NUMERIC = {
    "abs": np.abs, "ceil": np.ceil, "floor": np.floor, "trunc": np.trunc, "round": np.round,
    "negative": np.negative, "positive": np.positive, "square": np.square, "sign": np.sign,
    "isfinite": np.isfinite, "isinf": np.isinf, "isnan": np.isnan, "conj": np.conj, "real": np.real,
    "imag": np.imag,
}
# Looser tolerances where float32 transcendental functions may differ by a few ulps from NumPy's.
RTOL32 = 3e-5


@pytest.mark.parametrize("name", sorted(UNARY_FLOAT))
@SETTINGS
@given(data=st.data())
def test_unary_float(xp, name, data):
    dtype = data.draw(st.sampled_from(FLOATS))
    values = data.draw(float_arrays(dtype, data.draw(shapes)))
    with np.errstate(all="ignore"):
        expected = UNARY_FLOAT[name](values)
    got = getattr(xp, name)(xp.asarray(values))
    # tiny inputs: float32 rounding in composites differs by more than a relative tolerance allows
    assert_matches(got, expected, rtol=RTOL32 if dtype == "float32" else 1e-9,
                   atol=1e-37 if dtype == "float32" else 1e-300)


@pytest.mark.parametrize("name", sorted(UNARY_NUMERIC))
@SETTINGS
@given(data=st.data())
def test_unary_numeric(xp, name, data):
    dtype = data.draw(st.sampled_from(FLOATS + INTS))
    shape = data.draw(shapes)
    if dtype in FLOATS:
        values = data.draw(float_arrays(dtype, shape))
    else:
        # keep abs/negative/square of integers in range (overflow is unspecified)
        values = data.draw(int_arrays(dtype, shape, min_value=-11, max_value=11))
    with np.errstate(all="ignore"):
        expected = UNARY_NUMERIC[name](values)
    if name == "sign" and dtype == "uint8":
        expected = (values > 0).astype(dtype)
    assert_matches(getattr(xp, name)(xp.asarray(values)), expected)


def test_unary_special_cases(xp):
    x = xp.asarray([-0.0, 0.0, 1.0, -1.0, np.inf, -np.inf, np.nan])
    with np.errstate(all="ignore"):
        values = x.numpy()
        for name in ["acosh", "asinh", "atanh", "signbit", "expm1", "log1p", "sqrt", "tanh"]:
            ref = {"acosh": np.arccosh, "asinh": np.arcsinh, "atanh": np.arctanh}.get(name, getattr(np, name, None))
            got = getattr(xp, name)(x).numpy()
            np.testing.assert_allclose(got, ref(values), rtol=3e-7, err_msg=name)
            numbers = ~np.isnan(got)  # the sign of a NaN result is unspecified
            np.testing.assert_array_equal(np.signbit(got[numbers]), np.signbit(ref(values)[numbers]), err_msg=name)


def test_large_and_tiny_arguments_of_the_inverse_hyperbolics(xp):
    x = xp.asarray([1e-30, 1e-10, 1e10, 1e30, 3e38], dtype=xp.float32)
    np.testing.assert_allclose(xp.asinh(x).numpy(), np.arcsinh(x.numpy()), rtol=1e-6)
    np.testing.assert_allclose(xp.acosh(x[2:]).numpy(), np.arccosh(x.numpy()[2:]), rtol=1e-6)
    y = xp.asarray([1e-30, 1e-10, 0.5, 0.999999], dtype=xp.float64)
    np.testing.assert_allclose(xp.atanh(y).numpy(), np.arctanh(y.numpy()), rtol=1e-12)


BINARY_FLOAT = {
    "atan2": np.arctan2, "copysign": np.copysign, "hypot": np.hypot, "logaddexp": np.logaddexp,
    "nextafter": np.nextafter, "divide": np.divide,
}
BINARY_NUMERIC = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "maximum": np.maximum,
    "minimum": np.minimum, "equal": np.equal, "not_equal": np.not_equal, "greater": np.greater,
    "greater_equal": np.greater_equal, "less": np.less, "less_equal": np.less_equal,
}


def _pair(data, dtypes, *, floats_kwargs=None, ints_kwargs=None):
    """Two arrays of mutually broadcastable shapes and (possibly different, same-kind) dtypes."""
    kind = data.draw(st.sampled_from(["float", "int"] if dtypes is None else dtypes))
    pool = FLOATS if kind == "float" else INTS
    d1, d2 = data.draw(st.sampled_from(pool)), data.draw(st.sampled_from(pool))
    s = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, max_side=3))
    make = (lambda dt, sh: float_arrays(dt, sh, **(floats_kwargs or {}))) if kind == "float" else \
        (lambda dt, sh: int_arrays(dt, sh, **(ints_kwargs or {})))
    return data.draw(make(d1, s.input_shapes[0])), data.draw(make(d2, s.input_shapes[1]))


@pytest.mark.parametrize("name", sorted(BINARY_FLOAT))
@SETTINGS
@given(data=st.data())
def test_binary_float(xp, name, data):
    a, b = _pair(data, ["float"])
    with np.errstate(all="ignore"):
        expected = BINARY_FLOAT[name](a, b)
    got = getattr(xp, name)(xp.asarray(a), xp.asarray(b))
    assert_matches(got, expected, rtol=RTOL32 if expected.dtype == np.float32 else 1e-12)


@pytest.mark.parametrize("name", sorted(BINARY_NUMERIC))
@SETTINGS
@given(data=st.data())
def test_binary_numeric(xp, name, data):
    a, b = _pair(data, None, ints_kwargs=dict(min_value=-100, max_value=100))
    with np.errstate(all="ignore"):
        expected = BINARY_NUMERIC[name](a, b)
    assert_matches(getattr(xp, name)(xp.asarray(a), xp.asarray(b)), expected)


@pytest.mark.parametrize("name,ref", [("floor_divide", np.floor_divide), ("remainder", np.remainder)])
@SETTINGS
@given(data=st.data())
def test_integer_division_is_floored(xp, name, ref, data):
    a, b = _pair(data, ["int"], ints_kwargs=dict(min_value=-100, max_value=100))
    b = np.where(b == 0, 1, b).astype(b.dtype)  # division by zero is unspecified for integers
    assert_matches(getattr(xp, name)(xp.asarray(a), xp.asarray(b)), ref(a, b))


@pytest.mark.parametrize("name,ref", [("floor_divide", np.floor_divide), ("remainder", np.remainder)])
@SETTINGS
@given(data=st.data())
def test_float_division(xp, name, ref, data):
    a, b = _pair(data, ["float"], floats_kwargs=dict(min_value=-1e6, max_value=1e6))
    b = np.where(b == 0, 1, b).astype(b.dtype)
    with np.errstate(all="ignore"):
        expected = ref(a, b)
    # floor(a / b) sits on an integer boundary for some pairs: allow one unit there
    assert_matches(getattr(xp, name)(xp.asarray(a), xp.asarray(b)), expected, rtol=1e-4, atol=1.0 if name == "floor_divide" else 1e-2)


@SETTINGS
@given(data=st.data())
def test_pow(xp, data):
    a, b = _pair(data, ["float"], floats_kwargs=dict(min_value=0.5, max_value=4.0))
    assert_matches(xp.pow(xp.asarray(a), xp.asarray(b)), np.power(a, b), rtol=RTOL32)
    ia = data.draw(int_arrays("int64", data.draw(shapes), min_value=-5, max_value=5))
    assert_matches(xp.pow(xp.asarray(ia), 3), ia ** 3)


@pytest.mark.parametrize("name", ["bitwise_and", "bitwise_or", "bitwise_xor"])
@SETTINGS
@given(data=st.data())
def test_bitwise(xp, name, data):
    a, b = _pair(data, ["int"])
    assert_matches(getattr(xp, name)(xp.asarray(a), xp.asarray(b)), getattr(np, name)(a, b))
    p = data.draw(hnp.arrays(bool, data.draw(shapes)))
    assert_matches(getattr(xp, name)(xp.asarray(p), xp.asarray(p)), getattr(np, name)(p, p))


@pytest.mark.parametrize("name", ["bitwise_left_shift", "bitwise_right_shift"])
@SETTINGS
@given(data=st.data())
def test_shifts(xp, name, data):
    a, b = _pair(data, ["int"], ints_kwargs=dict(min_value=0, max_value=7))
    ref = np.left_shift if name == "bitwise_left_shift" else np.right_shift
    assert_matches(getattr(xp, name)(xp.asarray(a), xp.asarray(b)), ref(a, b))


def test_bitwise_invert(xp):
    for dtype in INTS:
        values = np.array([0, 1, 5, 100], dtype=dtype)
        assert_matches(xp.bitwise_invert(xp.asarray(values)), np.invert(values))
    assert_matches(xp.bitwise_invert(xp.asarray([True, False])), np.array([False, True]))


@pytest.mark.parametrize("name", ["logical_and", "logical_or", "logical_xor"])
@SETTINGS
@given(data=st.data())
def test_logical(xp, name, data):
    s = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=3))
    a = data.draw(hnp.arrays(bool, s.input_shapes[0]))
    b = data.draw(hnp.arrays(bool, s.input_shapes[1]))
    assert_matches(getattr(xp, name)(xp.asarray(a), xp.asarray(b)), getattr(np, name)(a, b))
    assert_matches(xp.logical_not(xp.asarray(a)), np.logical_not(a))


@SETTINGS
@given(data=st.data())
def test_clip_with_scalar_and_array_bounds(xp, data):
    dtype = data.draw(st.sampled_from(FLOATS + INTS))
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=3, max_side=3))
    if dtype in FLOATS:
        x = data.draw(float_arrays(dtype, shape, min_value=-100, max_value=100))
    else:
        x = data.draw(int_arrays(dtype, shape, min_value=0, max_value=100))
    lo = data.draw(st.integers(0, 40))
    hi = data.draw(st.integers(40, 90))
    assert_matches(xp.clip(xp.asarray(x), lo, hi), np.clip(x, lo, hi))
    assert_matches(xp.clip(xp.asarray(x), min=lo), np.clip(x, lo, None))
    assert_matches(xp.clip(xp.asarray(x)), x)
    bound = np.full(shape[-1:] if shape else (), 50, dtype=dtype)
    assert_matches(xp.clip(xp.asarray(x), max=xp.asarray(bound)), np.minimum(x, bound))


def test_clip_nan_and_errors(xp):
    x = xp.asarray([1.0, np.nan, 5.0])
    np.testing.assert_array_equal(xp.clip(x, 2.0, 3.0).numpy(), [2.0, np.nan, 3.0])
    with pytest.raises(TypeError, match="integer bounds"):
        xp.clip(xp.asarray([1, 2]), 0.5)
    with pytest.raises(ValueError, match="broadcast to x's shape"):
        xp.clip(xp.asarray([1.0]), xp.asarray([0.0, 1.0]))


def test_python_scalar_operands(xp):
    x = xp.asarray([1, 2, 3], dtype=xp.int16)
    assert xp.add(x, 1).dtype is xp.int16
    assert xp.add(2, x).dtype is xp.int16
    assert xp.multiply(xp.asarray([1.0], dtype=xp.float64), 2).dtype is xp.float64
    assert xp.equal(x, 2).numpy().tolist() == [False, True, False]
    assert xp.logical_and(xp.asarray([True, False]), True).numpy().tolist() == [True, False]
    with pytest.raises(TypeError, match="at least one operand must be an array"):
        xp.add(1, 2)


def test_mixed_dtype_operands_promote(xp):
    a = xp.asarray([1, 2], dtype=xp.uint8)
    b = xp.asarray([1, 2], dtype=xp.int8)
    assert xp.add(a, b).dtype is xp.int16
    assert xp.multiply(xp.asarray([1.0], dtype=xp.float32), xp.asarray([2.0], dtype=xp.float64)).dtype is xp.float64
