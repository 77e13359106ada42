"""kl_divergence(p, q): the KL divergence between two distributions, looked up by their types."""
from __future__ import annotations

import math

from ..frontend.ops.elementwise import where
from ..nn import functional as F
from ..frontend.shapes import broadcast_shapes
from .bernoulli import Bernoulli
from .beta import Beta
from .binomial import Binomial
from .categorical import Categorical
from .cauchy import Cauchy
from .continuous_bernoulli import ContinuousBernoulli
from .dirichlet import Dirichlet
from .exp_family import ExponentialFamily, bregman_kl
from .exponential import Exponential
from .gamma import Gamma
from .geometric import Geometric
from .gumbel import Gumbel
from .half_normal import HalfNormal
from .independent import Independent
from .laplace import Laplace
from .lowrank_multivariate_normal import LowRankMultivariateNormal
from .multivariate_normal import MultivariateNormal
from .normal import Normal
from .one_hot_categorical import OneHotCategorical
from .pareto import Pareto
from .poisson import Poisson
from .transformed_distribution import TransformedDistribution
from .transforms import sum_rightmost
from .uniform import Uniform
from .utils import euler_constant, log_beta

_KL_REGISTRY: dict = {}


def register_kl(type_p, type_q):
    """Decorator registering the KL divergence of a (type_p, type_q) pair, as PyTorch's."""
    def decorator(fn):
        _KL_REGISTRY[type_p, type_q] = fn
        return fn
    return decorator


def kl_divergence(p, q):
    """KL(p || q), elementwise over the batch. A pair of types without a formula (here or
    registered with ``register_kl``; subclasses use their bases' formula) raises NotImplementedError."""
    for type_p in type(p).__mro__:
        for type_q in type(q).__mro__:
            fn = _KL_REGISTRY.get((type_p, type_q))
            if fn is not None:
                return fn(p, q)
    raise NotImplementedError(f"No KL(p || q) is implemented for p type {type(p).__name__} and q type {type(q).__name__}")


@register_kl(Normal, Normal)
def _kl_normal_normal(p, q):
    var_ratio = (p.scale / q.scale).pow(2)
    t1 = ((p.loc - q.loc) / q.scale).pow(2)
    return 0.5 * (var_ratio + t1 - 1 - var_ratio.log())


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p, q):
    t = p.probs * (p.logits - q.logits)
    t = where((q.probs == 0).expand_as(t), math.inf, t)
    t = where((p.probs == 0).expand_as(t), 0.0, t)
    return t.sum(-1)


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p, q):
    t1 = p.probs * (F.softplus(-q.logits) - F.softplus(-p.logits))
    t1 = where(q.probs == 0, math.inf, t1)
    t1 = where(p.probs == 0, 0.0, t1)
    t2 = (1 - p.probs) * (F.softplus(q.logits) - F.softplus(p.logits))
    t2 = where(q.probs == 1, math.inf, t2)
    t2 = where(p.probs == 1, 0.0, t2)
    return t1 + t2


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p, q):
    result = ((q.high - q.low) / (p.high - p.low)).log()
    return where((q.low > p.low) | (q.high < p.high), math.inf, result)


@register_kl(Exponential, Exponential)
def _kl_exponential_exponential(p, q):
    ratio = q.rate / p.rate
    return ratio - 1 - ratio.log()


@register_kl(Laplace, Laplace)
def _kl_laplace_laplace(p, q):
    scale_ratio = p.scale / q.scale
    distance = (p.loc - q.loc).abs()
    return -scale_ratio.log() + distance / q.scale + scale_ratio * (-distance / p.scale).exp() - 1


@register_kl(Poisson, Poisson)
def _kl_poisson_poisson(p, q):
    # xlogy keeps a rate of 0 in p finite, and gives inf for p > 0 against a rate of 0 in q.
    return p.rate.xlogy(p.rate) - p.rate.xlogy(q.rate) - p.rate + q.rate


@register_kl(Gamma, Gamma)
def _kl_gamma_gamma(p, q):
    a1, b1, a2, b2 = p.concentration, p.rate, q.concentration, q.rate
    return (a2 * (b1 / b2).log() + a2.lgamma() - a1.lgamma() + (a1 - a2) * a1.digamma()
            + (b2 - b1) * a1 / b1)


@register_kl(Beta, Beta)
def _kl_beta_beta(p, q):
    a1, b1, a2, b2 = p.concentration1, p.concentration0, q.concentration1, q.concentration0
    return (log_beta(a2, b2) - log_beta(a1, b1) + (a1 - a2) * a1.digamma() + (b1 - b2) * b1.digamma()
            + (a2 - a1 + b2 - b1) * (a1 + b1).digamma())


@register_kl(Dirichlet, Dirichlet)
def _kl_dirichlet_dirichlet(p, q):
    a, b = p.concentration, q.concentration
    total_a = a.sum(-1)
    spread = a.digamma() - total_a.unsqueeze(-1).digamma()
    return (total_a.lgamma() - a.lgamma().sum(-1) - b.sum(-1).lgamma() + b.lgamma().sum(-1)
            + ((a - b) * spread).sum(-1))


