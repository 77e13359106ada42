"""RelaxedBernoulli (the binary Concrete distribution): a differentiable stand-in for a coin flip,
whose draws lie in (0, 1) and approach 0 or 1 as the ``temperature`` falls (Maddison et al. 2017;
Jang et al. 2017)."""
from __future__ import annotations

from ..nn import functional as F
from . import constraints
from .probs_or_logits import BinaryParameter
from .relaxed import RelaxedLogits, RelaxedTransformed, temperature_like
from .transforms import SigmoidTransform
from .utils import broadcast_all


class LogitRelaxedBernoulli(BinaryParameter, RelaxedLogits):
    """The logit of a RelaxedBernoulli draw: (logits + log u - log(1 - u)) / temperature for a
    uniform u, as torch.distributions.relaxed_bernoulli.LogitRelaxedBernoulli."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.real

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        self._take_probs_or_logits(probs, logits)
        self.temperature = temperature_like(temperature, self._given_value())
        super().__init__(self.param_shape, validate_args=validate_args)

    def rsample(self, sample_shape=()):
        u = self._noise(sample_shape)
        return (self.logits + u.log() - (-u).log1p()) / self.temperature

    def log_prob(self, value):
        self._check_sample(value)
        logits, value = broadcast_all(self.logits, value)
        shifted = logits - value * self.temperature
        return self.temperature.log() + shifted - 2 * F.softplus(shifted)


class RelaxedBernoulli(RelaxedTransformed):
    """sigmoid of a LogitRelaxedBernoulli draw, with ``temperature`` and ``probs`` or ``logits``,
    as torch.distributions.RelaxedBernoulli; ``rsample`` is differentiable.

    >>> import tensorplug as tp
    >>> RelaxedBernoulli(tp.tensor(0.5), probs=tp.tensor([0.3])).sample((4,)).shape
    (4, 1)
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        base = LogitRelaxedBernoulli(temperature, probs, logits, validate_args=validate_args)
        super().__init__(base, SigmoidTransform(), validate_args=validate_args)
