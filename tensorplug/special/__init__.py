"""``tp.special``: ``torch.special``'s names (issue 13).

Most are tensorplug's own functions under SciPy's names (``expit`` is ``sigmoid``, ``gammaln``
``lgamma``, ``psi`` ``digamma``, ...). The rest are composites of existing ops: ``entr``,
``xlog1py``, the normal distribution's ``ndtr``, ``log_ndtr`` and ``ndtri``, the Bessel function
``i0``, the Hurwitz ``zeta``, the regularized incomplete gamma functions ``gammainc`` and
``gammaincc`` (``_incomplete_gamma.py``), ``i1`` and the scaled ``i0e`` and ``i1e``
(``_scaled_bessel.py``); ``frontend/ops/zeta_functions.py`` gives ``zeta``, ``polygamma`` and
``multigammaln``. Each runs on every backend and differentiates.

>>> import tensorplug as tp
>>> round(tp.special.ndtr(tp.tensor(0.0)).item(), 6)
0.5
"""
from __future__ import annotations

import math

from ..frontend.ops._numpy_names import required_dim
from ..frontend.ops._pointwise_args import float_operand, promoted_operands
from ..frontend.ops.elementwise import COMPARE, UNARY, where
from ..frontend.ops.special_functions import _finish, digamma, erfc, lgamma, logit, sinc
from ..frontend.ops.zeta_functions import multigammaln, polygamma, zeta
from ._incomplete_gamma import gammainc, gammaincc
from ._scaled_bessel import i0e, i1, i1e
from ..frontend import dtypes as _dt
from ..frontend.autograd import Function
from ..frontend.shapes import broadcast_shapes
from ..frontend.factories import ones_like
from ..frontend.ops.math_ops import logsumexp, xlogy  # noqa: F401
from ..nn.functional import log_softmax as _log_softmax, softmax as _softmax
from ..frontend.ops.out_rehearsal import rehearse_out

__all__ = [
    "expit", "logit", "erf", "erfc", "erfinv", "exp2", "expm1", "log1p", "logsumexp", "softmax",
    "log_softmax", "xlogy", "xlog1py", "sinc", "round", "gammaln", "digamma", "psi", "polygamma", "multigammaln",
    "i0", "entr", "ndtr", "ndtri", "log_ndtr", "zeta", "erfcx", "gammainc", "gammaincc", "i0e", "i1", "i1e",
]

gammaln, psi = lgamma, digamma
# The unary ops are made by elementwise.unary_op and published by tensorplug's namespace only.
erf, erfinv, exp2, expm1, log1p, expit = (UNARY[name] for name in ("erf", "erfinv", "exp2", "expm1", "log1p", "sigmoid"))
_SQRT_HALF = math.sqrt(0.5)
_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


def softmax(input, dim=None, *, dtype=None, axis=None):
    """torch.special.softmax: ``F.softmax`` with ``dim`` required (or NumPy's ``axis``)."""
    return _softmax(input, required_dim("special_softmax", dim, axis), dtype=dtype)


def log_softmax(input, dim=None, *, dtype=None, axis=None):
    """torch.special.log_softmax: ``F.log_softmax`` with ``dim`` required (or NumPy's ``axis``)."""
    return _log_softmax(input, required_dim("special_log_softmax", dim, axis), dtype=dtype)


def round(input, *, decimals=0, out=None):  # noqa: A001  (torch.special's name)
    """Round half to even, to ``decimals`` decimal places (negative: to tens, hundreds, ...)."""
    if out is not None:
        rehearse_out(round, locals())
    x = float_operand("round", input) if decimals else input
    if not decimals:
        return _finish("round", UNARY["round"](x), out)
    scale = 10.0 ** decimals
    return _finish("round", UNARY["round"](x * scale) / scale, out)


class _Xlog1py(Function):
    """PyTorch's gradients: ``log1p(other)`` for input (0 where input is 0 and other <= -1) and
    ``input / (other + 1)`` for other (NaN at input = 0, other = -1, as there)."""

    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        zero = COMPARE["eq"](x, 0) & ~UNARY["isnan"](y)
        return where(zero, 0.0, x * UNARY["log1p"](where(zero, 0.0, y)))

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        masked = (COMPARE["eq"](x, 0) & COMPARE["le"](y, -1)) | COMPARE["eq"](grad, 0)
        return where(masked, 0.0, grad * UNARY["log1p"](y)), grad * x / (y + 1)


