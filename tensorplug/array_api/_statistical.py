"""Statistical and utility reductions: ``sum``, ``prod``, ``mean``, ``std``, ``var``, ``max``,
``min``, ``cumulative_sum``, ``cumulative_prod``, ``all``, ``any``, ``diff``.

Where these differ from tp's: ``axis=()`` reduces over no axes (PyTorch reads ``dim=()`` as all
axes); ``sum``/``prod`` of a signed integer or bool array give the default integer dtype, and of
a real or complex floating array keep its dtype; ``std``/``var`` take ``correction`` (any
non-negative number), and of a complex array are real (the mean of |x - mean|^2, as PyTorch).
"""
from __future__ import annotations

import builtins

from ..frontend import dtypes as _d
from ..frontend.complex import complex_parts as _complex_parts
from ..frontend.factories import zeros as _zeros, ones as _ones
from ..frontend.ops import reductions as _r
from ..frontend.ops.joining import cat as _cat
from ..frontend.tensor import Tensor
from . import _dtypes as d
from ._helpers import cast, check_array, normalize_axes, normalize_axis

__all__ = [
    "sum", "prod", "mean", "std", "var", "max", "min", "cumulative_sum", "cumulative_prod", "all", "any", "diff",
]


def _accumulator_dtype(x: Tensor, dtype):
    if dtype is not None:
        return d.check_dtype(dtype)
    if x.dtype.category >= 2:
        return x.dtype
    # Signed integers and bool widen to the default integer. Unsigned integers should widen to the
    # unsigned type of the default integer's width (uint64), which tensorplug lacks: int64 it is.
    return d.DEFAULT_INT


def sum(x: Tensor, /, *, axis=None, dtype=None, keepdims: builtins.bool = False) -> Tensor:
    """Sum over ``axis`` (all axes by default)."""
    check_array(x)
    acc = _accumulator_dtype(x, dtype)
    axes = normalize_axes(axis, x.ndim)
    if not axes:
        return cast(x, acc).clone() if x.dtype is acc else cast(x, acc)
    return _r.sum(x, dim=axes, keepdim=keepdims, dtype=acc)


def prod(x: Tensor, /, *, axis=None, dtype=None, keepdims: builtins.bool = False) -> Tensor:
    """Product over ``axis`` (all axes by default)."""
    check_array(x)
    acc = _accumulator_dtype(x, dtype)
    axes = normalize_axes(axis, x.ndim)
    if not axes:
        return cast(x, acc).clone() if x.dtype is acc else cast(x, acc)
    if len(axes) == 1:
        return _r.prod(x, dim=axes[0], keepdim=keepdims, dtype=acc)
    # tp.prod takes one dim: move the reduced axes to the end and flatten them into one
    keep = [a for a in range(x.ndim) if a not in axes]
    moved = x.permute(*keep, *axes).reshape(*[x.shape[a] for a in keep], -1)
    out = _r.prod(moved, dim=-1, dtype=acc)
    if keepdims:
        out = out.reshape(*[1 if a in axes else n for a, n in enumerate(x.shape)])
    return out


def mean(x: Tensor, /, *, axis=None, keepdims: builtins.bool = False) -> Tensor:
    """Arithmetic mean over ``axis`` of a real or complex floating-point array."""
    check_array(x)
    if x.dtype.category < 2:
        raise TypeError(f"mean needs a floating-point array, got {x.dtype!r}")
    axes = normalize_axes(axis, x.ndim)
    if not axes:
        return x.clone()
    return _r.mean(x, dim=axes, keepdim=keepdims)


def _moment(name: str, x: Tensor, axis, correction, keepdims: builtins.bool) -> Tensor:
    check_array(x)
    if x.dtype.category < 2:
        raise TypeError(f"{name} needs a floating-point array, got {x.dtype!r}")
    if correction < 0:
        raise ValueError(f"correction must be non-negative, got {correction}")
    axes = normalize_axes(axis, x.ndim)
    n = 1
    for a in axes:
        n *= x.shape[a]
    # variance = sum of squared deviations / (N - correction); computed here rather than with
    # tp.var so that any real correction and N - correction <= 0 (NaN or inf, as NumPy) behave alike
    if axes:
        centered = x - _r.mean(x, dim=axes, keepdim=True)
    else:
        centered = x - x
    if x.dtype.category == 3:
        # |x - mean|^2: the variance of complex values is real
        re, im = _complex_parts(centered)
        squares = re * re + im * im
    else:
        squares = centered * centered
    ss = _r.sum(squares, dim=axes, keepdim=keepdims) if axes else squares
    denominator = n - correction
    variance = ss / denominator if denominator != 0 else ss / 0.0
    if denominator < 0:
        # NumPy clamps a negative divisor to 0 (giving inf, or NaN for 0/0)
        variance = ss / 0.0
    return variance.sqrt() if name == "std" else variance


