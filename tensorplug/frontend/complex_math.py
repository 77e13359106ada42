"""The elementwise complex functions (sqrt, pow, trigonometric, hyperbolic, ...) as real formulas.

Each function takes the (real, imaginary) parts of its argument as real tensors of the part dtype
and returns the parts of the result, computed with real tensorplug ops. The Complex key's kernels
(tensorplug/frontend/complex.py) wrap them, so autograd records the real ops and the gradient of
a real loss is dL/dx + i dL/dy, PyTorch's convention, with no formula of its own.

The formulas are chosen for accuracy and for the branch cuts of C99/NumPy/PyTorch rather than
for brevity: ``sqrt`` never forms ``r + x`` with cancellation, ``atanh``/``atan`` and ``log1p``
take ``log1p`` of small quantities, ``tanh`` uses Kahan's form that neither overflows nor
cancels, ``asin``/``acos`` are Kahan's formulas over ``sqrt(1 - z)`` and ``sqrt(1 + z)`` (whose
cuts give the inverse functions' cuts, signed zeros included). Where a branch is selected with
``where``, the branch not taken is computed on a harmless stand-in value, so that its NaN or
infinity cannot reach the gradient (the gradient of ``where``'s other branch is multiplied by 0,
and 0 * inf is NaN).
"""
from __future__ import annotations

import cmath
import math

import tensorplug as tp

__all__ = ["cmul", "cdiv", "csqrt", "crsqrt", "creciprocal", "cexp", "clog", "clog1p", "cexpm1", "csin", "ccos",
           "ctan", "csinh", "ccosh", "ctanh", "casin", "cacos", "catan", "catanh", "csigmoid", "cpow", "real_asinh",
           "real_acosh", "real_atanh", "casinh", "cacosh"]

_LN2 = math.log(2.0)


def _is_number(x) -> bool:
    return not isinstance(x, tp.Tensor)


def cmul(ar, ai, br, bi):
    """(ar + i ai)(br + i bi); a part that is None is zero (a real operand)."""
    if ai is None and bi is None:
        return ar * br, None
    if ai is None:
        return ar * br, ar * bi
    if bi is None:
        return ar * br, ai * br
    return ar * br - ai * bi, ar * bi + ai * br


def _zero_free(t):
    """``t`` with its zeros replaced by 1: a divisor for the branch not taken where ``t`` is 0."""
    return tp.where(t == 0, 1.0, t)


def creciprocal(x, y):
    """1 / z, scaled by |z| so that neither |z|^2 overflows (|z| above 1e19 in float32) nor the
    parts underflow: (x - iy) / |z| / |z|. 1/0 is inf + nan i, and 1/inf is 0, as PyTorch."""
    r = tp.hypot(x, y)
    safe = _zero_free(r)
    re, im = x / safe / safe, -y / safe / safe
    infinite = tp.isinf(r)
    re = tp.where(infinite, tp.copysign(tp.zeros_like(x), x), tp.where(r == 0, math.inf, re))
    im = tp.where(infinite, tp.copysign(tp.zeros_like(y), -y), tp.where(r == 0, math.nan, im))
    return re, im


def cdiv(ar, ai, br, bi):
    """a / b for tensor parts of b (a's parts may be numbers, ai None for a real a): a times
    conj(b) / |b|, divided by |b| (see :func:`creciprocal`), so that the quotient overflows only
    where it is out of range, not where |b|^2 is."""
    r = tp.hypot(br, bi)
    safe = _zero_free(r)
    re, im = cmul(ar, ai, br / safe, -bi / safe)
    # A zero divisor: inf or NaN, as the plain quotient gives.
    zero = r == 0
    return tp.where(zero, _div_by_zero(ar), re / safe), tp.where(zero, math.nan, im / safe)


def _div_by_zero(ar):
    # The real part of a / 0: inf with a's sign for a real part that is not 0, NaN for 0 / 0.
    if _is_number(ar):
        return math.nan if ar == 0 else math.copysign(math.inf, ar)
    return tp.where(ar == 0, math.nan, tp.copysign(tp.full_like(ar, math.inf), ar))


def _scaled(a, b):
    """``a * b``, but the zero factor where one factor is exactly 0 and the other infinite or NaN:
    the exact zeros of C99's special values (cexp(inf + 0i) = inf + 0i, csin(inf + 0i) = NaN + 0i),
    where the product would be NaN."""
    product = a * b
    exact_zero = tp.where(a == 0, a, b)
    return tp.where(~tp.isfinite(product) & ((a == 0) | (b == 0)), exact_zero, product)


def cexp(x, y):
    scale = tp.exp(x)
    return _scaled(scale, tp.cos(y)), _scaled(scale, tp.sin(y))


