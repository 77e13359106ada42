"""RelaxedOneHotCategorical (the Concrete or Gumbel-softmax distribution): points of the simplex
that approach one-hot vectors as the ``temperature`` falls, drawn differentiably as
softmax((logits + Gumbel noise) / temperature) (Maddison et al. 2017; Jang et al. 2017)."""
from __future__ import annotations

import math

from ..frontend.factories import rand
from . import constraints
from .categorical import Categorical
from .distribution import Distribution
from .relaxed_bernoulli import temperature_like
from .transformed_distribution import TransformedDistribution
from .transforms import ExpTransform
from .utils import finfo_eps, finfo_tiny


class ExpRelaxedCategorical(Distribution):
    """The logarithm of a RelaxedOneHotCategorical draw, as
    torch.distributions.relaxed_categorical.ExpRelaxedCategorical (event_shape (K,))."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        self._categorical = Categorical(probs, logits, validate_args=validate_args)
        given = probs if probs is not None else logits
        self.temperature = temperature_like(temperature, given)
        super().__init__(self._categorical.batch_shape, (self._categorical.param_shape[-1],),
                         validate_args=validate_args)

    def _parameters(self) -> dict:
        return self._categorical._parameters()

    def expand(self, batch_shape, _instance=None):
        batch_shape = tuple(batch_shape)
        given = {name: value.expand(batch_shape + self._event_shape)
                 for name, value in self._categorical._parameters().items()}
        new = type(self)(self.temperature, **given, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def probs(self):
        return self._categorical.probs

    @property
    def logits(self):
        return self._categorical.logits

    @property
    def param_shape(self) -> tuple:
        return self._categorical.param_shape

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        logits = self.logits
        dtype = logits.dtype
        u = rand(shape, dtype=dtype, device=logits.device).clamp(min=finfo_tiny(dtype), max=1 - finfo_eps(dtype))
        scores = (logits - (-u.log()).log()) / self.temperature
        return scores - scores.logsumexp(dim=-1, keepdim=True)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        k = self._event_shape[0]
        # The Concrete density in log space: (K-1)! T^(K-1) prod(p_k e^(-T y_k)) / (sum p_k e^(-T y_k))^K.
        scores = self.logits - value * self.temperature
        log_terms = (scores - scores.logsumexp(dim=-1, keepdim=True)).sum(-1)
        return log_terms + math.lgamma(k) + (k - 1) * self.temperature.log()


class RelaxedOneHotCategorical(TransformedDistribution):
    """exp of an ExpRelaxedCategorical draw, with ``temperature`` and ``probs`` or ``logits``
    over the last dimension, as torch.distributions.RelaxedOneHotCategorical; ``rsample`` is differentiable.

    >>> import tensorplug as tp
    >>> RelaxedOneHotCategorical(tp.tensor(0.5), probs=tp.tensor([0.3, 0.7])).sample().shape
    (2,)
    """

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        base = ExpRelaxedCategorical(temperature, probs, logits, validate_args=validate_args)
        super().__init__(base, ExpTransform(), validate_args=validate_args)

    __repr__ = Distribution.__repr__

    def _parameters(self) -> dict:
        return self.base_dist._parameters()

    def expand(self, batch_shape, _instance=None):
        base = self.base_dist.expand(batch_shape)
        new = type(self)(self.temperature, **base._categorical._parameters(), validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def temperature(self):
        return self.base_dist.temperature

    @property
    def probs(self):
        return self.base_dist.probs

    @property
    def logits(self):
        return self.base_dist.logits
