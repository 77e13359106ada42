"""Weibull: lifetimes whose failure rate grows (or shrinks) as a power of time."""
from __future__ import annotations

from . import constraints
from .distribution import Distribution
from .utils import euler_constant


class Weibull(Distribution):
    """Independent Weibull distributions with ``scale`` (lambda) and ``concentration`` (k), as
    torch.distributions.Weibull; ``rsample`` is differentiable in both.

    >>> import tensorplug as tp
    >>> round(Weibull(1.0, 1.0).log_prob(tp.tensor(1.0)).item(), 6)
    -1.0
    """

    arg_constraints = {"scale": constraints.positive, "concentration": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, scale, concentration, validate_args=None):
        batch_shape = self._broadcast_parameters(scale=scale, concentration=concentration)
        super().__init__(batch_shape, validate_args=validate_args)

    @property
    def mean(self):
        return self.scale * (1 + self.concentration.reciprocal()).lgamma().exp()

    @property
    def mode(self):
        k = self.concentration
        return self.scale * ((k - 1) / k).pow(k.reciprocal())

    @property
    def variance(self):
        inverse = self.concentration.reciprocal()
        first = (1 + inverse).lgamma().exp()
        return self.scale.pow(2) * ((1 + 2 * inverse).lgamma().exp() - first.pow(2))

    def rsample(self, sample_shape=()):
        return self.icdf(self._uniform_draws(sample_shape, self.scale))

    def log_prob(self, value):
        self._check_sample(value)
        k, z = self.concentration, value / self.scale
        return k.log() - self.scale.log() + (k - 1) * z.log() - z.pow(k)

    def cdf(self, value):
        self._check_sample(value)
        return -(-(value / self.scale).pow(self.concentration)).expm1()

    def icdf(self, value):
        return self.scale * (-(-value).log1p()).pow(self.concentration.reciprocal())

    def entropy(self):
        k = self.concentration
        return euler_constant * (1 - k.reciprocal()) + (self.scale / k).log() + 1
