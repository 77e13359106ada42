"""Pareto: power-law tails above a minimum value ``scale``."""
from __future__ import annotations

import math

from ..frontend.ops.elementwise import where
from . import constraints
from .distribution import Distribution


class Pareto(Distribution):
    """Independent Pareto (type I) distributions with minimum ``scale`` and tail index ``alpha``, as
    torch.distributions.Pareto; ``rsample`` is differentiable in both.

    >>> import tensorplug as tp
    >>> Pareto(1.0, 2.0).cdf(tp.tensor(2.0)).item()
    0.75
    """

    arg_constraints = {"alpha": constraints.positive, "scale": constraints.positive}
    has_rsample = True

    def __init__(self, scale, alpha, validate_args=None):
        super().__init__(self._broadcast_parameters(scale=scale, alpha=alpha), validate_args=validate_args)

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        return constraints.greater_than_eq(self.scale)

    @property
    def mean(self):
        alpha = self.alpha
        return where(alpha > 1, self.scale * alpha / (alpha - 1), math.inf)

    @property
    def mode(self):
        return self.scale

    @property
    def variance(self):
        alpha = self.alpha
        finite = self.scale.pow(2) * alpha / ((alpha - 1).pow(2) * (alpha - 2))
        return where(alpha > 2, finite, math.inf)

    def rsample(self, sample_shape=()):
        return self.icdf(self._uniform_draws(sample_shape, self.scale))

    def log_prob(self, value):
        self._check_sample(value)
        return self.alpha.log() + self.alpha * self.scale.log() - (self.alpha + 1) * value.log()

    def cdf(self, value):
        self._check_sample(value)
        return 1 - (self.scale / value).pow(self.alpha)

    def icdf(self, value):
        # rand is in [0, 1), so 1 - u is never 0.
        return self.scale * (-(-value).log1p() / self.alpha).exp()

    def entropy(self):
        return (self.scale / self.alpha).log() + self.alpha.reciprocal() + 1
