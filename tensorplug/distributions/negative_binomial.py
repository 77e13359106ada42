"""NegativeBinomial: successes counted until ``total_count`` failures have happened."""
from __future__ import annotations

from ..frontend.autograd.grad_mode import no_grad
from ..frontend.ops.elementwise import where
from ..frontend.samplers import poisson
from ..nn import functional as F
from . import constraints
from .probs_or_logits import CountedTrials
from .distribution import Distribution
from .standard_gamma import standard_gamma


class NegativeBinomial(CountedTrials, Distribution):
    """Successes, each of probability ``probs`` (or sigmoid(``logits``)), before ``total_count``
    failures (any non-negative real), as torch.distributions.NegativeBinomial; floats 0, 1, 2, ...

    >>> import tensorplug as tp
    >>> round(NegativeBinomial(1.0, probs=tp.tensor(0.5)).log_prob(tp.tensor(1.0)).exp().item(), 4)
    0.25
    """

    arg_constraints = {"total_count": constraints.greater_than_eq(0), "probs": constraints.half_open_interval(0.0, 1.0),
                       "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, total_count, probs=None, logits=None, validate_args=None):
        self._take_count_and_probs_or_logits(total_count, probs, logits)
        super().__init__(self.param_shape, validate_args=validate_args)

    @property
    def mean(self):
        return self.total_count * self.logits.exp()

    @property
    def mode(self):
        return ((self.total_count - 1) * self.logits.exp()).floor().clamp(min=0.0)

    @property
    def variance(self):
        return self.mean / (1 - self.probs)

    def sample(self, sample_shape=()):
        """A Poisson count whose rate is Gamma(total_count, rate = (1 - p) / p): the Gamma-Poisson mixture."""
        shape = self._extended_shape(sample_shape)
        with no_grad():
            rate = standard_gamma(self.total_count.expand(shape)) * self.logits.exp()
            return poisson(rate.contiguous())

    def log_prob(self, value):
        self._check_sample(value)
        r, logits = self.total_count, self.logits
        # r log(1 - p) + k log p, through softplus so that p near 0 or 1 stays finite.
        likelihood = -r * F.softplus(logits) - value * F.softplus(-logits)
        log_choose = (r + value).lgamma() - (value + 1).lgamma() - r.lgamma()
        # r = 0 puts all mass on 0, where the Gamma functions are infinite: the coefficient is 1.
        return likelihood + where(r + value == 0, 0.0, log_choose)
