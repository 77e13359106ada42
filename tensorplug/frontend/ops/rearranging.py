"""Ops that place existing values in new positions: ``take_along_dim``, ``repeat_interleave``,
``rot90``, ``diag_embed``, ``diagflat``, ``block_diag``, ``cartesian_prod``, ``combinations``.

Composites over views, gather/index_select and slice copies, so gradients come for free. Where
the result's shape depends on values (tensor ``repeats``), the values are read once on the host.
"""
from __future__ import annotations

import itertools
import operator

import numpy as np

from .. import dtypes as _dt
from ..shapes import broadcast_shapes, normalize_dim
from ..meta_device import has_values, refuse_data_dependent
from ..tensor import Tensor, empty_tensor
from ._common import check_same_device, write_out
from ._numpy_names import axis_as_dim
from ._pointwise_args import check_tensor, result_dtype_of
from .out_rehearsal import rehearse_out

__all__ = [
    "take_along_dim", "repeat_interleave", "rot90", "diag_embed", "diagflat", "block_diag", "cartesian_prod",
    "combinations",
]


def take_along_dim(input, indices, dim=None, *, out=None, axis=None) -> Tensor:
    """The values of ``input`` at ``indices`` along ``dim`` (the other dims broadcast), or at
    flat ``indices`` when ``dim`` is None: NumPy's ``take_along_axis``.

    >>> tp.take_along_dim(tp.tensor([[10, 30, 20]]), tp.tensor([[1, 2]]), 1).tolist()
    [[30, 20]]
    """
    if out is not None:
        rehearse_out(take_along_dim, locals())
    if axis is not None:
        dim = axis_as_dim("take_along_dim", dim, axis, None)
    from .indexing import gather

    check_tensor("take_along_dim", input)
    check_tensor("take_along_dim", indices, "indices")
    if indices._dtype is not _dt.int64:
        raise RuntimeError(f"torch.take_along_dim(): dtype of indices should be Long but got {indices._dtype.name}")
    check_same_device("take_along_dim", input, indices)
    if dim is None:
        return write_out("take_along_dim", out, gather(input.reshape(-1), 0, indices.reshape(-1)))
    if input.ndim != indices.ndim:
        raise RuntimeError(f"torch.take_along_dim(): input and indices should have the same number of dimensions, but "
                           f"got {input.ndim} dimensions for input, and {indices.ndim} dimensions for indices")
    d = normalize_dim("take_along_dim", dim, input.ndim)
    # Every dim but d broadcasts; along d, input keeps its length and indices theirs.
    shape = list(broadcast_shapes(input._shape[:d] + (1,) + input._shape[d + 1:],
                                  indices._shape[:d] + (1,) + indices._shape[d + 1:], op="take_along_dim"))
    source = input.expand(*(shape[:d] + [input._shape[d]] + shape[d + 1:]))
    index = indices.expand(*(shape[:d] + [indices._shape[d]] + shape[d + 1:]))
    return write_out("take_along_dim", out, gather(source, d, index))


def _check_repeats_tensor(repeats: Tensor) -> None:
    if repeats._dtype.category != 1:
        raise RuntimeError(f"repeat_interleave(): repeats has to be Long tensor, got {repeats._dtype.name}")
    if repeats.ndim > 1:
        raise RuntimeError("repeat_interleave(): repeats must be 0-dim or 1-dim tensor")


def _repeat_counts(repeats, length: int) -> list:
    if isinstance(repeats, Tensor):
        _check_repeats_tensor(repeats)
        counts = [int(c) for c in repeats.reshape(-1).tolist()]
    else:
        counts = [operator.index(repeats)]
    if any(c < 0 for c in counts):
        raise RuntimeError("repeats can not be negative")
    if len(counts) == 1:
        return counts * length
    if len(counts) != length:
        raise RuntimeError(f"repeats must have the same size as input along dim, but got repeats.size(0) = "
                           f"{len(counts)} and input.size(0) = {length}")
    return counts


