"""ContinuousBernoulli: the density proportional to p^x (1 - p)^(1 - x) on [0, 1] (Loaiza-Ganem
and Cunningham 2019), the exact likelihood for values in [0, 1] that a Bernoulli loss is often
(mis)used for.

Its normalizing constant C(p) = 2 atanh(1 - 2p) / (1 - 2p), and the mean and variance built from
it, divide 0 by 0 at p = 1/2: inside ``lims`` they are replaced by Taylor polynomials in
x = p - 1/2 (log C = log 2 + 4x^2/3 + 104x^4/45, mean = 1/2 + x/3 + 16x^3/45,
variance = 1/12 - x^2/15 - 128x^4/945 + ..., all from the series of 1/(1 - e^-t) - 1/t in the
natural parameter t = logit p), and the cdf and icdf by the uniform's.
"""
from __future__ import annotations

import math

from ..frontend.ops.elementwise import where
from ..nn import functional as F
from . import constraints
from .probs_or_logits import BinaryParameter
from .exp_family import ExponentialFamily
from .utils import broadcast_all, clamp_probs


class ContinuousBernoulli(BinaryParameter, ExponentialFamily):
    """Independent continuous Bernoulli distributions on [0, 1] with ``probs`` (or ``logits``), as
    torch.distributions.ContinuousBernoulli; ``rsample`` (inverse cdf) is differentiable.

    >>> import tensorplug as tp
    >>> round(ContinuousBernoulli(probs=tp.tensor(0.5)).log_prob(tp.tensor(0.3)).item(), 6)
    0.0
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, probs=None, logits=None, lims=(0.499, 0.501), validate_args=None):
        self._take_probs_or_logits(probs, logits)
        self._lims = lims
        super().__init__(self.param_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expanded_copy(**self._expanded_parameters(batch_shape), lims=self._lims)

    @property
    def probs(self):
        # Kept off 0 and 1 (by machine epsilon), where the normalizing constant is infinite.
        return clamp_probs(BinaryParameter.probs.fget(self))

    def _near_half(self):
        """True where p is inside ``lims``, where the closed forms are 0 / 0."""
        p = self.probs
        return (p > self._lims[0]) & (p <= self._lims[1])

    def _closed_form_probs(self):
        """p where the closed forms are used, and a harmless stand-in (lims[0]) near 1/2."""
        return where(self._near_half(), self._lims[0], self.probs)

    def _log_constant(self):
        """log C(p), in terms of the (clamped) probabilities."""
        p = self._closed_form_probs()
        # log |log((1 - p) / p)| - log |1 - 2p|, the second term without cancelling on either side of 1/2.
        log_abs_logit = ((-p).log1p() - p.log()).abs().log()
        log_abs_gap = where(p <= 0.5, (-2 * where(p <= 0.5, p, 0.0)).log1p(), (2 * where(p > 0.5, p, 1.0) - 1).log())
        x = self.probs - 0.5
        taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x.pow(2)) * x.pow(2)
        return where(self._near_half(), taylor, log_abs_logit - log_abs_gap)

    @property
    def mean(self):
        p = self._closed_form_probs()
        closed = p / (2 * p - 1) + 1 / (2 * (1 - 2 * p).atanh())
        x = self.probs - 0.5
        return where(self._near_half(), 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * x.pow(2)) * x, closed)

    @property
    def variance(self):
        p = self._closed_form_probs()
        closed = p * (p - 1) / (1 - 2 * p).pow(2) + 1 / (2 * (1 - 2 * p).atanh()).pow(2)
        x2 = (self.probs - 0.5).pow(2)
        return where(self._near_half(), 1.0 / 12.0 - (1.0 / 15.0 + 128.0 / 945.0 * x2) * x2, closed)

    def rsample(self, sample_shape=()):
        return self.icdf(self._uniform_draws(sample_shape, self.probs))

    def log_prob(self, value):
        self._check_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -F.binary_cross_entropy_with_logits(logits, value, reduction="none") + self._log_constant()

    def cdf(self, value):
        self._check_sample(value)
        p = self._closed_form_probs()
        closed = (p.pow(value) * (1 - p).pow(1 - value) + p - 1) / (2 * p - 1)
        inside = where(self._near_half(), value, closed)
        return where(value <= 0, 0.0, where(value >= 1, 1.0, inside))

    def icdf(self, value):
        p = self._closed_form_probs()
        closed = ((-p + value * (2 * p - 1)).log1p() - (-p).log1p()) / (p.log() - (-p).log1p())
        return where(self._near_half(), value, closed)

    @property
    def _natural_params(self):
        return (self.logits,)

    def _log_normalizer(self, x):
        """log((e^x - 1) / x), by its Taylor polynomial log(1 + x/2 + x^2/6 ...) = x/2 + x^2/24 - x^4/2880
        where x is within the probabilities' lims of 0."""
        low, high = (math.log(p / (1 - p)) for p in self._lims)
        near_zero = (x > low) & (x <= high)
        safe = where(near_zero, 1.0, x)
        # (e^x - 1) / x = e^max(x, 0) (1 - e^-|x|) / |x|, which overflows for neither sign.
        closed = (-(-safe.abs()).expm1() / safe.abs()).log() + where(safe > 0, safe, 0.0)
        taylor = x / 2 + x.pow(2) / 24 - x.pow(4) / 2880
        return where(near_zero, taylor, closed)

    @property
    def _mean_carrier_measure(self):
        return 0

    def entropy(self):
        log_p, log_q = self.probs.log(), (-self.probs).log1p()
        return self.mean * (log_q - log_p) - self._log_constant() - log_q
