"""Exponential: waiting times of a memoryless process with the given ``rate``."""
from __future__ import annotations

from . import constraints
from .exp_family import ExponentialFamily


class Exponential(ExponentialFamily):
    """Independent exponential distributions with rates ``rate`` (mean 1 / rate), as
    torch.distributions.Exponential; ``rsample`` is differentiable in the rate.

    >>> import tensorplug as tp
    >>> Exponential(2.0).log_prob(tp.tensor(0.0)).exp().item()
    2.0
    """

    arg_constraints = {"rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, rate, validate_args=None):
        super().__init__(self._broadcast_parameters(rate=rate), validate_args=validate_args)

    @property
    def mean(self):
        return self.rate.reciprocal()

    @property
    def mode(self):
        return self.rate * 0

    @property
    def stddev(self):
        return self.rate.reciprocal()

    @property
    def variance(self):
        return self.rate.pow(-2)

    def rsample(self, sample_shape=()):
        # The draws are in [0, 1), so 1 - u is never 0 and the logarithm stays finite.
        return self.icdf(self._uniform_draws(sample_shape, self.rate))

    def log_prob(self, value):
        self._check_sample(value)
        return self.rate.log() - self.rate * value

    def cdf(self, value):
        self._check_sample(value)
        return 1 - (-self.rate * value).exp()

    def icdf(self, value):
        return -(-value).log1p() / self.rate

    @property
    def _natural_params(self):
        return (-self.rate,)

    def _log_normalizer(self, x):
        return -(-x).log()

    @property
    def _mean_carrier_measure(self):
        return 0

    def entropy(self):
        return 1.0 - self.rate.log()