def clog(x, y):
    return tp.log(tp.hypot(x, y)), tp.atan2(y, x)


def clog1p(x, y):
    """log(1 + z): near 0, log|1 + z| is log1p(x (2 + x) + y^2) / 2 (no cancellation in 1 + x);
    elsewhere, log of the modulus of 1 + z."""
    near = (x.abs() < 0.5) & (y.abs() < 0.5)
    xs, ys = tp.where(near, x, 0.0), tp.where(near, y, 0.0)
    small = 0.5 * tp.log1p(xs * (xs + 2.0) + ys * ys)
    far = tp.log(tp.hypot(x + 1.0, y))
    return tp.where(near, small, far), tp.atan2(y, x + 1.0)


def cexpm1(x, y):
    """exp(z) - 1 with no cancellation near 0: exp(x) cos(y) - 1 = expm1(x) cos(y) - 2 sin(y/2)^2."""
    half = tp.sin(y * 0.5)
    re = _scaled(tp.expm1(x), tp.cos(y)) - 2.0 * half * half
    return re, _scaled(tp.exp(x), tp.sin(y))


def csqrt(x, y):
    """The principal square root, cut along the negative real axis (the sign of a zero imaginary
    part picks the side: sqrt(-4 - 0i) = -2i). t = sqrt((|z| + |x|) / 2) is the larger part and
    y / (2t) the smaller, so neither suffers cancellation; the halves are added separately so
    that |z| + |x| cannot overflow. A tiny z (parts below 2^-60) is scaled by 2^64 first and its
    root by 2^-32 after, a huge one (above 2^60) by 2^-64 and 2^32, all exact: halving a
    subnormal part rounded it away (sqrt(1e-45) in complex64 was 0, PyTorch gives 3.7e-23), and
    |z| overflowed for parts near the largest float (sqrt(3e38 + 3e38i) was inf)."""
    largest = tp.maximum(x.abs(), y.abs())
    tiny, huge = largest < 2.0 ** -60, largest > 2.0 ** 60
    scale = tp.where(tiny, 2.0 ** 64, tp.where(huge, 2.0 ** -64, 1.0))
    re, im = _csqrt_unscaled(x * scale, y * scale)
    unscale = tp.where(tiny, 2.0 ** -32, tp.where(huge, 2.0 ** 32, 1.0))
    return re * unscale, im * unscale


def _csqrt_unscaled(x, y):
    r = tp.hypot(x, y)
    t = tp.sqrt(r * 0.5 + x.abs() * 0.5)
    s = y / (2.0 * _zero_free(t))  # t = 0 only at z = 0, where s = y (a signed zero)
    right = x >= 0
    re = tp.where(right, t, s.abs())
    im = tp.where(right, s, tp.copysign(t, y))
    # sqrt(x +- inf i) = inf +- inf i for every x, NaN included (C99).
    infinite = tp.isinf(y)
    return tp.where(infinite, math.inf, re), tp.where(infinite, y, im)


def crsqrt(x, y):
    re, im = csqrt(x, y)
    return creciprocal(re, im)


def real_asinh(v):
    """asinh of a real tensor (tensorplug has no real asinh op): log1p(a + a^2 / (1 + sqrt(1 +
    a^2))) with the sign of v, a = |v|, exact near 0; log(2a) for large a, where a^2 overflows."""
    a = v.abs()
    big = a > 2.0 ** 28  # beyond this, sqrt(1 + a^2) is a to working precision
    small = tp.where(big, 1.0, a)
    near = tp.log1p(small + small * small / (1.0 + tp.sqrt(1.0 + small * small)))
    far = tp.log(tp.where(big, a, 1.0)) + _LN2
    return tp.copysign(tp.where(big, far, near), v)


def real_acosh(v):
    """acosh of a real tensor: log1p(t + sqrt(t (t + 2))) with t = v - 1 (exact near 1), log(2v)
    where t^2 would overflow, NaN below 1 (and for NaN)."""
    big = v > 2.0 ** 28
    below = v < 1.0
    # The branch not taken is computed at t = 0, so neither overflow nor sqrt(-) reaches it.
    t = tp.where(big | below, 0.0, v - 1.0)
    near = tp.log1p(t + tp.sqrt(t * (t + 2.0)))
    far = tp.log(tp.where(big, v, 1.0)) + _LN2
    return tp.where(below, math.nan, tp.where(big, far, near))


def real_atanh(v):
    """atanh of a real tensor: log1p(2v / (1 - v)) / 2, exact near 0; +-inf at +-1, NaN beyond."""
    return 0.5 * tp.log1p(2.0 * v / (1.0 - v))


