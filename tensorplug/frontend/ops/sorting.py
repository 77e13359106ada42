"""Sorting and selection: the ``sort`` primitive and the ops built on it (argsort, topk,
kthvalue, msort, median, mode, unique, unique_consecutive).

``sort`` is the one primitive: every backend sorts each line along a dim into values and int64
indices, NaN last (first when descending), equal values in their original order. Everything else
here is composite: a public function checks and normalizes its arguments (so every backend raises
the same errors), then calls the op's decomposition through the dispatcher.
"""
from __future__ import annotations

import operator
from collections import namedtuple

from ...dispatcher import Operator
from .. import dtypes as _dt
from ..shapes import normalize_dim
from ..meta_device import refuse_data_dependent
from ..tensor import Tensor, empty_tensor
from ..views import movedim, reshape, select, slice_dim, squeeze, unsqueeze
from ._common import keyset, refuse_out_under_autograd
from ._composite import composite
from ._numpy_names import axis_as_dim, dim_keywords
from .out_rehearsal import rehearse_out

__all__ = ["sort", "argsort", "msort", "topk", "kthvalue", "median", "nanmedian", "mode", "unique", "unique_consecutive"]

SORT = Operator("sort")

sort_result = namedtuple("sort", ["values", "indices"])
topk_result = namedtuple("topk", ["values", "indices"])
kthvalue_result = namedtuple("kthvalue", ["values", "indices"])
median_result = namedtuple("median", ["values", "indices"])
mode_result = namedtuple("mode", ["values", "indices"])


def _check_tensor(op: str, input) -> None:
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(input).__name__}")


def _line_length(input: Tensor, dim: int) -> int:
    return input._shape[dim] if input._shape else 1


def _finish_out(op: str, result: tuple, out) -> tuple:
    if out is None:
        return result
    if not isinstance(out, (tuple, list)) or len(out) != 2 or not all(isinstance(o, Tensor) for o in out):
        raise TypeError(f"{op}(): argument 'out' must be a tuple of two Tensors")
    refuse_out_under_autograd(op, out[0], result[0])
    for o, r in zip(out, result):
        if o._dtype is not r._dtype:
            raise RuntimeError(f"{op}(): expected out tensor to have dtype {r._dtype.name}, but got {o._dtype.name} instead")
        if o._shape != r._shape:
            raise RuntimeError(f"{op}(): output with shape {list(o._shape)} doesn't match the result shape {list(r._shape)}")
        o.copy_(r)
    return type(result)(*out)


# --- sort: the primitive --------------------------------------------------------------------
def _sort(input: Tensor, dim: int, descending: bool, stable: bool) -> tuple:
    values = empty_tensor(input._shape, input._dtype, input._device)
    indices = empty_tensor(input._shape, _dt.int64, input._device)
    SORT.lookup(keyset(input))(values, indices, input, dim, bool(descending), bool(stable))
    return values, indices


def sort(input, dim=-1, descending=False, stable=False, *, out=None, axis=None):
    """Sort ``input`` along ``dim``: (values, indices). NaN sorts as the largest value; equal
    values keep their order (every sort is stable).

    >>> tp.sort(tp.tensor([3.0, 1.0, 2.0])).indices.tolist()
    [1, 2, 0]
    """
    if out is not None:
        rehearse_out(sort, locals())
    if axis is not None:
        dim = axis_as_dim("sort", dim, axis, -1)
    _check_tensor("sort", input)
    d = normalize_dim("sort", dim, input.ndim)
    return _finish_out("sort", sort_result(*_sort(input, d, descending, stable)), out)


def argsort(input, dim=-1, descending=False, stable=False, axis=None) -> Tensor:
    """The indices that sort ``input`` along ``dim``."""
    if axis is not None:
        dim = axis_as_dim("argsort", dim, axis, -1)
    _check_tensor("argsort", input)
    d = normalize_dim("argsort", dim, input.ndim)
    return _sort(input, d, descending, stable)[1]


def msort(input, *, out=None) -> Tensor:
    """``input`` sorted along its first dim."""
    if out is not None:
        rehearse_out(msort, locals())
    _check_tensor("msort", input)
    values = _sort(input, 0, False, False)[0]
    return values if out is None else out.copy_(values)


# --- selections built on sort -----------------------------------------------------------------
@composite("topk")
def _topk(input: Tensor, k: int, dim: int, largest: bool, sorted: bool) -> tuple:
    values, indices = _sort(input, dim, largest, True)
    if not input._shape:
        return values, indices
    return slice_dim(values, dim, 0, k, 1), slice_dim(indices, dim, 0, k, 1)


