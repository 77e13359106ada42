"""Volumetric pooling for ``tp.nn.functional`` (issue 13): max_pool3d, avg_pool3d,
adaptive_avg_pool3d and adaptive_max_pool3d.

Each pools in two stages, so every backend runs the heavy part with its fused 2-D kernels:
first the 2-D op over every depth slice (a (N, C * D, H, W) batch), then the depth windows over
the result. That is exact because the windows are products of one window per dim: an average's
divisor is the product of the per-dim counts (``window_counts``), and the element PyTorch's
loop picks in a 3-D window ((depth, height, width) order: the first maximum, or the last NaN)
is the one the 2-D stage picks in the depth slice that the same rule (``max_offset``) picks over
the 2-D stage's maxima: the first slice holding the largest value, or the last holding a NaN.
Max pooling then reads its values at the flat D * H * W indices it found (``gather``), so its
gradient goes where PyTorch's goes; average pooling differentiates through avg_pool2d's
derivative and the depth sums. Adaptive average pooling is ``_pooling``'s per-dim resampling,
which already takes any number of dims.
"""
from __future__ import annotations

import math

import numpy as np

from ..frontend.factories import arange, tensor
from ..frontend.ops.elementwise import where
from ..frontend.views import slice_dim
from ._activations import check_tensor
from ._conv import constant_pad
from ._pooling import (
    _adaptive_avg, _adaptive_max_indices, _adaptive_sizes, _adaptive_windows, _avg_pool2d, _lowest,
    _max_pool2d_with_indices, _pool_out, first_valid, max_offset, window_counts,
)

__all__ = ["max_pool3d", "avg_pool3d", "adaptive_avg_pool3d", "adaptive_max_pool3d"]


def _triple(op: str, name: str, value) -> tuple:
    if isinstance(value, (tuple, list)):
        if len(value) == 1:
            return (int(value[0]),) * 3
        if len(value) != 3:
            raise RuntimeError(f"{op}: {name} must either be a single int, or a tuple of three ints")
        return tuple(int(v) for v in value)
    return (int(value),) * 3