def repeat_interleave(input, repeats=None, dim=None, *, output_size=None, axis=None) -> Tensor:
    """Each slice along ``dim`` repeated ``repeats`` times in place (one count, or one per
    slice); the input is flattened when ``dim`` is None. ``repeat_interleave(counts)`` alone
    repeats each index ``i`` ``counts[i]`` times.

    >>> tp.repeat_interleave(tp.tensor([1, 2]), 2).tolist()
    [1, 1, 2, 2]
    >>> tp.repeat_interleave(tp.tensor([2, 0, 1])).tolist()
    [0, 0, 2]
    """
    if axis is not None:
        dim = axis_as_dim("repeat_interleave", dim, axis, None)
    from ..factories import tensor

    check_tensor("repeat_interleave", input)
    counts_tensor = input if repeats is None else repeats
    if isinstance(counts_tensor, Tensor) and not has_values(counts_tensor):
        return _repeat_meta_counts(input, repeats, dim, output_size)
    if repeats is None:
        counts = _repeat_counts(input, input.numel())
        return tensor(np.repeat(np.arange(len(counts)), counts), dtype=_dt.int64, device=input._device)
    input, d = _repeat_axis(input, dim)
    counts = _repeat_counts(repeats, input._shape[d])
    total = sum(counts)
    if output_size is not None and output_size != total:
        raise RuntimeError(f"repeat_interleave(): allocated size does not match required size ({output_size} and {total})")
    if len(set(counts)) == 1 and counts:
        # One count: a broadcast view of every slice, merged back into the dim (no index).
        k = counts[0]
        expanded = input.unsqueeze(d + 1)
        expanded = expanded.expand(*(input._shape[:d + 1] + (k,) + input._shape[d + 1:]))
        return expanded.reshape(*(input._shape[:d] + (input._shape[d] * k,) + input._shape[d + 1:]))
    from .indexing import index_select

    index = tensor(np.repeat(np.arange(len(counts)), counts), dtype=_dt.int64, device=input._device)
    return index_select(input, d, index)


def _repeat_axis(input: Tensor, dim) -> tuple:
    """``(input, d)``: the tensor and dim repeat_interleave repeats along (flattened for no dim)."""
    if dim is None:
        return input.reshape(-1), 0
    d = normalize_dim("repeat_interleave", dim, max(input.ndim, 1))
    return (input.reshape(1) if input.ndim == 0 else input), d


def _repeat_meta_counts(input: Tensor, repeats, dim, output_size) -> Tensor:
    """repeat_interleave with counts on the meta device: their sum, the result's length, is not
    known, so ``output_size`` must give it (PyTorch's rule and error type)."""
    from .indexing import index_select

    counts = input if repeats is None else repeats
    _check_repeats_tensor(counts)
    if output_size is None:
        refuse_data_dependent("repeat_interleave() without output_size", counts, error=RuntimeError)
    output_size = operator.index(output_size)
    if repeats is None:
        return empty_tensor((output_size,), _dt.int64, input._device)
    input, d = _repeat_axis(input, dim)
    if counts.ndim == 1 and counts._shape[0] not in (1, input._shape[d]):
        raise RuntimeError(f"repeats must have the same size as input along dim, but got repeats.size(0) = "
                           f"{counts._shape[0]} and input.size(0) = {input._shape[d]}")
    return index_select(input, d, empty_tensor((output_size,), _dt.int64, counts._device))


def rot90(input, k=1, dims=(0, 1)) -> Tensor:
    """``input`` rotated by ``k`` quarter turns in the plane of ``dims``, from the first dim's
    direction towards the second's.

    >>> tp.rot90(tp.tensor([[1, 2], [3, 4]])).tolist()
    [[2, 4], [1, 3]]
    """
    from .shaping import flip

    check_tensor("rot90", input)
    dims = list(dims)
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if input.ndim < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {input.ndim}")
    d0, d1 = (normalize_dim("rot90", d, input.ndim) for d in dims)
    if d0 == d1:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {dims[0]} and dim1 = {dims[1]}")
    turns = operator.index(k) % 4
    if turns == 1:
        return flip(input, [d1]).transpose(d0, d1)
    if turns == 2:
        return flip(input, [d0, d1])
    if turns == 3:
        return flip(input, [d0]).transpose(d0, d1)
    return input.clone()


