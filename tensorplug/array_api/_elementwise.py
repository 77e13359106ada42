"""Element-wise functions.

Most map straight onto tp's ops once the operands are promoted the standard's way
(``_helpers.promote_operands``), complex dtypes included (tp's complex kernels, docs/complex.md).
The rest are composites of tp ops, so they run on every device: ``logaddexp``, ``signbit``,
``clip`` with array bounds, ``round`` and ``sign`` of complex arrays, ``conj``/``real``/``imag``,
and ``nextafter`` (tp's, over the float's bits).
"""
from __future__ import annotations

from ..frontend import complex as _complex
from ..frontend.factories import tensor as _tensor, zeros_like as _zeros_like
from ..frontend.ops import math_ops as _m
from ..frontend.ops.adjacent_floats import nextafter as _nextafter
from ..frontend.ops.elementwise import BINARY as _B, COMPARE as _C, UNARY as _U
from ..frontend.tensor import Tensor
from ._helpers import cast, check_array, promote_operands

__all__ = [
    "abs", "acos", "acosh", "add", "asin", "asinh", "atan", "atan2", "atanh", "bitwise_and", "bitwise_left_shift",
    "bitwise_invert", "bitwise_or", "bitwise_right_shift", "bitwise_xor", "ceil", "clip", "conj", "copysign", "cos",
    "cosh", "divide", "equal", "exp", "expm1", "floor", "floor_divide", "greater", "greater_equal", "hypot", "imag",
    "isfinite", "isinf", "isnan", "less", "less_equal", "log", "log1p", "log2", "log10", "logaddexp", "logical_and",
    "logical_not", "logical_or", "logical_xor", "maximum", "minimum", "multiply", "negative", "nextafter",
    "not_equal", "positive", "pow", "real", "reciprocal", "remainder", "round", "sign", "signbit", "sin", "sinh",
    "square", "sqrt", "subtract", "tan", "tanh", "trunc",
]


# The functions the standard defines for real-valued arrays only: a complex array is refused naming
# the function (the tp op underneath would name itself: less is lt).
REAL_ONLY = frozenset({
    "ceil", "floor", "trunc", "signbit", "atan2", "copysign", "floor_divide", "greater", "greater_equal", "hypot",
    "less", "less_equal", "logaddexp", "maximum", "minimum", "nextafter", "remainder", "clip",
})


def _check_real(name: str, *arrays) -> None:
    for a in arrays:
        if isinstance(a, Tensor) and a.dtype.category == 3:
            raise TypeError(f"{name} is defined for real-valued arrays only, got {a.dtype!r}")


def _unary(name: str, op, doc: str, *, keep_integers: bool = False):
    real_only = name in REAL_ONLY

    def fn(x: Tensor, /) -> Tensor:
        check_array(x)
        if real_only:
            _check_real(name, x)
        if keep_integers and x.dtype.category < 2:
            # rounding an integer (or bool) is the identity; the standard keeps the dtype
            return x.clone()
        return op(x)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


def _binary(name: str, op, doc: str):
    real_only = name in REAL_ONLY

    def fn(x1, x2, /) -> Tensor:
        if real_only:
            _check_real(name, x1, x2)
        a, b = promote_operands(x1, x2)
        return op(a, b)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


abs = _unary("abs", _U["abs"], "Absolute value, element-wise.")
acos = _unary("acos", _U["acos"], "Inverse cosine, element-wise.")
asin = _unary("asin", _U["asin"], "Inverse sine, element-wise.")
atan = _unary("atan", _U["atan"], "Inverse tangent, element-wise.")
bitwise_invert = _unary("bitwise_invert", _U["bitwise_not"], "Bitwise NOT of integer or boolean arrays.")
ceil = _unary("ceil", _U["ceil"], "Smallest integer-valued number not below each element.", keep_integers=True)
cos = _unary("cos", _U["cos"], "Cosine, element-wise.")
cosh = _unary("cosh", _U["cosh"], "Hyperbolic cosine, element-wise.")
exp = _unary("exp", _U["exp"], "e raised to each element.")
expm1 = _unary("expm1", _U["expm1"], "exp(x) - 1, accurate near 0.")
floor = _unary("floor", _U["floor"], "Largest integer-valued number not above each element.", keep_integers=True)
isfinite = _unary("isfinite", _U["isfinite"], "True where an element is finite.")
isinf = _unary("isinf", _U["isinf"], "True where an element is +/- infinity.")
isnan = _unary("isnan", _U["isnan"], "True where an element is NaN.")
log = _unary("log", _U["log"], "Natural logarithm, element-wise.")
log1p = _unary("log1p", _U["log1p"], "log(1 + x), accurate near 0.")
log2 = _unary("log2", _U["log2"], "Base-2 logarithm, element-wise.")
log10 = _unary("log10", _U["log10"], "Base-10 logarithm, element-wise.")
logical_not = _unary("logical_not", _U["logical_not"], "Logical NOT of a boolean array.")
negative = _unary("negative", _U["neg"], "-x, element-wise.")

