"""The partial inverse of max pooling (``max_unpool1d``, ``max_unpool2d``,
``max_unpool3d``): each value goes back
to the position its index names (as max_pool*d(return_indices=True) gives them: flat positions
within each channel's plane), zeros elsewhere. A scatter, so its gradient is a gather."""
from __future__ import annotations

import math

from ..frontend import dtypes as _dt
from ..frontend.ops._common import check_same_device
from ._activations import check_tensor
from ._conv import ntuple

__all__ = ["max_unpool1d", "max_unpool2d", "max_unpool3d"]


def _output_size(op: str, spatial: tuple, kernel, stride, padding, output_size) -> tuple:
    default = tuple((n - 1) * s - 2 * p + k for n, s, p, k in zip(spatial, stride, padding, kernel))
    if output_size is None:
        return default
    size = tuple(output_size)[-len(spatial):]
    for d, (wanted, natural, s) in enumerate(zip(size, default, stride)):
        if not natural - s < wanted < natural + s:
            raise ValueError(f"invalid output_size {list(output_size)} (dim {d} must be between {natural - s} and "
                             f"{natural + s})")
    return size


def _unpool(op: str, nd: int, input, indices, kernel_size, stride, padding, output_size):
    check_tensor(op, input)
    check_tensor(op, indices, "indices")
    if indices._dtype is not _dt.int64:
        raise RuntimeError(f"{op}(): elements in indices should be type int64 but got: {indices._dtype.name}")
    if indices._shape != input._shape:
        raise RuntimeError(f"{op}(): Expected shape of indices to be same as that of the input tensor "
                           f"({list(input._shape)}) but got indices tensor with shape: {list(indices._shape)}")
    if input.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"{op}(): Expected {nd + 1}D or {nd + 2}D input, but got input of size: {list(input._shape)}")
    check_same_device(op, input, indices)
    kernel = ntuple(op, "kernel_size", kernel_size, nd)
    stride = kernel if stride is None else ntuple(op, "stride", stride, nd)
    padding = ntuple(op, "padding", padding, nd)
    spatial = _output_size(op, input._shape[-nd:], kernel, stride, padding, output_size)
    lead = input._shape[:-nd]
    plane = math.prod(spatial)
    flat_indices = indices.reshape(*lead, -1)
    if flat_indices.numel():
        # One host read of both extremes, so every backend raises PyTorch's error before writing.
        low, high = (int(v) for v in flat_indices.aminmax())
        bad = high if high >= plane else low if low < 0 else None
        if bad is not None:
            raise RuntimeError(f"Found an invalid max index: {bad} (output volumes are of size "
                               f"{'x'.join(map(str, spatial))})")
    from ..frontend.factories import zeros
    from ..frontend.ops.indexing import scatter

    target = zeros((*lead, plane), dtype=input._dtype, device=input._device)
    return scatter(target, input.ndim - nd, flat_indices, input.reshape(*lead, -1)).reshape(*lead, *spatial)


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """Values of a (N, C, L) or (C, L) input put back at their max_pool1d indices.

    >>> F.max_unpool1d(tp.tensor([[[1.0, 2.0]]]), tp.tensor([[[1, 3]]]), 2).tolist()
    [[[0.0, 1.0, 0.0, 2.0]]]
    """
    return _unpool("max_unpool1d", 1, input, indices, kernel_size, stride, padding, output_size)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """Values of a (N, C, H, W) or (C, H, W) input put back at their max_pool2d indices."""
    return _unpool("max_unpool2d", 2, input, indices, kernel_size, stride, padding, output_size)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """Values of a (N, C, D, H, W) or (C, D, H, W) input put back at their max_pool3d indices."""
    return _unpool("max_unpool3d", 3, input, indices, kernel_size, stride, padding, output_size)
