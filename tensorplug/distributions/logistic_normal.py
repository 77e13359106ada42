"""LogisticNormal: points of the simplex whose stick-breaking logits are Gaussian."""
from __future__ import annotations

from . import constraints
from .independent import Independent
from .normal import Normal
from .structured_transforms import StickBreakingTransform
from .transformed_distribution import NamedTransformedDistribution


class LogisticNormal(NamedTransformedDistribution):
    """StickBreakingTransform of a Normal(``loc``, ``scale``) vector of K values, a point of the
    (K+1)-simplex, as torch.distributions.LogisticNormal (a 0-d loc is one value, K = 1);
    ``rsample`` is differentiable.

    >>> import tensorplug as tp
    >>> LogisticNormal(tp.zeros(2), tp.ones(2)).event_shape
    (3,)
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        normal = Normal(loc, scale, validate_args=validate_args)
        if not normal.batch_shape:
            normal = normal.expand((1,))
        super().__init__(Independent(normal, 1), StickBreakingTransform(), validate_args=validate_args)

    def _parameters(self) -> dict:
        return {"loc": self.loc, "scale": self.scale}

    @property
    def loc(self):
        return self.base_dist.base_dist.loc

    @property
    def scale(self):
        return self.base_dist.base_dist.scale
