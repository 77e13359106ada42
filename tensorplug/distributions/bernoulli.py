"""Bernoulli: 1 with probability ``probs`` (or sigmoid(``logits``)), else 0."""
from __future__ import annotations

import math

from ..frontend import dtypes as _dt
from ..frontend.autograd.grad_mode import no_grad
from ..frontend.factories import arange, bernoulli
from ..frontend.ops.elementwise import where
from ..nn import functional as F
from . import constraints
from .probs_or_logits import BinaryParameter
from .exp_family import ExponentialFamily
from .utils import broadcast_all


class Bernoulli(BinaryParameter, ExponentialFamily):
    """Independent coin flips, as torch.distributions.Bernoulli; values are 0.0 and 1.0 in the
    parameter's dtype.

    >>> import tensorplug as tp
    >>> Bernoulli(probs=tp.tensor([0.25])).log_prob(tp.tensor([1.0])).exp().tolist()
    [0.25]
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        self._take_probs_or_logits(probs, logits)
        super().__init__(self.param_shape, validate_args=validate_args)

    @property
    def mean(self):
        return self.probs

    @property
    def mode(self):
        mode = (self.probs >= 0.5).to(self.probs.dtype)
        return where(self.probs == 0.5, math.nan, mode)

    @property
    def variance(self):
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        with no_grad():
            return bernoulli(self.probs.expand(shape))

    def log_prob(self, value):
        self._check_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -F.binary_cross_entropy_with_logits(logits, value.to(logits.dtype), reduction="none")

    def entropy(self):
        return F.binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none")

    @property
    def _natural_params(self):
        return (self.logits,)

    def _log_normalizer(self, x):
        return F.softplus(x)

    @property
    def _mean_carrier_measure(self):
        return 0

    def enumerate_support(self, expand=True):
        values = arange(2, dtype=self.probs.dtype if self.probs.dtype != _dt.bool else _dt.float32,
                        device=self.probs.device)
        return self._support_over_batch(values, expand)