def var(x: Tensor, /, *, axis=None, correction=0.0, keepdims: builtins.bool = False) -> Tensor:
    """Variance over ``axis``, dividing by N - correction."""
    return _moment("var", x, axis, correction, keepdims)


def std(x: Tensor, /, *, axis=None, correction=0.0, keepdims: builtins.bool = False) -> Tensor:
    """Standard deviation over ``axis``, dividing by N - correction."""
    return _moment("std", x, axis, correction, keepdims)


def _extreme(fn, name: str, x: Tensor, axis, keepdims: builtins.bool) -> Tensor:
    check_array(x)
    axes = normalize_axes(axis, x.ndim)
    if not axes:
        return x.clone()
    if builtins.any(x.shape[a] == 0 for a in axes):
        raise ValueError(f"{name} of an empty axis has no identity: shape {x.shape}, axis {axis}")
    if x.dtype is d.bool:
        # tp's amax/amin need numbers: on bools, max is "any" and min is "all"
        return (_r.amax if name == "max" else _r.amin)(x.to(_d.uint8), dim=axes, keepdim=keepdims).to(d.bool)
    return fn(x, dim=axes, keepdim=keepdims)


def max(x: Tensor, /, *, axis=None, keepdims: builtins.bool = False) -> Tensor:
    """Largest element over ``axis``; NaN if any is NaN."""
    return _extreme(_r.amax, "max", x, axis, keepdims)


def min(x: Tensor, /, *, axis=None, keepdims: builtins.bool = False) -> Tensor:
    """Smallest element over ``axis``; NaN if any is NaN."""
    return _extreme(_r.amin, "min", x, axis, keepdims)


def _cumulative(fn, identity: int, x: Tensor, axis, dtype, include_initial: builtins.bool) -> Tensor:
    check_array(x)
    if axis is None:
        if x.ndim > 1:
            raise ValueError("axis is required for arrays of more than one dimension")
        if x.ndim == 0:
            raise ValueError("cumulative functions need an array of at least one dimension")
        axis = 0
    axis = normalize_axis(axis, x.ndim)
    acc = _accumulator_dtype(x, dtype)
    out = fn(x, axis, dtype=acc) if x.shape[axis] else cast(x, acc).clone()
    if include_initial:
        shape = list(x.shape)
        shape[axis] = 1
        start = (_ones if identity else _zeros)(*shape, dtype=acc, device=x.device)
        out = _cat([start, out], dim=axis)
    return out


def cumulative_sum(x: Tensor, /, *, axis=None, dtype=None, include_initial: builtins.bool = False) -> Tensor:
    """Running sums along ``axis``; ``include_initial`` puts the empty sum (0) first."""
    return _cumulative(_r.cumsum, 0, x, axis, dtype, include_initial)


def cumulative_prod(x: Tensor, /, *, axis=None, dtype=None, include_initial: builtins.bool = False) -> Tensor:
    """Running products along ``axis``; ``include_initial`` puts the empty product (1) first."""
    return _cumulative(_r.cumprod, 1, x, axis, dtype, include_initial)


def _logical(fn, x: Tensor, axis, keepdims: builtins.bool) -> Tensor:
    check_array(x)
    axes = normalize_axes(axis, x.ndim)
    if not axes:
        return x.to(d.bool) if x.dtype is not d.bool else x.clone()
    out = x
    # tp.all/any take one dim at a time; reduce from the last so earlier axis numbers stay valid
    for a in reversed(axes):
        out = fn(out, dim=a, keepdim=keepdims)
    return out


def all(x: Tensor, /, *, axis=None, keepdims: builtins.bool = False) -> Tensor:
    """True where every element along ``axis`` is nonzero."""
    return _logical(_r.all, x, axis, keepdims)


def any(x: Tensor, /, *, axis=None, keepdims: builtins.bool = False) -> Tensor:
    """True where some element along ``axis`` is nonzero."""
    return _logical(_r.any, x, axis, keepdims)


def diff(x: Tensor, /, *, axis: int = -1, n: int = 1, prepend=None, append=None) -> Tensor:
    """The n-th forward difference along ``axis``, after joining ``prepend`` and ``append``."""
    check_array(x)
    if x.ndim == 0:
        raise ValueError("diff needs an array of at least one dimension")
    if n < 0:
        raise ValueError(f"n must be non-negative, got {n}")
    axis = normalize_axis(axis, x.ndim)
    parts = [p for p in (prepend, x, append) if p is not None]
    if len(parts) > 1:
        dtype = d.result_type(*parts)
        x = _cat([cast(p, dtype) for p in parts], dim=axis)
    for _ in range(n):
        length = x.shape[axis]
        if length == 0:
            break
        x = x.narrow(axis, 1, length - 1) - x.narrow(axis, 0, length - 1) if x.dtype is not d.bool \
            else x.narrow(axis, 1, length - 1) != x.narrow(axis, 0, length - 1)
    return x
