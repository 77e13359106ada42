"""In-place draws from the distributions PyTorch's Tensor methods name: ``exponential_``,
``cauchy_``, ``log_normal_`` and ``geometric_`` (Gumbel noise, RL exploration, initializers).

Each transforms uniform (or normal) numbers from the tensor's own device and generator by the
distribution's inverse cdf, in float32 at least, and writes them into the tensor: composites, so
every backend has them. The numbers differ from PyTorch's for a seed (docs/deviations.md's
random-numbers row); the distributions are the same.
"""
from __future__ import annotations

import math

from .. import dtypes as _dt
from ..tensor import Tensor
from ._pointwise_args import check_tensor

__all__: list = []


def _uniform_like(self: Tensor, name: str, generator, floating: bool = True) -> Tensor:
    """Numbers uniform in [0, 1) of ``self``'s shape and device, in float32 or float64."""
    from ..factories import empty

    check_tensor(name, self, "self")
    if floating and not self._dtype.is_floating_point:
        raise RuntimeError(f"{name}: expected a floating-point tensor, got {self._dtype.name}")
    work = _dt.float64 if self._dtype is _dt.float64 else _dt.float32
    return empty(self.shape, dtype=work, device=self.device).uniform_(generator=generator)


def _check_positive(name: str, what: str, value) -> None:
    if not value > 0:
        raise RuntimeError(f"{name} expects {what} > 0.0, but found {what}={value}")


def exponential_(self, lambd=1.0, *, generator=None) -> Tensor:
    """Exponential numbers of rate ``lambd``: -log(1 - u) / lambd."""
    _check_positive("exponential_", "lambda", lambd)
    u = _uniform_like(self, "exponential_", generator)
    return self.copy_(u.neg_().log1p_().mul_(-1.0 / lambd))


def cauchy_(self, median=0.0, sigma=1.0, *, generator=None) -> Tensor:
    """Cauchy numbers: median + sigma tan(pi (u - 1/2))."""
    _check_positive("cauchy_", "sigma", sigma)
    u = _uniform_like(self, "cauchy_", generator)
    return self.copy_(u.sub_(0.5).mul_(math.pi).tan_().mul_(sigma).add_(median))


def log_normal_(self, mean=1.0, std=2.0, *, generator=None) -> Tensor:
    """exp of normal numbers of the given mean and standard deviation."""
    _check_positive("log_normal_", "std", std)
    z = _uniform_like(self, "log_normal_", generator).normal_(mean, std, generator=generator)
    return self.copy_(z.exp_())


def geometric_(self, p, *, generator=None) -> Tensor:
    """The number of Bernoulli(p) trials up to the first success (1, 2, ...): 1 + floor(log(v) /
    log(1 - p)) with v = 1 - u in (0, 1]; integer tensors take them too."""
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p}")
    v = _uniform_like(self, "geometric_", generator, floating=False).neg_().add_(1.0)
    return self.copy_(v.log_().div_(math.log1p(-p)).floor_().add_(1.0))


TENSOR_METHODS: dict = {"exponential_": exponential_, "cauchy_": cauchy_, "log_normal_": log_normal_,
                        "geometric_": geometric_}
