"""Kumaraswamy: a Beta-like distribution on (0, 1) whose cdf 1 - (1 - x^a)^b has a closed form,
so it is drawn by inverting it (a reparameterizable stand-in for the Beta in VAEs)."""
from __future__ import annotations

import math

from ..frontend.ops.elementwise import where
from . import constraints
from .transformed_distribution import NamedTransformedDistribution
from .transforms import AffineTransform, PowerTransform
from .uniform import Uniform
from .utils import euler_constant, log_beta


class Kumaraswamy(NamedTransformedDistribution):
    """(1 - U^(1/b))^(1/a) for U ~ Uniform(0, 1), a = ``concentration1``, b = ``concentration0``,
    as torch.distributions.Kumaraswamy; ``rsample`` is differentiable in both.

    >>> import tensorplug as tp
    >>> round(Kumaraswamy(1.0, 1.0).log_prob(tp.tensor(0.3)).exp().item(), 6)
    1.0
    """

    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args=None):
        self._broadcast_parameters(concentration1=concentration1, concentration0=concentration0)
        b = self.concentration0
        base = Uniform(b.new_full(tuple(b.shape), 0.0), b.new_full(tuple(b.shape), 1.0), validate_args=validate_args)
        # U^(1/b), then 1 - that, then its 1/a-th power.
        steps = [PowerTransform(b.reciprocal()), AffineTransform(1.0, -1.0),
                 PowerTransform(self.concentration1.reciprocal())]
        super().__init__(base, steps, validate_args=validate_args)

    def _raw_moment(self, order: int):
        """E[x^order] = b B(1 + order / a, b)."""
        a, b = self.concentration1, self.concentration0
        return (b.log() + log_beta(1 + order / a, b)).exp()

    @property
    def mean(self):
        return self._raw_moment(1)

    @property
    def mode(self):
        a, b = self.concentration1, self.concentration0
        # ((a - 1) / (a b - 1))^(1/a) where both concentrations are at least 1 (not both 1).
        defined = (a >= 1) & (b >= 1) & ((a > 1) | (b > 1))
        safe_a = where(defined, a, 2.0)
        safe_b = where(defined, b, 2.0)
        return where(defined, ((safe_a - 1) / (safe_a * safe_b - 1)).pow(safe_a.reciprocal()), math.nan)

    @property
    def variance(self):
        return self._raw_moment(2) - self.mean.pow(2)

    def entropy(self):
        a, b = self.concentration1, self.concentration0
        harmonic = (b + 1).digamma() + euler_constant
        return (1 - b.reciprocal()) + (1 - a.reciprocal()) * harmonic - (a * b).log()
