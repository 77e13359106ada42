"""HalfNormal: the absolute value of a centred Gaussian."""
from __future__ import annotations

import math

from ..frontend.factories import randn
from ..frontend.ops.elementwise import where
from . import constraints
from .distribution import Distribution


class HalfNormal(Distribution):
    """|X| for X ~ Normal(0, ``scale``), as torch.distributions.HalfNormal; ``rsample`` is
    differentiable in the scale. log_prob is -inf below 0 when values are not validated.

    >>> import tensorplug as tp
    >>> round(HalfNormal(1.0).log_prob(tp.tensor(0.0)).exp().item(), 6)
    0.797885
    """

    arg_constraints = {"scale": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, scale, validate_args=None):
        super().__init__(self._broadcast_parameters(scale=scale), validate_args=validate_args)

    @property
    def mean(self):
        return self.scale * math.sqrt(2 / math.pi)

    @property
    def mode(self):
        return self.scale * 0

    @property
    def variance(self):
        return self.scale.pow(2) * (1 - 2 / math.pi)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        return (randn(shape, dtype=self.scale.dtype, device=self.scale.device) * self.scale).abs()

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        # Twice the Gaussian density at value, for value >= 0.
        density = -value.pow(2) / (2 * self.scale.pow(2)) - self.scale.log() + 0.5 * math.log(2 / math.pi)
        return where(value >= 0, density, -math.inf)

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return (value / (self.scale * math.sqrt(2))).erf()

    def icdf(self, prob):
        return self.scale * math.sqrt(2) * prob.erfinv()

    def entropy(self):
        return 0.5 * math.log(math.pi / 2) + 0.5 + self.scale.log()
