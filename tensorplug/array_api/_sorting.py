"""Sorting functions: ``sort`` and ``argsort`` (stable by default, as the standard says)."""
from __future__ import annotations

import builtins

from ..frontend.ops import sorting as _s
from ..frontend.tensor import Tensor
from ._helpers import check_array, normalize_axis

__all__ = ["argsort", "sort"]


def _check(x: Tensor, axis) -> int:
    check_array(x)
    if x.ndim == 0:
        raise ValueError("sorting needs an array of at least one dimension")
    return normalize_axis(axis, x.ndim)


def sort(x: Tensor, /, *, axis: int = -1, descending: builtins.bool = False, stable: builtins.bool = True) -> Tensor:
    """The elements of x sorted along ``axis``; NaNs last when ascending."""
    axis = _check(x, axis)
    return _s.sort(x, dim=axis, descending=descending, stable=True)[0]


def argsort(x: Tensor, /, *, axis: int = -1, descending: builtins.bool = False,
            stable: builtins.bool = True) -> Tensor:
    """The indices that sort x along ``axis``; equal elements keep their order."""
    axis = _check(x, axis)
    # always stable: the standard allows it when stable=False, and results are then reproducible
    return _s.argsort(x, dim=axis, descending=descending, stable=True)