def xlog1py(input, other, *, out=None):
    """``input * log1p(other)``, 0 where ``input`` is 0 (NaN where ``other`` is NaN), as xlogy."""
    if out is not None:
        rehearse_out(xlog1py, locals())
    x, y = promoted_operands("xlog1py", input, other, floating=True)
    shape = broadcast_shapes(x._shape, y._shape)
    return _finish("xlog1py", _Xlog1py.apply(x.expand(*shape), y.expand(*shape)), out)


class _Entropy(Function):
    """``-x log(x)`` with PyTorch's gradient ``-(1 + log(x))`` everywhere (-inf at 0, NaN below)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        positive = COMPARE["gt"](x, 0)
        safe = where(positive, x, 1.0)
        value = where(positive, -safe * UNARY["log"](safe), where(COMPARE["eq"](x, 0), 0.0, -math.inf))
        return where(UNARY["isnan"](x), x, value)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return -grad * (UNARY["log"](x) + 1.0)


def entr(input, *, out=None):
    """Elementwise entropy: ``-x log(x)`` for x > 0, 0 at 0, -inf for x < 0 (NaN stays)."""
    if out is not None:
        rehearse_out(entr, locals())
    return _finish("entr", _Entropy.apply(float_operand("entr", input)), out)


# erfcx switches from exp(x^2) erfc(x) to Laplace's continued fraction at x = 3: below, the
# product loses at most ~x^2 ulps; above, erfc underflows soon (x ~ 9 in float32), while 30 levels
# of the fraction reach double precision from x = 3 on (checked against scipy.special.erfcx).
_ERFCX_SWITCH = 3.0
_ERFCX_LEVELS = 30
_INV_SQRT_PI = 1.0 / math.sqrt(math.pi)


def _erfcx_values(x):
    """exp(x^2) erfc(x): the product below the switch, the continued fraction
    1 / (sqrt(pi) (x + (1/2) / (x + 1 / (x + (3/2) / (x + ...))))) above it."""
    from ..frontend.methods import clamp

    near = clamp(x, max=_ERFCX_SWITCH)
    product = UNARY["exp"](near * near) * erfc(near)
    far = clamp(x, min=_ERFCX_SWITCH)
    denominator = far
    for level in range(_ERFCX_LEVELS, 0, -1):
        denominator = far + (level * 0.5) / denominator
    fraction = _INV_SQRT_PI / denominator
    return where(COMPARE["lt"](x, _ERFCX_SWITCH), product, fraction)


class _Erfcx(Function):
    """The derivative 2 x erfcx(x) - 2 / sqrt(pi), from the saved output (as PyTorch)."""

    @staticmethod
    def forward(ctx, x):
        value = _erfcx_values(x)
        ctx.save_for_backward(x, value)
        return value

    @staticmethod
    def backward(ctx, grad):
        x, value = ctx.saved_tensors
        return grad * (2.0 * x * value - 2.0 * _INV_SQRT_PI)


def erfcx(input, *, out=None):
    """The scaled complementary error function ``exp(x^2) erfc(x)``, accurate for large x."""
    if out is not None:
        rehearse_out(erfcx, locals())
    return _finish("erfcx", _Erfcx.apply(float_operand("erfcx", input)), out)


def ndtr(input, *, out=None):
    """The standard normal distribution function: ``erfc(-x / sqrt(2)) / 2`` (accurate in the
    lower tail, where ``(1 + erf) / 2`` would cancel)."""
    if out is not None:
        rehearse_out(ndtr, locals())
    x = float_operand("ndtr", input)
    return _finish("ndtr", erfc(-x * _SQRT_HALF) * 0.5, out)


def _tail_threshold(dtype) -> float:
    # Below this, erfc(-x / sqrt(2)) underflows the dtype and log_ndtr switches to its series.
    return -37.0 if dtype is _dt.float64 else -12.0


def log_ndtr(input, *, out=None):
    """``log(ndtr(x))`` without underflow: through erfc down to where it underflows, then the
    asymptotic series ``-x^2/2 - log(-x) - log(2 pi)/2 + log(1 - 1/x^2 + 3/x^4 - 15/x^6 + 105/x^8)``."""
    if out is not None:
        rehearse_out(log_ndtr, locals())
    x = float_operand("log_ndtr", input)
    threshold = _tail_threshold(x._dtype)
    tail = COMPARE["lt"](x, threshold)
    body = where(tail, threshold, x)
    # Upper half: log1p(-ndtr(-x)) keeps the digits that log(1 - tiny) would lose.
    # Each half sees only its own arguments, so neither sends inf * 0 into the other's gradient.
    above = COMPARE["gt"](body, 0)
    upper = UNARY["log1p"](erfc(where(above, body, 0.0) * _SQRT_HALF) * -0.5)
    lower = UNARY["log"](erfc(-where(above, 0.0, body) * _SQRT_HALF) * 0.5)
    inside = where(above, upper, lower)
    z = where(tail, x, threshold)
    r = UNARY["reciprocal"](z * z)
    series = UNARY["log1p"](r * (-1 + r * (3 + r * (-15 + r * 105))))
    asymptotic = -0.5 * z * z - UNARY["log"](-z) - _LOG_SQRT_2PI + series
    return _finish("log_ndtr", where(tail, asymptotic, inside), out)


def ndtri(input, *, out=None):
    """The inverse of ``ndtr``: the x with ``ndtr(x) == p``; -inf at 0, inf at 1, NaN outside
    [0, 1]. A first guess from erfinv (or, in the far lower tail, from the asymptotic series'
    leading terms) is refined by three Newton steps on ndtr, which restore the digits that
    ``2 p - 1`` loses for small p."""
    if out is not None:
        rehearse_out(ndtri, locals())
    p = float_operand("ndtri", input)
    inside = COMPARE["gt"](p, 0) & COMPARE["lt"](p, 1)
    # Solve in the lower half, where ndtr keeps its relative digits: ndtri(p) = -ndtri(1 - p),
    # and 1 - p is exact for p above 1/2.
    upper = COMPARE["gt"](p, 0.5)
    q = where(inside, where(upper, 1.0 - p, p), 0.5)
    tiny = COMPARE["lt"](q, 1e-10)
    q_tail = where(tiny, q, 1e-10)
    t = -2.0 * UNARY["log"](q_tail)
    tail_guess = -UNARY["sqrt"](t - UNARY["log"](t * (2 * math.pi)))
    x = where(tiny, tail_guess, UNARY["erfinv"](where(tiny, 0.5, q) * 2.0 - 1.0) * math.sqrt(2.0))
    for _ in range(3):
        density = UNARY["exp"](-0.5 * x * x - _LOG_SQRT_2PI)
        x = x - (erfc(-x * _SQRT_HALF) * 0.5 - q) / density
    x = where(upper, -x, x)
    edges = where(COMPARE["eq"](p, 0), -math.inf, where(COMPARE["eq"](p, 1), math.inf, math.nan))
    return _finish("ndtri", where(inside, x, edges), out)


def i0(input, *, out=None):
    """The modified Bessel function of the first kind of order 0: its power series
    ``sum (x^2 / 4)^k / (k!)^2`` up to |x| = 30 (terms are positive, so it loses no digits), and
    Hankel's asymptotic series ``e^|x| / sqrt(2 pi |x|) * sum ((2k-1)!!)^2 / (k! (8|x|)^k)`` above."""
    if out is not None:
        rehearse_out(i0, locals())
    x = float_operand("i0", input)
    a = UNARY["abs"](x)
    large = COMPARE["gt"](a, 30.0)
    small = where(large, 0.0, a)
    quarter_square = small * small * 0.25
    term = total = ones_like(quarter_square)
    for k in range(1, 80):
        term = term * quarter_square / float(k * k)
        total = total + term
    big = where(large, a, 31.0)
    inverse = UNARY["reciprocal"](big * 8.0)
    factor = series = ones_like(inverse)
    for k in range(1, 12):
        factor = factor * inverse * float((2 * k - 1) ** 2) / k
        series = series + factor
    asymptotic = UNARY["exp"](big) * UNARY["rsqrt"](big * (2 * math.pi)) * series
    return _finish("i0", where(large, asymptotic, total), out)