sin = _unary("sin", _U["sin"], "Sine, element-wise.")
sinh = _unary("sinh", _U["sinh"], "Hyperbolic sine, element-wise.")
square = _unary("square", _U["square"], "x * x, element-wise.")
sqrt = _unary("sqrt", _U["sqrt"], "Square root, element-wise.")
tan = _unary("tan", _U["tan"], "Tangent, element-wise.")
tanh = _unary("tanh", _U["tanh"], "Hyperbolic tangent, element-wise.")
trunc = _unary("trunc", _U["trunc"], "Round toward zero.", keep_integers=True)

add = _binary("add", _B["add"], "x1 + x2, element-wise.")
atan2 = _binary("atan2", _B["atan2"], "The angle of (x2, x1) in radians, element-wise.")
bitwise_and = _binary("bitwise_and", _B["bitwise_and"], "Bitwise AND.")
bitwise_left_shift = _binary("bitwise_left_shift", _B["bitwise_left_shift"], "x1 << x2.")
bitwise_or = _binary("bitwise_or", _B["bitwise_or"], "Bitwise OR.")
bitwise_right_shift = _binary("bitwise_right_shift", _B["bitwise_right_shift"], "x1 >> x2 (arithmetic for signed).")
bitwise_xor = _binary("bitwise_xor", _B["bitwise_xor"], "Bitwise XOR.")
copysign = _binary("copysign", _B["copysign"], "|x1| with the sign of x2.")
divide = _binary("divide", _B["div"], "x1 / x2 (true division).")
equal = _binary("equal", _C["eq"], "x1 == x2.")
floor_divide = _binary("floor_divide", _B["floor_divide"], "floor(x1 / x2); integers round toward -infinity.")
greater = _binary("greater", _C["gt"], "x1 > x2.")
greater_equal = _binary("greater_equal", _C["ge"], "x1 >= x2.")
hypot = _binary("hypot", _B["hypot"], "sqrt(x1**2 + x2**2) without undue overflow.")
less = _binary("less", _C["lt"], "x1 < x2.")
less_equal = _binary("less_equal", _C["le"], "x1 <= x2.")
logical_and = _binary("logical_and", _B["logical_and"], "Logical AND of boolean arrays.")
logical_or = _binary("logical_or", _B["logical_or"], "Logical OR of boolean arrays.")
logical_xor = _binary("logical_xor", _B["logical_xor"], "Logical XOR of boolean arrays.")
maximum = _binary("maximum", _B["maximum"], "The larger of x1 and x2; NaN if either is NaN.")
minimum = _binary("minimum", _B["minimum"], "The smaller of x1 and x2; NaN if either is NaN.")
multiply = _binary("multiply", _B["mul"], "x1 * x2, element-wise.")
not_equal = _binary("not_equal", _C["ne"], "x1 != x2.")
pow = _binary("pow", _B["pow"], "x1 raised to x2.")
remainder = _binary("remainder", _B["remainder"], "x1 mod x2 with the sign of x2 (Python's %).")
subtract = _binary("subtract", _B["sub"], "x1 - x2, element-wise.")


def positive(x: Tensor, /) -> Tensor:
    """+x: a new array equal to x."""
    return check_array(x).clone()


def reciprocal(x: Tensor, /) -> Tensor:
    """1 / x, element-wise."""
    return _U["reciprocal"](check_array(x))


