"""StudentT: Student's t distribution with ``df`` degrees of freedom, shifted and scaled."""
from __future__ import annotations

import math

from ..frontend.factories import randn
from ..frontend.ops.elementwise import where
from . import constraints
from .distribution import Distribution
from .standard_gamma import differentiable_standard_gamma


class StudentT(Distribution):
    """loc + scale * T for T ~ Student's t with ``df`` degrees of freedom, as
    torch.distributions.StudentT. ``rsample`` draws Z / sqrt(G / df) with G ~ Chi2(df), and
    differentiates in all three parameters (in df implicitly, through the Gamma draw).

    >>> import tensorplug as tp
    >>> round(StudentT(1.0).log_prob(tp.tensor(0.0)).exp().item(), 6)
    0.31831
    """

    arg_constraints = {"df": constraints.positive, "loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, df, loc=0.0, scale=1.0, validate_args=None):
        super().__init__(self._broadcast_parameters(df=df, loc=loc, scale=scale), validate_args=validate_args)

    @property
    def mean(self):
        return where(self.df > 1, self.loc, math.nan)

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        df = self.df
        finite = self.scale.pow(2) * df / (df - 2)
        return where(df > 2, finite, where(df > 1, math.inf, math.nan))

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        z = randn(shape, dtype=self.df.dtype, device=self.df.device)
        chi2 = 2 * differentiable_standard_gamma((0.5 * self.df).expand(shape))
        return self.loc + self.scale * z * (self.df / chi2).sqrt()

    def _log_normalizer(self):
        """log of scale * sqrt(df pi) * Gamma(df / 2) / Gamma((df + 1) / 2)."""
        df = self.df
        return (self.scale.log() + 0.5 * (df * math.pi).log() + (0.5 * df).lgamma() - (0.5 * (df + 1)).lgamma())

    def log_prob(self, value):
        self._check_sample(value)
        z = (value - self.loc) / self.scale
        return -0.5 * (self.df + 1) * (z.pow(2) / self.df).log1p() - self._log_normalizer()

    def entropy(self):
        df = self.df
        half, half_next = 0.5 * df, 0.5 * (df + 1)
        log_beta = half.lgamma() + math.lgamma(0.5) - half_next.lgamma()
        return (self.scale.log() + half_next * (half_next.digamma() - half.digamma()) + 0.5 * df.log() + log_beta)
