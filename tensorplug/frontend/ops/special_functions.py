"""Special functions as composites: ``erfc``, ``lgamma``, ``digamma``, ``logit``, ``sinc``,
``logaddexp`` and ``logaddexp2``.

None is a primitive (docs/ops.md), so each is written with the unary and binary primitives and
runs on every backend. The series are the classical ones: Stirling's series for lgamma and the
asymptotic series for digamma after shifting the argument above 10 with the recurrences
``lgamma(x) = lgamma(x + 1) - log(x)`` and ``digamma(x) = digamma(x + 1) - 1/x``, and the
reflection formulas below 0; erfc is ``1 - erf`` below 2 (where that loses no digits) and its
continued fraction above. Their truncation errors are below float64 rounding. lgamma and
digamma of narrower floats run in float64 where the device has it: the shift subtracts two
numbers near lgamma(10) ~ 13 (or adds ten reciprocals) whose float32 rounding alone left results
near the zeros (lgamma(1.5), lgamma(2.5), digamma(1.46)) wrong by 2e-5 relative, far from
PyTorch's libm values; Beta, Gamma and Dirichlet log-densities inherited it. The derivatives
are written out (PyTorch's: ``digamma`` for lgamma, ``trigamma`` for digamma, the Gaussian for
erfc) rather than differentiated through the series.
"""
from __future__ import annotations

import functools
import math

from .. import dtypes as _dt
from ..tensor import Tensor
from ._composite import composite
from .copying import to_dtype
from ._pointwise_args import float_operand, inplace_variant, promoted_operands
from .elementwise import BINARY, COMPARE, UNARY, where
from .math_ops import clamp_max, clamp_min
from .out_rehearsal import rehearse_out

__all__ = ["erfc", "lgamma", "digamma", "logit", "sinc", "logaddexp", "logaddexp2"]

_SHIFT = 10.0  # the series below are used from here up; smaller arguments are shifted up to it
_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


def _finish(op: str, result: Tensor, out) -> Tensor:
    from ._common import write_out

    return write_out(op, out, result)


def _shifted(x: Tensor, step):
    """``(z, acc)``: ``z = x + k`` with the smallest k >= 0 that brings it to at least 10, and
    ``acc``, the terms ``step(x + i)`` for i < k combined by ``step`` (None: nothing yet)."""
    z, acc = x, None
    for _ in range(int(_SHIFT)):
        small = COMPARE["lt"](z, _SHIFT)
        acc = step(acc, z, small)
        z = where(small, z + 1, z)
    return z, acc


def _reflection_parts(x: Tensor):
    """``(negative, y, angle)`` for the reflection formulas: where x < 0, ``y = 1 - x`` (else x)
    is where the series runs, and ``angle = pi * (x - round(x))``, whose sine and tangent are
    +-those of ``pi * x`` but keep their digits for large arguments (x - round(x) is exact)."""
    negative = COMPARE["lt"](x, 0)
    return negative, where(negative, 1 - x, x), (x - UNARY["round"](x)) * math.pi


_WIDENED = (_dt.float32, _dt.float16, _dt.bfloat16)


def _in_float64(series):
    """``series`` evaluated in float64 for a narrower float input (rounded back once at the end),
    where the input's device declares float64; as it is elsewhere."""

    @functools.wraps(series)  # keeps the op's documented signature (input)
    def evaluate(input: Tensor) -> Tensor:
        if input._dtype in _WIDENED and _dt.float64 in input._device._dtypes:
            return to_dtype(series(to_dtype(input, _dt.float64)), input._dtype)
        return series(input)

    return evaluate


# --- lgamma -------------------------------------------------------------------------------------
def _lgamma_from(z: Tensor) -> Tensor:
    """Stirling's series for lgamma, for z >= 10."""
    r = UNARY["reciprocal"](z)
    r2 = r * r
    series = r * (1 / 12 - r2 * (1 / 360 - r2 * (1 / 1260 - r2 * (1 / 1680 - r2 * (1 / 1188 - r2 * (691 / 360360 - r2 / 156))))))
    return (z - 0.5) * UNARY["log"](z) - z + _HALF_LOG_2PI + series


def _lgamma_nonnegative(x: Tensor) -> Tensor:
    def multiply(acc, z, small):
        return where(small, z, 1.0) if acc is None else where(small, acc * z, acc)

    z, product = _shifted(x, multiply)
    return _lgamma_from(z) - UNARY["log"](product)


def _lgamma_derivative(grad, args, output, kwargs, needs):
    return (grad * _digamma(args[0]),)


