"""Elementwise ops: unary, binary, comparison and ternary, primitive and composite."""
from __future__ import annotations

import numpy as np

from . import _refs
from ._core import (
    ALL_DTYPES, FLOAT_DTYPES, INT_DTYPES, INTEGRAL_DTYPES, LARGE, NUMERIC_DTYPES, Arg, ErrorCase,
    OpEntry, Sample,
)

def _tp():
    import tensorplug

    return tensorplug


FLOATS_AND_INTS = NUMERIC_DTYPES + ("bool",)
SPECIAL = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -2.5, 0.5]


#: Exact halves in every float dtype: round must go to the even neighbour (the contract's rule),
#: which uniform random values almost never test outside the 16-bit dtypes.
HALVES = [-3.5, -2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5]


def unary_samples(low=-3.0, high=3.0, special=False, halves=False):
    def samples(dtype):
        yield Sample((Arg((), low, high),), name="0-d")
        yield Sample((Arg((0, 3), low, high),), name="empty")
        yield Sample((Arg((5, 7), low, high),), name="contiguous")
        yield Sample((Arg((4, 6), low, high, layout="transposed"),), name="transposed")
        yield Sample((Arg((3, 2, 5), low, high, layout="strided"),), name="strided")
        yield Sample((Arg((4, 5), low, high, layout="expanded"),), name="expanded")
        yield Sample((Arg((LARGE,), low, high),), name="large", large=True)
        if special and dtype in FLOAT_DTYPES:
            yield Sample((Arg((8,), values=SPECIAL),), name="special values", grad=False)
        if halves and dtype in FLOAT_DTYPES:
            yield Sample((Arg((8,), values=HALVES),), name="halves (ties to even)", grad=False)

    return samples


def unary_grad_samples(low=-3.0, high=3.0):
    def samples():
        yield Sample((Arg((2, 3), low, high),), name="2x3")
        yield Sample((Arg((3, 2), low, high, layout="transposed"),), name="transposed")

    return samples


#: NaN in either operand, in both, and beside infinities: maximum and minimum propagate NaN.
NAN_PAIRS = ([np.nan, 1.0, np.nan, -np.inf, 2.0, np.nan], [1.0, np.nan, np.nan, 0.0, np.inf, -np.inf])


def binary_samples(a=(-3.0, 3.0), b=(-3.0, 3.0), nonzero=False, scalar=True, step=None, nan=False, extra=None):
    def samples(dtype):
        def A(shape, layout="contiguous"):
            return Arg(shape, *a, layout=layout, step=step)

        def B(shape, layout="contiguous"):
            return Arg(shape, *b, layout=layout, nonzero=nonzero, step=step)

        yield Sample((A(()), B(())), name="0-d")
        yield Sample((A((0, 3)), B((0, 3))), name="empty")
        yield Sample((A((5, 7)), B((5, 7))), name="same shape")
        yield Sample((A((4, 1, 3)), B((5, 3))), name="broadcast")
        yield Sample((A((2, 3)), B(())), name="0-d operand")
        yield Sample((A((4, 6), "transposed"), B((4, 6), "strided")), name="transposed and strided")
        yield Sample((A((4, 5)), B((4, 5), "expanded")), name="expanded")
        yield Sample((A((LARGE,)), B((LARGE,))), name="large", large=True)
        if scalar:
            number = {"bool": True}.get(dtype, 2 if dtype in INT_DTYPES else 1.5)
            yield Sample((A((3, 4)), number), name="python scalar", grad=False)
        if nan and dtype in FLOAT_DTYPES:
            yield Sample((Arg((6,), values=NAN_PAIRS[0]), Arg((6,), values=NAN_PAIRS[1])), name="NaN operands", grad=False)
        if extra is not None:
            yield from extra(dtype)

    return samples


def binary_grad_samples(a=(-3.0, 3.0), b=(-3.0, 3.0)):
    def samples():
        yield Sample((Arg((2, 3), *a), Arg((2, 3), *b)), name="2x3")
        yield Sample((Arg((2, 3), *a), Arg((3,), *b)), name="broadcast")

    return samples


def _promoted(dtype):
    return dtype if dtype in FLOAT_DTYPES else "float32"