def diag_embed(input, offset=0, dim1=-2, dim2=-1) -> Tensor:
    """A tensor one dim larger whose diagonal ``offset`` in the planes of (``dim1``, ``dim2``)
    holds the last dim of ``input``, zeros elsewhere.

    >>> tp.diag_embed(tp.tensor([1, 2])).tolist()
    [[1, 0], [0, 2]]
    """
    from ..factories import zeros

    check_tensor("diag_embed", input)
    ndim = input.ndim + 1
    d1, d2 = normalize_dim("diag_embed", dim1, ndim), normalize_dim("diag_embed", dim2, ndim)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    offset = operator.index(offset)
    n = (input._shape[-1] if input.ndim else 1) + abs(offset)
    batch = list(input._shape[:-1])
    shape = []
    for i in range(ndim):
        shape.append(n if i in (d1, d2) else batch.pop(0))
    result = zeros(tuple(shape), dtype=input._dtype, device=input._device)
    result.diagonal(offset, d1, d2).copy_(input)
    return result


def diagflat(input, offset=0) -> Tensor:
    """A square matrix with the flattened ``input`` on diagonal ``offset``."""
    from .diagonals import diag

    check_tensor("diagflat", input)
    return diag(input.reshape(-1), offset)


def block_diag(*tensors) -> Tensor:
    """The block-diagonal matrix of the given matrices (vectors are rows, scalars 1x1), in their
    promoted dtype.

    >>> tp.block_diag(tp.tensor([[1, 1]]), tp.tensor(2)).tolist()
    [[1, 1, 0], [0, 0, 2]]
    """
    from ..factories import zeros

    blocks = []
    for i, t in enumerate(tensors):
        check_tensor("block_diag", t, f"tensors[{i}]")
        if t.ndim > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {i} has {t.ndim} "
                               f"dimensions")
        blocks.append(t.reshape(1, -1) if t.ndim < 2 else t)
    if not blocks:
        return zeros((1, 0))
    check_same_device("block_diag", *blocks)
    dtype = result_dtype_of(*blocks)
    rows, columns = sum(b._shape[0] for b in blocks), sum(b._shape[1] for b in blocks)
    result = zeros((rows, columns), dtype=dtype, device=blocks[0]._device)
    row = column = 0
    for b in blocks:
        height, width = b._shape
        result[row:row + height, column:column + width] = b
        row, column = row + height, column + width
    return result


def _vectors(op: str, tensors) -> list:
    for i, t in enumerate(tensors):
        check_tensor(op, t, f"tensors[{i}]")
        if t.ndim != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {list(t._shape)}")
    return list(tensors)


def cartesian_prod(*tensors) -> Tensor:
    """Every combination of one element from each 1-D tensor, as rows (the tensor itself for
    a single input), in ``itertools.product`` order.

    >>> tp.cartesian_prod(tp.tensor([1, 2]), tp.tensor([3, 4])).tolist()
    [[1, 3], [1, 4], [2, 3], [2, 4]]
    """
    from .joining import stack
    from .shaping import meshgrid

    vectors = _vectors("cartesian_prod", tensors)
    if not vectors:
        raise RuntimeError("cartesian_prod expects at least one tensor")
    if len(vectors) == 1:
        return vectors[0]
    dtype = result_dtype_of(*vectors)
    grids = meshgrid(*(v.to(dtype) for v in vectors), indexing="ij")
    return stack([g.reshape(-1) for g in grids], 1)


def combinations(input, r=2, with_replacement=False) -> Tensor:
    """The length-``r`` combinations of the elements of a 1-D tensor, as rows, in
    ``itertools.combinations`` order (``combinations_with_replacement`` with that flag).

    >>> tp.combinations(tp.tensor([1, 2, 3])).tolist()
    [[1, 2], [1, 3], [2, 3]]
    """
    from ..factories import tensor
    from .indexing import index_select

    (input,) = _vectors("combinations", (input,))
    r = operator.index(r)
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    choose = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    rows = list(choose(range(input._shape[0]), r)) if r else []
    # Even an empty result is taken from the input (an empty index), so it stays in the graph.
    index = tensor(np.asarray(rows, dtype=np.int64).reshape(-1), dtype=_dt.int64, device=input._device)
    if r == 0:
        return index_select(input, 0, index)
    return index_select(input, 0, index).reshape(len(rows), r)


#: Tensor methods this module provides: name -> function (attached by frontend.methods).
TENSOR_METHODS: dict = {name: globals()[name] for name in (
    "take_along_dim", "repeat_interleave", "rot90", "diag_embed", "diagflat")}
