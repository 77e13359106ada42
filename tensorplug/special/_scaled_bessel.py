"""The modified Bessel functions of the first kind that ``i0`` does not cover: ``i1`` (order 1)
and the exponentially scaled ``i0e`` = e^-|x| i0(x) and ``i1e`` = e^-|x| i1(x), as
torch.special's. The scaled ones stay finite for any x (VonMises needs log i0 of large
concentrations).

As ``i0``: up to |x| = 30 the power series
I_n(x) = (x/2)^n sum_k (x^2/4)^k / (k! (k+n)!), whose terms are positive (no digits lost), and
above it Hankel's asymptotic series
I_n(x) ~ e^x / sqrt(2 pi x) sum_k (-1)^k prod_{j<=k} (4n^2 - (2j-1)^2) / (k! (8x)^k),
whose terms keep shrinking well past the 12 used here at x > 30. Gradients come from autograd
through these formulas.
"""
from __future__ import annotations

import math

from ..frontend.ops._pointwise_args import float_operand
from ..frontend.ops.elementwise import COMPARE, UNARY, where
from ..frontend.ops.special_functions import _finish
from ..frontend.tensor import Tensor
from ..frontend.ops.out_rehearsal import rehearse_out

_SWITCH = 30.0  # |x| above which the asymptotic series is used
_SERIES_TERMS = 80  # enough for the power series to converge at |x| = 30
_ASYMPTOTIC_TERMS = 12


def _scaled(order: int, x: Tensor) -> Tensor:
    """e^-|x| I_order(x). The series runs on x itself (not |x|), so the odd order's sign, and its
    gradient at 0, come out of the series rather than from sign(x)."""
    a = UNARY["abs"](x)
    large = COMPARE["gt"](a, _SWITCH)
    small = where(large, 0.0, x)
    quarter_square = small * small * 0.25
    term = (small * 0.5).pow(order) / math.factorial(order)
    total = term
    for k in range(1, _SERIES_TERMS):
        term = term * quarter_square / float(k * (k + order))
        total = total + term
    series = total * UNARY["exp"](-UNARY["abs"](small))
    big = where(large, a, _SWITCH + 1.0)
    inverse = UNARY["reciprocal"](big * 8.0)
    mu = 4.0 * order * order
    factor = correction = inverse * 0 + 1.0
    for k in range(1, _ASYMPTOTIC_TERMS):
        factor = factor * inverse * (-(mu - (2 * k - 1) ** 2)) / k
        correction = correction + factor
    asymptotic = UNARY["rsqrt"](big * (2 * math.pi)) * correction
    if order % 2:
        asymptotic = asymptotic * UNARY["sign"](x)
    return where(large, asymptotic, series)


def i0e(input, *, out=None) -> Tensor:
    """e^-|x| i0(x), the exponentially scaled modified Bessel function of order 0."""
    if out is not None:
        rehearse_out(i0e, locals())
    x = float_operand("i0e", input)
    return _finish("i0e", _scaled(0, x), out)


def i1e(input, *, out=None) -> Tensor:
    """e^-|x| i1(x), the exponentially scaled modified Bessel function of order 1 (odd in x)."""
    if out is not None:
        rehearse_out(i1e, locals())
    x = float_operand("i1e", input)
    return _finish("i1e", _scaled(1, x), out)


def i1(input, *, out=None) -> Tensor:
    """The modified Bessel function of the first kind of order 1 (odd in x)."""
    if out is not None:
        rehearse_out(i1, locals())
    x = float_operand("i1", input)
    return _finish("i1", _scaled(1, x) * UNARY["exp"](UNARY["abs"](x)), out)