def _geometry(op, input, kernel_size, stride, padding, dilation, ceil_mode):
    """Validate a 3-D pooling call as PyTorch does; return (5-D input, kernel, stride, padding,
    dilation, output size, batched?)."""
    check_tensor(op, input)
    # The batch may be empty, the other dims may not (PyTorch's rule).
    if input.ndim not in (4, 5) or 0 in input._shape[-4:]:
        raise RuntimeError(
            f"{op}(): non-empty 4D or 5D (batch mode) tensor expected for input, but got input of size: {list(input._shape)}"
        )
    kernel = _triple(op, "kernel_size", kernel_size)
    omitted = stride is None or (isinstance(stride, (tuple, list)) and len(stride) == 0)
    stride = kernel if omitted else _triple(op, "stride", stride)
    padding, dilation = _triple(op, "padding", padding), _triple(op, "dilation", dilation)
    if any(k <= 0 for k in kernel):
        raise RuntimeError(f"{op}(): kernel size should be greater than zero, but got kT: {kernel[0]} kH: {kernel[1]} kW: {kernel[2]}")
    if any(s == 0 for s in stride):
        raise RuntimeError(f"{op}(): stride should not be zero")
    if any(s < 0 for s in stride):
        raise RuntimeError(f"{op}(): stride should be greater than zero, but got dT: {stride[0]} dH: {stride[1]} dW: {stride[2]}")
    if any(d <= 0 for d in dilation):
        raise RuntimeError(
            f"{op}(): dilation should be greater than zero, but got dilationT: {dilation[0]} dilationH: {dilation[1]} "
            f"dilationW: {dilation[2]}"
        )
    for p, k, d in zip(padding, kernel, dilation):
        if p < 0 or p > ((k - 1) * d + 1) // 2:
            raise RuntimeError(
                f"{op}(): pad should be at most half of effective kernel size, but got pad={p}, kernel_size={k} and dilation={d}"
            )
    if op == "max_pool3d" and any(p > k // 2 for p, k in zip(padding, kernel)):
        raise RuntimeError(
            f"{op}(): pad should be smaller than or equal to half of kernel size, but got kT: {kernel[0]} kW: {kernel[2]} "
            f"kH: {kernel[1]} padT: {padding[0]} padW: {padding[2]} padH: {padding[1]}"
        )
    batched = input.ndim == 5
    x = input if batched else input.unsqueeze(0)
    c, d, h, w = x._shape[1:]
    if op == "avg_pool3d" and (d < kernel[0] or h < kernel[1] or w < kernel[2]):
        raise RuntimeError(
            f"{op}(): input image (T: {d} H: {h} W: {w}) smaller than kernel size (kT: {kernel[0]} kH: {kernel[1]} "
            f"kW: {kernel[2]})"
        )
    out = tuple(_pool_out(*geometry, ceil_mode) for geometry in zip((d, h, w), kernel, stride, padding, dilation))
    if min(out) < 1:
        raise RuntimeError(
            f"{op}(): Given input size: ({c}x{d}x{h}x{w}). Calculated output size: ({c}x{out[0]}x{out[1]}x{out[2]}). "
            f"Output size is too small"
        )
    return x, kernel, stride, padding, dilation, out, batched


# --- max pooling --------------------------------------------------------------------------------
def _depth_argmax(values, plane_indices, positions: np.ndarray, valid: np.ndarray, plane: int):
    """Flat (D * H * W) index of each window's maximum (``max_offset``), from the 2-D stage's maxima.

    ``values`` and ``plane_indices`` (N, C, D, OH, OW) are each depth slice's window maxima and
    their flat H * W indices; output depth o looks at input depths ``positions[o, :]`` in order,
    those where ``valid`` is False lying in the padding. Those are read as the window's first
    depth inside the input, so a window whose elements all equal the padding value (-inf) names
    that depth, as PyTorch's loop does."""
    n, c, d, oh, ow = values._shape
    out_d, k = positions.shape
    dev = values._device
    clamped = np.where(valid, positions, first_valid(positions, valid)[:, None])
    index = tensor(clamped.reshape(-1), device=dev)
    picked = values.index_select(2, index).reshape(n, c, out_d, k, oh, ow)
    if not valid.all():
        picked = where(tensor(valid.reshape(out_d, k, 1, 1), device=dev), picked, _lowest(values._dtype))
    offset = max_offset(picked, 3)  # in depth order
    depth = tensor(clamped.reshape(-1), device=dev)[arange(out_d, device=dev).reshape(out_d, 1, 1) * k + offset]
    within = plane_indices.index_select(2, index).reshape(n, c, out_d, k, oh, ow)
    within = within.gather(3, offset.unsqueeze(3)).squeeze(3)
    return depth * plane + within


def _gather_volume(x, flat):
    """``x`` (N, C, D, H, W) at the flat D * H * W indices ``flat`` (N, C, OD, OH, OW); the
    gradient goes back to exactly those elements."""
    n, c, d, h, w = x._shape
    count = math.prod(flat._shape[2:])
    return x.reshape(n, c, d * h * w).gather(2, flat.reshape(n, c, count)).reshape(flat._shape)


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """Maximum over each window of a (N, C, D, H, W) or (C, D, H, W) input; padding counts as
    -inf. With ``return_indices``, also each maximum's flat index within its D x H x W volume
    (what ``max_unpool3d`` takes).

    >>> F.max_pool3d(tp.arange(8.0).reshape(1, 1, 2, 2, 2), 2).flatten().tolist()
    [7.0]
    """
    x, kernel, stride, padding, dilation, out, batched = _geometry(
        "max_pool3d", input, kernel_size, stride, padding, dilation, ceil_mode
    )
    n, c, d, h, w = x._shape
    planes = x.detach().reshape(n, c * d, h, w)
    plane_values, plane_indices = _max_pool2d_with_indices(planes, kernel[1:], stride[1:], padding[1:], dilation[1:], bool(ceil_mode))
    oh, ow = plane_values._shape[2:]
    positions = (np.arange(out[0]) * stride[0] - padding[0])[:, None] + (np.arange(kernel[0]) * dilation[0])[None, :]
    valid = (positions >= 0) & (positions < d)
    indices = _depth_argmax(
        plane_values.reshape(n, c, d, oh, ow), plane_indices.reshape(n, c, d, oh, ow), positions, valid, h * w
    )
    values = _gather_volume(x, indices)
    if not batched:
        values, indices = values.squeeze(0), indices.squeeze(0)
    return (values, indices) if return_indices else values


# --- average pooling ----------------------------------------------------------------------------
def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True, divisor_override=None):
    """Mean over each window of a (N, C, D, H, W) or (C, D, H, W) input (``count_include_pad``
    counts the zero padding in the divisor; ``divisor_override`` replaces the divisor).

    >>> F.avg_pool3d(tp.arange(8.0).reshape(1, 1, 2, 2, 2), 2).flatten().tolist()
    [3.5]
    """
    x, kernel, stride, padding, _, out, batched = _geometry("avg_pool3d", input, kernel_size, stride, padding, 1, ceil_mode)
    if not x._dtype.is_floating_point:
        raise RuntimeError(f"avg_pool3d(): expected a floating-point input, but got {x._dtype.name}")
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("avg_pool3d(): divisor must be not zero")
    n, c, d, h, w = x._shape
    # With an override the 2-D stage only sums (divisor 1) and the override divides once at the end.
    planes = _avg_pool2d(
        x.reshape(n, c * d, h, w), kernel[1:], stride[1:], padding[1:], bool(ceil_mode), bool(count_include_pad),
        1 if divisor_override else None,
    )
    oh, ow = planes._shape[2:]
    planes = planes.reshape(n, c, d, oh, ow)
    needed = (out[0] - 1) * stride[0] + kernel[0]
    pads = (padding[0], max(padding[0], needed - d - padding[0]))
    if any(pads):
        planes = constant_pad(planes, (pads, (0, 0), (0, 0)), 0.0)
    total = None
    for k in range(kernel[0]):
        tap = slice_dim(planes, 2, k, k + stride[0] * (out[0] - 1) + 1, stride[0])
        total = tap if total is None else total + tap
    if divisor_override:
        result = total / float(divisor_override)
    else:
        counts = window_counts(d, kernel[0], stride[0], padding[0], out[0], bool(count_include_pad)).astype(np.float64)
        result = total / tensor(counts.reshape(out[0], 1, 1), dtype=x._dtype, device=x._device)
    return result if batched else result.squeeze(0)


