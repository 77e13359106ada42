"""RelaxedOneHotCategorical (the Concrete or Gumbel-softmax distribution): points of the simplex
that approach one-hot vectors as the ``temperature`` falls, drawn differentiably as
softmax((logits + Gumbel noise) / temperature) (Maddison et al. 2017; Jang et al. 2017)."""
from __future__ import annotations

import math

from . import constraints
from .categorical_based import CategoricalBased
from .relaxed import RelaxedLogits, RelaxedTransformed, temperature_like
from .transforms import ExpTransform


class ExpRelaxedCategorical(CategoricalBased, RelaxedLogits):
    """The logarithm of a RelaxedOneHotCategorical draw, as
    torch.distributions.relaxed_categorical.ExpRelaxedCategorical (event_shape (K,))."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.real_vector

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        batch_shape, event_shape = self._take_categorical(probs, logits, validate_args)
        self.temperature = temperature_like(temperature, probs if probs is not None else logits)
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def rsample(self, sample_shape=()):
        u = self._noise(sample_shape)
        scores = (self.logits - (-u.log()).log()) / self.temperature
        return scores - scores.logsumexp(dim=-1, keepdim=True)

    def log_prob(self, value):
        self._check_sample(value)
        k = self._event_shape[0]
        # The Concrete density in log space: (K-1)! T^(K-1) prod(p_k e^(-T y_k)) / (sum p_k e^(-T y_k))^K.
        scores = self.logits - value * self.temperature
        log_terms = (scores - scores.logsumexp(dim=-1, keepdim=True)).sum(-1)
        return log_terms + math.lgamma(k) + (k - 1) * self.temperature.log()


class RelaxedOneHotCategorical(RelaxedTransformed):
    """exp of an ExpRelaxedCategorical draw, with ``temperature`` and ``probs`` or ``logits``
    over the last dimension, as torch.distributions.RelaxedOneHotCategorical; ``rsample`` is differentiable.

    >>> import tensorplug as tp
    >>> RelaxedOneHotCategorical(tp.tensor(0.5), probs=tp.tensor([0.3, 0.7])).sample().shape
    (2,)
    """

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.simplex

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        base = ExpRelaxedCategorical(temperature, probs, logits, validate_args=validate_args)
        super().__init__(base, ExpTransform(), validate_args=validate_args)
