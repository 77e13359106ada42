"""The part Normal and Laplace share: a real location ``loc`` and a positive ``scale``,
broadcast together, with the mean and mode at ``loc``."""
from __future__ import annotations

from .distribution import Distribution
from .utils import broadcast_all


class LocationScale(Distribution):
    """Base of the families given by ``loc`` and ``scale``; subclasses add the density."""

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(self.loc.shape, validate_args=validate_args)
        self._check_parameter("loc", self.loc, self.loc == self.loc, "Real()")
        self._check_parameter("scale", self.scale, self.scale > 0, "GreaterThan(lower_bound=0.0)")

    def _parameters(self) -> dict:
        return {"loc": self.loc, "scale": self.scale}

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc
