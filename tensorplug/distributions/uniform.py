"""Uniform: values spread evenly over [low, high)."""
from __future__ import annotations

import math

from . import constraints
from .distribution import Distribution


class Uniform(Distribution):
    """Independent uniform distributions over [``low``, ``high``), as torch.distributions.Uniform;
    ``rsample`` is differentiable in both bounds.

    >>> import tensorplug as tp
    >>> Uniform(0.0, 4.0).log_prob(tp.tensor(1.0)).exp().item()
    0.25
    """

    has_rsample = True

    @property
    def arg_constraints(self):
        return {"low": constraints.less_than(self.high), "high": constraints.greater_than(self.low)}

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        return constraints.interval(self.low, self.high)

    def __init__(self, low, high, validate_args=None):
        super().__init__(self._broadcast_parameters(low=low, high=high), validate_args=validate_args)

    @property
    def mean(self):
        return (self.high + self.low) / 2

    @property
    def mode(self):
        return self.high.new_full(self.high.shape, math.nan)

    @property
    def stddev(self):
        return (self.high - self.low) / 12 ** 0.5

    @property
    def variance(self):
        return (self.high - self.low).pow(2) / 12

    def rsample(self, sample_shape=()):
        return self.low + self._uniform_draws(sample_shape, self.low) * (self.high - self.low)

    def log_prob(self, value):
        self._check_sample(value)
        lb = self.low.le(value).to(self.low.dtype)
        ub = self.high.gt(value).to(self.low.dtype)
        return (lb * ub).log() - (self.high - self.low).log()

    def cdf(self, value):
        self._check_sample(value)
        return ((value - self.low) / (self.high - self.low)).clamp(min=0, max=1)

    def icdf(self, value):
        return value * (self.high - self.low) + self.low

    def entropy(self):
        return (self.high - self.low).log()
