"""Multinomial: counts per category of ``total_count`` independent categorical draws."""
from __future__ import annotations

from ..frontend.autograd.grad_mode import no_grad
from ..frontend.factories import arange
from ..frontend.ops.elementwise import where
from . import constraints
from .binomial import Binomial
from .categorical_based import CategoricalBased
from .distribution import Distribution
from .utils import broadcast_all


class Multinomial(CategoricalBased, Distribution):
    """Count vectors over the last dimension of ``probs`` or ``logits``, summing to the integer
    ``total_count``, as torch.distributions.Multinomial (event_shape (K,); counts are floats of
    the parameters' dtype; no rsample).

    >>> import tensorplug as tp
    >>> Multinomial(4, probs=tp.tensor([0.0, 1.0])).sample().tolist()
    [0.0, 4.0]
    """

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        if not isinstance(total_count, int):
            raise NotImplementedError("inhomogeneous total_count is not supported")
        self.total_count = total_count
        super().__init__(*self._take_categorical(probs, logits, validate_args), validate_args=validate_args)

    @constraints.dependent_property(is_discrete=True, event_dim=1)
    def support(self):
        return constraints.multinomial(self.total_count)

    def expand(self, batch_shape, _instance=None):
        return self._expanded_copy(self.total_count, **self._expanded_parameters(batch_shape))

    @property
    def mean(self):
        return self.probs * self.total_count

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        if self.total_count <= 0:
            raise RuntimeError(f"Multinomial.sample: cannot sample n_sample <= 0 samples (total_count is "
                               f"{self.total_count})")
        if isinstance(sample_shape, int):
            sample_shape = (sample_shape,)
        with no_grad():
            draws = self._categorical.sample((self.total_count,) + tuple(sample_shape))
            return self._one_hot(draws).sum(0)

    def log_prob(self, value):
        self._check_sample(value)
        logits, value = broadcast_all(self.logits, value)
        # A count of 0 contributes nothing, also where a logit is -inf (0 * -inf would be NaN).
        weighted = where(value == 0, 0.0, value * logits).sum(-1)
        return (value.sum(-1) + 1).lgamma() - (value + 1).lgamma().sum(-1) + weighted

    def entropy(self):
        """-log n! + sum_k E[log x_k!] - n sum_k p_k log p_k, where each count x_k is
        Binomial(n, p_k), so E[log x_k!] is summed over its n + 1 values."""
        n = self.total_count
        probs = self.probs
        counts = arange(n + 1, dtype=probs.dtype, device=probs.device).view((-1,) + (1,) * probs.dim())
        marginals = Binomial(n, probs=probs, validate_args=False)
        expected_log_factorial = (marginals.log_prob(counts).exp() * (counts + 1).lgamma()).sum(0).sum(-1)
        p_log_p = where(probs == 0, 0.0, probs * self.logits).sum(-1)
        return -(probs.new_full((), float(n)) + 1).lgamma() + expected_log_factorial - n * p_log_p
