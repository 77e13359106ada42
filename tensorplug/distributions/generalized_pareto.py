"""GeneralizedPareto: the limit law of exceedances over a high threshold (peaks over threshold),
with location ``loc``, scale ``scale`` and shape ``concentration`` xi: a heavy tail for xi > 0,
the exponential for xi = 0, and a bounded support [loc, loc - scale / xi] for xi < 0."""
from __future__ import annotations

import math

from ..frontend.ops.elementwise import where
from . import constraints
from .distribution import Distribution

# |xi| at or below this counts as 0 (the exponential case), as PyTorch's isclose(xi, 0) does.
_ZERO_SHAPE = 1e-8


class GeneralizedPareto(Distribution):
    """Independent generalized Pareto distributions, as torch.distributions.GeneralizedPareto;
    ``rsample`` (inverse cdf) is differentiable in all three parameters. The mean is NaN for
    xi >= 1 and the variance for xi >= 1/2, as in PyTorch.

    >>> import tensorplug as tp
    >>> round(GeneralizedPareto(0.0, 1.0, 0.0).cdf(tp.tensor(1.0)).item(), 6)
    0.632121
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive, "concentration": constraints.real}
    has_rsample = True

    def __init__(self, loc, scale, concentration, validate_args=None):
        batch_shape = self._broadcast_parameters(loc=loc, scale=scale, concentration=concentration)
        super().__init__(batch_shape, validate_args=validate_args)

    def _upper_end(self):
        """loc - scale / xi for xi < 0, else inf."""
        xi = self.concentration
        bounded = xi < 0
        return where(bounded, self.loc - self.scale / where(bounded, xi, -1.0), math.inf)

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        return constraints.interval(self.loc, self._upper_end())

    def _split_shape(self):
        """(is xi zero, xi with a harmless 1 where it is)."""
        zero = self.concentration.abs() <= _ZERO_SHAPE
        return zero, where(zero, 1.0, self.concentration)

    @property
    def mean(self):
        xi = self.concentration
        return where(xi < 1, self.loc + self.scale / (1 - xi), math.nan)

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        xi = self.concentration
        return where(xi < 0.5, self.scale.pow(2) / ((1 - xi).pow(2) * (1 - 2 * xi)), math.nan)

    def rsample(self, sample_shape=()):
        return self.icdf(self._uniform_draws(sample_shape, self.loc))

    def _standardised(self, value):
        """(is xi zero, safe xi, is value inside the support, (value - loc) / scale with 0 outside
        it, so that the logarithms below stay finite there)."""
        zero, xi = self._split_shape()
        inside = (value >= self.loc) & (value <= self._upper_end())
        return zero, xi, inside, where(inside, (value - self.loc) / self.scale, 0.0)

    def log_prob(self, value):
        self._check_sample(value)
        zero, xi, inside, safe_z = self._standardised(value)
        tail = -(1 / xi + 1) * (xi * safe_z).log1p()
        density = -self.scale.log() + where(zero, -safe_z, tail)
        return where(inside, density, -math.inf)

    def cdf(self, value):
        self._check_sample(value)
        zero, xi, inside, safe_z = self._standardised(value)
        probability = -where(zero, -safe_z, -(xi * safe_z).log1p() / xi).expm1()
        return where(inside, probability, where(value < self.loc, 0.0, 1.0))

    def icdf(self, value):
        zero, xi = self._split_shape()
        log_survival = (-value).log1p()
        standard = where(zero, -log_survival, (-xi * log_survival).expm1() / xi)
        return self.loc + self.scale * standard

    def entropy(self):
        return self.scale.log() + self.concentration + 1
