"""Gamma(a, 1) draws (Marsaglia-Tsang on tensorplug's generator) that differentiate in their
concentration by implicit reparameterization (Figurnov et al. 2018): holding the cdf F(x; a) at
the drawn value fixed, dx/da = -(dF/da) / f(x; a). Gamma, Beta and Dirichlet sample through it.

dF/da is summed from the series of the regularized lower incomplete gamma function,
P(a, x) = sum_n u_n with u_0 = x^a e^-x / Gamma(a + 1) and u_n = u_(n-1) x / (a + n), whose terms
stay below 1 (no overflow for large a or x) and differentiate term by term:
du_n/da = u_n (log x - digamma(a + 1) - sum_{k<=n} 1 / (a + k)).
"""
from __future__ import annotations

from ..frontend import dtypes as _dt
from ..frontend.autograd import Function
from ..frontend.autograd.grad_mode import no_grad
from ..frontend.factories import rand_like, randn_like
from ..frontend.ops.elementwise import where
from ..frontend.samplers import _fill_by_rejection
from ..frontend.tensor import Tensor
from .utils import finfo_tiny

_CHECK_EVERY = 8  # series steps between reads of the stopping test (each read synchronises)
_MAX_TERMS = 20000  # enough for concentrations up to about 1e7


def standard_gamma(concentration):
    """Gamma(concentration, 1) draws of concentration's shape, from tensorplug's generator, without
    gradients (Marsaglia and Tsang 2000; a concentration below 1 is boosted by one and the draw
    scaled by u^(1/concentration))."""
    with no_grad():
        alpha = concentration.detach()
        boosted = where(alpha < 1, alpha + 1, alpha)
        d = boosted - 1.0 / 3.0
        c = (9 * d).rsqrt()

        def propose(pending):
            z = randn_like(d)
            v = (1 + c * z).pow(3)
            u = rand_like(d)
            positive = v > 0
            safe_v = where(positive, v, 1.0)
            accepted = positive & (u.log() < 0.5 * z * z + d - d * safe_v + d * safe_v.log())
            return accepted, d * safe_v

        draws = _fill_by_rejection(tuple(alpha.shape), alpha.dtype, alpha.device, propose)
        shrink = rand_like(alpha).pow(alpha.reciprocal())
        draws = where(alpha < 1, draws * shrink, draws)
        # A tiny concentration can underflow to 0; keep draws positive, as PyTorch does.
        return draws.clamp(min=finfo_tiny(draws.dtype))


def gamma_draw_derivative(concentration: Tensor, draws: Tensor) -> Tensor:
    """dx/da of Gamma(a, 1) draws x at fixed cdf, in float64, returned in the draws' dtype."""
    a = concentration.detach().to(_dt.float64)
    x = draws.detach().to(_dt.float64)
    log_x = x.log()
    first = (a * log_x - x - (a + 1).lgamma()).exp()
    offset = log_x - (a + 1).digamma()
    term, harmonic = first, a * 0
    cdf_derivative = first * offset
    cdf = first
    for n in range(1, _MAX_TERMS + 1):
        term = term * x / (a + n)
        harmonic = harmonic + (a + n).reciprocal()
        cdf = cdf + term
        cdf_derivative = cdf_derivative + term * (offset - harmonic)
        # Stop once every series is past its peak (x < a + n) and its terms no longer count.
        if n % _CHECK_EVERY == 0 and bool(((term <= 1e-17 * cdf) & (x < a + n)).all()):
            break
    density = first * a / x
    return (-cdf_derivative / density).to(draws.dtype)


class _StandardGamma(Function):
    @staticmethod
    def forward(ctx, concentration: Tensor):
        draws = standard_gamma(concentration)
        ctx.save_for_backward(concentration, draws)
        return draws

    @staticmethod
    def backward(ctx, grad: Tensor):
        concentration, draws = ctx.saved_tensors
        return grad * gamma_draw_derivative(concentration, draws)


def differentiable_standard_gamma(concentration: Tensor) -> Tensor:
    """Gamma(concentration, 1) draws whose gradient in the concentration is the implicit one."""
    if not concentration.requires_grad:
        return standard_gamma(concentration)
    return _StandardGamma.apply(concentration)
