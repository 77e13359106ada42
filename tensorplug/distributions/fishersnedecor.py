"""FisherSnedecor: the F distribution, the ratio of two chi-squared variables each divided by
its degrees of freedom."""
from __future__ import annotations

import math

from ..frontend.ops.elementwise import where
from . import constraints
from .distribution import Distribution
from .standard_gamma import differentiable_standard_gamma
from .utils import finfo_tiny


class FisherSnedecor(Distribution):
    """Independent F distributions with degrees of freedom ``df1`` and ``df2``, as
    torch.distributions.FisherSnedecor; ``rsample`` differentiates in both (implicitly, through
    the Gamma draws).

    >>> import tensorplug as tp
    >>> round(FisherSnedecor(2.0, 2.0).log_prob(tp.tensor(1.0)).exp().item(), 6)
    0.25
    """

    arg_constraints = {"df1": constraints.positive, "df2": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, df1, df2, validate_args=None):
        super().__init__(self._broadcast_parameters(df1=df1, df2=df2), validate_args=validate_args)

    @property
    def mean(self):
        df2 = self.df2
        return where(df2 > 2, df2 / (df2 - 2), math.nan)

    @property
    def mode(self):
        df1, df2 = self.df1, self.df2
        return where(df1 > 2, (df1 - 2) / df1 * df2 / (df2 + 2), math.nan)

    @property
    def variance(self):
        df1, df2 = self.df1, self.df2
        finite = 2 * df2.pow(2) * (df1 + df2 - 2) / (df1 * (df2 - 2).pow(2) * (df2 - 4))
        return where(df2 > 4, finite, math.nan)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        # Gamma(df / 2, 1) is half a chi-squared draw; the halves cancel in the ratio.
        numerator = differentiable_standard_gamma((0.5 * self.df1).expand(shape)) / self.df1
        denominator = differentiable_standard_gamma((0.5 * self.df2).expand(shape)) / self.df2
        tiny = finfo_tiny(numerator.dtype)
        return numerator.clamp(min=tiny) / denominator.clamp(min=tiny)

    def log_prob(self, value):
        self._check_sample(value)
        half1, half2 = 0.5 * self.df1, 0.5 * self.df2
        ratio = self.df1 / self.df2
        log_normalizer = (half1 + half2).lgamma() - half1.lgamma() - half2.lgamma()
        tail = (half1 + half2) * (ratio * value).log1p()
        return log_normalizer + half1 * ratio.log() + (half1 - 1) * value.log() - tail
