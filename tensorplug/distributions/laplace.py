"""Laplace: the double-exponential distribution around ``loc`` with spread ``scale``."""
from __future__ import annotations

import math

from .location_scale import LocationScale
from .utils import finfo_eps


class Laplace(LocationScale):
    """Independent Laplace distributions with locations ``loc`` and scales ``scale``, as
    torch.distributions.Laplace; ``rsample`` is differentiable in both.

    >>> import tensorplug as tp
    >>> Laplace(0.0, 1.0).log_prob(tp.tensor(0.0)).exp().item()
    0.5
    """

    has_rsample = True

    @property
    def stddev(self):
        return math.sqrt(2) * self.scale

    @property
    def variance(self):
        return 2 * self.scale.pow(2)

    def rsample(self, sample_shape=()):
        # u in (-1, 1): kept off -1 so that log1p(-|u|) is finite.
        u = (self._uniform_draws(sample_shape, self.loc) * 2 - 1).clamp(min=finfo_eps(self.loc.dtype) - 1)
        return self.loc - self.scale * u.sign() * (-u.abs()).log1p()

    def log_prob(self, value):
        self._check_sample(value)
        return -(2 * self.scale).log() - (value - self.loc).abs() / self.scale

    def cdf(self, value):
        self._check_sample(value)
        centred = value - self.loc
        return 0.5 - 0.5 * centred.sign() * (-centred.abs() / self.scale).expm1()

    def icdf(self, value):
        offset = value - 0.5
        return self.loc - self.scale * offset.sign() * (-2 * offset.abs()).log1p()

    def entropy(self):
        return 1 + (2 * self.scale).log()
