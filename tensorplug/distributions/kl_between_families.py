"""The KL divergences PyTorch registers between distributions of different families.

Most follow from KL(p || q) = -H(p) - E_p[log q(x)], where E_p[log q] needs only a few
expectations under p: its mean and variance (q Normal), its mean (q Exponential), E_p[log x]
(q Gamma, Pareto, Beta), or its moment generating function at -1/scale (q Gumbel). A q whose
support misses part of p's gives infinity, elementwise where that depends on the parameters
(a Uniform reaching below 0 against an Exponential, say).
"""
from __future__ import annotations

import math

from ..frontend.ops.elementwise import where
from ..frontend.shapes import broadcast_shapes
from .bernoulli import Bernoulli
from .beta import Beta
from .binomial import Binomial
from .continuous_bernoulli import ContinuousBernoulli
from .exponential import Exponential
from .gamma import Gamma
from .gumbel import Gumbel
from .kl import register_kl
from .laplace import Laplace
from .normal import Normal
from .pareto import Pareto
from .poisson import Poisson
from .uniform import Uniform
from .utils import euler_constant, log_beta

_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


def _infinite(p, q):
    """inf over the broadcast batch: q gives probability 0 to a set p does not."""
    like = next(iter(p._parameters().values()))
    shape = broadcast_shapes(tuple(p.batch_shape), tuple(q.batch_shape))
    return like.new_full(shape, math.inf)


def _uniform_mean_log(p):
    """E[log x] for x ~ Uniform(a, b) with 0 <= a: (b log b - a log a) / (b - a) - 1."""
    return (p.high.xlogy(p.high) - p.low.xlogy(p.low)) / (p.high - p.low) - 1


def _mean_log(p):
    """E_p[log x] for the families on (0, inf) that are compared with Gamma and Pareto."""
    if isinstance(p, Beta):
        return p.concentration1.digamma() - (p.concentration1 + p.concentration0).digamma()
    if isinstance(p, Exponential):
        return -euler_constant - p.rate.log()
    if isinstance(p, Pareto):
        return p.scale.log() + p.alpha.reciprocal()
    return _uniform_mean_log(p)


# q Normal: E_p[-log q] = log(sigma sqrt(2 pi)) + (Var_p + (E_p - mu)^2) / (2 sigma^2).
def _kl_to_normal(p, q):
    spread = p.variance + (p.mean - q.loc).pow(2)
    return -p.entropy() + q.scale.log() + _LOG_SQRT_2PI + spread / (2 * q.scale.pow(2))


for _family in (Beta, ContinuousBernoulli, Exponential, Gamma, Gumbel, Laplace, Pareto, Uniform):
    register_kl(_family, Normal)(_kl_to_normal)


# q Exponential: E_p[-log q] = -log rate + rate E_p[x], for p on [0, inf).
def _kl_to_exponential(p, q):
    result = -p.entropy() - q.rate.log() + q.rate * p.mean
    return where(p.low < 0, math.inf, result) if isinstance(p, Uniform) else result


for _family in (Beta, ContinuousBernoulli, Gamma, Pareto, Uniform):
    register_kl(_family, Exponential)(_kl_to_exponential)


# q Gamma: E_p[-log q] = -a log b + lgamma(a) - (a - 1) E_p[log x] + b E_p[x].
def _kl_to_gamma(p, q):
    a, b = q.concentration, q.rate
    if isinstance(p, Uniform):
        # The log of a negative low end is NaN; those elements are infinite anyway.
        safe = Uniform(where(p.low < 0, 0.0, p.low), where(p.low < 0, 1.0, p.high), validate_args=False)
        mean_log = _mean_log(safe)
    else:
        mean_log = _mean_log(p)
    result = -p.entropy() - a * b.log() + a.lgamma() - (a - 1) * mean_log + b * p.mean
    return where(p.low < 0, math.inf, result) if isinstance(p, Uniform) else result


for _family in (Beta, Exponential, Pareto, Uniform):
    register_kl(_family, Gamma)(_kl_to_gamma)


# q Gumbel: E_p[-log q] = log s + (E_p[x] - m) / s + E_p[exp(-(x - m) / s)], the last term through
# p's moment generating function at -1 / s.
def _gumbel_tail_term(p, q):
    loc, scale = q.loc, q.scale
    if isinstance(p, Exponential):
        return (loc / scale).exp() * p.rate / (p.rate + scale.reciprocal())
    if isinstance(p, Gamma):
        return (loc / scale).exp() * (p.rate / (p.rate + scale.reciprocal())).pow(p.concentration)
    if isinstance(p, Normal):
        return ((loc - p.loc) / scale + p.scale.pow(2) / (2 * scale.pow(2))).exp()
    # Uniform(a, b): s (exp((m - a) / s) - exp((m - b) / s)) / (b - a).
    return scale * (((loc - p.low) / scale).exp() - ((loc - p.high) / scale).exp()) / (p.high - p.low)


