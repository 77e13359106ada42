"""``F.embedding_bag``: sums, means or maxima of bags of embedding rows, without building the
(bags, length, dim) tensor of the rows.

Each index is given the number of its bag (``bucketize`` of its position in the offsets); the
picked rows are then reduced into a (bags + 1, dim) buffer by ``index_add`` (sum, mean) or
``scatter_reduce`` (max), and the extra last row, where padding entries are sent, is dropped.
An empty bag stays zero, as in PyTorch.
Everything is a composite over index_select, bucketize, index_add and scatter_reduce, so every
backend runs it and autograd differentiates it.
"""
from __future__ import annotations

from ..frontend import dtypes as _dt
from ..frontend.factories import arange, zeros
from ..frontend.ops import copying, reductions
from ..frontend.ops.searching import bucketize
from ..frontend.ops.elementwise import COMPARE, where
from ..frontend.tensor import Tensor
from ._activations import check_tensor

__all__ = ["embedding_bag"]

_MODES = ("sum", "mean", "max")


def _check_indices(input: Tensor, rows: int) -> None:
    if input._dtype.is_floating_point or input._dtype is _dt.bool or input._dtype.is_complex:
        raise RuntimeError(
            "Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; "
            f"but got {input._dtype.name} instead (while checking arguments for embedding_bag)")
    if input.numel():
        # Data-dependent checks, as PyTorch makes them (two numbers read back).
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
    flat, offsets, sample_weights = _bag_layout(input, offsets, include_last_offset, per_sample_weights)
    if mode not in _MODES:
        raise ValueError("mode has to be one of sum, mean or max")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(
            f"embedding_bag: per_sample_weights was not None. per_sample_weights is only supported for mode='sum' "
            f"(got mode='{mode}'). Please open a feature request on the Pytorch GitHub.")
    if scale_grad_by_freq:
        raise NotImplementedError("embedding_bag(): scale_grad_by_freq is not supported")
    if sparse:
        raise NotImplementedError("embedding_bag(): sparse=True is not supported; use a dense weight")
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
    picked = weight.index_select(0, flat)
    dim = weight._shape[1]
    if mode == "max":
        index = bag.unsqueeze(1).expand(flat._shape[0], dim)
        buffer = zeros((bags + 1, dim), dtype=weight._dtype, device=weight._device)
        return buffer.scatter_reduce(0, index, picked, "amax", include_self=False)[:bags]
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
    if offsets.numel() == 0:
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
