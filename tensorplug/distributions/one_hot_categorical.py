"""OneHotCategorical: a Categorical whose draws are one-hot vectors instead of indices, and its
straight-through variant, whose draws pass the probabilities' gradient through."""
from __future__ import annotations

from ..frontend.autograd.grad_mode import no_grad
from ..frontend.factories import eye
from . import constraints
from .categorical_based import CategoricalBased
from .distribution import Distribution


class OneHotCategorical(CategoricalBased, Distribution):
    """One-hot vectors over the last dimension of ``probs`` or ``logits``, as
    torch.distributions.OneHotCategorical (event_shape is (K,); samples have the parameters' dtype).

    >>> import tensorplug as tp
    >>> OneHotCategorical(probs=tp.tensor([0.0, 1.0])).sample().tolist()
    [0.0, 1.0]
    """

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.one_hot
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        super().__init__(*self._take_categorical(probs, logits, validate_args), validate_args=validate_args)

    @property
    def mean(self):
        return self.probs

    @property
    def mode(self):
        return self._one_hot(self.probs.argmax(-1))

    @property
    def variance(self):
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        with no_grad():
            return self._one_hot(self._categorical.sample(sample_shape))

    def log_prob(self, value):
        self._check_sample(value)
        return self._categorical.log_prob(value.argmax(-1))

    def entropy(self):
        return self._categorical.entropy()

    def enumerate_support(self, expand=True):
        identity = eye(self._event_shape[0], dtype=self.probs.dtype, device=self.probs.device)
        return self._support_over_batch(identity, expand)


class OneHotCategoricalStraightThrough(OneHotCategorical):
    """A OneHotCategorical whose ``rsample`` is the one-hot draw in the forward pass and carries
    the gradient of ``probs`` in the backward pass (the straight-through estimator), as
    torch.distributions.OneHotCategoricalStraightThrough."""

    has_rsample = True

    def rsample(self, sample_shape=()):
        draws = self.sample(sample_shape)
        probs = self._categorical.probs
        return draws + (probs - probs.detach())
