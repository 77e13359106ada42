"""Elementwise unary, binary and comparison ops on the CPU backend, against NumPy in float64.

Every op runs on every dtype it supports and on every layout the kernels must handle:
contiguous, transposed, sliced with a step, broadcast (stride 0), with a Python scalar on either
side, 0-d, empty, and large enough (40k elements) to cross the kernels' OpenMP threshold.
"""
import math
import zlib

import numpy as np
import pytest

import tensorplug as tp

FLOATS = [tp.float16, tp.float32, tp.float64]
INTS = [tp.uint8, tp.int8, tp.int16, tp.int32, tp.int64]
SIGNED_INTS = [tp.int8, tp.int16, tp.int32, tp.int64]
NUMERIC = INTS + FLOATS
ALL = [tp.bool] + NUMERIC
BITWISE = [tp.bool] + INTS

# Relative and absolute tolerance per result dtype (the reference is exact float64 math).
TOL = {tp.float16: (1e-3, 1e-3), tp.float32: (1e-5, 1e-6), tp.float64: (1e-12, 1e-12)}
LARGE = 40_000  # above the kernels' OpenMP threshold (32768 elements)


# --- references ------------------------------------------------------------------------------
_erf_scalar = np.frompyfunc(math.erf, 1, 1)


def np_erf(x):
    return np.asarray(_erf_scalar(np.asarray(x, dtype=np.float64)), dtype=np.float64)


def np_erfinv(y):
    """erfinv in float64: Winitzki's approximation refined by Newton steps on math.erf."""
    y = np.asarray(y, dtype=np.float64)
    out = np.full(y.shape, np.nan)
    out[y == 1] = np.inf
    out[y == -1] = -np.inf
    inside = np.abs(y) < 1
    v = y[inside]
    a = 0.147
    ln = np.log1p(-v * v)
    first = 2 / (np.pi * a) + ln / 2
    x = np.sign(v) * np.sqrt(np.sqrt(first * first - ln / a) - first)
    for _ in range(6):
        x = x - (np_erf(x) - v) / (2 / math.sqrt(math.pi) * np.exp(-x * x))
    out[inside] = x
    return out


def _identity_for_ints(func):
    """floor/ceil/round/trunc leave integers unchanged (NumPy would return floats)."""
    return lambda x: x.copy() if x.dtype.kind in "iub" else func(x)


# name -> (reference, result rule, dtypes, float domain, integer domain)
# rules: "same" keeps the input dtype, "float" computes integers in the default float dtype,
# "bool" writes bool. Domains are (low, high) for random values; "nz" excludes zero.
UNARY = {
    "neg": (np.negative, "same", NUMERIC, (-5, 5), (-9, 9)),
    "abs": (np.abs, "same", NUMERIC, (-5, 5), (-9, 9)),
    "sign": (np.sign, "same", NUMERIC, (-5, 5), (-9, 9)),
    "exp": (np.exp, "float", ALL, (-5, 5), (-5, 5)),
    "exp2": (np.exp2, "float", ALL, (-5, 5), (-5, 5)),
    "log": (np.log, "float", ALL, (0.05, 10), (1, 9)),
    "log2": (np.log2, "float", ALL, (0.05, 10), (1, 9)),
    "log10": (np.log10, "float", ALL, (0.05, 10), (1, 9)),
    "log1p": (np.log1p, "float", ALL, (-0.9, 5), (0, 9)),
    "expm1": (np.expm1, "float", ALL, (-3, 3), (-3, 3)),
    "sqrt": (np.sqrt, "float", ALL, (0, 10), (0, 9)),
    "rsqrt": (lambda x: 1 / np.sqrt(x), "float", ALL, (0.05, 10), (1, 9)),
    "sin": (np.sin, "float", ALL, (-6, 6), (-6, 6)),
    "cos": (np.cos, "float", ALL, (-6, 6), (-6, 6)),
    "tan": (np.tan, "float", ALL, (-1.3, 1.3), (-1, 1)),
    "asin": (np.arcsin, "float", ALL, (-0.99, 0.99), (-1, 1)),
    "acos": (np.arccos, "float", ALL, (-0.99, 0.99), (-1, 1)),
    "atan": (np.arctan, "float", ALL, (-10, 10), (-9, 9)),
    "sinh": (np.sinh, "float", ALL, (-5, 5), (-5, 5)),
    "cosh": (np.cosh, "float", ALL, (-5, 5), (-5, 5)),
    "tanh": (np.tanh, "float", ALL, (-5, 5), (-5, 5)),
    "sigmoid": (lambda x: 1 / (1 + np.exp(-x)), "float", ALL, (-10, 10), (-9, 9)),
    "erf": (np_erf, "float", ALL, (-3, 3), (-3, 3)),
    "erfinv": (np_erfinv, "float", ALL, (-0.99, 0.99), (-1, 1)),
    "floor": (_identity_for_ints(np.floor), "same", NUMERIC, (-10, 10), (-9, 9)),
    "ceil": (_identity_for_ints(np.ceil), "same", NUMERIC, (-10, 10), (-9, 9)),
    "round": (_identity_for_ints(np.round), "same", NUMERIC, (-10, 10), (-9, 9)),
    "trunc": (_identity_for_ints(np.trunc), "same", NUMERIC, (-10, 10), (-9, 9)),
    "reciprocal": (lambda x: 1 / x, "float", NUMERIC, "nz", "nz"),
    "square": (np.square, "same", NUMERIC, (-5, 5), (-9, 9)),
    "logical_not": (np.logical_not, "bool", ALL, "zeros", "zeros"),
    "bitwise_not": (np.invert, "same", BITWISE, None, (-9, 9)),
    "isnan": (np.isnan, "bool", ALL, (-5, 5), (-9, 9)),
    "isinf": (np.isinf, "bool", ALL, (-5, 5), (-9, 9)),
    "isfinite": (np.isfinite, "bool", ALL, (-5, 5), (-9, 9)),
}


