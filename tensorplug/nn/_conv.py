"""Convolutions for ``tp.nn.functional``: conv1d, conv2d, conv_transpose1d/2d (composite ops).

conv2d is im2col plus one batched matmul: the input's windows, a 6-d strided view of the padded
input copied once, are the columns (N, groups, C/groups * KH * KW, OH * OW), multiplied by the
weight viewed as (groups, O/groups, C/groups * KH * KW). Autograd never records the
decomposition, so the view's overlapping windows are fine. Its explicit derivative calls two
composite ops that backends may fuse too: conv2d_input_backward, a transposed convolution
(col2im: each kernel offset adds its columns back into a strided slice of a zero buffer), and
conv2d_weight_backward, gradient times columns; conv_transpose2d is that same input gradient.
"""
from __future__ import annotations

import operator

from ..frontend import dtypes as _dt
from ..frontend.factories import full, zeros
from ..frontend.ops import copying
from ..frontend.ops._composite import composite
from ..frontend.ops.joining import stack
from ..frontend.tensor import Tensor
from ..frontend.views import as_strided, slice_dim
from ._activations import check_tensor
from ..frontend.autocast_hook import autocast_function

__all__ = ["conv1d", "conv2d", "conv_transpose1d", "conv_transpose2d"]


# --- helpers shared with pooling ---------------------------------------------------------------
def ntuple(op: str, name: str, value, n: int) -> tuple:
    """An int or a sequence of n ints as an n-tuple."""
    if isinstance(value, (tuple, list)):
        if len(value) == 1:
            value = tuple(value) * n
        if len(value) != n:
            raise RuntimeError(
                f"{op}(): expected {name} to be a single integer value or a list of {n} values to match the "
                f"convolution dimensions, but got {name}={list(value)}"
            )
        return tuple(operator.index(v) for v in value)
    return (operator.index(value),) * n


def constant_pad(input: Tensor, pads: tuple, value) -> Tensor:
    """Pad the last ``len(pads)`` dims of ``input``; ``pads`` holds (before, after) per dim, first
    dim first. Non-negative amounts only; any fill value (pooling pads with -inf)."""
    lead = input.ndim - len(pads)
    shape = input._shape[:lead] + tuple(s + a + b for s, (a, b) in zip(input._shape[lead:], pads))
    out = full(shape, value, dtype=input._dtype, device=input._device)
    region = out
    for k, (before, _) in enumerate(pads):
        d = lead + k
        region = slice_dim(region, d, before, before + input._shape[d], 1)
    copying.copy_(region, input)
    return out


def window_slice(t: Tensor, i: int, j: int, out_size: tuple, stride: tuple, dilation: tuple) -> Tensor:
    """The (N, C, OH, OW) view of ``t`` that kernel offset (i, j) sees."""
    oh, ow = out_size
    top, left = i * dilation[0], j * dilation[1]
    rows = slice_dim(t, 2, top, top + stride[0] * (oh - 1) + 1, stride[0])
    return slice_dim(rows, 3, left, left + stride[1] * (ow - 1) + 1, stride[1])


def windows(padded: Tensor, kernel: tuple, stride: tuple, dilation: tuple, out_size: tuple) -> Tensor:
    """im2col: (N, C, KH * KW, OH, OW), every kernel offset's view of ``padded`` stacked."""
    views = [window_slice(padded, i, j, out_size, stride, dilation) for i in range(kernel[0]) for j in range(kernel[1])]
    return stack(views, 2)


def im2col(padded: Tensor, kernel: tuple, stride: tuple, dilation: tuple, out_size: tuple) -> Tensor:
    """What :func:`windows` gives, (N, C, KH * KW, OH, OW), as one strided copy: the windows are a
    6-d view (N, C, KH, KW, OH, OW) of ``padded``, copied once (one kernel launch where windows
    stacks KH * KW slices). The view's windows overlap, so this is only for code under an explicit
    derivative (conv2d's composites), where autograd never records the decomposition."""
    n, c = padded._shape[:2]
    sn, sc, sh, sw = padded._stride
    shape = (n, c, kernel[0], kernel[1], out_size[0], out_size[1])
    strides = (sn, sc, sh * dilation[0], sw * dilation[1], sh * stride[0], sw * stride[1])
    view = as_strided(padded, shape, strides, padded._offset)
    return copying.contiguous(view).reshape(n, c, kernel[0] * kernel[1], out_size[0], out_size[1])


