"""Set functions: ``unique_all``, ``unique_counts``, ``unique_inverse``, ``unique_values``.

All four sort the flattened array (stably) and mark where the sorted values change. NaN != NaN,
so every NaN is its own unique value, as the standard asks; -0.0 and 0.0 are one value.
"""
from __future__ import annotations

from typing import NamedTuple

from ..frontend.factories import arange as _arange, zeros as _zeros, empty as _empty
from ..frontend.ops import reductions as _r
from ..frontend.ops.indexing import take as _take
from ..frontend.ops.shaping import masked_select as _masked_select
from ..frontend.ops.joining import cat as _cat
from ..frontend.ops.sorting import argsort as _argsort
from ..frontend.tensor import Tensor
from . import _dtypes as d
from ._helpers import check_array

__all__ = ["unique_all", "unique_counts", "unique_inverse", "unique_values"]


class UniqueAllResult(NamedTuple):
    values: Tensor
    indices: Tensor
    inverse_indices: Tensor
    counts: Tensor


class UniqueCountsResult(NamedTuple):
    values: Tensor
    counts: Tensor


class UniqueInverseResult(NamedTuple):
    values: Tensor
    inverse_indices: Tensor


def _groups(x: Tensor):
    """(values, first indices, inverse indices of the flat array, counts)."""
    flat = check_array(x).reshape(-1)
    n = flat.shape[0]
    index_kw = dict(dtype=d.DEFAULT_INDEX, device=x.device)
    if n == 0:
        empty_index = _empty(0, **index_kw)
        return flat.clone(), empty_index, empty_index.clone(), empty_index.clone()
    order = _argsort(flat, stable=True)
    ordered = _take(flat, order)
    starts_group = _cat([
        _zeros(1, dtype=d.bool, device=x.device) == 0,
        ordered[1:] != ordered[:-1],
    ])
    values = _masked_select(ordered, starts_group)
    # the stable sort puts each value's earliest occurrence first in its group
    first = _masked_select(order, starts_group)
    group_of_sorted = _r.cumsum(starts_group.to(d.DEFAULT_INDEX), 0) - 1
    inverse = _zeros(n, **index_kw).scatter(0, order, group_of_sorted)
    start_positions = _masked_select(_arange(n, **index_kw), starts_group)
    ends = _cat([start_positions[1:], _zeros(1, **index_kw) + n])
    return values, first, inverse, ends - start_positions


def unique_all(x: Tensor, /) -> UniqueAllResult:
    """Sorted unique values, the index of each one's first occurrence, the index into them of
    every element (shaped like x), and how often each occurs."""
    values, first, inverse, counts = _groups(x)
    return UniqueAllResult(values, first, inverse.reshape(x.shape), counts)


def unique_counts(x: Tensor, /) -> UniqueCountsResult:
    """Sorted unique values and how often each occurs."""
    values, _, _, counts = _groups(x)
    return UniqueCountsResult(values, counts)


def unique_inverse(x: Tensor, /) -> UniqueInverseResult:
    """Sorted unique values and, for every element of x, the index of its value among them."""
    values, _, inverse, _ = _groups(x)
    return UniqueInverseResult(values, inverse.reshape(x.shape))


def unique_values(x: Tensor, /) -> Tensor:
    """Sorted unique values of x (each NaN counts once)."""
    return _groups(x)[0]
