"""Manipulation functions: ``broadcast_arrays``, ``broadcast_to``, ``concat``, ``expand_dims``,
``flip``, ``moveaxis``, ``permute_dims``, ``repeat``, ``reshape``, ``roll``, ``squeeze``,
``stack``, ``tile``, ``unstack``."""
from __future__ import annotations

import builtins
import operator

from ..frontend.factories import arange as _arange
from ..frontend.ops import reductions as _r
from ..frontend.ops.indexing import index_select as _index_select
from ..frontend.ops.joining import cat as _cat, stack as _stack
from ..frontend.ops.shaping import flip as _flip, roll as _roll, tile as _tile
from ..frontend.tensor import Tensor
from ..frontend import views as _v
from . import _dtypes as d
from ._helpers import cast, check_array, normalize_axes, normalize_axis

__all__ = [
    "broadcast_arrays", "broadcast_to", "concat", "expand_dims", "flip", "moveaxis", "permute_dims", "repeat",
    "reshape", "roll", "squeeze", "stack", "tile", "unstack",
]


def broadcast_arrays(*arrays: Tensor) -> list:
    """The arrays broadcast against each other (views, not copies)."""
    for a in arrays:
        check_array(a, "each argument")
    return list(_v.broadcast_tensors(*arrays))


def broadcast_to(x: Tensor, /, shape) -> Tensor:
    """x broadcast to ``shape`` (a view)."""
    return _v.broadcast_to(check_array(x), tuple(shape))


def _common(arrays, what: str) -> list:
    arrays = list(arrays)
    if not arrays:
        raise ValueError(f"{what} needs at least one array")
    for a in arrays:
        check_array(a, f"each array given to {what}")
    dtype = d.result_type(*arrays)
    return [cast(a, dtype) for a in arrays]


def concat(arrays, /, *, axis=0) -> Tensor:
    """The arrays joined along ``axis`` (flattened first when ``axis`` is None), promoted to one dtype."""
    arrays = _common(arrays, "concat")
    if axis is None:
        return _cat([a.reshape(-1) for a in arrays], dim=0)
    if arrays[0].ndim == 0:
        raise ValueError("concat needs arrays of at least one dimension (or axis=None)")
    return _cat(arrays, dim=normalize_axis(axis, arrays[0].ndim))


def stack(arrays, /, *, axis: int = 0) -> Tensor:
    """The arrays (of one shape) joined along a new axis, promoted to one dtype."""
    arrays = _common(arrays, "stack")
    return _stack(arrays, dim=normalize_axis(axis, arrays[0].ndim + 1))


def expand_dims(x: Tensor, /, axis=0) -> Tensor:
    """x with new size-1 axes at ``axis`` (an int, or a tuple of positions in the result)."""
    check_array(x)
    axes = (axis,) if not isinstance(axis, (tuple, list)) else tuple(axis)
    ndim = x.ndim + len(axes)
    positions = sorted(normalize_axis(a, ndim) for a in axes)
    if len(set(positions)) != len(positions):
        raise ValueError(f"repeated axis in {axis!r}")
    for p in positions:
        x = x.unsqueeze(p)
    return x


def flip(x: Tensor, /, *, axis=None) -> Tensor:
    """x with the order of elements reversed along ``axis`` (all axes by default)."""
    check_array(x)
    axes = normalize_axes(axis, x.ndim)
    return _flip(x, axes) if axes else x.clone()


def moveaxis(x: Tensor, source, destination, /) -> Tensor:
    """x with axes moved from ``source`` to ``destination`` (ints or tuples of equal length)."""
    check_array(x)
    src = (source,) if not isinstance(source, (tuple, list)) else tuple(source)
    dst = (destination,) if not isinstance(destination, (tuple, list)) else tuple(destination)
    if len(src) != len(dst):
        raise ValueError(f"source and destination need the same number of axes, got {source!r} and {destination!r}")
    return _v.movedim(x, [normalize_axis(a, x.ndim) for a in src], [normalize_axis(a, x.ndim) for a in dst])


def permute_dims(x: Tensor, /, axes) -> Tensor:
    """x with its axes in the order ``axes`` (a view)."""
    check_array(x)
    axes = tuple(normalize_axis(a, x.ndim) for a in axes)
    if sorted(axes) != list(range(x.ndim)):
        raise ValueError(f"axes {axes} is not a permutation of the {x.ndim} axes")
    return x.permute(*axes)