def _float_ref(func):
    return lambda a, b: func(a.astype(np.float64), b.astype(np.float64))


def _pow_ref(a, b):
    if a.dtype.kind in "iu":
        return np.power(a, b)
    return np.power(a.astype(np.float64), b.astype(np.float64))


def _same_ref(func):
    """Integers and bool in their own dtype (exact, wrapping), floats in float64."""

    def ref(a, b):
        if a.dtype.kind == "f":
            return func(a.astype(np.float64), b.astype(np.float64))
        return func(a, b)

    return ref


# name -> (reference on (a, b) arrays of the computation dtype, rule, dtypes, domain)
BINARY = {
    "add": (_same_ref(np.add), "same", ALL, "any"),
    "sub": (_same_ref(np.subtract), "same", NUMERIC, "any"),
    "mul": (_same_ref(np.multiply), "same", ALL, "any"),
    "div": (_float_ref(np.true_divide), "float", NUMERIC, "nz"),
    "floor_divide": (_same_ref(np.floor_divide), "same", NUMERIC, "grid_nz"),
    "remainder": (_same_ref(np.remainder), "same", NUMERIC, "grid_nz"),
    "fmod": (_same_ref(np.fmod), "same", NUMERIC, "grid_nz"),
    "pow": (_pow_ref, "same", NUMERIC, "pow"),
    "maximum": (_same_ref(np.maximum), "same", ALL, "grid"),
    "minimum": (_same_ref(np.minimum), "same", ALL, "grid"),
    "atan2": (_float_ref(np.arctan2), "float", NUMERIC, "any"),
    "copysign": (_float_ref(np.copysign), "float", NUMERIC, "any"),
    "hypot": (_float_ref(np.hypot), "float", NUMERIC, "any"),
    "bitwise_and": (np.bitwise_and, "same", BITWISE, "any"),
    "bitwise_or": (np.bitwise_or, "same", BITWISE, "any"),
    "bitwise_xor": (np.bitwise_xor, "same", BITWISE, "any"),
    "bitwise_left_shift": (np.left_shift, "same", INTS, "shift"),
    "bitwise_right_shift": (np.right_shift, "same", INTS, "shift"),
    "logical_and": (np.logical_and, "bool", ALL, "grid"),
    "logical_or": (np.logical_or, "bool", ALL, "grid"),
    "logical_xor": (np.logical_xor, "bool", ALL, "grid"),
}
COMPARE = {
    "eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal,
}
for _name, _func in COMPARE.items():
    BINARY[_name] = (_same_ref(_func), "bool", ALL, "grid")


