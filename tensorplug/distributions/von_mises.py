"""VonMises: the circular analogue of the Gaussian, on angles in [-pi, pi), around ``loc`` with
``concentration`` kappa (density e^(kappa cos(x - loc)) / (2 pi I0(kappa)))."""
from __future__ import annotations

import math

from ..frontend import dtypes as _dt
from ..frontend.autograd.grad_mode import no_grad
from ..frontend.factories import rand
from ..frontend.ops.elementwise import where
from ..frontend.samplers import _fill_by_rejection
from ..special import i0e, i1e
from . import constraints
from .distribution import Distribution
from .location_scale import MeanAndModeAtLoc

# Below this concentration the envelope parameter's closed form loses its digits; its series
# 1/kappa + kappa/4 is exact there to rounding.
_SMALL_CONCENTRATION = 1e-5


def _envelope_parameter(concentration):
    """r of Best and Fisher's wrapped-Cauchy envelope, computed in float64."""
    kappa = concentration.to(_dt.float64)
    safe = where(kappa < _SMALL_CONCENTRATION, 1.0, kappa)
    tau = 1 + (1 + 4 * safe.pow(2)).sqrt()
    rho = (tau - (2 * tau).sqrt()) / (2 * safe)
    closed = (1 + rho.pow(2)) / (2 * rho)
    return where(kappa < _SMALL_CONCENTRATION, kappa.reciprocal() + kappa / 4, closed)


class VonMises(MeanAndModeAtLoc, Distribution):
    """Independent von Mises distributions with means ``loc`` and concentrations
    ``concentration``, as torch.distributions.VonMises: samples (Best and Fisher's rejection
    sampler, no rsample) lie in [-pi, pi); log_prob takes any real angle.

    >>> import tensorplug as tp
    >>> round(VonMises(0.0, 1.0).log_prob(tp.tensor(0.0)).item(), 4)
    -1.0738
    """

    arg_constraints = {"loc": constraints.real, "concentration": constraints.positive}
    support = constraints.real
    has_rsample = False

    def __init__(self, loc, concentration, validate_args=None):
        super().__init__(self._broadcast_parameters(loc=loc, concentration=concentration), validate_args=validate_args)

    @property
    def variance(self):
        """The circular variance 1 - I1(kappa) / I0(kappa)."""
        kappa = self.concentration
        return 1 - i1e(kappa) / i0e(kappa)

    def log_prob(self, value):
        self._check_sample(value)
        kappa = self.concentration
        # log I0(kappa) = log i0e(kappa) + kappa, finite for any concentration.
        return kappa * ((value - self.loc).cos() - 1) - math.log(2 * math.pi) - i0e(kappa).log()

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        with no_grad():
            kappa = self.concentration.detach().expand(shape)
            r = _envelope_parameter(kappa).to(kappa.dtype)
            dtype, device = kappa.dtype, kappa.device

            def propose(pending):
                u1, u2, u3 = (rand(shape, dtype=dtype, device=device) for _ in range(3))
                z = (math.pi * u1).cos()
                f = (1 + r * z) / (r + z)
                c = kappa * (r - f)
                quick = c * (2 - c) - u2 > 0
                accepted = quick | ((c / u2).log() + 1 - c >= 0)
                angle = (u3 - 0.5).sign() * f.clamp(min=-1.0, max=1.0).acos()
                return accepted, angle

            angle = _fill_by_rejection(shape, dtype, device, propose)
            # Wrapped into [-pi, pi) around loc.
            return (angle + self.loc.detach() + math.pi).remainder(2 * math.pi) - math.pi