def _unary(name, ref, dtypes=NUMERIC_DTYPES, low=-3.0, high=3.0, out="same", grad=True, special=False, halves=False, **kw):
    is_float_out = out == "float"
    return OpEntry(
        name, "elementwise", ref, unary_samples(low, high, special, halves), dtypes=dtypes, method=kw.pop("method", name),
        inplace=kw.pop("inplace", name + "_"), differentiable=grad,
        grad_samples=unary_grad_samples(low, high) if grad else None, out_dtype=out,
        primitive=kw.pop("primitive", name), exact=kw.pop("exact", not is_float_out and out in ("bool",)), **kw,
    )


def _binary(name, ref, dtypes=NUMERIC_DTYPES, a=(-3.0, 3.0), b=(-3.0, 3.0), out="same", grad=True, nonzero=False, **kw):
    return OpEntry(
        name, "elementwise", ref, binary_samples(a, b, nonzero, kw.pop("scalar", True), kw.pop("step", None),
                                                 kw.pop("nan", False), kw.pop("extra", None)),
        dtypes=dtypes, method=kw.pop("method", name), inplace=kw.pop("inplace", name + "_"), differentiable=grad,
        grad_samples=binary_grad_samples(a, b) if grad else None, out_dtype=out,
        primitive=kw.pop("primitive", name), **kw,
    )


_TRANSCENDENTAL_TOL = {"float32": (2e-5, 1e-5)}
_POS = dict(low=0.1, high=4.0)
_UNIT = dict(low=-0.95, high=0.95)

UNARY = [
    _unary("neg", np.negative, NUMERIC_DTYPES),
    _unary("abs", np.abs, NUMERIC_DTYPES, special=True),
    _unary("sign", lambda x: np.where(np.isnan(x), 0.0, np.sign(x)), NUMERIC_DTYPES + ("bool",), special=True),  # sign(NaN) == 0
    _unary("exp", np.exp, FLOATS_AND_INTS, out="float", special=True, tolerances=_TRANSCENDENTAL_TOL),
    _unary("exp2", np.exp2, FLOATS_AND_INTS, out="float", tolerances=_TRANSCENDENTAL_TOL),
    _unary("log", np.log, FLOATS_AND_INTS, out="float", **_POS),
    _unary("log2", np.log2, FLOATS_AND_INTS, out="float", **_POS),
    _unary("log10", np.log10, FLOATS_AND_INTS, out="float", **_POS),
    _unary("log1p", np.log1p, FLOATS_AND_INTS, out="float", low=-0.9, high=4.0),
    _unary("expm1", np.expm1, FLOATS_AND_INTS, out="float", tolerances=_TRANSCENDENTAL_TOL),
    _unary("sqrt", np.sqrt, FLOATS_AND_INTS, out="float", special=True, **_POS),
    _unary("rsqrt", lambda x: 1 / np.sqrt(x), FLOATS_AND_INTS, out="float", **_POS),
    _unary("sin", np.sin, FLOATS_AND_INTS, out="float", tolerances=_TRANSCENDENTAL_TOL),
    _unary("cos", np.cos, FLOATS_AND_INTS, out="float", tolerances=_TRANSCENDENTAL_TOL),
    _unary("tan", np.tan, FLOATS_AND_INTS, out="float", low=-1.2, high=1.2, tolerances=_TRANSCENDENTAL_TOL),
    _unary("asin", np.arcsin, FLOATS_AND_INTS, out="float", **_UNIT),
    _unary("acos", np.arccos, FLOATS_AND_INTS, out="float", **_UNIT),
    _unary("atan", np.arctan, FLOATS_AND_INTS, out="float"),
    _unary("sinh", np.sinh, FLOATS_AND_INTS, out="float", tolerances=_TRANSCENDENTAL_TOL),
    _unary("cosh", np.cosh, FLOATS_AND_INTS, out="float", tolerances=_TRANSCENDENTAL_TOL),
    _unary("tanh", np.tanh, FLOATS_AND_INTS, out="float", tolerances=_TRANSCENDENTAL_TOL),
    _unary("sigmoid", _refs.sigmoid, FLOATS_AND_INTS, out="float", tolerances=_TRANSCENDENTAL_TOL),
    _unary("erf", _refs.erf, FLOATS_AND_INTS, out="float", tolerances=_TRANSCENDENTAL_TOL),
    _unary("erfinv", _refs.erfinv, FLOAT_DTYPES, out="float", tolerances={"float32": (1e-4, 1e-5)}, **_UNIT),
    _unary("floor", np.floor, NUMERIC_DTYPES + ("bool",), special=True),
    _unary("ceil", np.ceil, NUMERIC_DTYPES + ("bool",), special=True),
    _unary("round", np.round, NUMERIC_DTYPES + ("bool",), halves=True),  # np.round is half to even
    _unary("trunc", np.trunc, NUMERIC_DTYPES + ("bool",), special=True),
    _unary("reciprocal", np.reciprocal, FLOATS_AND_INTS, out="float", low=0.25, high=3.0),
    _unary("square", np.square, NUMERIC_DTYPES),
    _unary("logical_not", np.logical_not, ALL_DTYPES, out="bool", grad=False, inplace=None),
    _unary("bitwise_not", lambda x: ~x.astype(np.int64), INTEGRAL_DTYPES, grad=False, ref_for={"bool": np.logical_not}),
    _unary("isnan", np.isnan, ALL_DTYPES, out="bool", grad=False, inplace=None, special=True, exact=True),
    _unary("isinf", np.isinf, ALL_DTYPES, out="bool", grad=False, inplace=None, special=True, exact=True),
    _unary("isfinite", np.isfinite, ALL_DTYPES, out="bool", grad=False, inplace=None, special=True, exact=True),
    _unary("frac", lambda x: x - np.trunc(x), FLOAT_DTYPES, primitive=None),
    _unary("positive", lambda x: x, NUMERIC_DTYPES, inplace=None, primitive=None),
    _unary("sgn", lambda x: np.where(np.isnan(x), 0.0, np.sign(x)), NUMERIC_DTYPES + ("bool",), special=True,
           primitive=None),  # sign for real tensors
    _unary("relu", lambda x: np.maximum(x, 0), NUMERIC_DTYPES, primitive=None),
]


