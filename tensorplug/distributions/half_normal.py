"""HalfNormal: the absolute value of a centred Gaussian."""
from __future__ import annotations

import math

from ..frontend.factories import randn
from .half_symmetric import HalfSymmetric


class HalfNormal(HalfSymmetric):
    """|X| for X ~ Normal(0, ``scale``), as torch.distributions.HalfNormal; ``rsample`` is
    differentiable in the scale. log_prob is -inf below 0 when values are not validated.

    >>> import tensorplug as tp
    >>> round(HalfNormal(1.0).log_prob(tp.tensor(0.0)).exp().item(), 6)
    0.797885
    """

    @property
    def mean(self):
        return self.scale * math.sqrt(2 / math.pi)

    @property
    def variance(self):
        return self.scale.pow(2) * (1 - 2 / math.pi)

    def rsample(self, sample_shape=()):
        # |scale * Z| for a standard normal Z, rather than the inverse cdf.
        shape = self._extended_shape(sample_shape)
        return (randn(shape, dtype=self.scale.dtype, device=self.scale.device) * self.scale).abs()

    def _folded_log_density(self, value):
        # Twice the Gaussian density at value.
        return -value.pow(2) / (2 * self.scale.pow(2)) - self.scale.log() + 0.5 * math.log(2 / math.pi)

    def _folded_cdf(self, value):
        return (value / (self.scale * math.sqrt(2))).erf()

    def icdf(self, prob):
        return self.scale * math.sqrt(2) * prob.erfinv()

    def entropy(self):
        return 0.5 * math.log(math.pi / 2) + 0.5 + self.scale.log()