# --- inputs ----------------------------------------------------------------------------------
def _np(dtype):
    return np.dtype(dtype.name)


def _unary_values(rng, name, dtype, shape):
    _, _, _, fdom, idom = UNARY[name]
    if dtype is tp.bool:
        return rng.integers(0, 2, shape).astype(bool)
    dom = idom if not dtype.is_floating_point else fdom
    if dom == "zeros":  # small integers, many of them zero
        values = rng.integers(-2, 3, shape)
        return values.astype(_np(dtype)) if dtype is not tp.uint8 else np.abs(values).astype(np.uint8)
    if dom == "nz":
        magnitude = rng.uniform(0.1, 10, shape) if dtype.is_floating_point else rng.integers(1, 10, shape)
        sign = np.where(rng.integers(0, 2, shape) == 1, 1, -1)
        if dtype is tp.uint8:
            sign = 1
        return (magnitude * sign).astype(_np(dtype))
    low, high = dom
    if dtype.is_floating_point:
        return rng.uniform(low, high, shape).astype(_np(dtype))
    if dtype is tp.uint8:
        low = max(low, 0)
    return rng.integers(low, high + 1, shape).astype(_np(dtype))


def _bits(dtype):
    return 8 * dtype.itemsize


def _binary_values(rng, name, dtype, shape, role):
    """Values for operand ``role`` ("a" or "b") of op ``name``."""
    dom = BINARY[name][3]
    np_dtype = _np(dtype)
    if dtype is tp.bool:
        return rng.integers(0, 2, shape).astype(bool)
    floating = dtype.is_floating_point
    low = 0 if dtype is tp.uint8 else -9
    if dom == "any":
        values = rng.uniform(-4, 4, shape) if floating else rng.integers(low, 10, shape)
    elif dom == "grid":
        values = rng.integers(-6, 7, shape) / 2 if floating else rng.integers(max(low, -6), 7, shape)
    elif dom in ("nz", "grid_nz"):
        if floating:
            values = rng.integers(-16, 17, shape) / 4 if dom == "grid_nz" else rng.uniform(-4, 4, shape)
        else:
            values = rng.integers(low, 10, shape)
        if role == "b":
            values = np.where(values == 0, 3, values)
            if floating and dom == "nz":
                values = np.where(np.abs(values) < 0.1, 0.5, values)
    elif dom == "pow":
        if role == "a":
            values = rng.uniform(0.5, 3, shape) if floating else rng.integers(0 if dtype is tp.uint8 else -5, 6, shape)
        else:
            values = rng.uniform(-2, 2, shape) if floating else rng.integers(0, 4, shape)
    elif dom == "shift":
        if role == "a":
            values = rng.integers(low, 10, shape)
        else:
            values = rng.integers(0, _bits(dtype) - 1, shape)
    else:  # pragma: no cover
        raise AssertionError(dom)
    return values.astype(np_dtype)


def _scalar_for(name, dtype, role):
    """A Python number of ``dtype``'s category that suits operand ``role`` of ``name``."""
    dom = BINARY[name][3]
    if dtype is tp.bool:
        return True
    floating = dtype.is_floating_point
    if dom == "shift":
        return 5 if role == "a" else 2
    if dom == "pow":
        return 1.5 if floating else 2
    if dom in ("nz", "grid_nz") and role == "b":
        return -1.5 if floating else (3 if dtype is tp.uint8 else -3)
    return 2.5 if floating else 7


def _result_dtype(rule, dtype):
    if rule == "bool":
        return tp.bool
    if rule == "float" and not dtype.is_floating_point:
        return tp.get_default_dtype()
    return dtype


def check(result, expected, dtype):
    """``result`` has ``dtype``, ``expected``'s shape, and values equal up to dtype tolerance."""
    assert isinstance(result, tp.Tensor)
    assert result.dtype is dtype, f"dtype {result.dtype} != {dtype}"
    expected = np.asarray(expected)
    assert tuple(result.shape) == expected.shape
    got = np.asarray(result.numpy())
    if dtype.is_floating_point:
        rtol, atol = TOL[dtype]
        np.testing.assert_allclose(got.astype(np.float64), expected.astype(np.float64), rtol=rtol, atol=atol, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, expected.astype(_np(dtype)))


