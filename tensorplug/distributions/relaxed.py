"""What the relaxed families share (RelaxedBernoulli, RelaxedOneHotCategorical; Maddison et al.
2017, Jang et al. 2017): a ``temperature`` beside ``probs`` or ``logits``, reparameterized draws
in logit space from uniform noise, and the transformed distribution that carries those draws onto
(0, 1) or the simplex."""
from __future__ import annotations

from ..frontend.tensor import Tensor
from .distribution import Distribution
from .transformed_distribution import NamedTransformedDistribution
from .utils import clamp_inside_unit


def temperature_like(temperature, like: Tensor) -> Tensor:
    """The temperature as a tensor of the parameters' dtype and device."""
    if isinstance(temperature, Tensor):
        return temperature
    return like.new_full((), float(temperature))


class RelaxedLogits(Distribution):
    """Base of LogitRelaxedBernoulli and ExpRelaxedCategorical: a temperature and a probs-or-logits
    parameter (from a mixin that provides ``_expanded_parameters``)."""

    has_rsample = True

    def expand(self, batch_shape, _instance=None):
        return self._expanded_copy(self.temperature, **self._expanded_parameters(batch_shape))

    def _noise(self, sample_shape) -> Tensor:
        """Uniform draws in the logits' dtype, kept inside (0, 1) so that both log u and
        log(1 - u) stay finite."""
        return clamp_inside_unit(self._uniform_draws(sample_shape, self.logits))


class RelaxedTransformed(NamedTransformedDistribution):
    """Base of RelaxedBernoulli and RelaxedOneHotCategorical: a RelaxedLogits base pushed onto its
    support, printed, expanded and parametrized as that base."""

    has_rsample = True

    def _parameters(self) -> dict:
        return self.base_dist._parameters()

    def expand(self, batch_shape, _instance=None):
        return self._expanded_copy(self.temperature, **self.base_dist._expanded_parameters(batch_shape))

    @property
    def temperature(self):
        return self.base_dist.temperature

    @property
    def probs(self):
        return self.base_dist.probs

    @property
    def logits(self):
        return self.base_dist.logits