def col2im(columns, shape: tuple, kernel: tuple, stride: tuple, dilation: tuple, out_size: tuple, dtype, dev) -> Tensor:
    """Sum columns back into a zero tensor of ``shape`` (N, C, H, W): the adjoint of
    :func:`windows`. ``columns(i, j)`` gives the (N, C, OH, OW) values of offset (i, j)."""
    result = zeros(shape, dtype=dtype, device=dev)
    for i in range(kernel[0]):
        for j in range(kernel[1]):
            window_slice(result, i, j, out_size, stride, dilation).add_(columns(i, j))
    return result


def conv_out_size(size: int, kernel: int, stride: int, padding: int, dilation: int) -> int:
    return (size + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1


# --- conv2d --------------------------------------------------------------------------------
def _transposed_core(input, weight, stride, padding, dilation, groups, out_hw, output_padding):
    """col2im(weight^T @ input): conv_transpose2d without bias, cropped to ``out_hw``."""
    if input._dtype in (_dt.float16, _dt.bfloat16):
        # Each output sums up to kh * kw column entries: in 8 or 11 bits every partial sum would
        # be rounded (5 ulps off seen in bfloat16), so accumulate in float32 and round once.
        result = _transposed_core(input.float(), weight.float(), stride, padding, dilation, groups, out_hw, output_padding)
        return result.to(input._dtype)
    n, cin, ih, iw = input._shape
    _, og, kh, kw = weight._shape
    g = groups
    w = weight.reshape(g, cin // g, og * kh * kw).transpose(-1, -2)
    columns = (w @ input.reshape(n, g, cin // g, ih * iw)).reshape(n, g * og, kh, kw, ih, iw)
    full_h = (ih - 1) * stride[0] + dilation[0] * (kh - 1) + 1 + output_padding[0]
    full_w = (iw - 1) * stride[1] + dilation[1] * (kw - 1) + 1 + output_padding[1]
    result = col2im(
        lambda i, j: columns[:, :, i, j], (n, g * og, full_h, full_w), (kh, kw), stride, dilation, (ih, iw),
        input._dtype, input._device,
    )
    if padding == (0, 0) and (full_h, full_w) == out_hw:
        return result
    rows = slice_dim(result, 2, padding[0], padding[0] + out_hw[0], 1)
    return slice_dim(rows, 3, padding[1], padding[1] + out_hw[1], 1)


def _conv2d_backward(grad, args, output, kwargs, needs):
    input, weight, bias, stride, padding, dilation, groups = args
    grad_input = grad_weight = grad_bias = None
    if needs[0]:
        grad_input = _conv2d_input_backward(grad, weight, input._shape, stride, padding, dilation, groups)
    if needs[1]:
        grad_weight = _conv2d_weight_backward(grad, input, weight._shape, stride, padding, dilation, groups)
    if len(needs) > 2 and needs[2]:
        grad_bias = grad.sum((0, 2, 3))
    return grad_input, grad_weight, grad_bias


# The two halves of conv2d's gradient are ops of their own, so that a backend can fuse them as it
# fuses conv2d. Each is linear in both tensor arguments, and their derivatives are conv2d and each
# other (which also gives conv2d's second derivatives).
def _input_backward_derivative(grad, args, output, kwargs, needs):
    output_grad, weight, input_shape, stride, padding, dilation, groups = args
    geometry = (stride, padding, dilation, groups)
    grad_output_grad = _conv2d(grad, weight, None, *geometry) if needs[0] else None
    grad_weight = _conv2d_weight_backward(output_grad, grad, weight._shape, *geometry) if needs[1] else None
    return grad_output_grad, grad_weight


@composite("conv2d_input_backward", derivative=_input_backward_derivative, differentiable=(0, 1))
def _conv2d_input_backward(grad, weight, input_shape, stride, padding, dilation, groups):
    """The gradient of conv2d with respect to its (N, C, H, W) input: col2im(weight^T @ grad)."""
    h, w = input_shape[2:]
    kh, kw = weight._shape[2:]
    oh, ow = grad._shape[2:]
    output_padding = tuple(
        size + 2 * p - ((o - 1) * s + d * (k - 1) + 1)
        for size, p, o, s, d, k in zip((h, w), padding, (oh, ow), stride, dilation, (kh, kw))
    )
    return _transposed_core(grad, weight, stride, padding, dilation, groups, (h, w), output_padding)


def _weight_backward_derivative(grad, args, output, kwargs, needs):
    output_grad, input, weight_shape, stride, padding, dilation, groups = args
    geometry = (stride, padding, dilation, groups)
    grad_output_grad = _conv2d(input, grad, None, *geometry) if needs[0] else None
    grad_input = _conv2d_input_backward(output_grad, grad, input._shape, *geometry) if needs[1] else None
    return grad_output_grad, grad_input


@composite("conv2d_weight_backward", derivative=_weight_backward_derivative, differentiable=(0, 1))
def _conv2d_weight_backward(grad, input, weight_shape, stride, padding, dilation, groups):
    """The gradient of conv2d with respect to its (O, C/groups, KH, KW) weight: the sum over images
    of grad @ im2col(input)^T."""
    n = input._shape[0]
    o, cg, kh, kw = weight_shape
    oh, ow = grad._shape[2:]
    padded = constant_pad(input, ((padding[0], padding[0]), (padding[1], padding[1])), 0.0) if any(padding) else input
    columns = im2col(padded, (kh, kw), stride, dilation, (oh, ow)).reshape(n, groups, cg * kh * kw, oh * ow)
    per_sample = grad.reshape(n, groups, o // groups, oh * ow) @ columns.transpose(-1, -2)
    return per_sample.sum(0).reshape(o, cg, kh, kw)


@composite("conv2d", derivative=_conv2d_backward, differentiable=(0, 1, 2))
def _conv2d(input, weight, bias, stride, padding, dilation, groups):
    n, c, h, w = input._shape
    o, cg, kh, kw = weight._shape
    oh = conv_out_size(h, kh, stride[0], padding[0], dilation[0])
    ow = conv_out_size(w, kw, stride[1], padding[1], dilation[1])
    padded = constant_pad(input, ((padding[0], padding[0]), (padding[1], padding[1])), 0.0) if any(padding) else input
    columns = im2col(padded, (kh, kw), stride, dilation, (oh, ow)).reshape(n, groups, cg * kh * kw, oh * ow)
    out = (weight.reshape(groups, o // groups, cg * kh * kw) @ columns).reshape(n, o, oh, ow)
    if bias is not None:
        out = out + bias.reshape(1, o, 1, 1)
    return out


def _check_conv_args(op: str, nd: int, input, weight, bias, stride, padding, dilation, groups, transposed=False):
    """Validate like PyTorch; return (input batched, stride, padding or 'same', dilation, batched?)."""
    check_tensor(op, input)
    check_tensor(op, weight, "weight")
    if bias is not None:
        check_tensor(op, bias, "bias")
    if input.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(
            f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to {op}, but got input of size: {list(input._shape)}"
        )
    if weight.ndim != nd + 2:
        raise RuntimeError(
            f"{op}(): expected {nd + 2}-dimensional weight for {input.ndim}-dimensional input {list(input._shape)}, "
            f"but got {weight.ndim}-dimensional weight of size {list(weight._shape)} instead"
        )
    if input._dtype is not weight._dtype or (bias is not None and bias._dtype is not input._dtype):
        other = weight if input._dtype is not weight._dtype else bias
        what = "weight" if other is weight else "bias"
        raise RuntimeError(f"{op}(): Input type ({input._dtype.name}) and {what} type ({other._dtype.name}) should be the same")
    if not input._dtype.is_floating_point:
        raise RuntimeError(f"{op}(): expected a floating-point input, but got {input._dtype.name}")
    if input._device is not weight._device:
        raise RuntimeError(f"{op}(): expected input and weight on the same device, but got {input._device} and {weight._device}")
    batched = input.ndim == nd + 2
    x = input if batched else input.unsqueeze(0)
    stride = ntuple(op, "stride", stride, nd)
    dilation = ntuple(op, "dilation", dilation, nd)
    if isinstance(padding, str):
        if padding not in ("same", "valid"):
            raise RuntimeError(f"Invalid padding string: '{padding}'")
        if padding == "same" and any(s != 1 for s in stride):
            raise RuntimeError("padding='same' is not supported for strided convolutions")
    else:
        padding = ntuple(op, "padding", padding, nd)
        if any(p < 0 for p in padding):
            raise RuntimeError("negative padding is not supported")
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(d <= 0 for d in dilation):
        raise RuntimeError("dilation should be greater than zero")
    groups = operator.index(groups)
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    channels = x._shape[1]
    if weight._shape[0] % groups:
        raise RuntimeError(
            f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, but got weight of "
            f"size [{list(weight._shape)}] instead"
        )
    if transposed:
        if channels != weight._shape[0]:
            raise RuntimeError(
                f"Given transposed=1, weight of size {list(weight._shape)}, expected input{list(x._shape if batched else input._shape)} "
                f"to have {weight._shape[0]} channels, but got {channels} channels instead"
            )
        out_channels = weight._shape[1] * groups
    else:
        if channels != weight._shape[1] * groups:
            raise RuntimeError(
                f"Given groups={groups}, weight of size {list(weight._shape)}, expected input{list(input._shape)} to have "
                f"{weight._shape[1] * groups} channels, but got {channels} channels instead"
            )
        out_channels = weight._shape[0]
    if bias is not None and (bias.ndim != 1 or bias._shape[0] != out_channels):
        raise RuntimeError(
            f"Given weight of size {list(weight._shape)}, expected bias to be 1-dimensional with {out_channels} elements, "
            f"but got bias of size {list(bias._shape)} instead"
        )
    return x, stride, padding, dilation, batched


def _same_padding(x: Tensor, weight: Tensor, dilation: tuple, nd: int):
    """padding='same': symmetric padding, plus one extra row/column at the end when the total is
    odd (as PyTorch does), applied to the input directly."""
    symmetric, extra = [], []
    for k, d in zip(weight._shape[2:], dilation):
        total = d * (k - 1)
        symmetric.append(total // 2)
        extra.append(total - 2 * (total // 2))
    if any(extra):
        x = constant_pad(x, tuple((0, e) for e in extra), 0.0)
    return x, tuple(symmetric)


def _check_kernel_fits(op: str, spatial: tuple, padding: tuple, kernel: tuple, dilation: tuple) -> None:
    padded = tuple(s + 2 * p for s, p in zip(spatial, padding))
    effective = tuple(d * (k - 1) + 1 for k, d in zip(kernel, dilation))
    if any(e > p for e, p in zip(effective, padded)):
        raise RuntimeError(
            f"{op}(): Calculated padded input size per channel: ({' x '.join(map(str, padded))}). "
            f"Kernel size: ({' x '.join(map(str, effective))}). Kernel size can't be greater than actual input size"
        )


@autocast_function("conv2d")
def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-D convolution (cross-correlation) of a (N, C, H, W) or (C, H, W) input.

    >>> conv2d(tp.randn(1, 3, 8, 8), tp.randn(4, 3, 3, 3), padding=1).shape
    (1, 4, 8, 8)
    """
    x, stride, padding, dilation, batched = _check_conv_args("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)
    if padding == "valid":
        padding = (0, 0)
    elif padding == "same":
        x, padding = _same_padding(x, weight, dilation, 2)
    _check_kernel_fits("conv2d", x._shape[2:], padding, weight._shape[2:], dilation)
    out = _conv2d(x, weight, bias, stride, padding, dilation, operator.index(groups))
    return out if batched else out.squeeze(0)


@autocast_function("conv1d")
def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-D convolution of a (N, C, L) or (C, L) input (a conv2d over a height of one)."""
    x, stride, padding, dilation, batched = _check_conv_args("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)
    if padding == "valid":
        padding = (0,)
    elif padding == "same":
        x, padding = _same_padding(x, weight, dilation, 1)
    _check_kernel_fits("conv1d", x._shape[2:], padding, weight._shape[2:], dilation)
    out = _conv2d(x.unsqueeze(2), weight.unsqueeze(2), bias, (1,) + stride, (0,) + padding, (1,) + dilation, operator.index(groups))
    out = out.squeeze(2)
    return out if batched else out.squeeze(0)


# --- transposed convolutions -------------------------------------------------------------
@composite("conv_transpose2d")
def _conv_transpose2d(input, weight, bias, stride, padding, output_padding, groups, dilation):
    n, cin, ih, iw = input._shape
    kh, kw = weight._shape[2:]
    out_hw = tuple(
        (size - 1) * s - 2 * p + d * (k - 1) + op + 1
        for size, s, p, d, k, op in zip((ih, iw), stride, padding, dilation, (kh, kw), output_padding)
    )
    if all(o < s for o, s in zip(output_padding, stride)):
        # A conv2d with this geometry maps the output back to the input's size: the transposed
        # convolution is that conv2d's input gradient (a fused kernel where the backend has one).
        shape = (n, weight._shape[1] * groups) + out_hw
        out = _conv2d_input_backward(input, weight, shape, stride, padding, dilation, groups)
    else:
        out = _transposed_core(input, weight, stride, padding, dilation, groups, out_hw, output_padding)
    if bias is not None:
        out = out + bias.reshape(1, -1, 1, 1)
    return out


def _check_transposed(op, nd, input, weight, bias, stride, padding, output_padding, groups, dilation):
    if isinstance(padding, str):
        raise RuntimeError(f"{op}(): padding must be an int or a tuple of ints, not '{padding}'")
    x, stride, padding, dilation, batched = _check_conv_args(op, nd, input, weight, bias, stride, padding, dilation, groups, True)
    output_padding = ntuple(op, "output_padding", output_padding, nd)
    for o, s, d in zip(output_padding, stride, dilation):
        if o < 0 or (o >= s and o >= d):
            raise RuntimeError(
                f"{op}(): output padding must be smaller than either stride or dilation, but got "
                f"output_padding={list(output_padding)}, stride={list(stride)}, dilation={list(dilation)}"
            )
    for size, s, p, d, k, o in zip(x._shape[2:], stride, padding, dilation, weight._shape[2:], output_padding):
        if (size - 1) * s - 2 * p + d * (k - 1) + o + 1 <= 0:
            raise RuntimeError(f"{op}(): given input size {list(x._shape)}, the calculated output size is non-positive")
    return x, stride, padding, output_padding, dilation, batched


@autocast_function("conv_transpose2d")
def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """2-D transposed convolution (the gradient of conv2d with respect to its input)."""
    x, stride, padding, output_padding, dilation, batched = _check_transposed(
        "conv_transpose2d", 2, input, weight, bias, stride, padding, output_padding, groups, dilation
    )
    out = _conv_transpose2d(x, weight, bias, stride, padding, output_padding, operator.index(groups), dilation)
    return out if batched else out.squeeze(0)


@autocast_function("conv_transpose1d")
def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    x, stride, padding, output_padding, dilation, batched = _check_transposed(
        "conv_transpose1d", 1, input, weight, bias, stride, padding, output_padding, groups, dilation
    )
    out = _conv_transpose2d(
        x.unsqueeze(2), weight.unsqueeze(2), bias, (1,) + stride, (0,) + padding, (0,) + output_padding,
        operator.index(groups), (1,) + dilation,
    ).squeeze(2)
    return out if batched else out.squeeze(0)