# tp's inverse hyperbolic functions: accurate near 0 and 1 and for large arguments, real or
# complex (C99's branch cuts, as the standard specifies).
acosh = _unary("acosh", _m.acosh, "Inverse hyperbolic cosine, element-wise (NaN below 1 for real x).")
asinh = _unary("asinh", _m.asinh, "Inverse hyperbolic sine, element-wise.")
atanh = _unary("atanh", _m.atanh, "Inverse hyperbolic tangent, element-wise (+/-inf at +/-1).")


def round(x: Tensor, /) -> Tensor:
    """Round to the nearest integer, halves to even; a complex array's parts are rounded each
    (the standard's rule)."""
    check_array(x)
    if x.dtype.category < 2:
        return x.clone()  # rounding an integer (or bool) is the identity; the standard keeps the dtype
    if x.dtype.category == 3:
        re, im = _complex.complex_parts(x)
        return _complex.from_parts(_U["round"](re), _U["round"](im))
    return _U["round"](x)


def sign(x: Tensor, /) -> Tensor:
    """-1, 0 or +1 by the sign of each element (NaN for NaN); for complex x, x / |x| (0 at 0)."""
    check_array(x)
    if x.dtype.category == 3:
        return _m.sgn(x)
    return _U["sign"](x)


def logaddexp(x1, x2, /) -> Tensor:
    """log(exp(x1) + exp(x2)) without overflow."""
    from ..frontend.ops.special_functions import log_add

    _check_real("logaddexp", x1, x2)
    a, b = promote_operands(x1, x2)
    return log_add(a, b, "exp", 1.0)


def signbit(x: Tensor, /) -> Tensor:
    """True where the sign bit is set (negative numbers, -0.0, NaNs with the sign bit)."""
    check_array(x)
    _check_real("signbit", x)
    if x.dtype.category != 2:
        return _C["lt"](x, 0)
    return _C["lt"](_B["copysign"](_tensor(1.0, dtype=x.dtype, device=x.device), x), 0)


def nextafter(x1, x2, /) -> Tensor:
    """The next representable float after x1 toward x2 (tp.nextafter, on the arrays' device)."""
    _check_real("nextafter", x1, x2)
    a, b = promote_operands(x1, x2)
    if a.dtype.category != 2:
        raise TypeError(f"nextafter needs floating-point arrays, got {a.dtype!r}")
    return _nextafter(a, b)


def clip(x: Tensor, /, min=None, max=None) -> Tensor:
    """x limited to [min, max]; bounds are scalars or arrays broadcastable to x's shape.

    The result keeps x's dtype and shape; a NaN in x or in a bound gives NaN.
    """
    check_array(x)
    _check_real("clip", x, min, max)
    out = x
    for bound, pick in ((min, _B["maximum"]), (max, _B["minimum"])):
        if bound is None:
            continue
        if isinstance(bound, Tensor):
            b = cast(bound, x.dtype)
        else:
            if x.dtype.category == 1 and isinstance(bound, float):
                raise TypeError(f"clip of an integer array needs integer bounds, got {bound!r}")
            b = _tensor(bound, dtype=x.dtype, device=x.device)
        out = pick(out, b)
    if out.shape != x.shape:
        raise ValueError(f"clip bounds must broadcast to x's shape {x.shape}; the result would be {out.shape}")
    return out.clone() if out is x else out


def conj(x: Tensor, /) -> Tensor:
    """The complex conjugate (a new array); a copy of x for real dtypes."""
    check_array(x)
    return _complex.conj(x) if x.dtype.category == 3 else x.clone()


def real(x: Tensor, /) -> Tensor:
    """The real part as a new array of the matching real floating dtype (complex64 gives
    float32); a copy of x for real dtypes."""
    check_array(x)
    return _complex.real(x).clone() if x.dtype.category == 3 else x.clone()


def imag(x: Tensor, /) -> Tensor:
    """The imaginary part as a new array of the matching real floating dtype; zeros of x's
    dtype for real dtypes."""
    check_array(x)
    return _complex.imag(x).clone() if x.dtype.category == 3 else _zeros_like(x)