def _pow_ref(a, b):
    return np.power(np.asarray(a, dtype=np.float64), b)


def _int_pow(a, b):
    """Integer pow; a negative exponent gives PyTorch's answer: 1 stays 1, -1 alternates with the
    exponent's parity, every other base (0 too) gives 0."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    by_base = np.where(a == 1, 1.0, np.where(a == -1, np.where(np.mod(b, 2) == 1, -1.0, 1.0), 0.0))
    return np.where(b < 0, by_base, np.power(a, np.maximum(b, 0)))


def _negative_exponents(dtype):
    """Every base against negative exponents of both parities (signed integer dtypes)."""
    if dtype in INT_DTYPES and dtype != "uint8":
        a = [-3, -2, -1, 0, 1, 2, 3, -1, -1, 1]
        b = [-1, -1, -1, -1, -1, -1, -1, -2, -3, -4]
        yield Sample((Arg((10,), values=a), Arg((10,), values=b)), name="negative integer exponents", grad=False)


def _remainder(a, b):
    """PyTorch's floored remainder: fmod, moved by one divisor where the signs differ, so that a
    zero keeps fmod's sign (the dividend's): remainder(4.0, -2.0) is 0.0, not Python's -0.0."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    m = np.fmod(a, b)
    return np.where((m != 0) & ((b < 0) != (m < 0)), m + b, m)


def _zero_results(dtype):
    """Exact multiples of the divisor in every sign combination: each result is a signed zero."""
    if dtype in FLOAT_DTYPES:
        a = [4.0, -4.0, 0.0, -0.0, 6.0, -6.0, 3.0, -3.0, 5.0, -5.0]
        b = [-2.0, 2.0, -2.0, 2.0, 3.0, -3.0, -1.5, 1.5, -2.0, 2.0]
        yield Sample((Arg((10,), values=a), Arg((10,), values=b)), name="zero results (signed)", grad=False)


_BITS = {"uint8": 8, "int8": 8, "int16": 16, "int32": 32, "int64": 64}


def _shift_left(bits):
    """a << b in a ``bits``-wide integer: a shift by the width or more gives 0 (not b mod width)."""
    def ref(a, b):
        a, b = np.asarray(a).astype(np.int64), np.asarray(b).astype(np.int64)
        return np.where(b >= bits, 0, np.left_shift(a, np.minimum(b, bits - 1)))

    return ref


def _shift_right(bits):
    """a >> b, arithmetic: a shift by the width or more gives the sign (-1 or 0)."""
    def ref(a, b):
        a, b = np.asarray(a).astype(np.int64), np.asarray(b).astype(np.int64)
        return np.where(b >= bits, np.where(a < 0, -1, 0), np.right_shift(a, np.minimum(b, bits - 1)))

    return ref


