"""HalfCauchy: the absolute value of a centred Cauchy variable."""
from __future__ import annotations

import math

from ..frontend.ops.elementwise import where
from . import constraints
from .distribution import Distribution


class HalfCauchy(Distribution):
    """|X| for X ~ Cauchy(0, ``scale``), as torch.distributions.HalfCauchy (infinite mean and
    variance); ``rsample`` is differentiable. log_prob is -inf below 0 when values are not validated.

    >>> import tensorplug as tp
    >>> round(HalfCauchy(1.0).cdf(tp.tensor(1.0)).item(), 6)
    0.5
    """

    arg_constraints = {"scale": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, scale, validate_args=None):
        super().__init__(self._broadcast_parameters(scale=scale), validate_args=validate_args)

    @property
    def mean(self):
        return self.scale.new_full(self._extended_shape(), math.inf)

    @property
    def mode(self):
        return self.scale * 0

    @property
    def variance(self):
        return self.scale.new_full(self._extended_shape(), math.inf)

    def rsample(self, sample_shape=()):
        return self.icdf(self._uniform_draws(sample_shape, self.scale))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        density = math.log(2 / math.pi) - self.scale.log() - (value / self.scale).pow(2).log1p()
        return where(value >= 0, density, -math.inf)

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return (value / self.scale).atan() * (2 / math.pi)

    def icdf(self, prob):
        return self.scale * (prob * (math.pi / 2)).tan()

    def entropy(self):
        return math.log(2 * math.pi) + self.scale.log()
