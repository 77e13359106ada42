"""Gumbel: the distribution of maxima (type-I extreme values) at ``loc`` with spread ``scale``."""
from __future__ import annotations

import math

from .location_scale import LocationScale
from .utils import clamp_inside_unit, euler_constant


class Gumbel(LocationScale):
    """Independent Gumbel distributions, as torch.distributions.Gumbel; ``rsample`` is
    differentiable (loc - scale * log(-log u) for a uniform u).

    >>> import tensorplug as tp
    >>> round(Gumbel(0.0, 1.0).cdf(tp.tensor(0.0)).item(), 6)
    0.367879
    """

    has_rsample = True

    @property
    def mean(self):
        return self.loc + self.scale * euler_constant

    @property
    def stddev(self):
        return self.scale * (math.pi / math.sqrt(6))

    @property
    def variance(self):
        return self.stddev.pow(2)

    def rsample(self, sample_shape=()):
        # u kept inside (0, 1) so that both logarithms stay finite.
        return self.icdf(clamp_inside_unit(self._uniform_draws(sample_shape, self.loc)))

    def log_prob(self, value):
        self._check_sample(value)
        z = (value - self.loc) / self.scale
        return -(z + (-z).exp()) - self.scale.log()

    def cdf(self, value):
        self._check_sample(value)
        return (-(-(value - self.loc) / self.scale).exp()).exp()

    def icdf(self, value):
        return self.loc - self.scale * (-value.log()).log()

    def entropy(self):
        return self.scale.log() + (1 + euler_constant)