@composite("lgamma", derivative=_lgamma_derivative)
@_in_float64
def _lgamma(input: Tensor) -> Tensor:
    x = input
    negative, y, angle = _reflection_parts(x)
    positive_part = _lgamma_nonnegative(y)
    # Reflection: lgamma(x) = log(pi / |sin(pi x)|) - lgamma(1 - x); inf at the poles 0, -1, ...
    sine = UNARY["abs"](UNARY["sin"](angle))
    reflected = math.log(math.pi) - UNARY["log"](sine) - positive_part
    result = where(negative, reflected, positive_part)
    return where(UNARY["isinf"](x), math.inf, result)


def lgamma(input, *, out=None) -> Tensor:
    """The log of the absolute value of the gamma function (integers compute in the default
    float dtype).

    >>> round(tp.lgamma(tp.tensor(5.0)).item(), 4)  # log(4!)
    3.1781
    """
    if out is not None:
        rehearse_out(lgamma, locals())
    return _finish("lgamma", _lgamma(float_operand("lgamma", input)), out)


# --- digamma and its derivative -----------------------------------------------------------------
def _reciprocal_sum(acc, z, small):
    term = where(small, UNARY["reciprocal"](z), 0.0)
    return term if acc is None else acc + term


def _digamma_from(z: Tensor) -> Tensor:
    """The asymptotic series of digamma, for z >= 10."""
    r = UNARY["reciprocal"](z)
    r2 = r * r
    series = r2 * (1 / 12 - r2 * (1 / 120 - r2 * (1 / 252 - r2 * (1 / 240 - r2 * (1 / 132 - r2 * (691 / 32760 - r2 / 12))))))
    return UNARY["log"](z) - 0.5 * r - series


def _digamma_derivative(grad, args, output, kwargs, needs):
    return (grad * trigamma(args[0]),)


@composite("digamma", derivative=_digamma_derivative)
@_in_float64
def _digamma(input: Tensor) -> Tensor:
    x = input
    negative, y, angle = _reflection_parts(x)
    z, reciprocals = _shifted(y, _reciprocal_sum)
    positive_part = _digamma_from(z) - reciprocals  # digamma(+-0) is -+inf from 1/(+-0), as PyTorch
    # Reflection: digamma(x) = digamma(1 - x) - pi / tan(pi x); NaN at the poles -1, -2, ... and -inf.
    reflected = positive_part - math.pi / UNARY["tan"](angle)
    result = where(negative, reflected, positive_part)
    return where(negative & COMPARE["eq"](x, UNARY["floor"](x)), math.nan, result)


def trigamma(x: Tensor) -> Tensor:
    """The derivative of digamma (PyTorch's ``polygamma(1, x)``), for digamma's gradient."""
    negative, y, angle = _reflection_parts(x)

    def squares(acc, z, small):
        term = where(small, UNARY["reciprocal"](z * z), 0.0)
        return term if acc is None else acc + term

    z, inverse_squares = _shifted(y, squares)
    r = UNARY["reciprocal"](z)
    r2 = r * r
    series = r + r2 / 2 + r * r2 * (1 / 6 - r2 * (1 / 30 - r2 * (1 / 42 - r2 * (1 / 30 - r2 * (5 / 66 - r2 * (691 / 2730 - r2 * 7 / 6))))))
    positive_part = series + inverse_squares
    # Reflection: trigamma(x) = pi^2 / sin(pi x)^2 - trigamma(1 - x).
    sine = UNARY["sin"](angle)
    return where(negative, math.pi ** 2 / (sine * sine) - positive_part, positive_part)


def digamma(input, *, out=None) -> Tensor:
    """The logarithmic derivative of the gamma function: -inf at 0, NaN at the negative integers.

    >>> round(tp.digamma(tp.tensor(1.0)).item(), 6)  # minus the Euler-Mascheroni constant
    -0.577216
    """
    if out is not None:
        rehearse_out(digamma, locals())
    return _finish("digamma", _digamma(float_operand("digamma", input)), out)


# --- erfc ---------------------------------------------------------------------------------------
def _erfc_derivative(grad, args, output, kwargs, needs):
    x = args[0]
    return (grad * UNARY["exp"](-(x * x)) * (-2 / math.sqrt(math.pi)),)


@composite("erfc", derivative=_erfc_derivative)
def _erfc(input: Tensor) -> Tensor:
    x = input
    # 1 - erf(x) loses digits as erf(x) nears 1 (its relative error is eps / erfc(x)); above a
    # threshold the continued fraction erfc(x) = exp(-x^2) / sqrt(pi) / (x + (1/2) / (x + 1 / (x +
    # (3/2) / ...))) is used instead: from 2 with 60 terms in float64 (both below 1e-14), from 1
    # with 40 terms in the narrower dtypes (both below 4e-7).
    wide = x._dtype.itemsize == 8
    threshold, terms = (2.0, 60) if wide else (1.0, 40)
    far = COMPARE["ge"](x, threshold)
    xs = where(far, x, threshold)  # keeps the unused branch finite
    fraction = xs
    for k in range(terms, 0, -1):
        fraction = xs + (k / 2) / fraction
    # exp(-x^2) as exp(-h^2) * exp(-(x - h)(x + h)) with h = x rounded to sixteenths: h^2 is exact,
    # so the rounding of x^2 (relative error eps * x^2 in the result) does not enter.
    h = UNARY["trunc"](xs * 16) / 16
    gaussian = UNARY["exp"](-(h * h)) * UNARY["exp"](-((xs - h) * (xs + h)))
    tail = gaussian / (fraction * math.sqrt(math.pi))
    tail = where(COMPARE["eq"](xs, math.inf), 0.0, tail)  # inf - inf in the split would give NaN
    return where(far, tail, 1 - UNARY["erf"](x))


