"""``scatter_reduce``: src's values reduced (sum, prod, mean, amax, amin) into the places of
``self`` that ``index`` names along a dim; ``index_reduce``, its form with one index per slice.

A composite over sort, scatter and the ordinary reductions, so every backend has it and autograd
differentiates it: the values bound for each destination are sorted into one row of a padded
(destinations x largest group) matrix, which the reduction's own op reduces along its rows, and
the row results are scattered into a copy of ``self``. amax/amin share a gradient evenly between
tied maxima (PyTorch's rule, which amax's derivative follows); prod's gradient is prod's.
"""
from __future__ import annotations

from .. import dtypes as _dt
from ..meta_device import has_values
from ..tensor import Tensor
from ._common import check_same_device, write_out
from .indexing import _check_gather_args
from .out_rehearsal import rehearse_out

__all__ = ["scatter_reduce", "index_reduce"]

_REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")


def _padding(reduce: str, dtype: _dt.dtype):
    """The value that leaves a row's reduction unchanged."""
    if reduce in ("sum", "mean"):
        return 0
    if reduce == "prod":
        return 1
    if dtype.is_floating_point:
        return float("-inf") if reduce == "amax" else float("inf")
    if dtype is _dt.bool:
        return reduce == "amin"
    info = _dt.iinfo(dtype)
    return info.min if reduce == "amax" else info.max


def _destinations(self: Tensor, dim: int, index: Tensor) -> Tensor:
    """For each element of ``index``, the flat (contiguous) position in ``self`` it writes to."""
    from ..factories import arange

    strides, step = [0] * self.ndim, 1
    for k in range(self.ndim - 1, -1, -1):
        strides[k] = step
        step *= self._shape[k]
    flat = index * strides[dim]
    for k, size in enumerate(index._shape):
        if k != dim:
            shape = [1] * index.ndim
            shape[k] = size
            flat = flat + (arange(size, device=index._device) * strides[k]).reshape(shape)
    return flat.reshape(-1)


def scatter_reduce(input: Tensor, dim, index: Tensor, src: Tensor, reduce: str, *, include_self: bool = True) -> Tensor:
    """A copy of ``input`` where each place that ``index`` names along ``dim`` holds the
    ``reduce`` ("sum", "prod", "mean", "amax" or "amin") of the ``src`` values sent there, and of
    its own value when ``include_self``; places nothing is sent to keep their value. Integer
    means round down, as PyTorch's.

    >>> import tensorplug as tp
    >>> tp.tensor([1.0, 2.0]).scatter_reduce(0, tp.tensor([0, 0, 1]), tp.tensor([5.0, 7.0, 3.0]), "amax").tolist()
    [7.0, 3.0]
    """
    if not isinstance(src, Tensor):
        raise TypeError(f"scatter_reduce(): argument 'src' must be Tensor, not {type(src).__name__}")
    if reduce not in _REDUCTIONS:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    d, index = _check_gather_args("scatter_reduce", input, dim, index)
    check_same_device("scatter_reduce", input, src)
    if input._dtype is not src._dtype:
        raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
    if index.numel() and (src.ndim != input.ndim or any(si > ss for si, ss in zip(index._shape, src._shape))):
        raise RuntimeError(f"scatter_reduce(): Expected index {list(index._shape)} to be no larger than src {list(src._shape)}")
    if index.numel() == 0:
        return input.clone()
    values = src[tuple(slice(0, n) for n in index._shape)].reshape(-1)
    dest = _destinations(input, d, index)
    flat_self = input.reshape(-1)
    if include_self:
        from ..factories import arange

        # Every place of input joins its own group, so places nothing is sent to reduce to themselves.
        values = _cat(flat_self, values)
        dest = _cat(arange(flat_self.numel(), device=dest._device), dest)
    result = _reduce_groups(flat_self, values, dest, reduce)
    return result.reshape(input._shape)


def _cat(a: Tensor, b: Tensor) -> Tensor:
    from .joining import cat

    return cat([a, b])


def _reduce_groups(flat_self: Tensor, values: Tensor, dest: Tensor, reduce: str) -> Tensor:
    from ..factories import arange, full

    if not has_values(dest):
        # Meta tensors: the groups (how many, how wide) come from the index's values. A plain
        # scatter has the result's shape and dtype and reads the same inputs, for autograd too.
        return flat_self.scatter(0, dest, values)
    count = values.numel()
    order = dest.argsort(stable=True)
    dest, values = dest[order], values[order]
    new_group = dest[1:] != dest[:-1]
    starts = _cat(full((1,), 0, dtype=_dt.int64, device=dest._device), new_group.nonzero().reshape(-1) + 1)
    group = _cat(full((1,), 0, dtype=_dt.int64, device=dest._device), new_group.long().cumsum(0))
    rank = arange(count, device=dest._device) - starts[group]
    width = int(rank.max().item()) + 1
    groups = starts.numel()
    padded = full((groups * width,), _padding(reduce, values._dtype), dtype=values._dtype, device=values._device)
    padded = padded.scatter(0, group * width + rank, values).reshape(groups, width)
    if reduce in ("sum", "mean"):
        rows = padded.sum(1, dtype=values._dtype)
    elif reduce == "prod":
        rows = padded.prod(1, dtype=values._dtype)
    else:
        rows = padded.amax(1) if reduce == "amax" else padded.amin(1)
    if reduce == "mean":
        sizes = _cat(starts[1:], full((1,), count, device=dest._device)) - starts
        if rows._dtype.is_floating_point:
            rows = rows / sizes.to(rows._dtype)
        else:
            rows = rows.div(sizes.to(rows._dtype), rounding_mode="floor")
    return flat_self.scatter(0, dest[starts], rows)


