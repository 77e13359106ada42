"""Poisson: counts of events that happen at an average ``rate``."""
from __future__ import annotations

from ..frontend.autograd.grad_mode import no_grad
from ..frontend.samplers import poisson
from . import constraints
from .exp_family import ExponentialFamily


class Poisson(ExponentialFamily):
    """Independent Poisson counts with means ``rate``, as torch.distributions.Poisson (samples are
    floats of the rate's dtype; there is no rsample).

    >>> import tensorplug as tp
    >>> round(Poisson(2.0).log_prob(tp.tensor(0.0)).exp().item(), 6)
    0.135335
    """

    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer

    def __init__(self, rate, validate_args=None):
        super().__init__(self._broadcast_parameters(rate=rate), validate_args=validate_args)

    @property
    def mean(self):
        return self.rate

    @property
    def mode(self):
        return self.rate.floor()

    @property
    def variance(self):
        return self.rate

    @property
    def _natural_params(self):
        return (self.rate.log(),)

    def _log_normalizer(self, x):
        return x.exp()

    def sample(self, sample_shape=()):
        with no_grad():
            return poisson(self.rate.expand(self._extended_shape(sample_shape)).contiguous())

    def log_prob(self, value):
        self._check_sample(value)
        # xlogy makes 0 * log(0) = 0, so a rate of 0 gives probability 1 to the count 0.
        return value.xlogy(self.rate) - self.rate - (value + 1).lgamma()