def topk(input, k, dim=-1, largest=True, sorted=True, *, out=None, axis=None):
    """The ``k`` largest (or smallest) elements along ``dim``: (values, indices), in order.
    NaN counts as larger than every number."""
    if out is not None:
        rehearse_out(topk, locals())
    if axis is not None:
        dim = axis_as_dim("topk", dim, axis, -1)
    _check_tensor("topk", input)
    d = normalize_dim("topk", dim, input.ndim)
    k = operator.index(k)
    size = _line_length(input, d)
    if not 0 <= k <= size:
        raise RuntimeError(f"topk(): selected index k out of range (k = {k}, size of dimension {d} = {size})")
    return _finish_out("topk", topk_result(*_topk(input, k, d, bool(largest), bool(sorted))), out)


@composite("kthvalue")
def _kthvalue(input: Tensor, k: int, dim: int, keepdim: bool) -> tuple:
    values, indices = _sort(input, dim, False, True)
    if not input._shape:
        return values, indices
    values, indices = select(values, dim, k - 1), select(indices, dim, k - 1)
    if keepdim:
        values, indices = unsqueeze(values, dim), unsqueeze(indices, dim)
    return values, indices


def kthvalue(input, k, dim=-1, keepdim=False, *, out=None, axis=None, keepdims=None):
    """The ``k``-th smallest element (1-based) along ``dim``: (values, indices)."""
    if out is not None:
        rehearse_out(kthvalue, locals())
    if axis is not None or keepdims is not None:
        dim, keepdim = dim_keywords("kthvalue", dim, axis, keepdim, keepdims, dim_default=-1)
    _check_tensor("kthvalue", input)
    d = normalize_dim("kthvalue", dim, input.ndim)
    k = operator.index(k)
    size = _line_length(input, d)
    if not 1 <= k <= size:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d} (k = {k}, size = {size})")
    return _finish_out("kthvalue", kthvalue_result(*_kthvalue(input, k, d, bool(keepdim))), out)


