"""Geometric: the number of failures before the first success of repeated coin flips."""
from __future__ import annotations

from ..frontend.autograd.grad_mode import no_grad
from ..frontend.factories import rand
from ..nn import functional as F
from ..special import xlog1py
from . import constraints
from .probs_or_logits import BinaryParameter
from .distribution import Distribution
from .utils import finfo_tiny


class Geometric(BinaryParameter, Distribution):
    """Failures before the first success, each trial succeeding with ``probs`` (or
    sigmoid(``logits``)), as torch.distributions.Geometric; values are floats 0, 1, 2, ...

    >>> import tensorplug as tp
    >>> Geometric(probs=tp.tensor(0.5)).log_prob(tp.tensor(1.0)).exp().item()
    0.25
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, probs=None, logits=None, validate_args=None):
        self._take_probs_or_logits(probs, logits)
        super().__init__(self.param_shape, validate_args=validate_args)

    @property
    def mean(self):
        return self.probs.reciprocal() - 1

    @property
    def mode(self):
        return self.probs * 0

    @property
    def variance(self):
        return (self.probs.reciprocal() - 1) / self.probs

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        with no_grad():
            probs = self.probs
            # Inversion: floor(log u / log(1 - p)), u kept above 0 so the logarithm is finite.
            u = rand(shape, dtype=probs.dtype, device=probs.device).clamp(min=finfo_tiny(probs.dtype))
            return (u.log() / (-probs).log1p()).floor()

    def log_prob(self, value):
        self._check_sample(value)
        # xlog1py makes 0 failures certain at p = 1 (0 * log 0 = 0).
        return xlog1py(value, -self.probs) + self.probs.log()

    def entropy(self):
        return F.binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none") / self.probs
