"""``F.embedding_bag``: sums, means or maxima of bags of embedding rows, without building the
(bags, length, dim) tensor of the rows.

Each index is given the number of its bag (``bucketize`` of its position in the offsets); the
picked rows are then reduced into a (bags + 1, dim) buffer by ``index_add`` (sum, mean), and the
extra last row, where padding entries are sent, is dropped. "max" finds, per bag and feature, the
entry PyTorch's kernels keep (``_bag_maxima``) and gathers it, so the gradient goes where
PyTorch's goes. An empty bag stays zero, as in PyTorch.
Everything is a composite over index_select, bucketize, index_add, scatter_reduce and gather, so
every backend runs it and autograd differentiates it; ``sparse`` and ``scale_grad_by_freq`` pick
the rows through ``_embedding_lookup``, whose backward makes the weight gradient PyTorch's.
"""
from __future__ import annotations

from ..frontend import dtypes as _dt
from ..frontend.factories import arange, full, zeros
from ..frontend.ops import copying, reductions
from ..frontend.ops.searching import bucketize
from ..frontend.ops.elementwise import COMPARE, where
from ..frontend.meta_device import has_values
from ..frontend.tensor import Tensor
from ._activations import check_tensor
from ._embedding_lookup import embedding_lookup

__all__ = ["embedding_bag"]

_MODES = ("sum", "mean", "max")


def _check_indices(input: Tensor, rows: int) -> None:
    if input._dtype is not _dt.int64 and input._dtype is not _dt.int32:
        raise RuntimeError(
            "Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; "
            f"but got {input._dtype.name} instead (while checking arguments for embedding_bag)")
    if input.numel() and has_values(input):
        # Data-dependent checks, as PyTorch makes them (two numbers read back; none on meta).
        low, high = reductions.amin(input).item(), reductions.amax(input).item()
        if low < 0 or high >= rows:
            bad = low if low < 0 else high
            raise RuntimeError(f"Index of input takes value {bad} which is not in the valid range [0, {rows})")


def _bag_layout(input: Tensor, offsets, include_last_offset: bool, per_sample_weights):
    """(flat indices, offsets, flat per-sample weights) from 1-D input with offsets or 2-D input."""
    if input.ndim == 2:
        if offsets is not None:
            raise ValueError(
                "if input is 2D, then offsets has to be None, as input is treated is a mini-batch of fixed length "
                f"sequences. However, found offsets of type {type(offsets).__name__}")
        offsets = arange(0, input.numel(), max(input._shape[1], 1), device=input._device)
        weights = per_sample_weights.reshape(-1) if per_sample_weights is not None else None
        return input.reshape(-1), offsets, weights
    if input.ndim == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if not isinstance(offsets, Tensor) or offsets.ndim != 1:
            raise ValueError("offsets has to be a 1D Tensor")
        return input, offsets, per_sample_weights
    raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.ndim}")


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False, mode="mean",
                  sparse=False, per_sample_weights=None, include_last_offset=False, padding_idx=None):
    """Reduce bags of rows of ``weight`` to one row each: (bags, embedding_dim).

    A 1-D ``input`` is cut into bags at ``offsets`` (with ``include_last_offset``, the last offset
    ends the last bag); a 2-D input is one bag per row. ``mode`` is "sum", "mean" or "max";
    ``per_sample_weights`` (input's shape, "sum" only) scales each row; entries equal to
    ``padding_idx`` are left out (and not counted by "mean"); empty bags give zeros.
    ``scale_grad_by_freq`` divides each row's gradient by how often its index occurs in
    ``input``; ``sparse`` gives a leaf weight a sparse gradient (neither in "max" mode).

    >>> import tensorplug as tp
    >>> w = tp.arange(6.0).view(3, 2)
    >>> embedding_bag(tp.tensor([[0, 2], [1, 1]]), w, mode="sum").tolist()
    [[4.0, 6.0], [4.0, 6.0]]
    """
    check_tensor("embedding_bag", input)
    check_tensor("embedding_bag", weight, "weight")
    if per_sample_weights is not None and tuple(input._shape) != tuple(per_sample_weights.shape):
        raise ValueError(
            f"embedding_bag: If per_sample_weights ({per_sample_weights.shape}) is not None, then it must have the "
            f"same shape as the input ({input.shape})")
    if weight.ndim != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension {weight.ndim}")
    if isinstance(offsets, Tensor) and offsets._dtype is not input._dtype:
        # PyTorch brings indices and offsets of two integer dtypes to their promoted one (int8
        # indices with int64 offsets are taken); a float one is still refused below.
        common = _dt.promote_types(input._dtype, offsets._dtype)
        if common.category == 1:
            input, offsets = copying.to_dtype(input, common), copying.to_dtype(offsets, common)
    flat, offsets, sample_weights = _bag_layout(input, offsets, include_last_offset, per_sample_weights)
    if mode not in _MODES:
        raise ValueError("mode has to be one of sum, mean or max")
    if mode == "max" and scale_grad_by_freq:
        raise ValueError("max mode does not support scaling the gradient by the frequency")
    if mode == "max" and sparse:
        raise ValueError("max mode does not support sparse weights")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(
            f"embedding_bag: per_sample_weights was not None. per_sample_weights is only supported for mode='sum' "
            f"(got mode='{mode}'). Please open a feature request on the Pytorch GitHub.")
    rows = weight._shape[0]
    if padding_idx is not None:
        if not -rows <= padding_idx < rows:
            raise RuntimeError(
                f"padding_idx must be within the number of embeddings, {-rows} through {rows - 1}, but got {padding_idx}")
        padding_idx = padding_idx + rows if padding_idx < 0 else padding_idx
    _check_indices(flat, rows)
    _check_offsets(offsets, flat.numel())
    flat = copying.to_dtype(flat, _dt.int64)
    if max_norm is not None:
        from .functional import _renorm_rows

        _renorm_rows(weight, flat, float(max_norm), float(norm_type))
    bags = offsets._shape[0] - 1 if include_last_offset else offsets._shape[0]
    bag = _bag_numbers(flat, offsets, bags, include_last_offset, padding_idx)
    if sparse or scale_grad_by_freq:
        picked = embedding_lookup(weight, flat, padding_idx, bool(sparse), bool(scale_grad_by_freq))
    else:
        picked = weight.index_select(0, flat)
    dim = weight._shape[1]
    if mode == "max":
        return _bag_maxima(picked, bag, bags)
    if sample_weights is not None:
        picked = picked * sample_weights.unsqueeze(1)
    buffer = zeros((bags + 1, dim), dtype=picked._dtype, device=weight._device)
    total = buffer.index_add(0, bag, picked)[:bags]
    if mode == "sum":
        return total
    ones = zeros(flat._shape, dtype=picked._dtype, device=weight._device) + 1
    counts = zeros((bags + 1,), dtype=picked._dtype, device=weight._device).index_add(0, bag, ones)[:bags]
    return total / counts.clamp_min(1).unsqueeze(1)


