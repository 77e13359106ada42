"""Gamma: the distribution of waiting times for ``concentration`` events at ``rate``."""
from __future__ import annotations

from ..special import gammainc
from . import constraints
from .exp_family import ExponentialFamily
from .standard_gamma import differentiable_standard_gamma
from .utils import finfo_tiny


class Gamma(ExponentialFamily):
    """Independent Gamma distributions with shapes ``concentration`` and rates ``rate``, as
    torch.distributions.Gamma; ``rsample`` differentiates in both (implicitly in the concentration).

    >>> import tensorplug as tp
    >>> round(Gamma(1.0, 2.0).log_prob(tp.tensor(0.5)).exp().item(), 4)
    0.7358
    """

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, concentration, rate, validate_args=None):
        batch_shape = self._broadcast_parameters(concentration=concentration, rate=rate)
        super().__init__(batch_shape, validate_args=validate_args)

    @property
    def mean(self):
        return self.concentration / self.rate

    @property
    def mode(self):
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self):
        return self.concentration / self.rate.pow(2)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        draws = differentiable_standard_gamma(self.concentration.expand(shape))
        return (draws / self.rate).clamp(min=finfo_tiny(draws.dtype))

    def log_prob(self, value):
        self._check_sample(value)
        alpha, beta = self.concentration, self.rate
        return alpha.xlogy(beta) + (alpha - 1).xlogy(value) - beta * value - alpha.lgamma()

    def cdf(self, value):
        """P(concentration, rate * value): the regularized lower incomplete gamma function
        (differentiable in value and rate, not in the concentration, as in PyTorch)."""
        self._check_sample(value)
        return gammainc(self.concentration, self.rate * value)

    @property
    def _natural_params(self):
        return (self.concentration - 1, -self.rate)

    def _log_normalizer(self, x, y):
        return (x + 1).lgamma() + (x + 1) * (-y.reciprocal()).log()

    @property
    def _mean_carrier_measure(self):
        return 0

    def entropy(self):
        alpha = self.concentration
        return alpha - self.rate.log() + alpha.lgamma() + (1 - alpha) * alpha.digamma()