def erfc(input, *, out=None) -> Tensor:
    """The complementary error function ``1 - erf(input)``, accurate where it is tiny.

    >>> tp.erfc(tp.tensor(0.0)).item()
    1.0
    """
    if out is not None:
        rehearse_out(erfc, locals())
    return _finish("erfc", _erfc(float_operand("erfc", input)), out)


# --- logit, sinc --------------------------------------------------------------------------------
def logit(input, eps=None, *, out=None) -> Tensor:
    """``log(p / (1 - p))``, with ``p`` clamped to ``[eps, 1 - eps]`` when ``eps`` is given
    (the gradient is then 0 outside that range, as PyTorch's).

    >>> tp.logit(tp.tensor(0.5)).item()
    0.0
    """
    if out is not None:
        rehearse_out(logit, locals())
    p = float_operand("logit", input)
    if eps is not None:
        eps = float(eps)
        p = clamp_max(clamp_min(p, eps), 1 - eps)
    # log(p) - log1p(-p) rather than log(p / (1 - p)): the gradient at p = 0 and 1 is then
    # 1/p + 1/(1 - p) = inf, as PyTorch's, where the quotient's chain rule would give NaN.
    return _finish("logit", UNARY["log"](p) - UNARY["log1p"](-p), out)


def sinc(input, *, out=None) -> Tensor:
    """The normalized sinc function ``sin(pi x) / (pi x)``, 1 at 0 (with gradient 0 there).

    >>> round(tp.sinc(tp.tensor(0.5)).item(), 6)  # 2 / pi
    0.63662
    """
    if out is not None:
        rehearse_out(sinc, locals())
    x = float_operand("sinc", input)
    zero = COMPARE["eq"](x, 0)
    safe = where(zero, 1.0, x) * math.pi  # the unused branch stays finite, so its gradient is 0
    return _finish("sinc", where(zero, 1.0, UNARY["sin"](safe) / safe), out)


# --- logaddexp ----------------------------------------------------------------------------------
def log_add(a: Tensor, b: Tensor, exp_name: str, log1p_scale: float) -> Tensor:
    """``max + log1p(exp(-|a - b|))`` in base e or 2 (tp.logaddexp/2 and the array API's);
    equal infinities give themselves (their difference would be NaN)."""
    big = BINARY["maximum"](a, b)
    same_infinity = UNARY["isinf"](big) & COMPARE["eq"](a, b)
    gap = where(same_infinity, 0.0, UNARY["abs"](a - b))
    result = big + UNARY["log1p"](UNARY[exp_name](-gap)) * log1p_scale
    return where(same_infinity, big, result)


def _check_floating(op: str, a: Tensor) -> None:
    if not a._dtype.is_floating_point:
        raise NotImplementedError(f"{op}(): not implemented for integer or bool tensors (got {a._dtype.name})")


def logaddexp(input, other, *, out=None) -> Tensor:
    """``log(exp(input) + exp(other))`` without overflow, for floating tensors.

    >>> round(tp.logaddexp(tp.tensor(0.0), tp.tensor(0.0)).item(), 6)  # log(2)
    0.693147
    """
    if out is not None:
        rehearse_out(logaddexp, locals())
    a, b = promoted_operands("logaddexp", input, other)
    _check_floating("logaddexp", a)
    return _finish("logaddexp", log_add(a, b, "exp", 1.0), out)


def logaddexp2(input, other, *, out=None) -> Tensor:
    """``log2(2**input + 2**other)`` without overflow, for floating tensors.

    >>> tp.logaddexp2(tp.tensor(1.0), tp.tensor(1.0)).item()
    2.0
    """
    if out is not None:
        rehearse_out(logaddexp2, locals())
    a, b = promoted_operands("logaddexp2", input, other)
    _check_floating("logaddexp2", a)
    return _finish("logaddexp2", log_add(a, b, "exp2", 1 / math.log(2)), out)


#: Tensor methods this module provides: name -> function (attached by frontend.methods).
TENSOR_METHODS: dict = {name: globals()[name] for name in __all__}
TENSOR_METHODS.update({name + "_": inplace_variant(globals()[name]) for name in ("erfc", "lgamma", "digamma", "logit", "sinc")})
