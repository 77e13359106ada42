"""The part Normal and Laplace share: a real location ``loc`` and a positive ``scale``,
broadcast together, with the mean and mode at ``loc``."""
from __future__ import annotations

from . import constraints
from .distribution import Distribution


class LocationScale(Distribution):
    """Base of the families given by ``loc`` and ``scale``; subclasses add the density."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real

    def __init__(self, loc, scale, validate_args=None):
        super().__init__(self._broadcast_parameters(loc=loc, scale=scale), validate_args=validate_args)

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc
