"""Cauchy: the heavy-tailed ratio of two Gaussians, with location ``loc`` and half-width ``scale``."""
from __future__ import annotations

import math

from .location_scale import LocationScale


class Cauchy(LocationScale):
    """Independent Cauchy (Lorentz) distributions, as torch.distributions.Cauchy: no mean (NaN)
    and an infinite variance; ``rsample`` is differentiable (inverse cdf of a uniform draw).

    >>> import tensorplug as tp
    >>> round(Cauchy(0.0, 1.0).cdf(tp.tensor(1.0)).item(), 6)
    0.75
    """

    has_rsample = True

    @property
    def mean(self):
        return self.loc.new_full(self._extended_shape(), math.nan)

    @property
    def variance(self):
        return self.loc.new_full(self._extended_shape(), math.inf)

    def rsample(self, sample_shape=()):
        return self.icdf(self._uniform_draws(sample_shape, self.loc))

    def log_prob(self, value):
        self._check_sample(value)
        z = (value - self.loc) / self.scale
        return -math.log(math.pi) - self.scale.log() - z.pow(2).log1p()

    def cdf(self, value):
        self._check_sample(value)
        return ((value - self.loc) / self.scale).atan() / math.pi + 0.5

    def icdf(self, value):
        return self.loc + self.scale * (math.pi * (value - 0.5)).tan()

    def entropy(self):
        return math.log(4 * math.pi) + self.scale.log()