def _wide_shift_samples(dtype):
    """Shift amounts just below, at and beyond the dtype's width (values are exact in the dtype)."""
    bits = _BITS[dtype]
    a = [1, 8 if dtype == "uint8" else -8, 3, 100, 127 if dtype == "uint8" else -1, 7]
    b = [bits - 1, bits, bits + 1, 2 * bits - 1, bits, min(4 * bits, 127)]
    yield Sample((Arg((6,), values=a), Arg((6,), values=b)), name="shift by the width and more", grad=False)


def _bitwise(fn):
    def ref(a, b):
        return fn(np.asarray(a).astype(np.int64), np.asarray(b).astype(np.int64))

    return ref


def _logical(fn):
    return lambda a, b: fn(np.asarray(a) != 0, np.asarray(b) != 0)


def _adjacent_float(dtype: str):
    """nextafter in ``dtype`` itself (NumPy has float16/32/64; float64 inputs hold the exact
    values). NumPy's float16 returns x where x == y (so -0.0 towards 0.0 stays -0.0); C, PyTorch
    and its float32/64 return y there."""
    t = np.dtype(dtype)

    def ref(a, b):
        a, b = np.asarray(a).astype(t), np.asarray(b).astype(t)
        return np.where(a == b, b, np.nextafter(a, b)).astype(np.float64)

    return ref


def _adjacent_float_specials(dtype):
    """Signed zeros, infinities, equal operands and steps from 0 into the subnormals."""
    yield Sample((Arg((8,), values=[0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, 2.0, 0.0]),
                  Arg((8,), values=[1.0, -1.0, 1.0, np.inf, 0.0, 0.0, -np.inf, -0.0])), name="zeros, infinities, equal",
                 grad=False)


_NEXTAFTER_DTYPES = ("float16", "float32", "float64")  # bfloat16: no independent reference here

BINARY = [
    _binary("add", np.add, ALL_DTYPES, ref_for={"bool": _logical(np.logical_or)}),
    _binary("sub", np.subtract, NUMERIC_DTYPES),
    _binary("mul", np.multiply, ALL_DTYPES, ref_for={"bool": _logical(np.logical_and)}),
    _binary("div", np.true_divide, FLOATS_AND_INTS, out="float", nonzero=True, b=(0.5, 3.0)),
    _binary("true_divide", np.true_divide, FLOAT_DTYPES, nonzero=True, b=(0.5, 3.0), primitive="div", inplace=None),
    _binary("floor_divide", lambda a, b: np.floor(np.true_divide(a, b)), NUMERIC_DTYPES, b=(-4.0, 4.0), nonzero=True, grad=False),
    _binary("remainder", _remainder, NUMERIC_DTYPES, b=(-4.0, 4.0), nonzero=True, grad=False, extra=_zero_results,
            signed_zeros=True),
    _binary("fmod", np.fmod, NUMERIC_DTYPES, b=(-4.0, 4.0), nonzero=True, grad=False, extra=_zero_results,
            signed_zeros=True),
    _binary("pow", _pow_ref, NUMERIC_DTYPES, a=(0.5, 2.0), b=(0.0, 3.0), tolerances=_TRANSCENDENTAL_TOL,
            extra=_negative_exponents, ref_for={d: _int_pow for d in INT_DTYPES}),
    _binary("maximum", np.maximum, ALL_DTYPES, exact=True, nan=True),  # np.maximum propagates NaN
    _binary("minimum", np.minimum, ALL_DTYPES, exact=True, nan=True),
    _binary("atan2", np.arctan2, FLOATS_AND_INTS, out="float", tolerances=_TRANSCENDENTAL_TOL),
    _binary("copysign", np.copysign, FLOATS_AND_INTS, out="float", grad=False),
    _binary("hypot", np.hypot, FLOAT_DTYPES),
    _binary("nextafter", _adjacent_float("float64"), _NEXTAFTER_DTYPES, grad=False, scalar=False, nan=True, exact=True,
            signed_zeros=True, extra=_adjacent_float_specials, ref_for={d: _adjacent_float(d) for d in _NEXTAFTER_DTYPES}),
    _binary("bitwise_and", _bitwise(np.bitwise_and), INTEGRAL_DTYPES, grad=False, b=(-8, 8)),
    _binary("bitwise_or", _bitwise(np.bitwise_or), INTEGRAL_DTYPES, grad=False, b=(-8, 8)),
    _binary("bitwise_xor", _bitwise(np.bitwise_xor), INTEGRAL_DTYPES, grad=False, b=(-8, 8)),
    _binary("bitwise_left_shift", _shift_left(64), INT_DTYPES, grad=False, a=(-8, 8), b=(0, 3), extra=_wide_shift_samples,
            ref_for={d: _shift_left(_BITS[d]) for d in INT_DTYPES}),
    _binary("bitwise_right_shift", _shift_right(64), INT_DTYPES, grad=False, a=(-8, 8), b=(0, 3), extra=_wide_shift_samples,
            ref_for={d: _shift_right(_BITS[d]) for d in INT_DTYPES}),
    _binary("logical_and", _logical(np.logical_and), ALL_DTYPES, out="bool", grad=False, exact=True, a=(-1, 1), b=(-1, 1), step=1.0),
    _binary("logical_or", _logical(np.logical_or), ALL_DTYPES, out="bool", grad=False, exact=True, a=(-1, 1), b=(-1, 1), step=1.0),
    _binary("logical_xor", _logical(np.logical_xor), ALL_DTYPES, out="bool", grad=False, exact=True, a=(-1, 1), b=(-1, 1), step=1.0),
    _binary("xlogy", lambda a, b: np.where(np.asarray(a) == 0, 0.0, a * np.log(b)), FLOATS_AND_INTS, out="float",
            b=(0.1, 3.0), primitive=None),
    _binary("rsub", lambda a, b: np.subtract(b, a), NUMERIC_DTYPES, method=None, inplace=None, primitive=None),
]

