"""LogNormal: exp of a Normal, i.e. values whose logarithm is Gaussian."""
from __future__ import annotations

from . import constraints
from .normal import Normal
from .transformed_distribution import NamedTransformedDistribution
from .transforms import ExpTransform


class LogNormal(NamedTransformedDistribution):
    """exp(X) for X ~ Normal(``loc``, ``scale``), as torch.distributions.LogNormal (a
    TransformedDistribution whose ``base_dist`` is that Normal); ``rsample`` is differentiable.

    >>> import tensorplug as tp
    >>> round(LogNormal(0.0, 1.0).log_prob(tp.tensor(1.0)).item(), 6)
    -0.918939
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        super().__init__(Normal(loc, scale, validate_args=validate_args), ExpTransform(), validate_args=validate_args)

    def _parameters(self) -> dict:
        return self.base_dist._parameters()

    @property
    def loc(self):
        return self.base_dist.loc

    @property
    def scale(self):
        return self.base_dist.scale

    @property
    def mean(self):
        return (self.loc + self.scale.pow(2) / 2).exp()

    @property
    def mode(self):
        return (self.loc - self.scale.pow(2)).exp()

    @property
    def variance(self):
        variance = self.scale.pow(2)
        return variance.expm1() * (2 * self.loc + variance).exp()

    def entropy(self):
        return self.base_dist.entropy() + self.loc
