"""Binomial: the number of successes in ``total_count`` independent coin flips."""
from __future__ import annotations

from ..frontend.autograd.grad_mode import no_grad
from ..frontend.factories import arange
from ..frontend.samplers import binomial
from ..nn import functional as F
from . import constraints
from .probs_or_logits import CountedTrials
from .distribution import Distribution


class Binomial(CountedTrials, Distribution):
    """Successes in ``total_count`` trials of probability ``probs`` (or sigmoid(``logits``)),
    as torch.distributions.Binomial; values are floats in 0..total_count.

    >>> import tensorplug as tp
    >>> round(Binomial(2, probs=tp.tensor(0.5)).log_prob(tp.tensor(1.0)).exp().item(), 4)
    0.5
    """

    arg_constraints = {"total_count": constraints.nonnegative_integer, "probs": constraints.unit_interval,
                       "logits": constraints.real}
    has_enumerate_support = True

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        self._take_count_and_probs_or_logits(total_count, probs, logits)
        super().__init__(self.param_shape, validate_args=validate_args)

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self.total_count)

    @property
    def mean(self):
        return self.total_count * self.probs

    @property
    def mode(self):
        return ((self.total_count + 1) * self.probs).floor().clamp(max=self.total_count)

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        with no_grad():
            return binomial(self.total_count.expand(shape).contiguous(), self.probs.expand(shape).contiguous())

    def log_prob(self, value):
        self._check_sample(value)
        n, logits = self.total_count, self.logits
        log_choose = (n + 1).lgamma() - (value + 1).lgamma() - (n - value + 1).lgamma()
        # k log p + (n - k) log(1 - p) with log p = -softplus(-logits), log(1 - p) = -softplus(logits).
        return log_choose - value * F.softplus(-logits) - (n - value) * F.softplus(logits)

    def entropy(self):
        values = self.enumerate_support(expand=False)
        log_prob = self.log_prob(values)
        return -(log_prob.exp() * log_prob).sum(0)

    def enumerate_support(self, expand=True):
        n = self.total_count
        top = int(n.max().item()) if n.numel() else 0
        if n.numel() and not bool((n == top).all()):
            raise NotImplementedError("Inhomogeneous total count not supported by `enumerate_support`.")
        values = arange(1 + top, dtype=self.probs.dtype, device=self.probs.device)
        return self._support_over_batch(values, expand)