def _median_positions(input: Tensor, dim: int, ignore_nan: bool) -> Tensor:
    """Per line, the position in the ascending sort that holds the lower median (keepdim shape).

    NaN sorts last: ``median`` returns the first NaN of a line that has one; ``nanmedian`` the
    lower median of the numbers, ignoring NaNs."""
    n = input._shape[dim]
    if not input._dtype.is_floating_point:
        from ..factories import full

        shape = tuple(1 if i == dim else s for i, s in enumerate(input._shape))
        return full(shape, (n - 1) // 2, dtype=_dt.int64, device=input._device)
    from .elementwise import UNARY, where
    from .reductions import sum as _sum

    nans = _sum(UNARY["isnan"](input), dim, keepdim=True)
    if ignore_nan:
        numbers = n - nans
        return where(numbers > 0, (numbers - 1) // 2, 0)
    return where(nans > 0, n - nans, (n - 1) // 2)


@composite("median")
def _median(input: Tensor, dim, keepdim: bool, ignore_nan: bool):
    if dim is None:
        flat = reshape(input, (-1,))
        if flat._shape[0] == 0:
            from ..factories import full

            return full((), float("nan"), dtype=input._dtype, device=input._device)
        values, indices = _median(flat, 0, False, ignore_nan)
        return values
    if not input._shape:
        return _sort(input, 0, False, True)
    values, indices = _sort(input, dim, False, True)
    position = _median_positions(input, dim, ignore_nan)
    values, indices = values.gather(dim, position), indices.gather(dim, position)
    if not keepdim:
        values, indices = squeeze(values, dim), squeeze(indices, dim)
    return values, indices


def median(input, dim=None, keepdim=False, *, out=None, axis=None, keepdims=None):
    """The lower median: ``median(input)`` over all elements, ``median(input, dim)`` gives
    (values, indices). A line containing NaN has median NaN."""
    if out is not None:
        rehearse_out(median, locals())
    if axis is not None or keepdims is not None:
        dim, keepdim = dim_keywords("median", dim, axis, keepdim, keepdims)
    return _median_public("median", input, dim, keepdim, out, False)


def nanmedian(input, dim=None, keepdim=False, *, out=None, axis=None, keepdims=None):
    """As :func:`median`, ignoring NaN (NaN only for lines that are all NaN)."""
    if out is not None:
        rehearse_out(nanmedian, locals())
    if axis is not None or keepdims is not None:
        dim, keepdim = dim_keywords("nanmedian", dim, axis, keepdim, keepdims)
    return _median_public("nanmedian", input, dim, keepdim, out, True)


def _median_public(op: str, input, dim, keepdim, out, ignore_nan: bool):
    if out is not None:
        rehearse_out(_median_public, locals())
    _check_tensor(op, input)
    if dim is None:
        if input._dtype is _dt.bool:
            raise RuntimeError(f"{op}(): not implemented for 'Bool'")
        if input.numel() == 0 and not input._dtype.is_floating_point:
            raise RuntimeError(f"{op}(): cannot compute the median of an empty {input._dtype.name} tensor")
        result = _median(input, None, False, ignore_nan)
        return result if out is None else out.copy_(result)
    d = normalize_dim(op, dim, input.ndim)
    if input._shape and input._shape[d] == 0:
        raise IndexError(f"{op}(): Expected reduction dim {d} to have non-zero size.")
    return _finish_out(op, median_result(*_median(input, d, bool(keepdim), ignore_nan)), out)


def _run_lengths(sorted_values: Tensor, dim: int):
    """For values sorted along ``dim``: each element's run id and the length of its run (both
    int64, of the input's shape); runs are maximal stretches of equal values."""
    from ..factories import ones_like, zeros_like
    from .elementwise import COMPARE
    from .reductions import cumsum
    from .joining import cat

    n = sorted_values._shape[dim]
    first = ones_like(slice_dim(sorted_values, dim, 0, 1, 1), dtype=_dt.int64)
    changes = COMPARE["ne"](slice_dim(sorted_values, dim, 1, n, 1), slice_dim(sorted_values, dim, 0, n - 1, 1))
    run_id = cumsum(cat([first, changes.long()], dim), dim) - 1
    ones = ones_like(run_id)
    lengths = zeros_like(run_id).scatter_add(dim, run_id, ones)
    return run_id, lengths


@composite("mode")
def _mode(input: Tensor, dim: int, keepdim: bool) -> tuple:
    from .reductions import argmax

    if not input._shape:
        return _sort(input, 0, False, True)
    values, indices = _sort(input, dim, False, True)
    run_id, lengths = _run_lengths(values, dim)
    counts = lengths.gather(dim, run_id)
    # argmax finds the first position of the longest run: the smallest of the most frequent
    # values. Like PyTorch, report the last index at which that value occurs.
    start = argmax(counts, dim, keepdim=True)
    last = start + counts.gather(dim, start) - 1
    values, indices = values.gather(dim, start), indices.gather(dim, last)
    if not keepdim:
        values, indices = squeeze(values, dim), squeeze(indices, dim)
    return values, indices


def mode(input, dim=-1, keepdim=False, *, out=None, axis=None, keepdims=None):
    """The most frequent value along ``dim`` (the smallest one on ties): (values, indices)."""
    if out is not None:
        rehearse_out(mode, locals())
    if axis is not None or keepdims is not None:
        dim, keepdim = dim_keywords("mode", dim, axis, keepdim, keepdims, dim_default=-1)
    _check_tensor("mode", input)
    d = normalize_dim("mode", dim, input.ndim)
    if input._shape and input._shape[d] == 0:
        raise IndexError(f"mode(): Expected reduction dim {d} to have non-zero size.")
    return _finish_out("mode", mode_result(*_mode(input, d, bool(keepdim))), out)


# --- unique -------------------------------------------------------------------------------------
def _as_rows(input: Tensor, dim):
    """``input`` as (n, width) rows: one element per row (dim None) or one slice along ``dim`` per
    row; also the moved tensor the slices came from (None for dim None)."""
    if dim is None:
        return reshape(input, (-1, 1)), None
    moved = movedim(input, dim, 0)
    return reshape(moved, (moved._shape[0], -1)), moved


def _run_starts(rows: Tensor) -> Tensor:
    """starts[i]: row i differs from row i - 1 (NaN differs from everything, as in PyTorch)."""
    from ..factories import ones
    from .elementwise import COMPARE
    from .reductions import any as _any

    n, width = rows._shape
    starts = ones(n, dtype=_dt.bool, device=rows._device)
    if n > 1 and width:
        starts[1:] = _any(COMPARE["ne"](rows[1:], rows[:-1]), 1)
    elif n > 1:
        starts[1:] = False
    return starts


def _rows_back(rows: Tensor, dim, moved) -> Tensor:
    """Selected rows in the input's layout again: a flat tensor, or slices stacked along ``dim``."""
    if dim is None:
        return reshape(rows, (-1,))
    return movedim(reshape(rows, (rows._shape[0],) + moved._shape[1:]), 0, dim)


def _run_counts(run_id: Tensor, runs: int) -> Tensor:
    from ..factories import zeros

    return zeros(runs, dtype=_dt.int64, device=run_id._device).scatter_add(0, run_id, run_id * 0 + 1)


@composite("unique")
def _unique(input: Tensor, return_inverse: bool, return_counts: bool, dim):
    from ..factories import arange, zeros
    from .indexing import getitem
    from .reductions import cumsum

    rows, moved = _as_rows(input, dim)
    n, width = rows._shape
    # Lexicographic order of the rows: stable sorts from the last column to the first.
    order = arange(n, device=input._device)
    for column in reversed(range(width)):
        keys = getitem(select(rows, 1, column), order)
        order = getitem(order, _sort(keys, 0, False, True)[1])
    ordered = getitem(rows, order)
    starts = _run_starts(ordered)
    uniques = getitem(ordered, starts)
    results = [_rows_back(uniques, dim, moved)]
    if return_inverse or return_counts:
        run_id = cumsum(starts, 0) - 1
        if return_inverse:
            inverse = zeros(n, dtype=_dt.int64, device=input._device).scatter(0, order, run_id)
            results.append(reshape(inverse, input._shape) if dim is None else inverse)
        if return_counts:
            results.append(_run_counts(run_id, uniques._shape[0]))
    return results[0] if len(results) == 1 else tuple(results)


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """The distinct values of ``input`` in ascending order (or its distinct slices along
    ``dim``), with optionally the inverse indices and the counts.

    >>> tp.unique(tp.tensor([2, 1, 2]), return_counts=True)
    (tensor([1, 2]), tensor([1, 2]))
    """
    _check_tensor("unique", input)
    d = None if dim is None else normalize_dim("unique", dim, input.ndim)
    if d is not None and not input._shape:
        raise IndexError("unique(): a 0-d tensor has no dim to find unique slices along")
    refuse_data_dependent("unique()", input)
    return _unique(input, bool(return_inverse), bool(return_counts), d)


def _unique_method(self, sorted=True, return_inverse=False, return_counts=False, dim=None):
    return unique(self, sorted, return_inverse, return_counts, dim)


@composite("unique_consecutive")
def _unique_consecutive(input: Tensor, return_inverse: bool, return_counts: bool, dim):
    from .indexing import getitem
    from .reductions import cumsum

    rows, moved = _as_rows(input, dim)
    starts = _run_starts(rows)
    uniques = getitem(rows, starts)
    results = [_rows_back(uniques, dim, moved)]
    run_id = cumsum(starts, 0) - 1
    if return_inverse:
        results.append(reshape(run_id, input._shape) if dim is None else run_id)
    if return_counts:
        results.append(_run_counts(run_id, uniques._shape[0]))
    return results[0] if len(results) == 1 else tuple(results)


def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """``input`` with each run of equal consecutive values (or slices along ``dim``) collapsed to
    one, with optionally each element's run number and each run's length.

    >>> tp.unique_consecutive(tp.tensor([1, 1, 2, 1]), return_counts=True)
    (tensor([1, 2, 1]), tensor([2, 1, 1]))
    """
    _check_tensor("unique_consecutive", input)
    d = None if dim is None else normalize_dim("unique_consecutive", dim, max(input.ndim, 1))
    if d is not None and not input._shape:
        raise IndexError("unique_consecutive(): a 0-d tensor has no dim to find runs along")
    refuse_data_dependent("unique_consecutive()", input)
    return _unique_consecutive(input, bool(return_inverse), bool(return_counts), d)


def _unique_consecutive_method(self, return_inverse=False, return_counts=False, dim=None):
    return unique_consecutive(self, return_inverse, return_counts, dim)


#: Tensor methods this module provides: name -> function (attached by frontend.methods).
TENSOR_METHODS: dict = {
    "sort": sort,
    "argsort": argsort,
    "msort": msort,
    "topk": topk,
    "kthvalue": kthvalue,
    "median": median,
    "nanmedian": nanmedian,
    "mode": mode,
    "unique": _unique_method,
    "unique_consecutive": _unique_consecutive_method,
}
