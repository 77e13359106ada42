"""Out-of-place writes through a view: ``select_scatter``, ``slice_scatter``,
``diagonal_scatter`` and ``as_strided_scatter`` (issue 13).

Each returns a copy of ``input`` with ``src`` written into the part of it that the matching view
(``select``, slicing, ``diagonal``, ``as_strided``) picks out. They are composites of a copy, the
view and ``copy_``; autograd records the in-place write into the view, so gradients reach both
``input`` (zero where overwritten) and ``src``, on every backend. The view is first taken of
``input`` itself (no kernel runs for a view), so a bad index or a mismatched ``src`` raises before
anything is copied.
"""
from __future__ import annotations

import operator

from .. import dtypes as _dt
from ..shapes import normalize_dim
from ..tensor import Tensor
from ._common import check_same_device
from ._pointwise_args import check_tensor

__all__ = ["select_scatter", "slice_scatter", "diagonal_scatter", "as_strided_scatter"]


def _check_operands(op: str, input, src) -> None:
    check_tensor(op, input)
    check_tensor(op, src, "src")
    check_same_device(op, input, src)


def _check_src_fits(op: str, src: Tensor, slice_shape) -> None:
    if tuple(src._shape) != tuple(slice_shape):
        raise RuntimeError(f"{op}(): expected src to have a size equal to the slice of self. src size = "
                           f"{list(src._shape)}, slice size = {list(slice_shape)}")


def _write_through(input: Tensor, src: Tensor, view_of) -> Tensor:
    """A copy of ``input`` with ``src`` copied into ``view_of(copy)``."""
    result = input.clone()
    view_of(result).copy_(src)
    return result


def select_scatter(input: Tensor, src: Tensor, dim: int, index: int) -> Tensor:
    """``input`` with ``src`` written at ``input.select(dim, index)``."""
    op = "select_scatter"
    _check_operands(op, input, src)
    _check_src_fits(op, src, input.select(dim, index)._shape)
    return _write_through(input, src, lambda t: t.select(dim, index))


def _slicer(op: str, ndim: int, dim: int, start, end, step: int):
    """A function taking a tensor to its ``[start:end:step]`` slice along ``dim``."""
    step = operator.index(step)
    if step <= 0:
        raise RuntimeError(f"{op}(): slice step must be positive, got {step}")
    d = normalize_dim(op, dim, ndim)
    key = (slice(None),) * d + (slice(start, end, step),)
    return lambda t: t[key]


def slice_scatter(input: Tensor, src: Tensor, dim: int = 0, start=None, end=None, step: int = 1) -> Tensor:
    """``input`` with ``src`` written at the slice ``start:end:step`` of dimension ``dim``."""
    op = "slice_scatter"
    _check_operands(op, input, src)
    if input.ndim == 0:
        raise IndexError(f"{op}(): slice() cannot be applied to a 0-dim tensor.")
    view_of = _slicer(op, input.ndim, dim, start, end, step)
    _check_src_fits(op, src, view_of(input)._shape)
    return _write_through(input, src, view_of)


def diagonal_scatter(input: Tensor, src: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """``input`` with ``src`` written on ``input.diagonal(offset, dim1, dim2)``."""
    op = "diagonal_scatter"
    _check_operands(op, input, src)
    _check_src_fits(op, src, input.diagonal(offset, dim1, dim2)._shape)
    return _write_through(input, src, lambda t: t.diagonal(offset, dim1, dim2))


def _dense_strides(input: Tensor) -> tuple:
    """The strides PyTorch's preserve_format copy of ``input`` has: its own where they cover a
    dense block, else row-major ones."""
    from ..shapes import contiguous_strides

    ordered = sorted((s, n) for s, n in zip(input.stride(), input._shape) if n != 1)
    expected = 1
    for s, n in ordered:
        if s != expected:
            return contiguous_strides(input._shape)
        expected *= n
    return tuple(input.stride())


def as_strided_scatter(input: Tensor, src: Tensor, size, stride, storage_offset=None) -> Tensor:
    """``input`` with ``src`` written at ``as_strided(size, stride, storage_offset)`` of a
    dense copy of it (offsets count from that copy's first element)."""
    from ..extra_factories import empty_strided
    from ..factories import arange
    from .indexing import scatter

    op = "as_strided_scatter"
    _check_operands(op, input, src)
    size, stride = tuple(operator.index(n) for n in size), tuple(operator.index(s) for s in stride)
    offset = 0 if storage_offset is None else operator.index(storage_offset)
    if len(size) != len(stride):
        raise RuntimeError(f"{op}(): mismatch in length of strides ({len(stride)}) and shape ({len(size)})")
    if any(n < 0 for n in size) or any(s < 0 for s in stride) or offset < 0:
        raise RuntimeError(f"{op}(): sizes, strides and offset must be non-negative, got {list(size)}, "
                           f"{list(stride)}, {offset}")
    _check_src_fits(op, src, size)
    numel = input.numel()
    if 0 not in size:
        last = offset + sum((n - 1) * s for n, s in zip(size, stride))
        if last >= numel:
            raise RuntimeError(f"{op}(): sizes {list(size)}, strides {list(stride)} and storage offset {offset} "
                               f"reach element {last}, but input {list(input._shape)} holds {numel}")
    # Autograd does not follow writes through an as_strided view, so the write is a scatter in
    # the logical (row-major) order: which logical element sits at each storage position of the
    # dense copy comes from laying 0..numel-1 out with that copy's strides.
    strides = _dense_strides(input)
    logical = empty_strided(input._shape, strides, dtype=_dt.int64, device=input._device)
    logical.copy_(arange(numel, device=input._device).reshape(input._shape))
    targets = logical.as_strided(size, stride, logical._offset + offset).reshape(-1)
    flat = scatter(input.reshape(-1), 0, targets, src.to(input._dtype).reshape(-1))
    result = empty_strided(input._shape, strides, dtype=input._dtype, device=input._device)
    return result.copy_(flat.reshape(input._shape))


TENSOR_METHODS: dict = {
    "select_scatter": select_scatter, "slice_scatter": slice_scatter, "diagonal_scatter": diagonal_scatter,
    "as_strided_scatter": as_strided_scatter,
}