@register_kl(OneHotCategorical, OneHotCategorical)
def _kl_one_hot_categorical(p, q):
    return _kl_categorical_categorical(p._categorical, q._categorical)


@register_kl(Independent, Independent)
def _kl_independent_independent(p, q):
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError("KL between Independent distributions needs the same reinterpreted_batch_ndims, "
                                  f"got {p.reinterpreted_batch_ndims} and {q.reinterpreted_batch_ndims}")
    return sum_rightmost(kl_divergence(p.base_dist, q.base_dist), p.reinterpreted_batch_ndims)


register_kl(ExponentialFamily, ExponentialFamily)(bregman_kl)


@register_kl(MultivariateNormal, MultivariateNormal)
@register_kl(LowRankMultivariateNormal, LowRankMultivariateNormal)
@register_kl(LowRankMultivariateNormal, MultivariateNormal)
@register_kl(MultivariateNormal, LowRankMultivariateNormal)
def _kl_multivariate_normal(p, q):
    """0.5 (tr(Sq^-1 Sp) + |Lq^-1 (mu_q - mu_p)|^2 - n + log det Sq - log det Sp), from the factors."""
    if p.event_shape != q.event_shape:
        raise ValueError("KL-divergence between two (Low Rank) Multivariate Normals with different event shapes cannot "
                         f"be computed: {p.event_shape} and {q.event_shape}")
    from .. import linalg

    shape = broadcast_shapes(p.batch_shape, q.batch_shape) + p.event_shape + p.event_shape
    Lp, Lq = p._unbroadcasted_scale_tril.expand(shape), q._unbroadcasted_scale_tril.expand(shape)
    trace = linalg.solve_triangular(Lq, Lp, upper=False).pow(2).sum((-2, -1))
    diff = (q.loc - p.loc).expand(shape[:-1])
    mahalanobis = linalg.solve_triangular(Lq, diff.unsqueeze(-1), upper=False).pow(2).sum((-2, -1))
    half_log_det = (q._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
                    - p._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1))
    return half_log_det + 0.5 * (trace + mahalanobis - p.event_shape[0])


@register_kl(Cauchy, Cauchy)
def _kl_cauchy_cauchy(p, q):
    spread = (p.scale + q.scale).pow(2) + (p.loc - q.loc).pow(2)
    return (spread / (4 * p.scale * q.scale)).log()


@register_kl(HalfNormal, HalfNormal)
def _kl_half_normal_half_normal(p, q):
    # The same as between the centred Normals they fold.
    ratio = (p.scale / q.scale).pow(2)
    return 0.5 * (ratio - 1 - ratio.log())


@register_kl(Geometric, Geometric)
def _kl_geometric_geometric(p, q):
    # -H(p) - E_p[k] log(1 - q) - log q, with E_p[k] = 1 / p - 1.
    return -p.entropy() - (-q.probs).log1p() * (p.probs.reciprocal() - 1) - q.probs.log()


@register_kl(Binomial, Binomial)
def _kl_binomial_binomial(p, q):
    if bool((p.total_count < q.total_count).any()):
        raise NotImplementedError("KL between Binomials where q.total_count > p.total_count is not implemented")
    n = p.total_count
    # n (p log(p / q) + (1 - p) log((1 - p) / (1 - q))), in logits so that p near 0 or 1 stays finite.
    per_trial = (p.probs * (F.softplus(-q.logits) - F.softplus(-p.logits))
                 + (1 - p.probs) * (F.softplus(q.logits) - F.softplus(p.logits)))
    return where(p.total_count > q.total_count, math.inf, n * per_trial)


@register_kl(Gumbel, Gumbel)
def _kl_gumbel_gumbel(p, q):
    ratio = p.scale / q.scale
    shift = (p.loc - q.loc) / q.scale
    return (-ratio.log() + shift + euler_constant * (ratio - 1) + ((1 + ratio).lgamma() - shift).exp() - 1)


@register_kl(Pareto, Pareto)
def _kl_pareto_pareto(p, q):
    # Infinite where p puts mass below q's minimum.
    alpha_ratio = q.alpha / p.alpha
    result = q.alpha * (p.scale / q.scale).log() - alpha_ratio.log() + alpha_ratio - 1
    return where(p.scale < q.scale, math.inf, result)


@register_kl(TransformedDistribution, TransformedDistribution)
def _kl_transformed_transformed(p, q):
    # The same bijection on both sides leaves the KL divergence of the bases unchanged.
    if p.transforms != q.transforms:
        raise NotImplementedError("KL between TransformedDistributions needs the same transforms")
    if p.event_shape != q.event_shape:
        raise NotImplementedError(f"KL between TransformedDistributions needs one event_shape, got "
                                  f"{p.event_shape} and {q.event_shape}")
    return kl_divergence(p.base_dist, q.base_dist)


@register_kl(ContinuousBernoulli, ContinuousBernoulli)
def _kl_continuous_bernoulli(p, q):
    # -H(p) - E_p[x] log q - (1 - E_p[x]) log(1 - q) - log C(q).
    return (-p.entropy() - p.mean * q.probs.log() - (1 - p.mean) * (-q.probs).log1p() - q._log_constant())


# Registered last: the pairs between families import register_kl from this module.
from . import kl_between_families  # noqa: E402,F401
