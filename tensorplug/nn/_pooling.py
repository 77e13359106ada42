"""Pooling and resampling for ``tp.nn.functional``: max/avg pooling, adaptive average pooling
and interpolate.

max_pool2d and avg_pool2d reduce the stacked windows of a padded input (see ``_conv.windows``)
and carry explicit derivatives: max pooling sends each gradient to the element PyTorch picks in
its window, the first maximum or the last NaN (``max_offset``; amax's own derivative would
split ties), through the op max_pool2d_backward, which backends may fuse as they fuse
max_pool2d and max_pool2d_with_indices; a backend that fuses max_pool2d_with_indices_backward
gets the forward's indices in training instead, and scatters through them. Average pooling
spreads the gradient back over each window with col2im, through the op avg_pool2d_backward,
which backends may fuse too. Adaptive pooling and interpolation are products with small
resampling matrices built from the shapes alone, one matrix per spatial dim.
"""
from __future__ import annotations

import math

import numpy as np

from .. import dispatcher
from ..backends import _registry
from ..dispatcher import Operator
from ..frontend import dtypes as _dt
from ..frontend.factories import arange, tensor, zeros
from ..frontend.ops import reductions
from ..frontend.ops.elementwise import where
from ..frontend.autocast_hook import autocast_function
from ..frontend.autograd import Function, is_grad_enabled
from ..frontend.ops._composite import composite
from ..frontend.tensor import Tensor
from ._activations import check_tensor
from ._conv import col2im, constant_pad, windows

__all__ = [
    "max_pool1d", "max_pool2d", "avg_pool1d", "avg_pool2d", "adaptive_avg_pool1d", "adaptive_avg_pool2d",
    "adaptive_max_pool1d", "adaptive_max_pool2d", "interpolate", "upsample",
]


def _pair(op: str, name: str, value) -> tuple:
    if isinstance(value, (tuple, list)):
        if len(value) == 1:
            return (int(value[0]),) * 2
        if len(value) != 2:
            raise RuntimeError(f"{op}(): {name} must either be a single int, or a tuple of two ints")
        return tuple(int(v) for v in value)
    return (int(value),) * 2


def _pool_out(size: int, k: int, s: int, p: int, d: int, ceil_mode: bool) -> int:
    span = size + 2 * p - d * (k - 1) - 1
    out = (span + (s - 1 if ceil_mode else 0)) // s + 1
    # The last window must start inside the input or its left padding.
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1
    return out


