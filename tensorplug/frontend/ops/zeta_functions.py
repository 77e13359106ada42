"""The Hurwitz zeta function and the polygamma functions it gives, as composites (issue 13):
``tp.polygamma`` / ``Tensor.polygamma`` and ``tp.special.zeta``, ``tp.special.multigammaln``.

``zeta(s, q) = sum over k >= 0 of (q + k)^-s`` is summed directly for its first terms and
finished with the Euler-Maclaurin formula at ``a = q + 12`` (one more direct term per unit of
the most negative q, so that ``a`` stays above 10; q below -1000 is refused):

    a^(1-s) / (s - 1) + a^-s / 2 + sum over j of B_2j / (2j)! * s (s+1) ... (s+2j-2) * a^(-s-2j+1)

with eight Bernoulli terms; for ``q >= 0`` and ``s`` up to about 20 the first omitted term is
below float64 rounding. ``polygamma(n, x) = (-1)^(n+1) n! zeta(n + 1, x)`` for n >= 2; n = 0 and
n = 1 are digamma and trigamma. Gradients come from autograd through the formulas (the
derivative of the truncated sum is as accurate as the sum).
"""
from __future__ import annotations

import math

from ..tensor import Tensor
from ._pointwise_args import float_operand, promoted_operands
from .elementwise import BINARY, COMPARE, UNARY, where
from .special_functions import _digamma, _finish, _lgamma, trigamma
from .out_rehearsal import rehearse_out

__all__ = ["polygamma"]

_DIRECT_TERMS = 12
_MOST_NEGATIVE_Q = 1000
# B_2j / (2j)! for j = 1..8: 1/6, -1/30, 1/42, -1/30, 5/66, -691/2730, 7/6, -3617/510 over (2j)!.
_BERNOULLI = [b / math.factorial(2 * j) for j, b in enumerate(
    (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510), start=1)]


def hurwitz_zeta(s: Tensor, q: Tensor) -> Tensor:
    """``zeta(s, q)`` of two floating tensors of one dtype (broadcast), with Cephes' (and so
    PyTorch's) special values: inf at s == 1 and at the non-positive integers q, NaN for s < 1
    and for a negative q with a non-integer s."""
    pole = COMPARE["eq"](s, 1.0) | (COMPARE["le"](q, 0.0) & COMPARE["eq"](q, UNARY["floor"](q)))
    undefined = COMPARE["lt"](s, 1.0) | (COMPARE["lt"](q, 0.0) & COMPARE["ne"](s, UNARY["floor"](s)))
    # The formula runs on safe values where the answer is special, so no inf or NaN reaches the
    # gradient of the branch where() does not take.
    special = pole | undefined
    s_safe = where(special, 2.0, s)
    q_safe = where(special, 1.0, q)
    # The Euler-Maclaurin tail needs its start q + direct terms above about 10: a negative q takes
    # one more direct term per unit below 0 (one host read of the smallest q decides how many).
    # NaN q gives NaN whatever the terms, so it does not count.
    lowest = float(where(UNARY["isnan"](q_safe), 0.0, q_safe).amin()) if q_safe.numel() else 0.0
    if lowest < -_MOST_NEGATIVE_Q:
        raise NotImplementedError(
            f"zeta(): q below -{_MOST_NEGATIVE_Q} is not supported (got {lowest}): its series would need "
            f"{math.ceil(-lowest)} direct terms"
        )
    direct = _DIRECT_TERMS + max(0, math.ceil(-lowest))
    total = None
    for k in range(direct):
        term = BINARY["pow"](q_safe + k, -s_safe)
        total = term if total is None else total + term
    a = q_safe + direct
    a_power = BINARY["pow"](a, -s_safe)
    total = total + a_power * a / (s_safe - 1.0) + a_power * 0.5
    rising = s_safe  # s (s+1) ... (s+2j-2), one more pair of factors per term
    inverse_a = UNARY["reciprocal"](a)
    a_term = a_power * inverse_a  # a^(-s-2j+1)
    for j, coefficient in enumerate(_BERNOULLI):
        if j:
            rising = rising * (s_safe + (2 * j - 1)) * (s_safe + 2 * j)
            a_term = a_term * inverse_a * inverse_a
        total = total + rising * a_term * coefficient
    return where(pole, math.inf, where(undefined, math.nan, total))


def polygamma(n, input, *, out=None) -> Tensor:
    """The n-th derivative of digamma: ``polygamma(0, x)`` is digamma, ``polygamma(1, x)``
    trigamma, and for n >= 2 ``(-1)^(n+1) n! zeta(n + 1, x)`` (integers compute in the default
    float dtype).

    >>> round(tp.polygamma(1, tp.tensor(1.0)).item(), 6)  # pi^2 / 6
    1.644934
    """
    if out is not None:
        rehearse_out(polygamma, locals())
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"polygamma(): argument 'n' must be int, not {type(n).__name__}")
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    x = float_operand("polygamma", input)
    if n == 0:
        result = _digamma(x)
    elif n == 1:
        result = trigamma(x)
    else:
        sign = 1.0 if n % 2 else -1.0
        result = hurwitz_zeta(x.new_full((), n + 1.0).expand(*x._shape), x) * (sign * math.factorial(n))
    return _finish("polygamma", result, out)


def _polygamma_method(input, n):
    """``Tensor.polygamma(n)``: the tensor first, as PyTorch's method takes it."""
    return polygamma(n, input)


def zeta(input, other, *, out=None) -> Tensor:
    """The Hurwitz zeta function ``sum over k >= 0 of (other + k)^-input`` (``tp.special.zeta``)."""
    if out is not None:
        rehearse_out(zeta, locals())
    s, q = promoted_operands("zeta", input, other, floating=True)
    return _finish("zeta", hurwitz_zeta(s, q), out)


def multigammaln(input, p, *, out=None) -> Tensor:
    """The log of the multivariate gamma function of dimension ``p``:
    ``p (p - 1) / 4 * log(pi) + sum over j < p of lgamma(input - j / 2)``. As PyTorch 2.13, the
    domain (input > (p - 1) / 2) is not checked: outside it the sum is what lgamma gives (inf at
    its poles)."""
    if out is not None:
        rehearse_out(multigammaln, locals())
    x = float_operand("multigammaln", input)
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    total = None
    for j in range(p):
        term = _lgamma(x - 0.5 * j)
        total = term if total is None else total + term
    return _finish("multigammaln", total + p * (p - 1) / 4 * math.log(math.pi), out)


TENSOR_METHODS: dict = {"polygamma": _polygamma_method}
