"""``F.unfold`` / ``F.fold``: sliding local blocks out of and back into an (N, C, H, W) batch.

unfold is the im2col that conv2d uses (``_conv.windows``, one strided slice per kernel offset,
stacked) flattened to PyTorch's (N, C * KH * KW, L) layout; fold is its adjoint, ``_conv.col2im``
summing each offset's columns into a zero buffer, then cropped by the padding. Both are written with
slices, stack, copies and in-place adds, so every backend runs them and autograd differentiates
them through those ops.
"""
from __future__ import annotations

from ..frontend.tensor import Tensor
from ..frontend.views import slice_dim
from ._activations import check_tensor
from ._conv import col2im, constant_pad, conv_out_size, ntuple, windows

__all__ = ["unfold", "fold"]


def _block_args(op: str, kernel_size, dilation, padding, stride) -> tuple:
    kernel = ntuple(op, "kernel_size", kernel_size, 2)
    dil = ntuple(op, "dilation", dilation, 2)
    pad = ntuple(op, "padding", padding, 2)
    step = ntuple(op, "stride", stride, 2)
    checks = (("kernel size", "kernel", kernel, 1), ("dilation", "dilation", dil, 1), ("stride", "stride", step, 1),
              ("padding", "pad", pad, 0))
    for name, short, value, low in checks:
        if min(value) < low:
            relation = "greater than zero" if low else "non-negative"
            raise RuntimeError(f"{name} should be {relation}, but got {short}_height: {value[0]} {short}_width: {value[1]}")
    return kernel, dil, pad, step


def _blocks(spatial: tuple, kernel: tuple, dilation: tuple, padding: tuple, stride: tuple) -> tuple:
    """Sliding blocks along each dim: a convolution's output size."""
    return tuple(conv_out_size(s, k, st, p, d) for s, k, d, p, st in zip(spatial, kernel, dilation, padding, stride))


def unfold(input: Tensor, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """The sliding blocks of a (N, C, H, W) or (C, H, W) input as columns (N, C * KH * KW, L).

    >>> import tensorplug as tp
    >>> unfold(tp.arange(9.0).view(1, 1, 3, 3), 2).shape
    (1, 4, 4)
    """
    check_tensor("unfold", input)
    kernel, dil, pad, step = _block_args("unfold", kernel_size, dilation, padding, stride)
    if input.ndim not in (3, 4) or any(s == 0 for s in input._shape[1:]):
        raise RuntimeError(
            "Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and other non-zero dimensions for "
            f"input, but got: {list(input._shape)}")
    batched = input.ndim == 4
    x = input if batched else input.unsqueeze(0)
    n, c, h, w = x._shape
    out_h, out_w = _blocks((h, w), kernel, dil, pad, step)
    if out_h < 1 or out_w < 1:
        raise RuntimeError(
            f"Given input with spatial size ({h}, {w}), kernel_size=({kernel[0]}, {kernel[1]}), dilation=({dil[0]}, "
            f"{dil[1]}), padding=({pad[0]}, {pad[1]}), calculated shape of the array of sliding blocks as "
            f"({out_h}, {out_w}), but its components must be at least one.")
    padded = x if pad == (0, 0) else constant_pad(x, ((pad[0], pad[0]), (pad[1], pad[1])), 0)
    columns = windows(padded, kernel, step, dil, (out_h, out_w)).reshape(n, c * kernel[0] * kernel[1], out_h * out_w)
    return columns if batched else columns.squeeze(0)


def fold(input: Tensor, output_size, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """Sum columns (N, C * KH * KW, L) or (C * KH * KW, L) back into (N, C, H, W) or (C, H, W);
    overlapping blocks add up. The adjoint of :func:`unfold`.

    >>> import tensorplug as tp
    >>> fold(tp.ones(1, 4, 4), (3, 3), 2)[0, 0].tolist()
    [[1.0, 2.0, 1.0], [2.0, 4.0, 2.0], [1.0, 2.0, 1.0]]
    """
    check_tensor("fold", input)
    size = ntuple("fold", "output_size", output_size, 2)
    kernel, dil, pad, step = _block_args("fold", kernel_size, dilation, padding, stride)
    if min(size) < 1:
        raise RuntimeError(f"output should be greater than zero, but got output_height: {size[0]} output_width: {size[1]}")
    if input.ndim not in (2, 3) or any(s == 0 for s in input._shape[1:]):
        raise RuntimeError(
            "Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and non-zero dimensions for "
            f"input, but got: {list(input._shape)}")
    batched = input.ndim == 3
    x = input if batched else input.unsqueeze(0)
    n, rows, count = x._shape
    per_block = kernel[0] * kernel[1]
    if rows % per_block:
        raise RuntimeError(
            "Expected size of input's dimension 1 to be divisible by the product of kernel_size, but got "
            f"input.size(1)={rows} and kernel_size=({kernel[0]}, {kernel[1]}).")
    out_h, out_w = _blocks(size, kernel, dil, pad, step)
    if out_h * out_w != count:
        raise RuntimeError(
            f"Given output_size=({size[0]}, {size[1]}), kernel_size=({kernel[0]}, {kernel[1]}), dilation=({dil[0]}, "
            f"{dil[1]}), padding=({pad[0]}, {pad[1]}), stride=({step[0]}, {step[1]}), expected size of input's "
            f"dimension 2 to match the calculated number of sliding blocks {out_h} * {out_w} = {out_h * out_w}, but "
            f"got input.size(2)={count}.")
    if out_h < 1 or out_w < 1:
        raise RuntimeError(
            f"Given output_size=({size[0]}, {size[1]}), kernel_size=({kernel[0]}, {kernel[1]}), dilation=({dil[0]}, "
            f"{dil[1]}), padding=({pad[0]}, {pad[1]}), stride=({step[0]}, {step[1]}), calculated shape of the array "
            f"of sliding blocks as ({out_h}, {out_w}), but its components must be at least one.")
    c = rows // per_block
    columns = x.reshape(n, c, kernel[0], kernel[1], out_h, out_w)
    full_hw = (size[0] + 2 * pad[0], size[1] + 2 * pad[1])
    result = col2im(lambda i, j: columns[:, :, i, j], (n, c) + full_hw, kernel, step, dil, (out_h, out_w),
                    x._dtype, x._device)
    if pad != (0, 0):
        result = slice_dim(slice_dim(result, 2, pad[0], pad[0] + size[0], 1), 3, pad[1], pad[1] + size[1], 1)
    return result if batched else result.squeeze(0)