# --- layouts: (tensor, equal numpy array) ---------------------------------------------------
def _layout(values, layout):
    """A tensor holding ``values`` (a NumPy array) in ``layout``."""
    if layout in ("contiguous", "empty", "large"):
        t = tp.tensor(values)
    elif layout == "zero_dim":
        t = tp.tensor(values.reshape(1)).reshape(())  # 0-d factories are tested in test_factories
    elif layout == "transposed":
        t = tp.tensor(np.ascontiguousarray(values.T)).t()
        assert not t.is_contiguous()
    elif layout in ("sliced", "large_sliced"):
        base = np.zeros(tuple(2 * s for s in values.shape), dtype=values.dtype)
        index = tuple(slice(1, None, 2) for _ in values.shape)
        base[index] = values
        t = tp.tensor(base)[index]
        assert not t.is_contiguous()
    else:  # pragma: no cover
        raise AssertionError(layout)
    assert t.dtype.name == values.dtype.name
    return t


SHAPES = {
    "contiguous": (3, 4), "transposed": (3, 4), "sliced": (3, 4), "zero_dim": (), "empty": (0, 4),
    "large": (LARGE,), "large_sliced": (LARGE,),
}
UNARY_LAYOUTS = list(SHAPES) + ["expanded"]
BINARY_LAYOUTS = list(SHAPES) + ["broadcast", "scalar_right", "scalar_left", "zero_dim_with_dims"]


def _cases(table, layouts):
    return [
        pytest.param(name, dtype, layout, id=f"{name}-{dtype.name}-{layout}")
        for name, spec in table.items()
        for dtype in spec[2]
        for layout in layouts
    ]


# --- unary -----------------------------------------------------------------------------------
@pytest.mark.parametrize("name, dtype, layout", _cases(UNARY, UNARY_LAYOUTS))
def test_unary_matches_numpy(name, dtype, layout):
    """A unary op gives NumPy's float64 values (rounded to its result dtype) in every layout."""
    rng = np.random.default_rng(zlib.crc32(f"{name}-{dtype.name}-{layout}".encode()))
    ref, rule, _, _, _ = UNARY[name]
    if layout == "expanded":
        row = _unary_values(rng, name, dtype, (1, 4))
        t = tp.tensor(row).expand(3, 4)
        values = np.broadcast_to(row, (3, 4))
    else:
        values = _unary_values(rng, name, dtype, SHAPES[layout])
        t = _layout(values, layout)
    source = values.astype(np.float64) if rule == "float" or dtype.is_floating_point else values
    with np.errstate(all="ignore"):
        expected = ref(source)
    check(getattr(tp, name)(t), expected, _result_dtype(rule, dtype))
    np.testing.assert_array_equal(t.numpy(), values)  # the input is left alone


@pytest.mark.parametrize("name", [n for n, s in UNARY.items() if tp.float32 in s[2] and n != "sign"])
@pytest.mark.parametrize("dtype", FLOATS)
def test_unary_special_values(name, dtype):
    """nan, +-inf and +-0 give what NumPy gives (nan stays nan; limits are exact)."""
    specials = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0], dtype=_np(dtype))
    ref, rule, _, _, _ = UNARY[name]
    with np.errstate(all="ignore"):
        expected = ref(specials.astype(np.float64))
    check(getattr(tp, name)(tp.tensor(specials)), expected, _result_dtype(rule, dtype))


@pytest.mark.parametrize("dtype", FLOATS)
def test_sign_of_zero_and_nonzero(dtype):
    """sign is -1, 0, +1 for negative, zero and positive values (and +-inf)."""
    values = np.array([-3.5, -0.0, 0.0, 2.0, np.inf, -np.inf], dtype=_np(dtype))
    check(tp.sign(tp.tensor(values)), np.array([-1, 0, 0, 1, 1, -1.0]), dtype)


@pytest.mark.parametrize("dtype", FLOATS)
def test_round_half_to_even(dtype):
    """round() rounds halves to the nearest even integer, like NumPy and PyTorch."""
    values = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5], dtype=_np(dtype))
    check(tp.round(tp.tensor(values)), np.array([-2, -2, -0.0, 0, 2, 2, 4.0]), dtype)