def csinh(x, y):
    return _scaled(tp.sinh(x), tp.cos(y)), _scaled(tp.cosh(x), tp.sin(y))


def ccosh(x, y):
    return _scaled(tp.cosh(x), tp.cos(y)), _scaled(tp.sinh(x), tp.sin(y))


def csin(x, y):
    # sin(z) = -i sinh(iz), iz = -y + ix
    re, im = csinh(-y, x)
    return im, -re


def ccos(x, y):
    # cos(z) = cosh(iz)
    return ccosh(-y, x)


def ctanh(x, y):
    """Kahan's tanh: with t = tan(y), b = 1 + t^2, s = sinh(x), r = sqrt(1 + s^2),
    tanh(z) = (b r s + i t) / (1 + b s^2), which has no cancellation; for |x| > 20 the real part
    is sign(x) and the imaginary part 2 sin(2y) exp(-2|x|) to working precision (s^2 would
    overflow float32 soon after)."""
    big = x.abs() > 20.0
    xs = tp.where(big, 0.0, x)
    t = tp.tan(y)
    b = 1.0 + t * t
    s = tp.sinh(xs)
    r = tp.sqrt(1.0 + s * s)
    d = 1.0 + b * s * s
    far_im = 2.0 * tp.sin(2.0 * y) * tp.exp(-2.0 * tp.where(big, x.abs(), 0.0))
    re = tp.where(big, tp.sign(x), b * r * s / d)
    im = tp.where(big, far_im, t / d)
    # tanh(0 + iy) is purely imaginary even where tan(y) is NaN (y infinite): C99's exact 0,
    # kept only where the formula gave NaN (elsewhere its gradient is the right one).
    return tp.where((x == 0) & tp.isnan(re), x, re), im


def ctan(x, y):
    # tan(z) = -i tanh(iz)
    re, im = ctanh(-y, x)
    return im, -re


def catanh(x, y):
    """atanh(z) = log((1 + z) / (1 - z)) / 2: the real part is log1p(4x / ((1 - x)^2 + y^2)) / 4
    (accurate near 0), the imaginary part atan2(2y, (1 - x)(1 + x) - y^2) / 2, whose signed
    zeros give the cuts along the real axis beyond +-1 their sides."""
    one_minus = 1.0 - x
    re = 0.25 * tp.log1p(4.0 * x / (one_minus * one_minus + y * y))
    im = 0.5 * tp.atan2(2.0 * y, one_minus * (1.0 + x) - y * y)
    # An infinite z: the limits +-0 and +-pi/2, where the formulas meet inf / inf.
    infinite = tp.isinf(x) | tp.isinf(y)
    return (tp.where(infinite, tp.copysign(tp.zeros_like(x), x), re),
            tp.where(infinite, tp.copysign(tp.full_like(y, math.pi / 2), y), im))


def catan(x, y):
    # atan(z) = -i atanh(iz)
    re, im = catanh(-y, x)
    return im, -re


def _sqrt_one_minus_plus(x, y):
    # sqrt(1 - z) and sqrt(1 + z); 1 - z's imaginary part is -y, a negated zero included.
    return csqrt(1.0 - x, -y), csqrt(1.0 + x, y)


def casin(x, y):
    """Kahan's asin: atan2(x, Re(sqrt(1 - z) sqrt(1 + z))) + i asinh(Im(conj(sqrt(1 - z)) sqrt(1 + z)))."""
    (mr, mi), (pr, pi) = _sqrt_one_minus_plus(x, y)
    re, im = tp.atan2(x, mr * pr - mi * pi), real_asinh(mr * pi - mi * pr)
    # An infinite z: the real part's limit is atan2(x, |y|) (pi/2 at inf + iy, pi/4 at inf + inf i),
    # where the formula meets 0 * inf.
    infinite = tp.isinf(x) | tp.isinf(y)
    return (tp.where(infinite, tp.atan2(x, y.abs()), re),
            tp.where(infinite, tp.copysign(tp.full_like(y, math.inf), y), im))


def cacos(x, y):
    """Kahan's acos: 2 atan2(Re sqrt(1 - z), Re sqrt(1 + z)) + i asinh(Im(conj(sqrt(1 + z)) sqrt(1 - z)))."""
    (mr, mi), (pr, pi) = _sqrt_one_minus_plus(x, y)
    return 2.0 * tp.atan2(mr, pr), real_asinh(pr * mi - pi * mr)


def casinh(x, y):
    # asinh(z) = -i asin(iz), iz = -y + ix (C99's definition, signed zeros included)
    re, im = casin(-y, x)
    return im, -re


