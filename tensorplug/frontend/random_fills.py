"""PyTorch's other in-place random fills: ``exponential_``, ``geometric_``, ``cauchy_`` and
``log_normal_``. Each transforms numbers from ``uniform_`` (or ``normal_``) with the same
generator through its distribution's inverse cdf (or ``exp``), so they run on every backend and
draw from tensorplug's Philox streams (docs/deviations.md, random numbers)."""
from __future__ import annotations

import math

from . import dtypes as _dt
from .factories import empty_tensor, normal_, uniform_
from .tensor import Tensor

__all__ = ["exponential_", "geometric_", "cauchy_", "log_normal_"]


def _uniform_like(self: Tensor, generator, dtype=None) -> Tensor:
    """Numbers uniform in [0, 1), of ``self``'s shape and device."""
    return uniform_(empty_tensor(self._shape, dtype or self._dtype, self._device), generator=generator)


def _check_continuous(distribution: str, self: Tensor) -> None:
    if not self._dtype.is_floating_point:
        raise RuntimeError(f"{distribution} distribution is a continuous probability distribution. dtype must be a "
                           f"floating point but you specified {self._dtype.name}")


def exponential_(self: Tensor, lambd=1.0, *, generator=None) -> Tensor:
    """Fill with draws of rate ``lambd``: ``-log(1 - u) / lambd``."""
    _check_continuous("Exponential", self)
    if not lambd > 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd}")
    return self.copy_(_uniform_like(self, generator).neg_().log1p_().div_(-lambd))


def geometric_(self: Tensor, p, *, generator=None) -> Tensor:
    """Fill with the number of Bernoulli(``p``) trials up to the first success (1, 2, ...):
    ``floor(log(1 - u) / log(1 - p)) + 1``, computed in float64 for any dtype but bool."""
    if self._dtype is _dt.bool:
        raise NotImplementedError("\"geometric_\" not implemented for 'Bool'")
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p}")
    trials = _uniform_like(self, generator, _dt.float64).neg_().log1p_().div_(math.log1p(-p)).floor_().add_(1)
    return self.copy_(trials)


def cauchy_(self: Tensor, median=0.0, sigma=1.0, *, generator=None) -> Tensor:
    """Fill with Cauchy draws: ``median + sigma * tan(pi * (u - 1/2))``."""
    _check_continuous("Cauchy", self)
    if not sigma > 0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma}")
    return self.copy_(_uniform_like(self, generator).sub_(0.5).mul_(math.pi).tan_().mul_(sigma).add_(median))


def log_normal_(self: Tensor, mean=1.0, std=2.0, *, generator=None) -> Tensor:
    """Fill with ``exp`` of normal draws of ``mean`` and ``std``."""
    if not self._dtype.is_floating_point:
        raise NotImplementedError(f"\"log_normal_\" not implemented for '{self._dtype.name}'")
    if not std > 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std}")
    return normal_(self, mean, std, generator=generator).exp_()
