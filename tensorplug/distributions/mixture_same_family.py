"""MixtureSameFamily: a weighted mixture of components that are all of one distribution family."""
from __future__ import annotations

from ..frontend.autograd.grad_mode import no_grad
from .categorical import Categorical
from . import constraints
from .distribution import Distribution


class MixtureSameFamily(Distribution):
    """A mixture whose weights are ``mixture_distribution`` (a Categorical over K) and whose
    components are the last batch dimension (of size K) of ``component_distribution``, as
    torch.distributions.MixtureSameFamily (no rsample: choosing a component is discrete).

    >>> import tensorplug as tp
    >>> from tensorplug.distributions import Categorical, Normal
    >>> mix = MixtureSameFamily(Categorical(probs=tp.tensor([0.5, 0.5])), Normal(tp.tensor([-1.0, 1.0]), 1.0))
    >>> mix.mean.item()
    0.0
    """

    arg_constraints: dict = {}
    has_rsample = False

    @constraints.dependent_property
    def support(self):
        return constraints.MixtureSameFamilyConstraint(self._component_distribution.support)

    def __init__(self, mixture_distribution, component_distribution, validate_args=None):
        if not isinstance(mixture_distribution, Categorical):
            raise ValueError("MixtureSameFamily: mixture_distribution must be a Categorical, got "
                             f"{type(mixture_distribution).__name__}")
        if not isinstance(component_distribution, Distribution):
            raise ValueError("MixtureSameFamily: component_distribution must be a Distribution, got "
                             f"{type(component_distribution).__name__}")
        mix_batch = tuple(mixture_distribution.batch_shape)
        comp_batch = tuple(component_distribution.batch_shape)
        if not comp_batch:
            raise ValueError("MixtureSameFamily: component_distribution needs a batch dimension of components, "
                             "but its batch_shape is ()")
        outer = comp_batch[:-1]
        if len(mix_batch) > len(outer) or any(m != c and m != 1 and c != 1 for m, c in
                                              zip(reversed(mix_batch), reversed(outer))):
            raise ValueError(f"MixtureSameFamily: mixture_distribution.batch_shape {mix_batch} is not compatible with "
                             f"component_distribution.batch_shape {comp_batch}")
        k = mixture_distribution.param_shape[-1]
        if k != comp_batch[-1]:
            raise ValueError(f"MixtureSameFamily: mixture_distribution has {k} categories but "
                             f"component_distribution.batch_shape {comp_batch} ends in {comp_batch[-1]} components")
        self._mixture_distribution = mixture_distribution
        self._component_distribution = component_distribution
        self._event_ndims = len(component_distribution.event_shape)
        super().__init__(outer, tuple(component_distribution.event_shape), validate_args=validate_args)

    def __repr__(self) -> str:
        return (f"MixtureSameFamily(\n  {self._mixture_distribution!r},\n  {self._component_distribution!r})")

    @property
    def mixture_distribution(self):
        return self._mixture_distribution

    @property
    def component_distribution(self):
        return self._component_distribution

    def expand(self, batch_shape, _instance=None):
        batch_shape = tuple(batch_shape)
        return MixtureSameFamily(self._mixture_distribution.expand(batch_shape),
                                 self._component_distribution.expand(batch_shape + (self._num_components,)),
                                 validate_args=False)

    @property
    def _num_components(self) -> int:
        return self._mixture_distribution.param_shape[-1]

    def _weights(self):
        """Mixture probabilities shaped to line up with component values: batch + (K,) + 1 per event dim."""
        probs = self._mixture_distribution.probs
        return probs.reshape(tuple(probs.shape) + (1,) * self._event_ndims)

    @property
    def _component_axis(self) -> int:
        return -1 - self._event_ndims

    @property
    def mean(self):
        return (self._weights() * self._component_distribution.mean).sum(self._component_axis)

    @property
    def variance(self):
        # Law of total variance: the mean of the variances plus the variance of the means.
        weights = self._weights()
        means = self._component_distribution.mean
        mixed_mean = (weights * means).sum(self._component_axis, keepdim=True)
        within = (weights * self._component_distribution.variance).sum(self._component_axis)
        between = (weights * (means - mixed_mean).pow(2)).sum(self._component_axis)
        return within + between

    def _per_component(self, value):
        """value with a component axis inserted, so it broadcasts against every component."""
        return value.unsqueeze(self._component_axis)

    def log_prob(self, value):
        self._check_sample(value)
        log_probs = self._component_distribution.log_prob(self._per_component(value))
        log_weights = self._mixture_distribution.logits
        return (log_probs + log_weights).logsumexp(-1)

    def cdf(self, value):
        self._check_sample(value)
        cdfs = self._component_distribution.cdf(self._per_component(value))
        return (cdfs * self._mixture_distribution.probs).sum(-1)

    def sample(self, sample_shape=()):
        with no_grad():
            if isinstance(sample_shape, int):
                sample_shape = (sample_shape,)
            sample_shape = tuple(sample_shape)
            choice = self._mixture_distribution.sample(sample_shape + self._batch_shape[
                :len(self._batch_shape) - len(self._mixture_distribution.batch_shape)])
            choice = choice.expand(sample_shape + self._batch_shape) if tuple(choice.shape) != \
                sample_shape + self._batch_shape else choice
            draws = self._component_distribution.sample(sample_shape)
            # Pick, along the component axis, the drawn component of each sample.
            index = choice.reshape(tuple(choice.shape) + (1,) * (1 + self._event_ndims))
            index = index.expand(tuple(choice.shape) + (1,) + self._event_shape)
            return draws.gather(self._component_axis, index).squeeze(self._component_axis)
