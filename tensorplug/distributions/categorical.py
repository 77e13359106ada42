"""Categorical: one of K categories, drawn with the given probabilities (or logits)."""
from __future__ import annotations

import math

from ..frontend import dtypes as _dt
from ..frontend.autograd.grad_mode import no_grad
from ..frontend.factories import arange, rand
from ..frontend.views import broadcast_tensors
from . import constraints
from .distribution import Distribution
from .probs_or_logits import ProbsOrLogits, one_of_probs_or_logits
from .utils import finfo_min


class Categorical(ProbsOrLogits, Distribution):
    """Categories 0..K-1 over the last dimension of ``probs`` (non-negative, normalised here) or of
    ``logits`` (log-probabilities up to a constant), as torch.distributions.Categorical.

    >>> import tensorplug as tp
    >>> Categorical(probs=tp.tensor([0.25, 0.75])).log_prob(tp.tensor(1)).exp().item()
    0.75
    """

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    has_enumerate_support = True
    _binary = False

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self._num_events - 1)

    def __init__(self, probs=None, logits=None, validate_args=None):
        name, given = one_of_probs_or_logits(probs, logits)
        if given.dim() < 1:
            raise ValueError(f"`{name}` parameter must be at least one-dimensional.")
        # Normalised over the categories, so that probs sums to 1 and logits are log-probabilities.
        if name == "probs":
            self._store_given(name, given / given.sum(-1, keepdim=True))
        else:
            self._store_given(name, given - given.logsumexp(dim=-1, keepdim=True))
        self._num_events = given.shape[-1]
        super().__init__(given.shape[:-1], validate_args=validate_args)

    @property
    def mean(self):
        return self.probs.new_full(self._extended_shape(), math.nan)

    @property
    def mode(self):
        return self.probs.argmax(-1)

    @property
    def variance(self):
        return self.probs.new_full(self._extended_shape(), math.nan)

    def sample(self, sample_shape=()):
        """Inverse-CDF sampling: the first category whose cumulative probability reaches a uniform
        draw in (0, 1] (so a category of probability 0 is never drawn)."""
        shape = self._extended_shape(sample_shape)
        draws = math.prod(shape[:len(shape) - len(self._batch_shape)])
        with no_grad():
            probs = self.probs.reshape(-1, self._num_events)
            cdf = probs.cumsum(-1)
            threshold = (1 - rand(draws, probs.shape[0], 1, dtype=probs.dtype, device=probs.device)) * cdf[:, -1:]
            index = (cdf < threshold).sum(-1).clamp(max=self._num_events - 1)
            return index.reshape(shape)

    def log_prob(self, value):
        self._check_sample(value)
        value = value.long().unsqueeze(-1)
        value, log_pmf = broadcast_tensors(value, self.logits)
        value = value[..., :1]
        return log_pmf.gather(-1, value).squeeze(-1)

    def entropy(self):
        logits = self.logits.clamp(min=finfo_min(self.logits.dtype))
        p_log_p = logits * self.probs
        return -p_log_p.sum(-1)

    def enumerate_support(self, expand=True):
        values = arange(self._num_events, dtype=_dt.int64, device=self.probs.device)
        return self._support_over_batch(values, expand)
