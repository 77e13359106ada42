"""Beta: distributions over [0, 1], drawn as g1 / (g1 + g0) from two Gammas."""
from __future__ import annotations

from . import constraints
from .exp_family import ExponentialFamily
from .standard_gamma import differentiable_standard_gamma
from .utils import clamp_inside_unit, log_beta


class Beta(ExponentialFamily):
    """Independent Beta distributions with ``concentration1`` (alpha) and ``concentration0`` (beta),
    as torch.distributions.Beta. ``rsample`` differentiates in both (implicit reparameterization
    of its two Gammas).

    >>> import tensorplug as tp
    >>> round(Beta(2.0, 1.0).log_prob(tp.tensor(0.5)).exp().item(), 4)
    1.0
    """

    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args=None):
        batch_shape = self._broadcast_parameters(concentration1=concentration1, concentration0=concentration0)
        super().__init__(batch_shape, validate_args=validate_args)

    @property
    def mean(self):
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def mode(self):
        return (self.concentration1 - 1) / (self.concentration1 + self.concentration0 - 2)

    @property
    def variance(self):
        total = self.concentration1 + self.concentration0
        return self.concentration1 * self.concentration0 / (total.pow(2) * (total + 1))

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        g1 = differentiable_standard_gamma(self.concentration1.expand(shape))
        g0 = differentiable_standard_gamma(self.concentration0.expand(shape))
        return clamp_inside_unit(g1 / (g1 + g0))

    def log_prob(self, value):
        self._check_sample(value)
        a, b = self.concentration1, self.concentration0
        return (a - 1).xlogy(value) + (b - 1).xlogy(1 - value) + (a + b).lgamma() - a.lgamma() - b.lgamma()

    @property
    def _natural_params(self):
        return (self.concentration1, self.concentration0)

    def _log_normalizer(self, x, y):
        return log_beta(x, y)

    @property
    def _mean_carrier_measure(self):
        # h(x) = 1 / (x (1 - x)) with the natural parameters a and b: E[log h] = -E[log x] - E[log(1 - x)].
        a, b = self.concentration1, self.concentration0
        total = (a + b).digamma()
        return -(a.digamma() - total) - (b.digamma() - total)

    def entropy(self):
        a, b = self.concentration1, self.concentration0
        total = a + b
        return log_beta(a, b) - (a - 1) * a.digamma() - (b - 1) * b.digamma() + (total - 2) * total.digamma()
