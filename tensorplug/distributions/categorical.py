"""Categorical: one of K categories, drawn with the given probabilities (or logits)."""
from __future__ import annotations

import math

from ..frontend import dtypes as _dt
from ..frontend.autograd.grad_mode import no_grad
from ..frontend.factories import arange, rand
from ..frontend.views import broadcast_tensors
from . import constraints
from .distribution import Distribution
from .utils import finfo_min, logits_to_probs, probs_to_logits


class Categorical(Distribution):
    """Categories 0..K-1 over the last dimension of ``probs`` (non-negative, normalised here) or of
    ``logits`` (log-probabilities up to a constant), as torch.distributions.Categorical.

    >>> import tensorplug as tp
    >>> Categorical(probs=tp.tensor([0.25, 0.75])).log_prob(tp.tensor(1)).exp().item()
    0.75
    """

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    has_enumerate_support = True

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self._num_events - 1)

    def __init__(self, probs=None, logits=None, validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            if probs.dim() < 1:
                raise ValueError("`probs` parameter must be at least one-dimensional.")
            self._probs, self._logits = probs / probs.sum(-1, keepdim=True), None
            param = self._probs
        else:
            if logits.dim() < 1:
                raise ValueError("`logits` parameter must be at least one-dimensional.")
            self._probs, self._logits = None, logits - logits.logsumexp(dim=-1, keepdim=True)
            param = self._logits
        self._given = "probs" if probs is not None else "logits"
        self._num_events = param.shape[-1]
        super().__init__(param.shape[:-1], validate_args=validate_args)

    def _parameters(self) -> dict:
        return {self._given: self._probs if self._given == "probs" else self._logits}

    @property
    def probs(self):
        if self._probs is None:
            self._probs = logits_to_probs(self._logits)
        return self._probs

    @property
    def logits(self):
        if self._logits is None:
            self._logits = probs_to_logits(self._probs)
        return self._logits

    @property
    def param_shape(self) -> tuple:
        return tuple((self._probs if self._given == "probs" else self._logits).shape)

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
        if self._validate_args:
            self._validate_sample(value)
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
        values = values.view((-1,) + (1,) * len(self._batch_shape))
        if expand:
            values = values.expand((-1,) + self._batch_shape)
        return values