def cacosh(x, y):
    """Kahan's acosh: asinh(Re(conj(sqrt(z - 1)) sqrt(z + 1))) + 2i atan2(Im sqrt(z - 1), Re sqrt(z + 1));
    the real part is >= 0 and the cut along x < 1 takes its side from the sign of a zero y."""
    mr, mi = csqrt(x - 1.0, y)
    pr, pi = csqrt(x + 1.0, y)
    re, im = real_asinh(mr * pr + mi * pi), 2.0 * tp.atan2(mi, pr)
    # An infinite z: |re| is inf and the angle is atan2(y, x)'s (pi/4 at inf + inf i), where the
    # formula meets 0 * inf.
    infinite = tp.isinf(x) | tp.isinf(y)
    return (tp.where(infinite, math.inf, re), tp.where(infinite, tp.atan2(y, x), im))


def csigmoid(x, y):
    """1 / (1 + exp(-z)) for x >= 0 and exp(z) / (1 + exp(z)) for x < 0: the exponential taken
    is at most 1 in modulus, so it cannot overflow (1 / (1 + inf) would be NaN here)."""
    right = x >= 0
    er, ei = cexp(tp.where(right, -x, x), tp.where(right, -y, y))
    return cdiv(tp.where(right, 1.0, er), tp.where(right, 0.0, ei), 1.0 + er, ei)


# --- powers ---------------------------------------------------------------------------------
_SMALL_INTEGER = 64


def _integer_power(x, y, n: int):
    """z^n by repeated squaring (exact for small integers, and 0^n = 0 with a 0 gradient)."""
    result = None
    base = (x, y)
    k = abs(n)
    while k:
        if k & 1:
            result = base if result is None else cmul(*result, *base)
        k >>= 1
        if k:
            base = cmul(*base, *base)
    if result is None:  # z^0 = 1, also for z = 0 (as PyTorch)
        return tp.ones_like(x), tp.zeros_like(y)
    return creciprocal(*result) if n < 0 else result


def cpow(a, b):
    """a^b for complex or real parts: each of a and b is (re, im), tensors or Python numbers
    (im may be None for a real tensor). exp(b log a) in general, with 0^b = 0 for Re(b) > 0 and 1
    for b = 0 (PyTorch's), and repeated multiplication for a small integer exponent."""
    (ar, ai), (br, bi) = a, b
    if _is_number(br) and (bi is None or _is_number(bi)):
        exponent = complex(br, bi or 0.0)
        if exponent.imag == 0 and exponent.real.is_integer() and abs(exponent.real) <= _SMALL_INTEGER:
            return _integer_power(ar, _imag_of(ar, ai), int(exponent.real))
        if exponent == 0.5:
            return csqrt(ar, _imag_of(ar, ai))
    if _is_number(ar):
        # A number base: b log(a) with log(a) a constant.
        base = complex(ar, ai or 0.0)
        if base == 0:
            return _zero_base(br, bi)
        log_base = cmath.log(base)
        return cexp(*_times_constant(br, bi, log_base))
    ai = _imag_of(ar, ai)
    zero = (ar == 0) & (ai == 0)
    # The branch not taken at a = 0 is computed at a = 1, so log's infinity stays out of the gradient.
    lr, li = clog(tp.where(zero, 1.0, ar), ai)
    if bi is None or (_is_number(bi) and bi == 0):
        er, ei = lr * br, li * br
    else:
        er, ei = cmul(lr, li, br, bi)
    re, im = cexp(er, ei)
    if _is_number(br) and (bi is None or _is_number(bi)):
        br = tp.full_like(re, br)
        bi = None if bi is None else tp.full_like(re, bi)
    zr, zi = _zero_base(br, bi)
    return tp.where(zero, zr, re), tp.where(zero, zi, im)


def _zero_base(br, bi):
    """0^b: 0 for Re(b) > 0, inf + nan i for Re(b) < 0 (PyTorch's), 1 for b = 0 (NumPy's and
    PyTorch's for a number exponent), NaN for a nonzero imaginary exponent."""
    one = (br == 0) if bi is None else (br == 0) & (bi == 0)
    positive, negative = br > 0, br < 0
    re = tp.where(one, 1.0, tp.where(positive, 0.0, tp.where(negative, math.inf, math.nan)))
    im = tp.where(one | positive, 0.0, math.nan)
    return re.to(br.dtype), im.to(br.dtype)


def _imag_of(re, im):
    return tp.zeros_like(re) if im is None else im


def _times_constant(br, bi, c: complex):
    """(br + i bi) * c for tensor parts and a Python complex c."""
    if bi is None:
        return br * c.real, br * c.imag
    return br * c.real - bi * c.imag, br * c.imag + bi * c.real
