"""The regularized incomplete gamma functions ``gammainc`` (P(a, x), the lower one) and
``gammaincc`` (Q(a, x) = 1 - P), as torch.special's; Gamma.cdf and Chi2.cdf are built on them.

Both are computed together, in float64 whatever the input dtype, from one of two expansions:

- for x <= max(1, a), the power series P(a, x) = e^-x x^a / Gamma(a + 1) sum_n x^n / ((a+1)...(a+n)),
  whose terms shrink from the start, so nothing cancels;
- above, Legendre's continued fraction
  Q(a, x) = e^-x x^a / Gamma(a) / (x + 1 - a - 1 (1 - a) / (x + 3 - a - 2 (2 - a) / (x + 5 - a - ...))),
  evaluated forwards by the modified Lentz method.

Each half runs on every element (the other half's elements get harmless stand-in values) and
stops once every element has converged; the number of steps grows like sqrt(a) near x = a.
The gradient in x is the density x^(a-1) e^-x / Gamma(a); PyTorch has none in a, nor has this.
"""
from __future__ import annotations

import math

from ..frontend import dtypes as _dt
from ..frontend.autograd import Function
from ..frontend.ops._pointwise_args import promoted_operands
from ..frontend.ops.elementwise import where
from ..frontend.ops.special_functions import _finish
from ..frontend.shapes import broadcast_shapes
from ..frontend.tensor import Tensor
from ..frontend.ops.out_rehearsal import rehearse_out

_EPSILON = 2.0 ** -53  # float64's unit roundoff: the relative size at which a term no longer counts
# A continued-fraction step within this of 1 changes nothing that matters; exactly 1 may never come,
# since the doubles next to 1 are 2^-53 below and 2^-52 above.
_STEP_TOLERANCE = 4 * _EPSILON
_TINY = 1e-300  # Lentz's stand-in for a zero denominator
_CHECK_EVERY = 8  # steps between the convergence tests (each reads a flag back from the device)
_MAX_STEPS = 100000  # enough for a near x up to about 1e8


def _series_lower(a: Tensor, x: Tensor) -> Tensor:
    """P(a, x) by the power series (meant for x <= max(1, a))."""
    term = (a * x.log() - x - (a + 1).lgamma()).exp()
    total = term
    for n in range(1, _MAX_STEPS + 1):
        term = term * x / (a + n)
        total = total + term
        if n % _CHECK_EVERY == 0 and bool((term <= _EPSILON * total).all()):
            break
    return total


def _fraction_upper(a: Tensor, x: Tensor) -> Tensor:
    """Q(a, x) by the continued fraction (meant for x > max(1, a))."""
    b = x + 1 - a
    c = b * 0 + 1 / _TINY
    d = b.reciprocal()
    fraction = d
    for n in range(1, _MAX_STEPS + 1):
        numerator = -n * (n - a)
        b = b + 2
        d = numerator * d + b
        d = where(d.abs() < _TINY, _TINY, d).reciprocal()
        c = b + numerator / c
        c = where(c.abs() < _TINY, _TINY, c)
        step = c * d
        fraction = fraction * step
        if n % _CHECK_EVERY == 0 and bool(((step - 1).abs() <= _STEP_TOLERANCE).all()):
            break
    return (a * x.log() - x - a.lgamma()).exp() * fraction


def _lower_and_upper(a: Tensor, x: Tensor) -> tuple:
    """(P(a, x), Q(a, x)) in float64, with the limits and NaNs of torch.special and scipy."""
    a, x = a.to(_dt.float64), x.to(_dt.float64)
    # Undefined: a negative argument, a NaN, 0/0 at a = x = 0, inf/inf at a = x = inf.
    undefined = (a < 0) | (x < 0) | (a != a) | (x != x) | ((a == 0) & (x == 0)) | ((a == math.inf) & (x == math.inf))
    # Limits: P = 1 at x = inf or a = 0 (x > 0); P = 0 at x = 0 or a = inf.
    to_one = ((x == math.inf) | (a == 0)) & ~undefined
    to_zero = ((x == 0) | (a == math.inf)) & ~undefined
    expanded = ~(undefined | to_one | to_zero)
    use_fraction = expanded & (x > 1) & (x > a)
    use_series = expanded & ~use_fraction
    # Stand-ins keep each expansion finite, and quick to converge, on the elements it does not answer.
    series = _series_lower(where(use_series, a, 1.0), where(use_series, x, 0.5))
    fraction = _fraction_upper(where(use_fraction, a, 1.0), where(use_fraction, x, 2.0))
    lower = where(use_fraction, 1 - fraction, series)
    upper = where(use_fraction, fraction, 1 - series)
    lower, upper = where(to_one, 1.0, lower), where(to_one, 0.0, upper)
    lower, upper = where(to_zero, 0.0, lower), where(to_zero, 1.0, upper)
    return where(undefined, math.nan, lower), where(undefined, math.nan, upper)


def _density(a: Tensor, x: Tensor) -> Tensor:
    """dP/dx = x^(a-1) e^-x / Gamma(a)."""
    return ((a - 1) * x.log() - x - a.lgamma()).exp()


class _RegularizedGamma(Function):
    """P(a, x) or Q(a, x) (``upper``), differentiable in x only."""

    @staticmethod
    def forward(ctx, a: Tensor, x: Tensor, upper: bool):
        ctx.save_for_backward(a, x)
        ctx.upper = upper
        lower_value, upper_value = _lower_and_upper(a, x)
        return (upper_value if upper else lower_value).to(x.dtype)

    @staticmethod
    def backward(ctx, grad: Tensor):
        a, x = ctx.saved_tensors
        name = "igammac" if ctx.upper else "igamma"
        if ctx.needs_input_grad[0]:
            raise NotImplementedError(f"the derivative for '{name}: input' is not implemented.")
        slope = _density(a, x)
        return None, grad * (-slope if ctx.upper else slope), None


def _regularized(op: str, input, other, upper: bool, out) -> Tensor:
    operands = [value for value in (input, other) if isinstance(value, Tensor)]
    if operands and all(not value.dtype.is_floating_point for value in operands) and \
            not any(isinstance(value, float) for value in (input, other)):
        # PyTorch has no integer kernel either; one floating operand makes the pair floating.
        dtypes = ", ".join(str(value.dtype) for value in operands)
        raise NotImplementedError(f"{op}(): not implemented for integer operands ({dtypes}); pass floats")
    a, x = promoted_operands(op, input, other, floating=True)
    shape = broadcast_shapes(a._shape, x._shape)
    return _finish(op, _RegularizedGamma.apply(a.expand(*shape), x.expand(*shape), upper), out)


def gammainc(input, other, *, out=None) -> Tensor:
    """The regularized lower incomplete gamma function P(input, other) (torch.special.gammainc)."""
    if out is not None:
        rehearse_out(gammainc, locals())
    return _regularized("gammainc", input, other, False, out)


def gammaincc(input, other, *, out=None) -> Tensor:
    """The regularized upper incomplete gamma function Q(input, other) = 1 - P (torch.special.gammaincc)."""
    if out is not None:
        rehearse_out(gammaincc, locals())
    return _regularized("gammaincc", input, other, True, out)
