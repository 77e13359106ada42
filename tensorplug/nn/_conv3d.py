"""Volumetric convolutions for ``tp.nn.functional``: conv3d and conv_transpose3d (issue 13).

Both are written over the 2-D ops, so every backend runs them with its fused conv2d and
conv_transpose2d kernels and gradients come from those ops' derivatives; neither is an operator
of its own (no backend needs a kernel for it).

conv3d folds the depth taps into the channels: the KD depth slices each output depth reads are
stacked next to the channels, giving a (N * OD, C * KD, H, W) batch, and one conv2d with the
weight viewed as (O, C/groups * KD, KH, KW) does the rest. That is the same product as a 3-D
im2col (every multiply-add is done once) at the cost of one copy of the input per depth tap
(KD / stride copies in all), and one large conv2d instead of KD small ones.

conv_transpose3d is the adjoint: one conv_transpose2d over the (N * D, C, H, W) slices with
the weight viewed as (C, O/groups * KD, KH, KW) gives every depth tap's contribution, and an
index_add puts tap k of input depth i at output depth ``i * stride + k * dilation`` (summing
where taps overlap), before the padding is cropped.
"""
from __future__ import annotations

import operator

from ..frontend.factories import tensor, zeros
from ..frontend.ops.joining import stack
from ..frontend.views import slice_dim
from ..frontend.autocast_hook import autocast_function
from ._conv import (
    _check_conv_args, _check_kernel_fits, _check_transposed, _conv2d, _conv_transpose2d, _same_padding, constant_pad,
    conv_out_size,
)

__all__ = ["conv3d", "conv_transpose3d"]


def _conv3d(x, weight, bias, stride, padding, dilation, groups):
    """conv3d of a batched (N, C, D, H, W) input with checked, tuple geometry."""
    n, c, d, h, w = x._shape
    o, cg, kd, kh, kw = weight._shape
    out_d = conv_out_size(d, kd, stride[0], padding[0], dilation[0])
    if padding[0]:
        x = constant_pad(x, ((padding[0], padding[0]), (0, 0), (0, 0)), 0.0)
    # Tap k of output depth j reads input depth j * stride + k * dilation: a strided slice per tap,
    # each seen as (N, OD, C, H, W) and stacked after the channels, so that channel c, tap k is
    # column c * KD + k, the order of the weight's (C/groups, KD) dims (groups stay contiguous).
    taps = [
        slice_dim(x, 2, k * dilation[0], k * dilation[0] + stride[0] * (out_d - 1) + 1, stride[0]).transpose(1, 2)
        for k in range(kd)
    ]
    columns = stack(taps, 3).reshape(n * out_d, c * kd, h, w)
    planes = _conv2d(columns, weight.reshape(o, cg * kd, kh, kw), None, stride[1:], padding[1:], dilation[1:], groups)
    out_h, out_w = planes._shape[2:]
    out = planes.reshape(n, out_d, o, out_h, out_w).transpose(1, 2)
    return out + bias.reshape(1, o, 1, 1, 1) if bias is not None else out.contiguous()


@autocast_function("conv3d")
def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """3-D convolution (cross-correlation) of a (N, C, D, H, W) or (C, D, H, W) input with a
    (O, C/groups, KD, KH, KW) weight.

    >>> F.conv3d(tp.ones(1, 2, 4, 4, 4), tp.ones(3, 2, 2, 2, 2)).shape
    (1, 3, 3, 3, 3)
    """
    x, stride, padding, dilation, batched = _check_conv_args("conv3d", 3, input, weight, bias, stride, padding, dilation, groups)
    if padding == "valid":
        padding = (0, 0, 0)
    elif padding == "same":
        x, padding = _same_padding(x, weight, dilation, 3)
    _check_kernel_fits("conv3d", x._shape[2:], padding, weight._shape[2:], dilation)
    out = _conv3d(x, weight, bias, stride, padding, dilation, operator.index(groups))
    return out if batched else out.squeeze(0)


def _conv_transpose3d(x, weight, bias, stride, padding, output_padding, groups, dilation):
    n, cin, d, h, w = x._shape
    _, og, kd, kh, kw = weight._shape
    rows = x.transpose(1, 2).reshape(n * d, cin, h, w)
    # Output channel j * og * KD + o * KD + k of the 2-D op is group j's channel o at depth tap k.
    planes = _conv_transpose2d(
        rows, weight.reshape(cin, og * kd, kh, kw), None, stride[1:], padding[1:], output_padding[1:], groups,
        dilation[1:],
    )
    out_h, out_w = planes._shape[2:]
    channels = groups * og
    taps = planes.reshape(n, d, groups, og, kd, out_h, out_w).permute(0, 4, 1, 2, 3, 5, 6)
    taps = taps.reshape(n, kd * d, channels, out_h, out_w)
    full_d = (d - 1) * stride[0] + dilation[0] * (kd - 1) + 1 + output_padding[0]
    depth = [k * dilation[0] + i * stride[0] for k in range(kd) for i in range(d)]
    out_d = full_d - 2 * padding[0]
    if taps.numel() == 0:
        # An empty batch: index_add of nothing records no graph, but the (empty) result must still
        # depend on the input and weight, as PyTorch's does.
        placed = taps.sum(1, keepdim=True).expand(n, full_d, channels, out_h, out_w)
    else:
        placed = zeros((n, full_d, channels, out_h, out_w), dtype=x._dtype, device=x._device)
        placed = placed.index_add(1, tensor(depth, device=x._device), taps)
    out = slice_dim(placed, 1, padding[0], padding[0] + out_d, 1).transpose(1, 2)
    return out + bias.reshape(1, channels, 1, 1, 1) if bias is not None else out.contiguous()


@autocast_function("conv_transpose3d")
def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """3-D transposed convolution (the gradient of conv3d with respect to its input) of a
    (N, C, D, H, W) or (C, D, H, W) input with a (C, O/groups, KD, KH, KW) weight.

    >>> F.conv_transpose3d(tp.ones(1, 2, 3, 3, 3), tp.ones(2, 4, 2, 2, 2), stride=2).shape
    (1, 4, 6, 6, 6)
    """
    x, stride, padding, output_padding, dilation, batched = _check_transposed(
        "conv_transpose3d", 3, input, weight, bias, stride, padding, output_padding, groups, dilation
    )
    out = _conv_transpose3d(x, weight, bias, stride, padding, output_padding, operator.index(groups), dilation)
    return out if batched else out.squeeze(0)