def repeat(x: Tensor, repeats, /, *, axis=None) -> Tensor:
    """Each element repeated ``repeats`` times (an int, or one count per element along ``axis``);
    with ``axis=None`` x is flattened first."""
    check_array(x)
    if axis is None:
        x, axis = x.reshape(-1), 0
    axis = normalize_axis(axis, x.ndim)
    n = x.shape[axis]
    if isinstance(repeats, Tensor):
        if repeats.ndim == 0:
            repeats = builtins.int(repeats.item())
        else:
            counts = repeats.to(d.DEFAULT_INT)
            if counts.ndim != 1 or counts.shape[0] not in (1, n):
                raise ValueError(f"repeats must be 1-D with 1 or {n} elements, got shape {repeats.shape}")
            if counts.shape[0] == 1:
                repeats = builtins.int(counts.item())
            else:
                if builtins.bool(_r.any(counts < 0)):
                    raise ValueError("repeats must be non-negative")
                # element i of the result is source index searchsorted(ends, i, side="right")
                ends = _r.cumsum(counts, 0)
                total = builtins.int(ends[-1].item()) if n else 0
                positions = _arange(total, dtype=d.DEFAULT_INT, device=x.device)
                index = _r.sum(ends.reshape(1, -1) <= positions.reshape(-1, 1), dim=1, dtype=d.DEFAULT_INT) \
                    if total else positions
                return _index_select(x, axis, index)
    repeats = operator.index(repeats)
    if repeats < 0:
        raise ValueError(f"repeats must be non-negative, got {repeats}")
    index = _arange(n, dtype=d.DEFAULT_INT, device=x.device).reshape(-1, 1).expand(n, repeats).reshape(-1)
    return _index_select(x, axis, index)


def reshape(x: Tensor, /, shape, *, copy=None) -> Tensor:
    """x with a new ``shape``; ``copy=True`` always copies, ``copy=False`` raises ValueError if
    the result cannot be a view."""
    check_array(x)
    shape = tuple(shape)
    if copy is True:
        return x.clone().reshape(shape)
    if copy is False:
        try:
            return x.view(shape)
        except RuntimeError as exc:
            raise ValueError(f"reshape with copy=False cannot give a view of this array: {exc}") from None
    return x.reshape(shape)


def roll(x: Tensor, /, shift, *, axis=None) -> Tensor:
    """Elements shifted by ``shift`` along ``axis``, wrapping around (flattened when axis is None)."""
    check_array(x)
    if axis is None:
        if isinstance(shift, (tuple, list)):
            raise ValueError("a tuple shift needs a tuple axis of the same length")
        return _roll(x.reshape(-1), shift).reshape(x.shape)
    shifts = (shift,) if not isinstance(shift, (tuple, list)) else tuple(shift)
    axes = (axis,) if not isinstance(axis, (tuple, list)) else tuple(axis)
    if len(shifts) == 1 and len(axes) > 1:
        shifts = shifts * len(axes)
    if len(shifts) != len(axes):
        raise ValueError(f"shift {shift!r} and axis {axis!r} need the same length")
    return _roll(x, shifts, [normalize_axis(a, x.ndim) for a in axes])


def squeeze(x: Tensor, /, axis) -> Tensor:
    """x without the size-1 axes ``axis``; ValueError if one of them is not of size 1."""
    check_array(x)
    axes = normalize_axes(axis, x.ndim)
    for a in axes:
        if x.shape[a] != 1:
            raise ValueError(f"cannot squeeze axis {a} of size {x.shape[a]} (shape {x.shape})")
    return x.reshape(tuple(n for i, n in enumerate(x.shape) if i not in axes))


def tile(x: Tensor, repetitions, /) -> Tensor:
    """x repeated ``repetitions[i]`` times along each axis."""
    check_array(x)
    return _tile(x, tuple(repetitions))


def unstack(x: Tensor, /, *, axis: int = 0) -> tuple:
    """The slices of x along ``axis``, as a tuple of arrays."""
    check_array(x)
    if x.ndim == 0:
        raise ValueError("unstack needs an array of at least one dimension")
    return tuple(x.unbind(normalize_axis(axis, x.ndim)))