def _kl_to_gumbel(p, q):
    return -p.entropy() + q.scale.log() + (p.mean - q.loc) / q.scale + _gumbel_tail_term(p, q)


for _family in (Exponential, Gamma, Normal, Uniform):
    register_kl(_family, Gumbel)(_kl_to_gumbel)


@register_kl(Normal, Laplace)
def _kl_normal_laplace(p, q):
    # E|x - m| of a Normal: the folded normal's mean.
    shift = p.loc - q.loc
    absolute = (p.scale * math.sqrt(2 / math.pi) * (-shift.pow(2) / (2 * p.scale.pow(2))).exp()
                + shift * (shift / (p.scale * math.sqrt(2))).erf())
    return -p.entropy() + (2 * q.scale).log() + absolute / q.scale


# q Uniform: E_p[-log q] = log(b - a) when p's support lies inside [a, b].
def _kl_unit_support_to_uniform(p, q):
    result = -p.entropy() + (q.high - q.low).log()
    return where((q.low > 0) | (q.high < 1), math.inf, result)


register_kl(Beta, Uniform)(_kl_unit_support_to_uniform)
register_kl(ContinuousBernoulli, Uniform)(_kl_unit_support_to_uniform)


@register_kl(Uniform, Beta)
def _kl_uniform_beta(p, q):
    a, b = q.concentration1, q.concentration0
    outside = (p.low < 0) | (p.high > 1)
    low, high = where(outside, 0.0, p.low), where(outside, 1.0, p.high)
    inside = Uniform(low, high, validate_args=False)
    mirrored = Uniform(1 - high, 1 - low, validate_args=False)
    result = (-inside.entropy() + log_beta(a, b) - (a - 1) * _uniform_mean_log(inside)
              - (b - 1) * _uniform_mean_log(mirrored))
    return where(outside, math.inf, result)


# q ContinuousBernoulli: E_p[-log q] = -E[x] log p - (1 - E[x]) log(1 - p) - log C(p).
def _kl_to_continuous_bernoulli(p, q):
    result = (-p.entropy() - p.mean * q.probs.log() - (1 - p.mean) * (-q.probs).log1p() - q._log_constant())
    if isinstance(p, Uniform):
        return where((p.low < 0) | (p.high > 1), math.inf, result)
    return result


register_kl(Beta, ContinuousBernoulli)(_kl_to_continuous_bernoulli)
register_kl(Uniform, ContinuousBernoulli)(_kl_to_continuous_bernoulli)


@register_kl(Uniform, Pareto)
def _kl_uniform_pareto(p, q):
    below = p.low < q.scale
    inside = Uniform(where(below, q.scale, p.low), where(below, q.scale + 1, p.high), validate_args=False)
    result = (-inside.entropy() - q.alpha.log() - q.alpha * q.scale.log()
              + (q.alpha + 1) * _uniform_mean_log(inside))
    return where(below, math.inf, result)


@register_kl(Bernoulli, Poisson)
def _kl_bernoulli_poisson(p, q):
    # Sum over {0, 1}: -H(p) + rate - p log(rate).
    return -p.entropy() + q.rate - p.probs * q.rate.log()


# Pairs where q misses part of p's support.
_NO_OVERLAP = [
    (Poisson, Bernoulli), (Poisson, Binomial),
    (Beta, Pareto), (ContinuousBernoulli, Pareto),
    (Exponential, Beta), (Exponential, ContinuousBernoulli), (Exponential, Pareto), (Exponential, Uniform),
    (Gamma, Beta), (Gamma, ContinuousBernoulli), (Gamma, Pareto), (Gamma, Uniform),
    (Gumbel, Beta), (Gumbel, ContinuousBernoulli), (Gumbel, Exponential), (Gumbel, Gamma), (Gumbel, Pareto),
    (Gumbel, Uniform),
    (Laplace, Beta), (Laplace, ContinuousBernoulli), (Laplace, Exponential), (Laplace, Gamma), (Laplace, Pareto),
    (Laplace, Uniform),
    (Normal, Beta), (Normal, ContinuousBernoulli), (Normal, Exponential), (Normal, Gamma), (Normal, Pareto),
    (Normal, Uniform),
    (Pareto, Beta), (Pareto, ContinuousBernoulli), (Pareto, Uniform),
]
for _pair in _NO_OVERLAP:
    register_kl(*_pair)(_infinite)
