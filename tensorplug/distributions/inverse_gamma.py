"""InverseGamma: 1 / X for X ~ Gamma(concentration, rate), a conjugate prior for variances."""
from __future__ import annotations

import math

from ..frontend.ops.elementwise import where
from . import constraints
from .gamma import Gamma
from .transformed_distribution import NamedTransformedDistribution
from .transforms import PowerTransform


class InverseGamma(NamedTransformedDistribution):
    """1 / X for X ~ Gamma(``concentration``, ``rate``), as torch.distributions.InverseGamma (a
    TransformedDistribution of that Gamma; ``rate`` is the scale of 1 / X); ``rsample`` is differentiable.

    >>> import tensorplug as tp
    >>> InverseGamma(3.0, 2.0).mean.item()
    1.0
    """

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, concentration, rate, validate_args=None):
        super().__init__(Gamma(concentration, rate, validate_args=validate_args), PowerTransform(-1.0),
                         validate_args=validate_args)

    def _parameters(self) -> dict:
        return self.base_dist._parameters()

    @property
    def concentration(self):
        return self.base_dist.concentration

    @property
    def rate(self):
        return self.base_dist.rate

    @property
    def mean(self):
        alpha = self.concentration
        return where(alpha > 1, self.rate / (alpha - 1), math.inf)

    @property
    def mode(self):
        return self.rate / (self.concentration + 1)

    @property
    def variance(self):
        alpha = self.concentration
        return where(alpha > 2, self.rate.pow(2) / ((alpha - 1).pow(2) * (alpha - 2)), math.inf)

    def entropy(self):
        alpha = self.concentration
        return alpha + self.rate.log() + alpha.lgamma() - (1 + alpha) * alpha.digamma()