for _entry in BINARY:
    if _entry.name in ("bitwise_and", "bitwise_or", "bitwise_xor"):
        _entry.exact = True


def _compare(name, fn):
    return _binary(name, fn, ALL_DTYPES, out="bool", grad=False, exact=True, step=1.0, a=(-2, 2), b=(-2, 2))


COMPARE = [_compare(n, f) for n, f in (
    ("eq", np.equal), ("ne", np.not_equal), ("lt", np.less), ("le", np.less_equal), ("gt", np.greater),
    ("ge", np.greater_equal),
)]


def _where_samples(dtype):
    yield Sample((Arg((5, 7), dtype="bool"), Arg((5, 7)), Arg((5, 7))), name="same shape")
    yield Sample((Arg((4, 1, 3), dtype="bool"), Arg((5, 3)), Arg((1,))), name="broadcast")
    yield Sample((Arg((0, 2), dtype="bool"), Arg((0, 2)), Arg((0, 2))), name="empty")
    yield Sample((Arg((4, 6), dtype="bool", layout="transposed"), Arg((4, 6), layout="strided"), Arg(())), name="views")
    yield Sample((Arg((LARGE,), dtype="bool"), Arg((LARGE,)), Arg((LARGE,))), name="large", large=True)
    yield Sample((Arg((3, 4), dtype="bool"), Arg((3, 4)), {"bool": False}.get(dtype, 0)), name="python scalar", grad=False)


def _where_grad_samples():
    yield Sample((Arg((2, 3), dtype="bool", grad=False), Arg((2, 3)), Arg((2, 3))), name="2x3")
    yield Sample((Arg((2, 3), dtype="bool", grad=False), Arg((2, 3)), Arg((3,))), name="broadcast")


def _clamp_samples(dtype):
    low = 0 if dtype == "uint8" else -1  # a negative bound wraps around in uint8
    yield Sample((Arg((5, 7)), low, 2), name="scalar bounds")
    yield Sample((Arg((4, 6), layout="transposed"),), {"min": 0}, name="min only")
    yield Sample((Arg((4, 6), layout="strided"),), {"max": 1}, name="max only")
    yield Sample((Arg(()), low, 1), name="0-d")
    yield Sample((Arg((LARGE,)), low, 1), name="large", large=True)


def _clamp_ref(x, min=None, max=None):
    if min is not None:
        x = np.maximum(x, min)
    if max is not None:
        x = np.minimum(x, max)
    return x


def _clamp_grad_samples():
    yield Sample((Arg((2, 3)), -1.0, 1.0), name="scalar bounds")


def _lerp_samples(dtype):
    yield Sample((Arg((5, 7)), Arg((5, 7)), 0.3), name="scalar weight")
    yield Sample((Arg((4, 1, 3)), Arg((5, 3)), Arg((3,), 0.0, 1.0)), name="tensor weight, broadcast")


def _lerp_grad():
    yield Sample((Arg((2, 3)), Arg((2, 3)), 0.3), name="scalar weight")