def _pool_geometry(op, input, kernel_size, stride, padding, dilation, ceil_mode):
    """Validate a 2-D pooling call; return (4-D input, kernel, stride, padding, dilation, out, batched)."""
    check_tensor(op, input)
    if input.ndim not in (3, 4):
        raise RuntimeError(f"{op}(): Expected 3D or 4D (batch mode) tensor for input, but got input of size: {list(input._shape)}")
    kernel = _pair(op, "kernel_size", kernel_size)
    stride = kernel if stride is None or (isinstance(stride, (tuple, list)) and len(stride) == 0) else _pair(op, "stride", stride)
    padding, dilation = _pair(op, "padding", padding), _pair(op, "dilation", dilation)
    if any(k <= 0 for k in kernel):
        raise RuntimeError(f"{op}(): kernel size should be greater than zero, but got kH: {kernel[0]} kW: {kernel[1]}")
    if any(s <= 0 for s in stride):
        raise RuntimeError(f"{op}(): stride should be greater than zero, but got dH: {stride[0]} dW: {stride[1]}")
    if any(d <= 0 for d in dilation):
        raise RuntimeError(f"{op}(): dilation should be greater than zero, but got dilationH: {dilation[0]} dilationW: {dilation[1]}")
    for p, k, d in zip(padding, kernel, dilation):
        if p < 0 or p > ((k - 1) * d + 1) // 2:
            raise RuntimeError(
                f"{op}(): pad should be at most half of effective kernel size, but got pad={p}, kernel_size={k} and dilation={d}"
            )
    # Max pooling also bounds the padding by the undilated kernel, as PyTorch does.
    if op == "max_pool2d" and (padding[0] > kernel[0] // 2 or padding[1] > kernel[1] // 2):
        raise RuntimeError(
            f"{op}(): pad should be smaller than or equal to half of kernel size, but got padW = {padding[1]}, "
            f"padH = {padding[0]}, kW = {kernel[1]}, kH = {kernel[0]}"
        )
    batched = input.ndim == 4
    x = input if batched else input.unsqueeze(0)
    c, h, w = x._shape[1:]
    out = tuple(_pool_out(size, k, s, p, d, ceil_mode) for size, k, s, p, d in zip((h, w), kernel, stride, padding, dilation))
    if out[0] < 1 or out[1] < 1:
        raise RuntimeError(
            f"{op}(): Given input size: ({c}x{h}x{w}). Calculated output size: ({c}x{out[0]}x{out[1]}). Output size is too small"
        )
    return x, kernel, stride, padding, dilation, out, batched


def _padded(input: Tensor, kernel, stride, padding, dilation, out, value) -> Tensor:
    """``input`` padded by ``padding`` on each side, plus whatever ceil_mode's last windows need."""
    pads = []
    for size, k, s, p, d, o in zip(input._shape[2:], kernel, stride, padding, dilation, out):
        needed = (o - 1) * s + d * (k - 1) + 1
        pads.append((p, max(p, needed - size - p)))
    if not any(a or b for a, b in pads):
        return input
    return constant_pad(input, tuple(pads), value)


def _lowest(dtype):
    if dtype.is_floating_point:
        return float("-inf")
    return int(np.iinfo(np.dtype(dtype.name)).min) if dtype.name != "bool" else False


# --- max pooling ---------------------------------------------------------------------------
def max_offset(windows: Tensor, dim: int) -> Tensor:
    """Offset along ``dim`` of the element each window's max pooling picks, as PyTorch 2.13 picks
    it: the last NaN where the window holds any (its kernels take ``val > max || isnan(val)``),
    else the first maximum (argmax's rule, which alone would pick the first NaN)."""
    first = reductions.argmax(windows, dim)
    if not windows._dtype.is_floating_point:
        return first
    size = windows._shape[dim]
    shape = [size if d == dim else 1 for d in range(windows.ndim)]
    rank = arange(1, size + 1, device=windows._device).reshape(shape)
    last_nan = reductions.amax(where(windows.isnan(), rank, 0), dim)  # 1 + the last NaN's offset; 0: none
    return where(last_nan > 0, last_nan - 1, first)


def _max_indices(input, kernel, stride, padding, dilation, ceil_mode):
    """Flat (H * W) index of each window's maximum (``max_offset``), as PyTorch's return_indices."""
    h, w = input._shape[2:]
    out = tuple(_pool_out(size, k, s, p, d, ceil_mode) for size, k, s, p, d in zip((h, w), kernel, stride, padding, dilation))
    padded = _padded(input, kernel, stride, padding, dilation, out, _lowest(input._dtype))
    offset = max_offset(windows(padded, kernel, stride, dilation, out), 2)
    dev = input._device
    rows = arange(out[0], device=dev).reshape(out[0], 1) * stride[0] - padding[0] + (offset // kernel[1]) * dilation[0]
    cols = arange(out[1], device=dev) * stride[1] - padding[1] + (offset % kernel[1]) * dilation[1]
    # A window whose elements all equal the padding value (-inf, or an integer dtype's lowest)
    # has its first maximum in the padding: PyTorch names its first row and column inside the
    # input instead (an index that max_unpool2d and the gradient can use).
    starts = []
    for size, k, s, p, d, o in zip((h, w), kernel, stride, padding, dilation, out):
        positions = (np.arange(o) * s - p)[:, None] + (np.arange(k) * d)[None, :]
        starts.append(first_valid(positions, (positions >= 0) & (positions < size)))
    if padding[0]:
        rows = where(rows < 0, tensor(starts[0].reshape(out[0], 1), device=dev), rows)
    if padding[1]:
        cols = where(cols < 0, tensor(starts[1], device=dev), cols)
    return rows * w + cols


def first_valid(positions: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """Each window's first position inside the input: ``positions`` (windows, taps) are the input
    positions a window reads in order, ``valid`` says which lie inside (at least one per window)."""
    return positions[np.arange(positions.shape[0]), valid.argmax(1)]


def _max_pool2d_values(input, kernel, stride, padding, dilation, ceil_mode):
    h, w = input._shape[2:]
    out = tuple(_pool_out(size, k, s, p, d, ceil_mode) for size, k, s, p, d in zip((h, w), kernel, stride, padding, dilation))
    padded = _padded(input, kernel, stride, padding, dilation, out, _lowest(input._dtype))
    return reductions.amax(windows(padded, kernel, stride, dilation, out), 2)


def _with_indices_decomposition(input, kernel, stride, padding, dilation, ceil_mode):
    args = (input, kernel, stride, padding, dilation, ceil_mode)
    return _max_pool2d_values(*args), _max_indices(*args)


# max_pool2d_with_indices returns (values, indices), which no derivative can describe: it is a
# composite op that is not differentiable (a backend may still fuse it). Gradients flow through
# max_pool2d, whose derivative is max_pool2d_backward.
_WITH_INDICES = Operator("max_pool2d_with_indices", decomposition=_with_indices_decomposition, differentiable=False)


def _max_pool2d_with_indices(input, kernel, stride, padding, dilation, ceil_mode):
    """(values, flat H * W index of each window's maximum, as ``max_offset`` picks it) of a
    (N, C, H, W) input, without gradient."""
    args = (input.detach(), kernel, stride, padding, dilation, ceil_mode)
    return _WITH_INDICES.lookup(dispatcher.keyset_of(args, {}))(*args)


def _max_pool2d_backward(grad, args, output, kwargs, needs):
    return (_max_pool2d_grad(grad, *args),)


@composite("max_pool2d", derivative=_max_pool2d_backward)
def _max_pool2d(input, kernel, stride, padding, dilation, ceil_mode):
    return _max_pool2d_values(input, kernel, stride, padding, dilation, ceil_mode)


def _gather_windows(grad, input, geometry) -> Tensor:
    """grad (shaped as input) at each window's maximum: the adjoint of max_pool2d_backward."""
    return _gather_at(grad, _max_pool2d_with_indices(input, *geometry)[1])


def _max_pool2d_grad_backward(grad, args, output, kwargs, needs):
    return (_gather_windows(grad, args[1], args[2:]),)


@composite("max_pool2d_backward", derivative=_max_pool2d_grad_backward)
def _max_pool2d_grad(grad, input, kernel, stride, padding, dilation, ceil_mode):
    """max_pool2d's gradient: each output's gradient added into the input element it came from
    (the window's first maximum, or its last NaN). Linear in grad; the window positions carry no
    gradient."""
    n, c, h, w = input._shape
    indices = _max_pool2d_with_indices(input, kernel, stride, padding, dilation, ceil_mode)[1]
    flat = zeros((n, c, h * w), dtype=grad._dtype, device=grad._device)
    return flat.scatter_add(2, indices.reshape(n, c, -1), grad.reshape(n, c, -1)).reshape(n, c, h, w)


def _indices_grad_backward(grad, args, output, kwargs, needs):
    return (_gather_at(grad, args[2]),)


def _gather_at(grad, indices) -> Tensor:
    """grad (N, C, H, W) at each flat H * W index of ``indices`` (N, C, OH, OW)."""
    n, c = indices._shape[:2]
    return grad.reshape(n, c, -1).gather(2, indices.reshape(n, c, -1)).reshape(indices._shape)


@composite("max_pool2d_with_indices_backward", derivative=_indices_grad_backward)
def _max_pool2d_indices_grad(grad, input, indices, kernel, stride, padding, dilation, ceil_mode):
    """max_pool2d's gradient through the forward's indices: each output's gradient added into the
    input element its index names. Linear in grad (its derivative gathers at the indices)."""
    n, c, h, w = input._shape
    flat = zeros((n, c, h * w), dtype=grad._dtype, device=grad._device)
    return flat.scatter_add(2, indices.reshape(n, c, -1), grad.reshape(n, c, -1)).reshape(n, c, h, w)


class _MaxPool2dWithIndices(Function):
    """max_pool2d in training where the backend fuses max_pool2d_with_indices_backward: the
    forward's indices are kept for the gradient instead of searching every window again."""

    @staticmethod
    def forward(ctx, input, kernel, stride, padding, dilation, ceil_mode):
        values, indices = _max_pool2d_with_indices(input, kernel, stride, padding, dilation, ceil_mode)
        ctx.geometry = (kernel, stride, padding, dilation, ceil_mode)
        ctx.save_for_backward(input.detach(), indices)
        ctx.mark_non_differentiable(indices)
        return values, indices

    @staticmethod
    def backward(ctx, grad, grad_indices):
        input, indices = ctx.saved_tensors
        return (_max_pool2d_indices_grad(grad, input, indices, *ctx.geometry),) + (None,) * 5


def _backend_has(x: Tensor, op) -> bool:
    return _registry.backend_key(x._device.type) in op.kernels


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """Maximum over each window; padding counts as -inf. With ``return_indices``, also the flat
    index (within each H x W plane) of every maximum."""
    x, kernel, stride, padding, dilation, out, batched = _pool_geometry(
        "max_pool2d", input, kernel_size, stride, padding, dilation, ceil_mode
    )
    args = (x, kernel, stride, padding, dilation, bool(ceil_mode))
    # Training keeps the forward's indices for the gradient where the backend fuses the gradient
    # through them (one scatter pass; CPU CNN step, busy machine: 4.7 ms against 13.4 for
    # max_pool2d_backward's second search). Where it fuses neither, the values are gathered at
    # the indices, so that backward is a scatter-add through them; where it fuses only
    # max_pool2d_backward, that searches again faster than a gather and a scatter cost.
    training = x.requires_grad and is_grad_enabled()
    if training and _backend_has(x, _max_pool2d_indices_grad.op):
        values, indices = _MaxPool2dWithIndices.apply(*args)
    else:
        gathered = training and not _backend_has(x, _max_pool2d_grad.op)
        if gathered or return_indices:
            values, indices = _max_pool2d_with_indices(*args)
        if gathered:
            values = _gather_at(x, indices)
        elif training or not return_indices:
            values = _max_pool2d(*args)
    if not batched:
        values = values.squeeze(0)
    if not return_indices:
        return values
    return values, indices if batched else indices.squeeze(0)


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    check_tensor("max_pool1d", input)
    if input.ndim not in (2, 3):
        raise RuntimeError(f"max_pool1d(): Expected 2D or 3D input, but got input of size: {list(input._shape)}")
    one = lambda v: (1, v[0] if isinstance(v, (tuple, list)) else v)  # noqa: E731
    result = max_pool2d(
        input.unsqueeze(-2), one(kernel_size), None if stride is None else one(stride), (0, padding if not isinstance(padding, (tuple, list)) else padding[0]),
        one(dilation), ceil_mode, return_indices,
    )
    if return_indices:
        return result[0].squeeze(-2), result[1].squeeze(-2)
    return result.squeeze(-2)


# --- average pooling -------------------------------------------------------------------------
def _avg_divisor(hw, kernel, stride, padding, out, count_include_pad, divisor_override, dtype, dev) -> Tensor:
    """The (OH, OW) divisor of each window, as PyTorch counts it."""
    if divisor_override:
        return tensor(np.full(out, float(divisor_override)), dtype=dtype, device=dev)
    counts = [window_counts(size, k, s, p, o, count_include_pad) for size, k, s, p, o in zip(hw, kernel, stride, padding, out)]
    return tensor(np.outer(counts[0], counts[1]).astype(np.float64), dtype=dtype, device=dev)


def window_counts(size: int, k: int, s: int, p: int, out: int, count_include_pad: bool) -> np.ndarray:
    """How many elements each of the ``out`` windows of one dim averages, as PyTorch counts them:
    a window ends at most at the far padding's end; without ``count_include_pad`` only the
    input's own elements count. A window's divisor is the product of its dims' counts."""
    start = np.arange(out) * s - p
    end = np.minimum(start + k, size + p)
    if count_include_pad:
        return end - start
    return np.minimum(end, size) - np.maximum(start, 0)


def _avg_pool2d_grad_backward(grad, args, output, kwargs, needs):
    return (_avg_pool2d(grad, *args[2:]),)


@composite("avg_pool2d_backward", derivative=_avg_pool2d_grad_backward)
def _avg_pool2d_grad(grad, input, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override):
    """avg_pool2d's gradient: each output's gradient divided by its window's divisor and spread
    over the window (col2im); ``input`` gives the shape. Linear in grad: its derivative is
    avg_pool2d itself."""
    n, c, h, w = input._shape
    out = grad._shape[2:]
    scaled = grad / _avg_divisor((h, w), kernel, stride, padding, out, count_include_pad, divisor_override, grad._dtype, grad._device)
    full_h = max(h + 2 * padding[0], (out[0] - 1) * stride[0] + kernel[0])
    full_w = max(w + 2 * padding[1], (out[1] - 1) * stride[1] + kernel[1])
    result = col2im(lambda i, j: scaled, (n, c, full_h, full_w), kernel, stride, (1, 1), out, grad._dtype, grad._device)
    return result[:, :, padding[0]:padding[0] + h, padding[1]:padding[1] + w]


def _avg_pool2d_backward(grad, args, output, kwargs, needs):
    return (_avg_pool2d_grad(grad, *args),)


@composite("avg_pool2d", derivative=_avg_pool2d_backward)
def _avg_pool2d(input, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override):
    h, w = input._shape[2:]
    out = tuple(_pool_out(size, k, s, p, 1, ceil_mode) for size, k, s, p in zip((h, w), kernel, stride, padding))
    padded = _padded(input, kernel, stride, padding, (1, 1), out, 0)
    total = windows(padded, kernel, stride, (1, 1), out).sum(2)
    return total / _avg_divisor((h, w), kernel, stride, padding, out, count_include_pad, divisor_override, input._dtype, input._device)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True, divisor_override=None):
    """Mean over each window (``count_include_pad`` counts the zero padding in the divisor)."""
    x, kernel, stride, padding, _, out, batched = _pool_geometry("avg_pool2d", input, kernel_size, stride, padding, 1, ceil_mode)
    if not x._dtype.is_floating_point:
        raise RuntimeError(f"avg_pool2d(): expected a floating-point input, but got {x._dtype.name}")
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("avg_pool2d(): divisor must be not zero")
    result = _avg_pool2d(x, kernel, stride, padding, bool(ceil_mode), bool(count_include_pad), divisor_override)
    return result if batched else result.squeeze(0)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    check_tensor("avg_pool1d", input)
    if input.ndim not in (2, 3):
        raise RuntimeError(f"avg_pool1d(): Expected 2D or 3D input, but got input of size: {list(input._shape)}")
    first = lambda v: v[0] if isinstance(v, (tuple, list)) else v  # noqa: E731
    result = avg_pool2d(
        input.unsqueeze(-2), (1, first(kernel_size)), None if stride is None else (1, first(stride)), (0, first(padding)),
        ceil_mode, count_include_pad,
    )
    return result.squeeze(-2)


# --- resampling matrices ---------------------------------------------------------------------
@autocast_function("adaptive_avg_pool")
def _apply_matrices(input: Tensor, matrices: list) -> Tensor:
    """Map each trailing spatial dim of ``input`` through its (out, in) matrix."""
    x = input
    spatial = len(matrices)
    for k, m in enumerate(matrices):
        if m is None:
            continue
        x = _apply_rows(x, x.ndim - spatial + k, m)
    return x


def _apply_rows(x: Tensor, d: int, m: np.ndarray) -> Tensor:
    """Output i of dim ``d`` is sum_j m[i, j] x[j] over the nonzero m[i, j] only.

    A dense matmul would multiply every input by its zero weights, and 0 * NaN is NaN: one NaN
    input turned every output of its row into NaN (issue 16). Each output reads only its window
    (nearest: one input, linear: two, area: a window): the windows are gathered, padded to the
    longest and summed with the padding masked out by where(), which does not propagate NaN.
    """
    out = m.shape[0]
    columns = [np.flatnonzero(row) for row in m]
    width = max(1, max(len(c) for c in columns))
    index = np.zeros((out, width), dtype=np.int64)
    weight = np.zeros((out, width))
    valid = np.zeros((out, width), dtype=bool)
    for i, cols in enumerate(columns):
        index[i, :len(cols)] = cols
        weight[i, :len(cols)] = m[i, cols]
        valid[i, :len(cols)] = True
    xt = x.transpose(d, -1)
    gathered = xt.index_select(-1, tensor(index.reshape(-1), device=x._device))
    gathered = gathered.reshape(*xt._shape[:-1], out, width)
    if width == 1 and valid.all() and np.all(weight == 1.0):  # nearest: a pure selection
        return gathered.squeeze(-1).transpose(d, -1)
    terms = gathered * tensor(weight, dtype=x._dtype, device=x._device)
    terms = where(tensor(valid, device=x._device), terms, 0.0)
    return terms.sum(-1).transpose(d, -1)


def _adaptive_matrix(size: int, out: int) -> np.ndarray:
    m = np.zeros((out, size))
    for i in range(out):
        start, end = (i * size) // out, -((-(i + 1) * size) // out)
        m[i, start:end] = 1.0 / (end - start)
    return m


def _adaptive_sizes(op: str, input, output_size, nd: int) -> list:
    """Check an adaptive pooling call over the last ``nd`` dims; the output sizes (None: the input's)."""
    check_tensor(op, input)
    if input.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"{op}(): Expected {nd + 1}D or {nd + 2}D tensor, but got input of size: {list(input._shape)}")
    sizes = list(output_size) if isinstance(output_size, (tuple, list)) else [output_size] * nd
    if len(sizes) != nd:
        raise RuntimeError(f"{op}(): output_size must be {nd} values, but got {list(sizes)}")
    spatial = input._shape[-nd:]
    sizes = [s if o is None else int(o) for s, o in zip(spatial, sizes)]
    if any(o < 0 for o in sizes) or any(s == 0 for s in spatial):
        raise RuntimeError(f"{op}(): elements of output_size must be non-negative and the input non-empty, got {sizes}")
    return sizes


def _adaptive_avg(op: str, input, output_size, nd: int):
    sizes = _adaptive_sizes(op, input, output_size, nd)
    spatial = input._shape[-nd:]
    matrices = [None if s == o else _adaptive_matrix(s, o) for s, o in zip(spatial, sizes)]
    return _apply_matrices(input, matrices)


def adaptive_avg_pool2d(input, output_size):
    """Average pooling to a fixed (OH, OW): window i covers [floor(i*H/OH), ceil((i+1)*H/OH))."""
    return _adaptive_avg("adaptive_avg_pool2d", input, output_size, 2)


def adaptive_avg_pool1d(input, output_size):
    return _adaptive_avg("adaptive_avg_pool1d", input, output_size, 1)


def _adaptive_windows(size: int, out: int):
    """(out, widest) input positions of each adaptive window (clamped) and which of them are real."""
    starts = (np.arange(out) * size) // out
    ends = -((-(np.arange(out) + 1) * size) // out)
    widest = int((ends - starts).max())
    positions = starts[:, None] + np.arange(widest)[None, :]
    return np.minimum(positions, size - 1), positions < ends[:, None]


def _adaptive_max_indices(x: Tensor, out_h: int, out_w: int) -> Tensor:
    """Flat (H * W) index of the maximum (``max_offset``) of each adaptive window of ``x`` (N, C, H, W)."""
    n, c, h, w = x._shape
    rows, row_ok = _adaptive_windows(h, out_h)
    cols, col_ok = _adaptive_windows(w, out_w)
    dev = x._device
    picked = x.index_select(2, tensor(rows.reshape(-1), device=dev)).index_select(3, tensor(cols.reshape(-1), device=dev))
    kh, kw = rows.shape[1], cols.shape[1]
    picked = picked.reshape(n, c, out_h, kh, out_w, kw).permute(0, 1, 2, 4, 3, 5).reshape(n, c, out_h, out_w, kh * kw)
    valid = (row_ok[:, None, :, None] & col_ok[None, :, None, :]).reshape(out_h, out_w, kh * kw)
    if not valid.all():
        picked = where(tensor(valid, device=dev), picked, _lowest(x._dtype))
    offset = max_offset(picked, 4)  # in window order, as PyTorch's loop
    flat = rows[:, None, :, None] * w + cols[None, :, None, :]
    flat = np.broadcast_to(flat, (out_h, out_w, kh, kw)).reshape(out_h, out_w, kh * kw)
    table = tensor(np.ascontiguousarray(flat).reshape(-1), device=dev)
    base = tensor((np.arange(out_h * out_w) * kh * kw).reshape(out_h, out_w), device=dev)
    return table[base + offset]


def _adaptive_max(op: str, input, output_size, nd: int, return_indices: bool):
    sizes = _adaptive_sizes(op, input, output_size, nd)
    batched = input.ndim == nd + 2
    x = input if batched else input.unsqueeze(0)
    if nd == 1:
        x, sizes = x.unsqueeze(-2), [1] + sizes
    n, c, h, w = x._shape
    indices = _adaptive_max_indices(x.detach(), *sizes)
    # The values are read at the indices, so the gradient goes to the element each index names.
    values = x.reshape(n, c, h * w).gather(2, indices.reshape(n, c, -1)).reshape(indices._shape)
    if nd == 1:
        values, indices = values.squeeze(-2), indices.squeeze(-2)
    if not batched:
        values, indices = values.squeeze(0), indices.squeeze(0)
    return (values, indices) if return_indices else values


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """Max pooling to a fixed (OH, OW): window i covers [floor(i*H/OH), ceil((i+1)*H/OH)); with
    ``return_indices``, also each maximum's flat index within its H x W plane."""
    return _adaptive_max("adaptive_max_pool2d", input, output_size, 2, return_indices)


def adaptive_max_pool1d(input, output_size, return_indices=False):
    return _adaptive_max("adaptive_max_pool1d", input, output_size, 1, return_indices)


def _interp_matrix(size: int, out: int, mode: str, align_corners, scale) -> np.ndarray:
    """(out, size) weights for one dim; ``scale`` is the user's scale factor, when used."""
    m = np.zeros((out, size))
    dst = np.arange(out, dtype=np.float64)
    if mode in ("nearest", "nearest-exact"):
        ratio = (1.0 / scale) if scale else size / out
        src = np.floor((dst + 0.5) * ratio) if mode == "nearest-exact" else np.floor(dst * ratio)
        m[np.arange(out), np.minimum(src.astype(np.int64), size - 1)] = 1.0
        return m
    if align_corners:
        src = dst * ((size - 1) / (out - 1)) if out > 1 else np.zeros(out)
    else:
        ratio = (1.0 / scale) if scale else size / out
        src = (dst + 0.5) * ratio - 0.5
        if mode != "bicubic":  # PyTorch clamps the linear modes' source positions at 0, not the cubic one's
            src = np.maximum(src, 0.0)
    rows = np.arange(out)
    if mode == "bicubic":
        # Cubic convolution (A = -0.75) over the taps at floor - 1 .. floor + 2, each tap's index
        # clamped into the input (PyTorch's upsample_bicubic2d reads the edge pixel again).
        base = np.floor(src)
        t = src - base
        a = -0.75
        weights = [((a * (t + 1) - 5 * a) * (t + 1) + 8 * a) * (t + 1) - 4 * a,
                   ((a + 2) * t - (a + 3)) * t * t + 1,
                   ((a + 2) * (1 - t) - (a + 3)) * (1 - t) * (1 - t) + 1,
                   ((a * (2 - t) - 5 * a) * (2 - t) + 8 * a) * (2 - t) - 4 * a]
        for k, weight in enumerate(weights):
            np.add.at(m, (rows, np.clip(base.astype(np.int64) - 1 + k, 0, size - 1)), weight)
        return m
    low = np.minimum(np.floor(src).astype(np.int64), size - 1)
    high = np.minimum(low + 1, size - 1)
    frac = src - low
    np.add.at(m, (rows, low), 1.0 - frac)
    np.add.at(m, (rows, high), frac)
    return m


def _triangle(x: np.ndarray) -> np.ndarray:
    x = np.abs(x)
    return np.where(x < 1.0, 1.0 - x, 0.0)


def _keys_cubic(x: np.ndarray) -> np.ndarray:
    """Keys' cubic convolution kernel with a = -0.5 (Pillow's, which antialiased bicubic follows;
    the plain bicubic mode uses a = -0.75)."""
    a = -0.5
    x = np.abs(x)
    near = ((a + 2) * x - (a + 3)) * x * x + 1
    far = ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return np.where(x < 1.0, near, np.where(x < 2.0, far, 0.0))


# mode -> (filter, its support in input pixels at scale 1)
_ANTIALIAS_FILTERS = {"bilinear": (_triangle, 1.0), "bicubic": (_keys_cubic, 2.0)}


def _antialias_matrix(size: int, out: int, mode: str, align_corners, scale) -> np.ndarray:
    """(out, size) weights of antialiased resampling along one dim, as PyTorch's
    ``_upsample_{bilinear,bicubic}2d_aa`` (after Pillow): when downsampling by ``ratio`` the
    filter is stretched by it, so each output averages every input it covers instead of sampling
    two (or four) of them; each row is normalized to sum 1. Upsampling keeps the filter's width."""
    if align_corners:
        ratio = (size - 1) / (out - 1) if out > 1 else 0.0
    else:
        ratio = (1.0 / scale) if scale else size / out
    kernel, reach = _ANTIALIAS_FILTERS[mode]
    support = reach * ratio if ratio >= 1.0 else reach
    stretch = 1.0 / ratio if ratio >= 1.0 else 1.0
    widest = int(math.ceil(support)) * 2 + 1
    m = np.zeros((out, size))
    for i in range(out):
        # PyTorch centres output i at ratio * (i + 0.5) also with align_corners (only its ratio
        # changes); int() truncates as its casts do.
        center = ratio * (i + 0.5)
        first = max(int(center - support + 0.5), 0)
        count = min(max(min(int(center + support + 0.5), size) - first, 0), widest)
        taps = np.arange(first, first + count)
        weights = kernel((taps - center + 0.5) * stretch)
        total = weights.sum()
        m[i, taps] = weights / total if total != 0.0 else weights
    return m


_LINEAR_MODES = {"linear": 1, "bilinear": 2, "bicubic": 2, "trilinear": 3}


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None, recompute_scale_factor=None, antialias=False):
    """Resize the spatial dims of a (N, C, *spatial) input: nearest, nearest-exact, (bi/tri)linear
    or bicubic (``align_corners``), or area. ``antialias`` (bilinear and bicubic, 4-D input)
    widens the filter by the downsampling factor, as PyTorch's (and Pillow's) resize."""
    check_tensor("interpolate", input)
    nd = input.ndim - 2
    if mode not in ("nearest", "nearest-exact", "area") and mode not in _LINEAR_MODES:
        raise NotImplementedError(
            f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.ndim}D) for the modes: "
            f"nearest | linear | bilinear | trilinear | area | nearest-exact (got {mode})"
        )
    if antialias and not (mode in _ANTIALIAS_FILTERS and input.ndim == 4):
        raise ValueError("Anti-alias option is restricted to bilinear and bicubic modes and requires a 4-D tensor as input")
    if mode in _LINEAR_MODES and _LINEAR_MODES[mode] != nd:
        raise NotImplementedError(f"Got {input.ndim}D input, but {mode} mode needs {_LINEAR_MODES[mode] + 2}D input")
    if nd < 1 or nd > 3:
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.ndim}D) for the modes: nearest | linear | bilinear | trilinear | area | nearest-exact (got {mode})")
    if align_corners is not None and mode not in _LINEAR_MODES:
        raise ValueError("align_corners option can only be set with the interpolating modes: linear | bilinear | bicubic | trilinear")
    if (size is None) == (scale_factor is None):
        raise ValueError("only one of size or scale_factor should be defined" if size is not None else "either size or scale_factor should be defined")
    spatial = input._shape[2:]
    scales = [None] * nd
    if size is not None:
        sizes = list(size) if isinstance(size, (tuple, list)) else [size] * nd
        if len(sizes) != nd:
            raise ValueError(
                f"Input and output must have the same number of spatial dimensions, but got input with spatial dimensions "
                f"of {list(spatial)} and output size of {sizes}. Please provide input tensor in (N, C, d1, d2, ...,dK) format "
                f"and output size in (o1, o2, ...,oK) format."
            )
        sizes = [int(s) for s in sizes]
    else:
        factors = list(scale_factor) if isinstance(scale_factor, (tuple, list)) else [scale_factor] * nd
        if len(factors) != nd:
            raise ValueError(
                f"Input and scale_factor must have the same number of spatial dimensions, but got input with spatial "
                f"dimensions of {list(spatial)} and scale_factor of shape {factors}."
            )
        sizes = [int(math.floor(s * float(f))) for s, f in zip(spatial, factors)]
        if not recompute_scale_factor:
            scales = [float(f) for f in factors]
    if any(s <= 0 for s in sizes):
        raise RuntimeError(f"interpolate(): output size {sizes} must be positive (input spatial size {list(spatial)})")
    _check_interpolate_dtype(input, mode)
    if mode == "area":
        return _adaptive_avg("interpolate", input, sizes, nd)
    weights = _antialias_matrix if antialias else _interp_matrix
    matrices = [weights(s, o, mode, align_corners, sc) for s, o, sc in zip(spatial, sizes, scales)]
    if input._dtype is _dt.uint8 and mode in ("bilinear", "bicubic"):
        return _resample_uint8_image(input, matrices)
    return _apply_matrices(input, matrices)