@pytest.mark.parametrize("dtype", [tp.float32, tp.float64])
def test_expm1_log1p_are_accurate_near_zero(dtype):
    """expm1 and log1p keep full relative precision for tiny arguments."""
    values = np.array([1e-10, -1e-10, 1e-7, 3e-5], dtype=_np(dtype))
    x = values.astype(np.float64)
    check(tp.expm1(tp.tensor(values)), np.expm1(x), dtype)
    check(tp.log1p(tp.tensor(values)), np.log1p(x), dtype)


# --- binary ----------------------------------------------------------------------------------
def _binary_operands(rng, name, dtype, layout):
    """(tensor-or-number a, tensor-or-number b, numpy a, numpy b) for one case."""
    if layout == "scalar_right":
        a = _binary_values(rng, name, dtype, (3, 4), "a")
        s = _scalar_for(name, dtype, "b")
        return tp.tensor(a), s, a, np.full((3, 4), s, dtype=a.dtype)
    if layout == "scalar_left":
        b = _binary_values(rng, name, dtype, (3, 4), "b")
        s = _scalar_for(name, dtype, "a")
        return s, tp.tensor(b), np.full((3, 4), s, dtype=b.dtype), b
    if layout == "broadcast":
        a = _binary_values(rng, name, dtype, (3, 1), "a")
        b = _binary_values(rng, name, dtype, (1, 4), "b")
        ta, tb = tp.tensor(a), tp.tensor(b)
        return ta, tb, *np.broadcast_arrays(a, b)
    if layout == "zero_dim_with_dims":
        a = _binary_values(rng, name, dtype, (3, 4), "a")
        b = _binary_values(rng, name, dtype, (), "b")
        return tp.tensor(a), _layout(b, "zero_dim"), *np.broadcast_arrays(a, b)
    a = _binary_values(rng, name, dtype, SHAPES[layout], "a")
    b = _binary_values(rng, name, dtype, SHAPES[layout], "b")
    return _layout(a, layout), _layout(b, layout), a, b


@pytest.mark.parametrize("name, dtype, layout", _cases(BINARY, BINARY_LAYOUTS))
def test_binary_matches_numpy(name, dtype, layout):
    """A binary op or comparison gives NumPy's values (float64 or exact integer) in every layout."""
    rng = np.random.default_rng(zlib.crc32(f"{name}-{dtype.name}-{layout}".encode()))
    ref, rule, _, _ = BINARY[name]
    a, b, na, nb = _binary_operands(rng, name, dtype, layout)
    if rule == "float":
        na, nb = na.astype(np.float64), nb.astype(np.float64)
    with np.errstate(all="ignore"):
        expected = ref(na, nb)
    check(getattr(tp, name)(a, b), expected, _result_dtype(rule, dtype))


BINARY_FLOAT_OPS = [n for n, s in BINARY.items() if tp.float32 in s[2]]
SPECIALS = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 2.5, -2.5]


@pytest.mark.parametrize("name", BINARY_FLOAT_OPS)
@pytest.mark.parametrize("dtype", FLOATS)
def test_binary_special_values(name, dtype):
    """Every pair of nan, +-inf, +-0 and ordinary values gives NumPy's result."""
    grid_a, grid_b = np.meshgrid(np.array(SPECIALS), np.array(SPECIALS), indexing="ij")
    a, b = grid_a.astype(_np(dtype)), grid_b.astype(_np(dtype))
    ref, rule, _, _ = BINARY[name]
    with np.errstate(all="ignore"):
        expected = ref(a.astype(np.float64), b.astype(np.float64))
    check(getattr(tp, name)(tp.tensor(a), tp.tensor(b)), expected, _result_dtype(rule, dtype))


@pytest.mark.parametrize("dtype", FLOATS)
def test_copysign_takes_the_sign_of_zero(dtype):
    """copysign reads the sign bit of -0.0 and of nan-free negatives."""
    a = np.array([1.0, 1.0, -2.0, 0.0], dtype=_np(dtype))
    b = np.array([-0.0, 0.0, 3.0, -1.0], dtype=_np(dtype))
    result = tp.copysign(tp.tensor(a), tp.tensor(b)).numpy()
    np.testing.assert_array_equal(np.signbit(result), [True, False, False, True])


