"""Dirichlet: distributions over the probability simplex, drawn as normalised Gammas."""
from __future__ import annotations

from . import constraints
from .exp_family import ExponentialFamily
from .standard_gamma import differentiable_standard_gamma
from .utils import clamp_inside_unit


class Dirichlet(ExponentialFamily):
    """Points of the simplex over the last dimension of ``concentration``, as
    torch.distributions.Dirichlet (event_shape is (K,)). ``rsample`` differentiates in the
    concentration (implicit reparameterization of its Gammas).

    >>> import tensorplug as tp
    >>> round(Dirichlet(tp.ones(3)).log_prob(tp.tensor([0.2, 0.3, 0.5])).exp().item(), 4)
    2.0
    """

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration, validate_args=None):
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        shape = tuple(concentration.shape)
        super().__init__(shape[:-1], shape[-1:], validate_args=validate_args)

    def _parameters(self) -> dict:
        return {"concentration": self.concentration}

    @property
    def _total(self):
        return self.concentration.sum(-1, keepdim=True)

    @property
    def mean(self):
        return self.concentration / self._total

    @property
    def variance(self):
        total = self._total
        return self.concentration * (total - self.concentration) / (total.pow(2) * (total + 1))

    def rsample(self, sample_shape=()):
        draws = differentiable_standard_gamma(self.concentration.expand(self._extended_shape(sample_shape)))
        return clamp_inside_unit(draws / draws.sum(-1, keepdim=True))

    def log_prob(self, value):
        self._check_sample(value)
        c = self.concentration
        return (c - 1).xlogy(value).sum(-1) + c.sum(-1).lgamma() - c.lgamma().sum(-1)

    @property
    def _natural_params(self):
        return (self.concentration,)

    def _log_normalizer(self, x):
        return x.lgamma().sum(-1) - x.sum(-1).lgamma()

    @property
    def _mean_carrier_measure(self):
        # h(x) = 1 / prod x_k: E[log h] = -sum_k (digamma(c_k) - digamma(sum c)).
        c = self.concentration
        return -(c.digamma() - c.sum(-1, keepdim=True).digamma()).sum(-1)

    def entropy(self):
        c = self.concentration
        k = c.shape[-1]
        total = c.sum(-1)
        log_beta = c.lgamma().sum(-1) - total.lgamma()
        return log_beta + (total - k) * total.digamma() - ((c - 1) * c.digamma()).sum(-1)
