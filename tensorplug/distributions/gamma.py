"""Gamma: the distribution of waiting times for ``concentration`` events at ``rate``, and the
Marsaglia-Tsang sampler that Beta and Dirichlet draw from too."""
from __future__ import annotations

from ..frontend.autograd.grad_mode import no_grad
from ..frontend.factories import rand_like, randn_like
from ..frontend.ops.elementwise import where
from ..frontend.samplers import _fill_by_rejection
from .distribution import Distribution
from .utils import broadcast_all, finfo_tiny


def standard_gamma(concentration):
    """Gamma(concentration, 1) draws of concentration's shape, from tensorplug's generator, without
    gradients (Marsaglia and Tsang 2000; a concentration below 1 is boosted by one and the draw
    scaled by u^(1/concentration))."""
    with no_grad():
        alpha = concentration.detach()
        boosted = where(alpha < 1, alpha + 1, alpha)
        d = boosted - 1.0 / 3.0
        c = (9 * d).rsqrt()

        def propose(pending):
            z = randn_like(d)
            v = (1 + c * z).pow(3)
            u = rand_like(d)
            positive = v > 0
            safe_v = where(positive, v, 1.0)
            accepted = positive & (u.log() < 0.5 * z * z + d - d * safe_v + d * safe_v.log())
            return accepted, d * safe_v

        draws = _fill_by_rejection(tuple(alpha.shape), alpha.dtype, alpha.device, propose)
        shrink = rand_like(alpha).pow(alpha.reciprocal())
        draws = where(alpha < 1, draws * shrink, draws)
        # A tiny concentration can underflow to 0; keep draws positive, as PyTorch does.
        return draws.clamp(min=finfo_tiny(draws.dtype))


class Gamma(Distribution):
    """Independent Gamma distributions with shapes ``concentration`` and rates ``rate``, as
    torch.distributions.Gamma. ``rsample`` differentiates in ``rate`` only: the draw for a given
    concentration is treated as a constant (see docs/deviations.md).

    >>> import tensorplug as tp
    >>> round(Gamma(1.0, 2.0).log_prob(tp.tensor(0.5)).exp().item(), 4)
    0.7358
    """

    has_rsample = True

    def __init__(self, concentration, rate, validate_args=None):
        self.concentration, self.rate = broadcast_all(concentration, rate)
        super().__init__(self.concentration.shape, validate_args=validate_args)
        self._check_parameter("concentration", self.concentration, self.concentration > 0,
                              "GreaterThan(lower_bound=0.0)")
        self._check_parameter("rate", self.rate, self.rate > 0, "GreaterThan(lower_bound=0.0)")

    def _parameters(self) -> dict:
        return {"concentration": self.concentration, "rate": self.rate}

    @property
    def mean(self):
        return self.concentration / self.rate

    @property
    def mode(self):
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self):
        return self.concentration / self.rate.pow(2)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        draws = standard_gamma(self.concentration.expand(shape))
        return (draws / self.rate).clamp(min=finfo_tiny(draws.dtype))

    def log_prob(self, value):
        self._check_sample(value, lambda v: v >= 0, "GreaterThanEq(lower_bound=0.0)")
        alpha, beta = self.concentration, self.rate
        return alpha.xlogy(beta) + (alpha - 1).xlogy(value) - beta * value - alpha.lgamma()

    def entropy(self):
        alpha = self.concentration
        return alpha - self.rate.log() + alpha.lgamma() + (1 - alpha) * alpha.digamma()