def _check_interpolate_dtype(input: Tensor, mode: str) -> None:
    """PyTorch resizes floating tensors in every mode and uint8 images (nearest, nearest-exact,
    bilinear and bicubic); other dtypes have no kernel there, so they are refused here too."""
    if input._dtype.is_floating_point:
        return
    if input._dtype is _dt.uint8 and mode in ("nearest", "nearest-exact", "bilinear", "bicubic"):
        return
    raise NotImplementedError(
        f"interpolate(): mode {mode!r} is not implemented for {input._dtype} input (shape {list(input._shape)}); "
        f"convert it with .float() first (uint8 images may use nearest, nearest-exact, bilinear and bicubic)")


def _resample_uint8_image(input: Tensor, matrices: list) -> Tensor:
    """uint8 images resized as PyTorch's uint8 kernels (after Pillow's) do: in integers, along
    the width first, back to 0..255, then along the height; the same pixels to the bit."""
    x = input.to(_dt.int64)
    x = _fixed_point_rows(x, x.ndim - 1, matrices[1])
    x = _fixed_point_rows(x, x.ndim - 2, matrices[0])
    return x.to(_dt.uint8)


def _fixed_point_weights(m: np.ndarray) -> tuple[np.ndarray, int]:
    """``m`` as integers scaled by 2**bits, ``bits`` the most that keep the largest weight times
    2 below 2**15 (16-bit weights); each rounded half away from zero."""
    bits = 0
    while bits < 22 and m.max() * (1 << (bits + 1)) < (1 << 15):
        bits += 1
    scaled = m * (1 << bits)
    return np.where(scaled >= 0, np.floor(scaled + 0.5), np.ceil(scaled - 0.5)).astype(np.int64), bits


def _fixed_point_rows(x: Tensor, d: int, m: np.ndarray) -> Tensor:
    """Output i of dim ``d`` of the int64 image ``x``: sum_j w[i, j] x[j] in fixed point, rounded
    half up and clamped to 0..255 (integers have no NaN, so zero weights may be multiplied)."""
    weights, bits = _fixed_point_weights(m)
    out = m.shape[0]
    columns = [np.flatnonzero(row) for row in weights]
    width = max(1, max(len(c) for c in columns))
    index = np.zeros((out, width), dtype=np.int64)
    taps = np.zeros((out, width), dtype=np.int64)
    for i, cols in enumerate(columns):
        index[i, :len(cols)] = cols
        taps[i, :len(cols)] = weights[i, cols]
    xt = x.transpose(d, -1)
    gathered = xt.index_select(-1, tensor(index.reshape(-1), device=x._device)).reshape(*xt._shape[:-1], out, width)
    total = (gathered * tensor(taps, device=x._device)).sum(-1) + (1 << (bits - 1))
    return (total // (1 << bits)).clamp(0, 255).transpose(d, -1)


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    return interpolate(input, size, scale_factor, mode, align_corners)
