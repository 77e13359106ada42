"""The part HalfNormal and HalfCauchy share: |X| for X drawn from a centred symmetric family of
the given ``scale``, whose density is twice the base's on [0, inf) and 0 below."""
from __future__ import annotations

import math

from ..frontend.ops.elementwise import where
from . import constraints
from .distribution import Distribution


class HalfSymmetric(Distribution):
    """Base of the folded families: a positive ``scale``, support [0, inf), mode 0, sampling by the
    inverse cdf. A subclass gives the log-density and the cdf on the support (``_folded_log_density``,
    ``_folded_cdf``), the icdf, the moments and the entropy."""

    arg_constraints = {"scale": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, scale, validate_args=None):
        super().__init__(self._broadcast_parameters(scale=scale), validate_args=validate_args)

    @property
    def mode(self):
        return self.scale * 0

    def rsample(self, sample_shape=()):
        return self.icdf(self._uniform_draws(sample_shape, self.scale))

    def log_prob(self, value):
        self._check_sample(value)
        # Unvalidated values below 0 lie outside the support: probability 0.
        return where(value >= 0, self._folded_log_density(value), -math.inf)

    def cdf(self, value):
        self._check_sample(value)
        return self._folded_cdf(value)

    def _folded_log_density(self, value):
        raise self._missing("_folded_log_density")

    def _folded_cdf(self, value):
        raise self._missing("_folded_cdf")
