"""Searching functions: ``argmax``, ``argmin``, ``count_nonzero``, ``nonzero``, ``searchsorted``,
``where``."""
from __future__ import annotations

import builtins

from ..frontend.factories import tensor as _tensor
from ..frontend.ops import reductions as _r
from ..frontend.ops.elementwise import where as _where, UNARY as _U
from ..frontend.ops.indexing import nonzero as _nonzero, take as _take
from ..frontend.tensor import Tensor
from . import _dtypes as d
from ._helpers import cast, check_array, normalize_axes, normalize_axis, promote_operands

__all__ = ["argmax", "argmin", "count_nonzero", "nonzero", "searchsorted", "where"]


def _arg(fn, x: Tensor, axis, keepdims: builtins.bool) -> Tensor:
    check_array(x)
    if x.numel() == 0:
        raise ValueError("argmax/argmin of an empty array has no answer")
    if axis is None:
        out = fn(x.reshape(-1), dim=0)
        return out.reshape((1,) * x.ndim) if keepdims else out
    return fn(x, dim=normalize_axis(axis, x.ndim), keepdim=keepdims)


def argmax(x: Tensor, /, *, axis=None, keepdims: builtins.bool = False) -> Tensor:
    """Index of the first largest element (over the flattened array when ``axis`` is None)."""
    return _arg(_r.argmax, x, axis, keepdims)


def argmin(x: Tensor, /, *, axis=None, keepdims: builtins.bool = False) -> Tensor:
    """Index of the first smallest element (over the flattened array when ``axis`` is None)."""
    return _arg(_r.argmin, x, axis, keepdims)


def count_nonzero(x: Tensor, /, *, axis=None, keepdims: builtins.bool = False) -> Tensor:
    """The number of nonzero elements over ``axis``, in the default integer dtype."""
    check_array(x)
    axes = normalize_axes(axis, x.ndim)
    nonzero_mask = x != 0 if x.dtype is not d.bool else x
    if not axes:
        return nonzero_mask.to(d.DEFAULT_INT)
    return _r.sum(nonzero_mask, dim=axes, keepdim=keepdims, dtype=d.DEFAULT_INT)


def nonzero(x: Tensor, /) -> tuple:
    """The indices of the nonzero elements, one array per axis."""
    check_array(x)
    if x.ndim == 0:
        raise ValueError("nonzero of a 0-d array is not defined; use nonzero(expand_dims(x))")
    return tuple(_nonzero(x, as_tuple=True))


def where(condition: Tensor, x1, x2, /) -> Tensor:
    """Elements of x1 where ``condition`` holds, else of x2 (arrays or scalars, promoted)."""
    check_array(condition, "condition")
    if not isinstance(x1, Tensor) and not isinstance(x2, Tensor):
        # two scalars: the standard leaves it open; give them the dtype they have alone
        x1 = _tensor(x1, dtype=d.result_type(d.scalar_default_dtype(x1), x2), device=condition.device)
    a, b = promote_operands(x1, x2)
    return _where(cast(condition, d.bool), a, b)


# The comparison matrix below has len(x1) entries per searched value; process values in blocks
# so that memory stays bounded for long inputs.
_BLOCK_ELEMENTS = 1 << 22


def searchsorted(x1: Tensor, x2, /, *, side: str = "left", sorter=None) -> Tensor:
    """Indices where the elements of x2 would be inserted into the sorted 1-D x1 to keep it sorted.

    NaNs count as larger than every number, as NumPy sorts them (last).
    """
    check_array(x1, "x1")
    if x1.ndim != 1:
        raise ValueError(f"x1 must be 1-D, got shape {x1.shape}")
    if side not in ("left", "right"):
        raise ValueError(f"side must be 'left' or 'right', got {side!r}")
    if not isinstance(x2, Tensor):
        x2 = _tensor(x2, dtype=d.dtype_for_scalar_with(x2, x1.dtype), device=x1.device)
    if sorter is not None:
        x1 = _take(x1, cast(check_array(sorter, "sorter"), d.DEFAULT_INDEX))
    a, v = promote_operands(x1, x2)
    flat = v.reshape(-1, 1)
    row = a.reshape(1, -1)
    block = builtins.max(1, _BLOCK_ELEMENTS // builtins.max(1, a.shape[0]))
    parts = []
    for start in range(0, flat.shape[0], block):
        values = flat[start:start + block]
        if side == "left":
            before = row < values  # a < v
        else:
            before = row <= values  # a <= v
        if a.dtype.category == 2:
            # NaN sorts last: every number is below a NaN value, and on the right side a NaN
            # element of x1 counts as equal to a NaN value
            nan_v = _U["isnan"](values)
            nan_a = _U["isnan"](row)
            before = before | (nan_v & ~nan_a)
            if side == "right":
                before = before | (nan_v & nan_a)
        parts.append(_r.sum(before, dim=1, dtype=d.DEFAULT_INDEX))
    if not parts:
        from ..frontend.factories import zeros as _zeros

        return _zeros(v.shape, dtype=d.DEFAULT_INDEX, device=v.device)
    from ..frontend.ops.joining import cat as _cat

    return _cat(parts, dim=0).reshape(v.shape)