TERNARY = [
    OpEntry("where", "elementwise", lambda c, a, b: np.where(np.asarray(c) != 0, a, b), _where_samples,
            dtypes=ALL_DTYPES, method=None, grad_samples=_where_grad_samples, primitive="where", exact=True,
            errors=(ErrorCase(lambda d: _tp().where(_tp().ones(2, 3, dtype=_tp().bool, device=d), _tp().ones(4, device=d), 0.0),
                              RuntimeError, r"shape mismatch", "shape mismatch"),)),
    OpEntry("clamp", "elementwise", _clamp_ref, _clamp_samples, dtypes=NUMERIC_DTYPES, method="clamp",
            inplace="clamp_", grad_samples=_clamp_grad_samples, primitive=None),
    OpEntry("clamp_min", "elementwise", lambda x, m: np.maximum(x, m),
            lambda dtype: iter([Sample((Arg((5, 7)), 0), name="scalar")]), dtypes=NUMERIC_DTYPES,
            method="clamp_min", inplace="clamp_min_", differentiable=False),
    OpEntry("clamp_max", "elementwise", lambda x, m: np.minimum(x, m),
            lambda dtype: iter([Sample((Arg((5, 7)), 0), name="scalar")]), dtypes=NUMERIC_DTYPES,
            method="clamp_max", inplace="clamp_max_", differentiable=False),
    OpEntry("lerp", "elementwise", lambda a, b, w: a + w * (np.asarray(b) - a), _lerp_samples,
            dtypes=FLOAT_DTYPES, method="lerp", inplace="lerp_", grad_samples=_lerp_grad,
            tolerances={"float32": (1e-5, 1e-5)}),
    OpEntry("nan_to_num", "elementwise", lambda x: np.nan_to_num(x, posinf=np.finfo(np.float32).max, neginf=np.finfo(np.float32).min),
            lambda dtype: iter([Sample((Arg((8,), values=SPECIAL),), name="special values")]), dtypes=("float32",),
            method="nan_to_num", inplace="nan_to_num_", differentiable=False),
]


ERRORS_BINARY = (
    ErrorCase(lambda d: _tp().add(_tp().ones(2, 3, device=d), _tp().ones(4, device=d)), RuntimeError,
              r"add\(\): shape mismatch: shapes \[2, 3\], \[4\] cannot be broadcast", "broadcast mismatch"),
    ErrorCase(lambda d: _tp().ones(2, dtype=_tp().int64, device=d).add_(_tp().ones(2, device=d)), RuntimeError,
              r"result type float32 can't be cast to the desired output type int64", "in-place cast"),
    ErrorCase(lambda d: _tp().ones(2, device=d).add_(_tp().ones(2, 2, device=d)), RuntimeError,
              r"output with shape \[2\] doesn't match the broadcast shape \[2, 2\]", "in-place broadcast"),
)
BINARY[0].errors = ERRORS_BINARY
for _entry in BINARY:
    if _entry.name.startswith("bitwise_") and _entry.name not in ("bitwise_left_shift", "bitwise_right_shift"):
        _entry.errors = (ErrorCase(lambda d, n=_entry.name: getattr(_tp(), n)(_tp().ones(2, device=d), _tp().ones(2, device=d)),
                                   TypeError, r"not supported for float32", "float input"),)
    if _entry.name == "pow":
        # A negative Python number exponent is refused before any kernel (PyTorch's message);
        # negative exponents inside a tensor are values (the samples above).
        _entry.errors = (ErrorCase(lambda d: _tp().pow(_tp().tensor([1, 2], device=d), -1), RuntimeError,
                                   r"Integers to negative integer powers are not allowed", "integer to a negative number"),)
    if _entry.name in ("floor_divide", "remainder", "fmod"):
        # By a number (the frontend may see it) and by a tensor holding a zero (only the kernel can).
        _entry.errors = (ErrorCase(lambda d, n=_entry.name: getattr(_tp(), n)(_tp().tensor([1, 2], device=d), 0),
                                   ZeroDivisionError, r"integer division by zero", "integer by zero"),
                         ErrorCase(lambda d, n=_entry.name: getattr(_tp(), n)(_tp().tensor([1, 2], device=d), _tp().tensor([1, 0], device=d)),
                                   ZeroDivisionError, r"integer division by zero", "integer by a zero element"))

ENTRIES = UNARY + BINARY + COMPARE + TERNARY