def scatter_reduce_(self: Tensor, dim, index: Tensor, src: Tensor, reduce: str, *, include_self: bool = True) -> Tensor:
    """In-place ``scatter_reduce``: ``self`` receives the result."""
    return self.copy_(scatter_reduce(self, dim, index, src, reduce, include_self=include_self))


_INDEX_REDUCTIONS = ("prod", "mean", "amax", "amin")


def _index_as_scatter(op: str, input: Tensor, dim, index: Tensor, source: Tensor, reduce: str):
    """index_reduce's checks (PyTorch's messages), and its index spread over ``source``'s shape:
    slice i of ``source`` along ``dim`` goes to slice ``index[i]`` of ``input``."""
    from ..shapes import normalize_dim

    if not isinstance(index, Tensor) or not isinstance(source, Tensor):
        raise TypeError(f"{op}(): index and source must be tensors")
    if reduce not in _INDEX_REDUCTIONS:
        raise RuntimeError(f"{op}(): Expected reduce to be one of prod, mean, amax or amin but got {reduce}.")
    d = normalize_dim(op, dim, input.ndim)
    if index.ndim > 1:
        raise IndexError(f"index_reduce_(): Index is supposed to be a vector, but got dim: {index.ndim} with type: "
                         f"{index._dtype.name} and size: {list(index._shape)}")
    if index._dtype not in (_dt.int64, _dt.int32):
        raise RuntimeError(f"index_reduce_(): Expected dtype int32/int64 for index but got: {index._dtype.name}")
    if input._dtype is not source._dtype:
        raise RuntimeError(f"index_reduce_(): self ({input._dtype.name}) and source ({source._dtype.name}) must have "
                           "the same scalar type")
    if source.ndim != input.ndim or any(a != b for k, (a, b) in enumerate(zip(input._shape, source._shape)) if k != d):
        raise RuntimeError(f"source tensor shape must match self tensor shape, excluding the specified dimension. Got "
                           f"self.shape = {list(input._shape)} source.shape = {list(source._shape)}")
    count = index.numel()
    if count != (source._shape[d] if source.ndim else 1):
        raise RuntimeError(f"index_reduce_(): Number of indices ({count}) should be equal to source.size(dim): "
                           f"({source._shape[d] if source.ndim else 1}), for dim: {d}")
    shape = [1] * source.ndim
    if shape:
        shape[d] = count
    spread = index.long().reshape(shape).expand(source._shape)
    return d, spread


def index_reduce(input: Tensor, dim, index: Tensor, source: Tensor, reduce: str, *, include_self: bool = True,
                 out=None) -> Tensor:
    """A copy of ``input`` where slice ``index[i]`` along ``dim`` holds the ``reduce`` ("prod",
    "mean", "amax" or "amin") of every ``source`` slice i sent there (and of its own value when
    ``include_self``): a graph network's mean or max over each node's incoming messages.

    >>> import tensorplug as tp
    >>> tp.zeros(2, 2).index_reduce(0, tp.tensor([1, 1]), tp.tensor([[1.0, 5.0], [3.0, 2.0]]), "amax",
    ...                             include_self=False).tolist()
    [[0.0, 0.0], [3.0, 5.0]]
    """
    if out is not None:
        rehearse_out(index_reduce, locals())
    d, spread = _index_as_scatter("index_reduce", input, dim, index, source, reduce)
    result = scatter_reduce(input, d, spread, source, reduce, include_self=include_self)
    return write_out("index_reduce", out, result, exact_dtype=True)


def index_reduce_(self: Tensor, dim, index: Tensor, source: Tensor, reduce: str, *, include_self: bool = True) -> Tensor:
    """In-place ``index_reduce``: ``self`` receives the result."""
    return self.copy_(index_reduce(self, dim, index, source, reduce, include_self=include_self))


TENSOR_METHODS = {"scatter_reduce": scatter_reduce, "scatter_reduce_": scatter_reduce_, "index_reduce": index_reduce,
                  "index_reduce_": index_reduce_}
