"""RelaxedBernoulli (the binary Concrete distribution): a differentiable stand-in for a coin flip,
whose draws lie in (0, 1) and approach 0 or 1 as the ``temperature`` falls (Maddison et al. 2017;
Jang et al. 2017)."""
from __future__ import annotations

from ..frontend.factories import rand
from ..frontend.tensor import Tensor
from ..nn import functional as F
from . import constraints
from .binary_parameter import BinaryParameter
from .distribution import Distribution
from .transformed_distribution import TransformedDistribution
from .transforms import SigmoidTransform
from .utils import broadcast_all, finfo_eps, finfo_tiny


def temperature_like(temperature, like: Tensor) -> Tensor:
    """The temperature as a tensor of the parameters' dtype and device."""
    if isinstance(temperature, Tensor):
        return temperature
    return like.new_full((), float(temperature))


class LogitRelaxedBernoulli(BinaryParameter, Distribution):
    """The logit of a RelaxedBernoulli draw: (logits + log u - log(1 - u)) / temperature for a
    uniform u, as torch.distributions.relaxed_bernoulli.LogitRelaxedBernoulli."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.real
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        self._take_probs_or_logits(probs, logits)
        self.temperature = temperature_like(temperature, self._probs if self._probs is not None else self._logits)
        super().__init__(self.param_shape, validate_args=validate_args)

    def _parameters(self) -> dict:
        return self._given_parameter()

    def expand(self, batch_shape, _instance=None):
        batch_shape = tuple(batch_shape)
        given = {name: value.expand(batch_shape) for name, value in self._given_parameter().items()}
        new = type(self)(self.temperature, **given, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        logits = self.logits
        dtype = logits.dtype
        # u kept inside (0, 1) so that both logarithms stay finite.
        u = rand(shape, dtype=dtype, device=logits.device).clamp(min=finfo_tiny(dtype), max=1 - finfo_eps(dtype))
        return (logits + u.log() - (-u).log1p()) / self.temperature

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        shifted = logits - value * self.temperature
        return self.temperature.log() + shifted - 2 * F.softplus(shifted)


class RelaxedBernoulli(TransformedDistribution):
    """sigmoid of a LogitRelaxedBernoulli draw, with ``temperature`` and ``probs`` or ``logits``,
    as torch.distributions.RelaxedBernoulli; ``rsample`` is differentiable.

    >>> import tensorplug as tp
    >>> RelaxedBernoulli(tp.tensor(0.5), probs=tp.tensor([0.3])).sample((4,)).shape
    (4, 1)
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        base = LogitRelaxedBernoulli(temperature, probs, logits, validate_args=validate_args)
        super().__init__(base, SigmoidTransform(), validate_args=validate_args)

    __repr__ = Distribution.__repr__

    def _parameters(self) -> dict:
        return self.base_dist._parameters()

    def expand(self, batch_shape, _instance=None):
        given = self.base_dist.expand(batch_shape)._given_parameter()
        new = type(self)(self.temperature, **given, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def temperature(self):
        return self.base_dist.temperature

    @property
    def probs(self):
        return self.base_dist.probs

    @property
    def logits(self):
        return self.base_dist.logits
