"""HalfCauchy: the absolute value of a centred Cauchy variable."""
from __future__ import annotations

import math

from .half_symmetric import HalfSymmetric


class HalfCauchy(HalfSymmetric):
    """|X| for X ~ Cauchy(0, ``scale``), as torch.distributions.HalfCauchy (infinite mean and
    variance); ``rsample`` is differentiable. log_prob is -inf below 0 when values are not validated.

    >>> import tensorplug as tp
    >>> round(HalfCauchy(1.0).cdf(tp.tensor(1.0)).item(), 6)
    0.5
    """

    @property
    def mean(self):
        return self.scale.new_full(self._extended_shape(), math.inf)

    @property
    def variance(self):
        return self.scale.new_full(self._extended_shape(), math.inf)

    def _folded_log_density(self, value):
        return math.log(2 / math.pi) - self.scale.log() - (value / self.scale).pow(2).log1p()

    def _folded_cdf(self, value):
        return (value / self.scale).atan() * (2 / math.pi)

    def icdf(self, prob):
        return self.scale * (prob * (math.pi / 2)).tan()

    def entropy(self):
        return math.log(2 * math.pi) + self.scale.log()
