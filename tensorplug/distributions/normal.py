"""Normal: the Gaussian distribution with mean ``loc`` and standard deviation ``scale``."""
from __future__ import annotations

import math

from ..frontend.autograd.grad_mode import no_grad
from ..frontend.factories import randn
from .exp_family import ExponentialFamily
from .location_scale import LocationScale


class Normal(LocationScale, ExponentialFamily):
    """Independent Gaussians with means ``loc`` and standard deviations ``scale`` (broadcast
    together), as torch.distributions.Normal; ``rsample`` is differentiable (reparameterized).

    >>> import tensorplug as tp
    >>> round(Normal(0.0, 1.0).log_prob(tp.tensor(0.0)).item(), 6)
    -0.918939
    """

    has_rsample = True

    @property
    def stddev(self):
        return self.scale

    @property
    def variance(self):
        return self.stddev.pow(2)

    def sample(self, sample_shape=()):
        with no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        eps = randn(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + eps * self.scale

    def log_prob(self, value):
        self._check_sample(value)
        var = self.scale ** 2
        return -((value - self.loc) ** 2) / (2 * var) - self.scale.log() - math.log(math.sqrt(2 * math.pi))

    def cdf(self, value):
        self._check_sample(value)
        return 0.5 * (1 + ((value - self.loc) * self.scale.reciprocal() / math.sqrt(2)).erf())

    def icdf(self, value):
        return self.loc + self.scale * (2 * value - 1).erfinv() * math.sqrt(2)

    def entropy(self):
        return 0.5 + 0.5 * math.log(2 * math.pi) + self.scale.log()

    @property
    def _natural_params(self):
        return (self.loc / self.scale.pow(2), -0.5 * self.scale.pow(2).reciprocal())

    def _log_normalizer(self, x, y):
        return -0.25 * x.pow(2) / y + 0.5 * (-math.pi / y).log()

    @property
    def _mean_carrier_measure(self):
        return 0