@pytest.mark.parametrize("op", ["maximum", "minimum"])
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("size", [7, LARGE + 5])
def test_maximum_minimum_propagate_nan(op, dtype, size):
    """maximum/minimum give nan wherever either operand is nan, on small and large tensors."""
    rng = np.random.default_rng(size)
    a = rng.uniform(-1, 1, size).astype(_np(dtype))
    b = rng.uniform(-1, 1, size).astype(_np(dtype))
    a[::5] = np.nan
    b[2::7] = np.nan
    expected = getattr(np, op)(a.astype(np.float64), b.astype(np.float64))
    check(getattr(tp, op)(tp.tensor(a), tp.tensor(b)), expected, dtype)
    check(getattr(tp, op)(tp.tensor(b), tp.tensor(a)), expected, dtype)
    check(getattr(tp, op)(tp.tensor(a), 0.5), np.maximum(a, 0.5) if op == "maximum" else np.minimum(a, 0.5), dtype)


@pytest.mark.parametrize("dtype", SIGNED_INTS)
@pytest.mark.parametrize("op, python_op", [("floor_divide", lambda x, y: x // y), ("remainder", lambda x, y: x % y)])
def test_integer_floor_divide_and_remainder_follow_python(dtype, op, python_op):
    """Integer floor_divide rounds toward -inf and remainder takes the divisor's sign, as Python does."""
    pairs = [(x, y) for x in range(-9, 10) for y in range(-4, 5) if y != 0]
    a = tp.tensor([x for x, _ in pairs], dtype=dtype)
    b = tp.tensor([y for _, y in pairs], dtype=dtype)
    assert getattr(tp, op)(a, b).tolist() == [python_op(x, y) for x, y in pairs]
    assert getattr(tp, op)(a, -3).tolist() == [python_op(x, -3) for x, _ in pairs]
    assert getattr(tp, op)(7, b).tolist() == [python_op(7, y) for _, y in pairs]


@pytest.mark.parametrize("dtype", [tp.float32, tp.float64])
def test_float_floor_divide_and_remainder_follow_python(dtype):
    """Float floor_divide and remainder agree with Python's // and % on exact values."""
    pairs = [(x / 4, y / 2) for x in range(-20, 21, 3) for y in range(-5, 6) if y != 0]
    a = tp.tensor([x for x, _ in pairs], dtype=dtype)
    b = tp.tensor([y for _, y in pairs], dtype=dtype)
    assert tp.floor_divide(a, b).tolist() == [x // y for x, y in pairs]
    assert tp.remainder(a, b).tolist() == [x % y for x, y in pairs]
    assert tp.fmod(a, b).tolist() == [math.fmod(x, y) for x, y in pairs]


@pytest.mark.parametrize("dtype", INTS)
@pytest.mark.parametrize("op", ["floor_divide", "remainder", "fmod"])
@pytest.mark.parametrize("size", [4, LARGE])
def test_integer_division_by_zero_raises(dtype, op, size):
    """Integer division or remainder by zero raises ZeroDivisionError (never SIGFPE)."""
    a = tp.ones(size, dtype=dtype)
    b = tp.ones(size, dtype=dtype)
    b[size - 2] = 0
    with pytest.raises(ZeroDivisionError):
        getattr(tp, op)(a, b)
    with pytest.raises(ZeroDivisionError):
        getattr(tp, op)(a, 0)


def test_integer_division_operators_by_zero_raise():
    """The // and % operators and div(rounding_mode=...) raise ZeroDivisionError for integer zero."""
    a = tp.tensor([5, -5])
    with pytest.raises(ZeroDivisionError):
        a // tp.tensor([1, 0])
    with pytest.raises(ZeroDivisionError):
        a % 0
    with pytest.raises(ZeroDivisionError):
        tp.div(a, tp.tensor([0, 1]), rounding_mode="trunc")
    with pytest.raises(ZeroDivisionError):
        tp.div(a, 0, rounding_mode="floor")


def test_integer_true_division_by_zero_gives_inf():
    """True division of integers is float division, so x / 0 is inf or nan, not an error."""
    result = tp.tensor([1, -1, 0]) / tp.tensor([0, 0, 0])
    assert result.dtype is tp.float32
    np.testing.assert_array_equal(result.numpy(), np.array([np.inf, -np.inf, np.nan], dtype=np.float32))


@pytest.mark.parametrize("dtype", SIGNED_INTS)
def test_div_rounding_modes_on_integers(dtype):
    """div(rounding_mode="trunc") truncates toward zero and "floor" floors, both exactly."""
    pairs = [(x, y) for x in range(-9, 10) for y in (-4, -3, -1, 2, 5)]
    a = tp.tensor([x for x, _ in pairs], dtype=dtype)
    b = tp.tensor([y for _, y in pairs], dtype=dtype)
    trunc = tp.div(a, b, rounding_mode="trunc")
    assert trunc.dtype is dtype
    assert trunc.tolist() == [int(x / y) for x, y in pairs]
    assert tp.div(a, b, rounding_mode="floor").tolist() == [x // y for x, y in pairs]


@pytest.mark.parametrize("dtype", INTS)
def test_integer_add_and_mul_wrap_around(dtype):
    """Integer arithmetic wraps modulo 2**bits, as in C and PyTorch."""
    info = np.iinfo(_np(dtype))
    a = np.array([info.max, info.min, info.max], dtype=_np(dtype))
    b = np.array([1, -1 if info.min < 0 else 0, 2], dtype=_np(dtype))
    with np.errstate(all="ignore"):
        check(tp.add(tp.tensor(a), tp.tensor(b)), a + b, dtype)
        check(tp.mul(tp.tensor(a), tp.tensor(b)), a * b, dtype)


@pytest.mark.parametrize("dtype", SIGNED_INTS)
def test_right_shift_of_negative_is_arithmetic(dtype):
    """>> on negative signed integers shifts in sign bits (floor division by 2**n)."""
    values = [-1, -2, -7, -128 if dtype is tp.int8 else -1000]
    t = tp.tensor(values, dtype=dtype)
    assert (t >> 1).tolist() == [v >> 1 for v in values]
    assert tp.bitwise_right_shift(t, 3).tolist() == [v >> 3 for v in values]


# --- operators and methods -------------------------------------------------------------------
OPERATORS = [
    ("+", lambda x, y: x + y), ("-", lambda x, y: x - y), ("*", lambda x, y: x * y), ("/", lambda x, y: x / y),
    ("//", lambda x, y: x // y), ("%", lambda x, y: x % y), ("**", lambda x, y: x ** y),
    ("==", lambda x, y: x == y), ("!=", lambda x, y: x != y), ("<", lambda x, y: x < y),
    ("<=", lambda x, y: x <= y), (">", lambda x, y: x > y), (">=", lambda x, y: x >= y),
]


@pytest.mark.parametrize("symbol, func", OPERATORS, ids=[s for s, _ in OPERATORS])
@pytest.mark.parametrize("dtype", [tp.int64, tp.float32])
def test_python_operators(symbol, func, dtype):
    """Python operators on tensors and numbers (either side) compute what NumPy computes."""
    a = np.array([[1, 2, 3], [4, 5, 6]], dtype=_np(dtype))
    b = np.array([3, 2, 1], dtype=_np(dtype))
    ta, tb = tp.tensor(a), tp.tensor(b)
    for x, y, nx, ny in ((ta, tb, a, b), (ta, 2, a, 2), (7, tb, 7, b)):
        expected = func(np.asarray(nx).astype(np.float64) if dtype.is_floating_point else nx, ny)
        if symbol == "/":
            expected = np.asarray(nx, dtype=np.float64) / np.asarray(ny, dtype=np.float64)
        result = func(x, y)
        expected_dtype = tp.bool if symbol in ("==", "!=", "<", "<=", ">", ">=") else (tp.float32 if symbol == "/" else dtype)
        check(result, expected, expected_dtype)


def test_bitwise_operators_and_unary_operators():
    """&, |, ^, <<, >>, ~, unary minus and abs() match NumPy on integers and bools."""
    a = np.array([5, -3, 12, 0], dtype=np.int32)
    b = np.array([3, 6, 2, 1], dtype=np.int32)
    ta, tb = tp.tensor(a), tp.tensor(b)
    check(ta & tb, a & b, tp.int32)
    check(ta | tb, a | b, tp.int32)
    check(ta ^ tb, a ^ b, tp.int32)
    check(ta << tb, a << b, tp.int32)
    check(ta >> tb, a >> b, tp.int32)
    check(~ta, ~a, tp.int32)
    check(-ta, -a, tp.int32)
    check(abs(ta), np.abs(a), tp.int32)
    m = np.array([True, False, True])
    check(~tp.tensor(m), ~m, tp.bool)
    check(tp.tensor(m) & True, m & True, tp.bool)


@pytest.mark.parametrize("name", ["add", "sub", "mul", "div", "maximum", "pow", "atan2"])
def test_inplace_method_matches_out_of_place(name):
    """t.op_(other) writes the op's result into t (a float32 tensor) and returns t."""
    rng = np.random.default_rng(1)
    a = rng.uniform(0.5, 2, (3, 4)).astype(np.float32)
    b = rng.uniform(0.5, 2, (4,)).astype(np.float32)
    t = tp.tensor(a)
    returned = getattr(t, name + "_")(tp.tensor(b))
    assert returned is t
    check(t, BINARY[name][0](a, np.broadcast_to(b, a.shape)), tp.float32)


@pytest.mark.parametrize("name", ["exp", "sqrt", "neg", "abs", "floor", "sigmoid"])
def test_inplace_unary_method_writes_through_a_view(name):
    """t.op_() on a strided view changes only the viewed elements of the base."""
    base_values = np.arange(1, 13, dtype=np.float64).reshape(3, 4) / 3
    base = tp.tensor(base_values)
    view = base[:, 1::2]
    getattr(view, name + "_")()
    expected = base_values.copy()
    expected[:, 1::2] = UNARY[name][0](base_values[:, 1::2])
    check(base, expected, tp.float64)


def test_inplace_on_self_aliased_operand():
    """a.add_(a) and a.mul_(a.t()) read the old values of every element."""
    values = np.arange(9, dtype=np.float32).reshape(3, 3)
    a = tp.tensor(values)
    a.add_(a)
    check(a, values * 2, tp.float32)
    b = tp.tensor(values)
    b.mul_(b.t())
    check(b, values * values.T, tp.float32)


@pytest.mark.parametrize("dtype", FLOATS)
def test_where_matches_numpy(dtype):
    """tp.where picks from input where the condition holds, broadcasting all three."""
    rng = np.random.default_rng(2)
    cond = rng.integers(0, 2, (3, 4)).astype(bool)
    x = rng.uniform(-1, 1, (3, 1)).astype(_np(dtype))
    y = rng.uniform(-1, 1, (1, 4)).astype(_np(dtype))
    check(tp.where(tp.tensor(cond), tp.tensor(x), tp.tensor(y)), np.where(cond, x, y), dtype)
    check(tp.where(tp.tensor(cond), tp.tensor(x), 0.0), np.where(cond, x, 0.0), dtype)


@pytest.mark.parametrize("ndim", [8, 9])
def test_many_dims_non_contiguous(ndim):
    """Binary and unary ops on 8- and 9-dim permuted, stepped tensors match NumPy."""
    rng = np.random.default_rng(ndim)
    shape = (2, 3) * (ndim // 2) + (2,) * (ndim % 2)
    a = rng.uniform(-1, 1, tuple(2 * s for s in shape))
    b = rng.uniform(-1, 1, shape[::-1])
    step = tuple(slice(None, None, 2) for _ in shape)
    order = tuple(reversed(range(ndim)))
    ta = tp.tensor(a)[step]
    tb = tp.tensor(b).permute(order)
    check(ta * tb + 1.0, a[step] * b.transpose(order) + 1.0, tp.float64)
    check(tp.exp(tb), np.exp(b.transpose(order)), tp.float64)


def test_expanded_operands_with_stride_zero():
    """Ops on expand()ed inputs (stride 0 in several dims) read each element correctly."""
    col = np.array([[1.0], [2.0], [3.0]])
    row = np.array([10.0, 20.0, 30.0, 40.0])
    a = tp.tensor(col).expand(2, 3, 4)
    b = tp.tensor(row).expand(3, 4)
    check(a - b, np.broadcast_to(col, (2, 3, 4)) - row, tp.float64)
    check(tp.maximum(a, b.t().t()), np.maximum(np.broadcast_to(col, (2, 3, 4)), row), tp.float64)
