"""kl_divergence(p, q): the KL divergence between two distributions, looked up by their types."""
from __future__ import annotations

import math

from ..frontend.ops.elementwise import where
from ..nn import functional as F
from .bernoulli import Bernoulli
from .categorical import Categorical
from .normal import Normal
from .uniform import Uniform

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
