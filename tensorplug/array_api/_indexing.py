"""Indexing functions: ``take`` and ``take_along_axis``."""
from __future__ import annotations

from ..frontend.ops.elementwise import where as _where
from ..frontend.ops.indexing import gather as _gather, index_select as _index_select
from ..frontend.shapes import broadcast_shapes as _broadcast_shapes
from ..frontend.tensor import Tensor
from . import _dtypes as d
from ._helpers import cast, check_array, normalize_axis

__all__ = ["take", "take_along_axis"]


def _wrap_negative(indices: Tensor, n: int) -> Tensor:
    if indices.dtype.category != 1:
        raise TypeError(f"indices must be an integer array, got {indices.dtype!r}")
    indices = cast(indices, d.DEFAULT_INDEX)
    return _where(indices < 0, indices + n, indices)


def take(x: Tensor, indices: Tensor, /, *, axis=None) -> Tensor:
    """Elements of x at ``indices`` (1-D; negative counts from the end) along ``axis``, which may
    be left out for 1-D x."""
    check_array(x)
    check_array(indices, "indices")
    if axis is None:
        if x.ndim != 1:
            raise ValueError(f"axis is required when x is not 1-D (x has shape {x.shape})")
        axis = 0
    axis = normalize_axis(axis, x.ndim)
    if indices.ndim != 1:
        raise ValueError(f"indices must be 1-D, got shape {indices.shape}")
    return _index_select(x, axis, _wrap_negative(indices, x.shape[axis]))


def take_along_axis(x: Tensor, indices: Tensor, /, *, axis: int = -1) -> Tensor:
    """Elements of x picked along ``axis`` by ``indices`` (same number of axes, broadcast on the
    others), as NumPy's take_along_axis."""
    check_array(x)
    check_array(indices, "indices")
    if x.ndim != indices.ndim:
        raise ValueError(f"x and indices need the same number of axes, got {x.ndim} and {indices.ndim}")
    axis = normalize_axis(axis, x.ndim)
    others = lambda shape: tuple(n for i, n in enumerate(shape) if i != axis)  # noqa: E731
    common = _broadcast_shapes(others(x.shape), others(indices.shape))
    x_shape = list(common)
    x_shape.insert(axis, x.shape[axis])
    i_shape = list(common)
    i_shape.insert(axis, indices.shape[axis])
    return _gather(x.expand(*x_shape), axis, _wrap_negative(indices, x.shape[axis]).expand(*i_shape))
