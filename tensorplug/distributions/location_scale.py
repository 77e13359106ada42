"""The part Normal, Laplace, Cauchy and Gumbel share: a real location ``loc`` and a positive
``scale``, broadcast together; and the families, these among them, whose mean and mode are ``loc``."""
from __future__ import annotations

from . import constraints
from .distribution import Distribution


class MeanAndModeAtLoc:
    """Mixin: the mean and the mode are ``loc`` (a family whose mean lies elsewhere, as Gumbel's,
    or does not exist, as Cauchy's, overrides it)."""

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc


class LocationScale(MeanAndModeAtLoc, Distribution):
    """Base of the families given by ``loc`` and ``scale``; subclasses add the density."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real

    def __init__(self, loc, scale, validate_args=None):
        super().__init__(self._broadcast_parameters(loc=loc, scale=scale), validate_args=validate_args)