# --- adaptive pooling ---------------------------------------------------------------------------
def adaptive_avg_pool3d(input, output_size):
    """Average pooling of a (N, C, D, H, W) or (C, D, H, W) input to a fixed (OD, OH, OW) (None
    keeps that dim's size): window i covers [floor(i * D / OD), ceil((i + 1) * D / OD)).

    >>> F.adaptive_avg_pool3d(tp.ones(1, 2, 5, 6, 7), (1, 2, None)).shape
    (1, 2, 1, 2, 7)
    """
    return _adaptive_avg("adaptive_avg_pool3d", input, output_size, 3)


def adaptive_max_pool3d(input, output_size, return_indices=False):
    """Max pooling of a (N, C, D, H, W) or (C, D, H, W) input to a fixed (OD, OH, OW) (windows as
    adaptive_avg_pool3d's); with ``return_indices``, also each maximum's flat D x H x W index."""
    sizes = _adaptive_sizes("adaptive_max_pool3d", input, output_size, 3)
    batched = input.ndim == 5
    x = input if batched else input.unsqueeze(0)
    n, c, d, h, w = x._shape
    if 0 in sizes:
        # Nothing to pool; the empty result still hangs off the input's graph.
        values = x.reshape(n, c, d * h * w)[:, :, :0].reshape(n, c, *sizes)
        indices = tensor(np.zeros((n, c, *sizes), dtype=np.int64), device=x._device)
    else:
        out_d, oh, ow = sizes
        planes = x.detach().reshape(n, c * d, h, w)
        plane_indices = _adaptive_max_indices(planes, oh, ow)
        plane_values = planes.reshape(n, c * d, h * w).gather(2, plane_indices.reshape(n, c * d, oh * ow))
        positions, valid = _adaptive_windows(d, out_d)
        indices = _depth_argmax(
            plane_values.reshape(n, c, d, oh, ow), plane_indices.reshape(n, c, d, oh, ow), positions, valid, h * w
        )
        values = _gather_volume(x, indices)
    if not batched:
        values, indices = values.squeeze(0), indices.squeeze(0)
    return (values, indices) if return_indices else values