def _check_offsets(offsets: Tensor, length: int) -> None:
    if offsets._dtype.is_floating_point or offsets._dtype is _dt.bool or offsets._dtype.is_complex:
        raise RuntimeError(
            "Expected tensor for argument #2 'offsets' to have one of the following scalar types: Long, Int; "
            f"but got {offsets._dtype.name} instead (while checking arguments for embedding_bag)")
    if offsets.numel() == 0 or not has_values(offsets):
        return
    first, last = offsets[0].item(), offsets[-1].item()
    if first != 0:
        raise RuntimeError(
            "offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from position 0. "
            f"However, got {first}")
    if last > length:
        raise RuntimeError(f"offsets[-1] can not be greater than input's length {length} but got offsets[-1] of {last}")


def _bag_numbers(flat: Tensor, offsets: Tensor, bags: int, include_last_offset: bool, padding_idx) -> Tensor:
    """The bag of each entry of ``flat``; ``bags`` (the dropped row) for padding entries."""
    positions = arange(flat._shape[0], device=flat._device)
    bag = bucketize(positions, copying.to_dtype(offsets, _dt.int64), right=True) - 1
    if include_last_offset and bags:
        # PyTorch's last bag runs to the end of the input, whatever the final offset says.
        bag = bag.clamp_max(bags - 1)
    if padding_idx is not None:
        bag = where(COMPARE["eq"](flat, padding_idx), bags, bag)
    return bag


def _bag_maxima(picked: Tensor, bag: Tensor, bags: int) -> Tensor:
    """(bags, dim) maxima of the rows ``picked`` per bag number ``bag`` (``bags`` for padding).

    PyTorch's kernels (CPU and CUDA) walk a bag in input order and keep an entry when it is the
    bag's first or compares greater than the one kept: of several equal maxima the first wins
    (and takes the whole gradient), and a NaN is kept only when it comes first (a NaN later never
    compares greater). The same entry is found here without a loop: the first position holding
    the largest non-NaN value, or the bag's first position where that holds a NaN.
    """
    n, dim = picked._shape
    out_shape = (bags + 1, dim)
    if n == 0:
        return zeros((bags, dim), dtype=picked._dtype, device=picked._device)
    device = picked._device
    values = picked.detach()
    index = bag.unsqueeze(1).expand(n, dim)
    nan = COMPARE["ne"](values, values)
    ordered = where(nan, float("-inf"), values)
    top = zeros(out_shape, dtype=values._dtype, device=device).scatter_reduce(0, index, ordered, "amax",
                                                                             include_self=False)
    positions = arange(n, device=device)
    at_top = COMPARE["eq"](ordered, top.gather(0, index)) & ~nan
    first_top = full(out_shape, n, dtype=_dt.int64, device=device).scatter_reduce(
        0, index, where(at_top, positions.unsqueeze(1), n), "amin")
    first = full((bags + 1,), n, dtype=_dt.int64, device=device).scatter_reduce(0, bag, positions, "amin")
    first = first.unsqueeze(1).expand(out_shape)
    empty = COMPARE["eq"](first, n)
    first = first.clamp_max(n - 1)
    winner = where(nan.gather(0, first), first, first_top.clamp_max(n - 1))[:bags]
    return where(empty[:bags], 0.0, picked.gather(0, winner))
