"""Fused kernels for composite ops on OpenCL (docs/backend-contract.md, "Fused kernels for
composite ops"): relu and its gradient, softmax and log_softmax (and log_softmax's gradient),
cross_entropy and nll_loss,
layer_norm, max_pool2d (with its indices and both forms of its gradient), avg_pool2d and its
gradient, conv2d and both halves of its gradient, adam_step_, sgd_step_, linear, smooth_l1_loss
with its gradient, gelu with its gradient, linear_param_grads (a small layer's weight and
bias gradients) and index_extremes (the index range check's minimum and maximum).

Each adapter takes the op's own arguments, allocates its result with ``new_empty`` and returns it;
a case it does not cover (a dtype, more dims than the strided kernels take) runs the op's
decomposition instead. The OpenCL C is in ``_fused_source`` (one program per dtype, the family
``fused``). float32/float64 convolutions are implicit products over a zero-padded copy of the
input, without a columns buffer: conv2d at any stride, its input gradient at stride 1 (the
convolution of the gradient with the flipped weight) and its weight gradient; with few taps per
output channel (a first layer) at unit width stride, conv2d and its weight gradient put output
positions in vector lanes instead (conv_rows, conv_weight_rows). The input gradient at other
strides, and 16-bit floats, use im2col (col2im) around the backend's matmul kernels.
"""
from __future__ import annotations

import math

from ...dispatcher import get_operator
from ..api import backend_storage, is_contiguous
from . import _fused_source, _source
from .kernels import MAXD, _coalesce, _global, _is_flat, _kernel, _pad, _state, _strided_global, gemm_blocked

__all__ = ["table"]

_FAMILY = "fused"
_REDUCE_GROUP = 256  # nll_reduce's reqd_work_group_size
_POOL_CHUNK = 16  # TP_POOL_CHUNK: outputs per work-item of max_pool2d
_POOL_GROUP = 16  # work-group size of the pooling kernels that take a row or a plane per work-item
_WEIGHT_GRAD_ITEMS = 64  # work-items conv2d's weight gradient aims for at least
_WEIGHT_GRAD_PART_BYTES = 256 * 1024  # the transposed gradient per part of its images, at most
_WEIGHT_GRAD_MAX_PARTS = 64  # partial sums of the weight gradient, at most


def _decomposition(name: str):
    """The composite op's own decomposition: what runs where a fused kernel does not apply."""
    return get_operator(name).decomposition


def _fk(state, dtype: str, name: str):
    return _kernel(state, _FAMILY, dtype, name)


def _rows_global(rows: int) -> tuple:
    group = _fused_source.ROW_GROUP
    return ((rows + group - 1) // group * group,), (group,)


def _acc_bytes(state, dtype: str) -> int:
    """sizeof(ACC) in the fused program of ``dtype`` (see _source.accumulator)."""
    return 8 if _source.accumulator(dtype, state.has_fp64) == "double" else 4


def _contiguous(t):
    return t if is_contiguous(t) else t.contiguous()


def _operand(t):
    return backend_storage(t).buffer, t.storage_offset()


# --- relu ----------------------------------------------------------------------------------------

def _pointwise(name: str, out, inputs) -> bool:
    """Launch ``name``_c or ``name``_s over out and the same-shaped inputs; False when the strided
    kernel cannot take the layout (more than MAXD dims that do not merge)."""
    shape = out.shape
    n = math.prod(shape)
    shape_c, strides = _coalesce(shape, [out.stride()] + [t.stride() for t in inputs])
    if len(shape_c) > MAXD:
        return False
    if n == 0:
        return True
    state = _state(out)
    dtype = out.dtype.name
    operands = [x for t in (out, *inputs) for x in _operand(t)]
    if _is_flat(shape_c, strides):
        g, l = _global(n, state)
        _fk(state, dtype, f"{name}_c")(state.queue, g, l, *operands, n)
    else:
        g, l = _strided_global(shape_c, state)
        _fk(state, dtype, f"{name}_s")(state.queue, g, l, *operands, n, len(shape_c), *_pad(shape_c, 1),
                                        *(v for st in strides for v in _pad(st, 0)))
    return True


def _relu(input):
    if input.dtype.name == "bool":
        return _decomposition("relu")(input)
    out = input.new_empty(input.shape)
    if not _pointwise("relu", out, (input,)):
        return _decomposition("relu")(input)
    return out


def _relu_backward(grad, output):
    if grad.dtype is not output.dtype or not grad.dtype.is_floating_point or tuple(grad.shape) != tuple(output.shape):
        return _decomposition("relu_backward")(grad, output)
    result = grad.new_empty(output.shape)
    if not _pointwise("relu_backward", result, (grad, output)):
        return _decomposition("relu_backward")(grad, output)
    return result


# --- softmax, cross entropy, layer_norm ----------------------------------------------------------

def _softmax(log: bool):
    name = "log_softmax" if log else "softmax"

    def kernel(input, dim):
        if not input.dtype.is_floating_point or input.ndim == 0 or math.prod(input.shape) == 0:
            return _decomposition(name)(input, dim)
        x = _contiguous(input)
        shape = tuple(x.shape)
        size, inner = shape[dim], math.prod(shape[dim + 1:])
        lines = math.prod(shape) // size
        out = x.new_empty(shape)
        state = _state(x)
        dtype = x.dtype.name
        if inner == 1:
            g, l = _rows_global(lines)
            _fk(state, dtype, "softmax_rows")(state.queue, g, l, *_operand(out), *_operand(x), lines, size, int(log))
        else:
            items = lines // inner * -(-inner // _fused_source.VW)  # VW neighbouring lines per work-item
            g, l = _rows_global(items)
            _fk(state, dtype, "softmax_lines")(state.queue, g, l, *_operand(out), *_operand(x), items, size, inner,
                                               int(log))
        return out

    return kernel


def _log_softmax_backward(grad, output, dim):
    """log_softmax's gradient, one kernel per call along the last dim (operands made contiguous
    first); along another dim, the decomposition."""
    if (not output.dtype.is_floating_point or output.ndim == 0 or dim != output.ndim - 1
            or grad.dtype is not output.dtype or tuple(grad.shape) != tuple(output.shape)
            or math.prod(output.shape) == 0):
        return _decomposition("log_softmax_backward")(grad, output, dim)
    g, y = _contiguous(grad), _contiguous(output)
    size = y.shape[-1]
    rows = math.prod(y.shape) // size
    out = y.new_empty(y.shape)
    gl, l = _rows_global(rows)
    _fk(_state(y), y.dtype.name, "log_softmax_backward_rows")(_state(y).queue, gl, l, *_operand(out), *_operand(g),
                                                             *_operand(y), rows, size)
    return out


def _nll(input, target, weight, reduction, ignore_index, label_smoothing, logits: bool):
    """cross_entropy (logits) or nll_loss: per-sample losses, then their sum or weighted mean."""
    n, c, r = input.shape
    count = n * r
    state = _state(input)
    dtype = input.dtype.name
    out = input.new_empty((n, r) if reduction == "none" else ())
    scratch = state.allocate(count * _acc_bytes(state, dtype))  # per-sample losses
    weights = state.allocate(count * _acc_bytes(state, dtype))  # and their targets' weights
    w_buf, w_off = _operand(weight) if weight is not None else (scratch.buffer, 0)
    w_st = weight.stride()[0] if weight is not None else 0
    sxn, sxc, sxr = input.stride()
    stn, st_r = target.stride()
    smoothing = float(label_smoothing)
    g, l = _rows_global(count)
    _fk(state, dtype, "nll_samples")(
        state.queue, g, l, scratch.buffer, weights.buffer, *_operand(out), int(reduction == "none"), *_operand(input),
        sxn, sxc, sxr, *_operand(target), stn, st_r, w_buf, w_off, w_st, int(weight is not None), n, c, r,
        int(ignore_index), int(smoothing != 0.0), smoothing / c, 1.0 - smoothing, int(logits))
    if reduction != "none":
        _fk(state, dtype, "nll_reduce")(state.queue, (_REDUCE_GROUP,), (_REDUCE_GROUP,), *_operand(out), scratch.buffer,
                                        weights.buffer, count, int(reduction == "mean"))
    return out


def _covers_losses(input) -> bool:
    n, c, r = input.shape
    return input.dtype.is_floating_point and n * r > 0 and c > 0


def _cross_entropy(input, target, weight, reduction, ignore_index, label_smoothing):
    if not _covers_losses(input):
        return _decomposition("cross_entropy")(input, target, weight, reduction, ignore_index, label_smoothing)
    return _nll(input, target, weight, reduction, ignore_index, label_smoothing, True)


def _cross_entropy_backward(grad, input, target, weight, reduction, ignore_index, label_smoothing):
    """The gradient of cross_entropy with respect to its (N, C, R) logits in one kernel (two for
    "mean": the targets' total weight first), the incoming gradient read on the device."""
    if (not _covers_losses(input) or grad.dtype is not input.dtype or target.dtype.name != "int64"
            or (weight is not None and weight.dtype is not input.dtype)):
        return _decomposition("cross_entropy_backward")(grad, input, target, weight, reduction, ignore_index,
                                                        label_smoothing)
    n, c, r = input.shape
    state = _state(input)
    dtype = input.dtype.name
    out = input.new_empty(input.shape)
    w_buf, w_off = _operand(weight) if weight is not None else (backend_storage(out).buffer, 0)
    w_st = weight.stride()[0] if weight is not None else 0
    stn, st_r = target.stride()
    mode = {"none": 0, "sum": 1, "mean": 2}[reduction]
    sgn, sgr = grad.stride() if mode == 0 else (0, 0)
    den = state.allocate(_acc_bytes(state, dtype))
    if mode == 2:
        _fk(state, dtype, "ce_weight_sum")(state.queue, (_REDUCE_GROUP,), (_REDUCE_GROUP,), den.buffer,
                                           *_operand(target), stn, st_r, w_buf, w_off, w_st, int(weight is not None),
                                           n, r, c, int(ignore_index))
    smoothing = float(label_smoothing)
    g, l = _rows_global(n * r)
    _fk(state, dtype, "ce_backward_rows")(
        state.queue, g, l, *_operand(out), *_operand(grad), sgn, sgr, mode, den.buffer, *_operand(input),
        *input.stride(), *_operand(target), stn, st_r, w_buf, w_off, w_st, int(weight is not None), n, c, r,
        int(ignore_index), int(smoothing != 0.0), smoothing / c, 1.0 - smoothing)
    return out


# Index tensors up to this many elements take index_extremes's one-work-item kernel (a loss's
# targets); larger ones the decomposition's parallel reductions.
_INDEX_EXTREMES_ONE_ITEM = 1 << 16


def _index_extremes(index, ignore):
    """The range check's [min, max] (frontend/ops/_index_extremes.py) in one launch."""
    n = math.prod(index.shape)
    if index.dtype.name != "int64" or not is_contiguous(index) or not 0 < n <= _INDEX_EXTREMES_ONE_ITEM:
        return _decomposition("index_extremes")(index, ignore)
    out = index.new_empty((2,))
    state = _state(index)
    _fk(state, "int64", "index_extremes")(state.queue, (1,), (1,), *_operand(out), *_operand(index), n,
                                          int(ignore is not None), 0 if ignore is None else int(ignore))
    return out


# One work-group sums this many elements of smooth_l1_loss in about the time of a launch; larger
# inputs take the per-element kernel and the backend's parallel reduction.
_SMOOTH_L1_ONE_GROUP = 1 << 16
_SMOOTH_L1_ONE_ITEM = 1024  # elements up to which one work-item sums the loss (smooth_l1_reduce_serial)


def _smooth_l1_covers(input, *others) -> bool:
    return input.dtype.is_floating_point and all(t.dtype is input.dtype and t.shape == input.shape for t in others)


def _smooth_l1_loss(input, target, reduction, beta):
    if not _smooth_l1_covers(input, target):
        return _decomposition("smooth_l1_loss")(input, target, reduction, beta)
    x, y = _contiguous(input), _contiguous(target)
    n = math.prod(x.shape)
    state = _state(x)
    dtype = x.dtype.name
    constants = (beta, 0.5 / beta if beta else 0.0, 0.5 * beta)
    if reduction != "none" and 0 < n <= _SMOOTH_L1_ONE_GROUP:
        out = x.new_empty(())
        if n <= _SMOOTH_L1_ONE_ITEM:
            _fk(state, dtype, "smooth_l1_reduce_serial")(state.queue, (1,), (1,), *_operand(out), *_operand(x),
                                                         *_operand(y), n, *constants, int(reduction == "mean"))
            return out
        _fk(state, dtype, "smooth_l1_reduce")(state.queue, (_REDUCE_GROUP,), (_REDUCE_GROUP,), *_operand(out),
                                              *_operand(x), *_operand(y), n, *constants, int(reduction == "mean"))
        return out
    losses = x.new_empty(x.shape)
    if n:
        g, l = _global(n, state)
        _fk(state, dtype, "smooth_l1_c")(state.queue, g, l, *_operand(losses), *_operand(x), *_operand(y), n,
                                         *constants)
    if reduction == "none":
        return losses
    return losses.sum() if reduction == "sum" else losses.mean()


def _smooth_l1_loss_backward(grad, input, target, reduction, beta):
    per_element = reduction == "none"
    if not _smooth_l1_covers(input, target) or grad.dtype is not input.dtype or (
            grad.shape != (input.shape if per_element else ())):
        return _decomposition("smooth_l1_loss_backward")(grad, input, target, reduction, beta)
    x, y, g_in = _contiguous(input), _contiguous(target), _contiguous(grad)
    n = math.prod(x.shape)
    out = x.new_empty(x.shape)
    if n:
        state = _state(x)
        g, l = _global(n, state)
        g_scale = 1.0 / n if reduction == "mean" else 1.0
        _fk(state, x.dtype.name, "smooth_l1_backward_c")(state.queue, g, l, *_operand(out), *_operand(g_in),
                                                         int(per_element), g_scale, *_operand(x), *_operand(y), n,
                                                         beta)
    return out


def _gelu_covers(*tensors) -> bool:
    first = tensors[0]
    return first.dtype.name in _fused_source._GELU_DTYPES and all(
        t.dtype is first.dtype and t.shape == first.shape for t in tensors)


def _gelu_launch(name: str, input, grad=None):
    """out = ``name`` over the contiguous input, and the gradient before it where given. A
    gradient that is one value expanded (sum's backward) is copied out first by the copy family's
    one-element kernel: a gradient kernel reading the one value itself ran 10x slower on PoCL 3.0
    (a uniform load from global memory beside the stores stops its vectorizer; 27 against 2.5 ms
    for 1.28e6 float32)."""
    x = _contiguous(input)
    out = x.new_empty(x.shape)
    n = math.prod(x.shape)
    if n:
        state = _state(x)
        g, l = _global(n, state)
        operands = [v for t in (out, *(() if grad is None else (_contiguous(grad),)), x) for v in _operand(t)]
        _fk(state, x.dtype.name, name)(state.queue, g, l, *operands, n)
    return out


def _gelu(input, approximate):
    if not _gelu_covers(input):
        return _decomposition("gelu")(input, approximate)
    return _gelu_launch("gelu_tanh_c" if approximate == "tanh" else "gelu_c", input)


def _gelu_backward(grad, input, approximate):
    if not _gelu_covers(input, grad):
        return _decomposition("gelu_backward")(grad, input, approximate)
    return _gelu_launch("gelu_tanh_backward_c" if approximate == "tanh" else "gelu_backward_c", input, grad)


def _nll_loss(input, target, weight, reduction, ignore_index):
    if not _covers_losses(input):
        return _decomposition("nll_loss")(input, target, weight, reduction, ignore_index)
    return _nll(input, target, weight, reduction, ignore_index, 0.0, False)


def _layer_norm(input, normalized_shape, weight, bias, eps):
    if not input.dtype.is_floating_point or math.prod(input.shape) == 0:
        return _decomposition("layer_norm")(input, normalized_shape, weight, bias, eps)
    x = _contiguous(input)
    cols = math.prod(normalized_shape)
    rows = math.prod(x.shape) // cols
    out = x.new_empty(x.shape)
    state = _state(x)
    w = _contiguous(weight) if weight is not None else x
    b = _contiguous(bias) if bias is not None else x
    g, l = _rows_global(rows)
    _fk(state, x.dtype.name, "layer_norm_rows")(state.queue, g, l, *_operand(out), *_operand(x), *_operand(w),
                                                 *_operand(b), int(weight is not None), int(bias is not None), rows,
                                                 cols, float(eps))
    return out


# --- max pooling ---------------------------------------------------------------------------------

def _pool_out(size: int, k: int, s: int, p: int, d: int, ceil_mode: bool) -> int:
    """Output size of one pooled dim (tensorplug.nn._pooling's formula; backends do not import nn):
    ceil_mode's last window must start inside the input or its left padding."""
    out = (size + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1
    return out


def _geometry(kernel, stride, padding, dilation) -> tuple:
    return (*kernel, *stride, *padding, *dilation)


def _pool_global(items: int) -> tuple:
    return ((items + _POOL_GROUP - 1) // _POOL_GROUP * _POOL_GROUP,), (_POOL_GROUP,)


def _rows_kernel(input, vector: bool) -> bool:
    """Whether max pooling takes max_pool2d_rows (floating dtypes, PoCL's vector code) over the
    scalar max_pool2d (other dtypes, and CUDA, which compiles only the scalar code)."""
    return vector and input.dtype.is_floating_point


def _max_pool(input, kernel, stride, padding, dilation, ceil_mode, with_indices: bool, vector: bool):
    import tensorplug  # the public dtype, imported late: the package is still loading when this module is

    n, c, h, w = input.shape
    out_hw = tuple(_pool_out(size, k, s, p, d, ceil_mode)
                   for size, k, s, p, d in zip((h, w), kernel, stride, padding, dilation))
    out = input.new_empty((n, c) + out_hw)
    indices = input.new_empty(out.shape, dtype=tensorplug.int64) if with_indices else None
    rows = n * c * out_hw[0]
    if rows and out_hw[1]:
        state = _state(input)
        ibuf, ioff = _operand(indices) if with_indices else (backend_storage(out).buffer, 0)
        geometry = (*input.stride(), c, h, w, *out_hw, *_geometry(kernel, stride, padding, dilation))
        if _rows_kernel(input, vector):
            g, l = _pool_global(rows)  # one work-item per output row
            _fk(state, input.dtype.name, "max_pool2d_rows")(
                state.queue, g, l, *_operand(out), ibuf, ioff, int(with_indices), *_operand(input), *geometry, rows)
        else:
            items = rows * (-(-out_hw[1] // _POOL_CHUNK))  # one work-item per _POOL_CHUNK outputs of a row
            g, l = _global(items, state)
            _fk(state, input.dtype.name, "max_pool2d")(
                state.queue, g, l, *_operand(out), ibuf, ioff, int(with_indices), *_operand(input), *geometry, items)
    return (out, indices) if with_indices else out


def _max_pool2d(vector: bool):
    def kernel(input, kernel, stride, padding, dilation, ceil_mode):
        if input.dtype.name == "bool":
            return _decomposition("max_pool2d")(input, kernel, stride, padding, dilation, ceil_mode)
        return _max_pool(input, kernel, stride, padding, dilation, ceil_mode, False, vector)

    return kernel


def _max_pool2d_with_indices(vector: bool):
    def kernel(input, kernel, stride, padding, dilation, ceil_mode):
        if input.dtype.name == "bool":
            return _decomposition("max_pool2d_with_indices")(input, kernel, stride, padding, dilation, ceil_mode)
        return _max_pool(input, kernel, stride, padding, dilation, ceil_mode, True, vector)

    return kernel


def _scatter_max_grad(grad, input, indices):
    """grad added into zeros shaped as input where ``indices`` point (max_pool2d_scatter)."""
    n, c, h, w = input.shape
    grad_input = input.new_empty(input.shape)
    planes = n * c  # one work-item per plane: outputs whose indices meet add in output order
    if planes and h * w:
        state = _state(input)
        g, l = _pool_global(planes)
        _fk(state, input.dtype.name, "max_pool2d_scatter")(
            state.queue, g, l, *_operand(grad_input), *_operand(grad), *grad.stride(), *_operand(indices),
            *indices.stride(), c, h, w, *grad.shape[2:], planes)
    return grad_input


def _max_pool2d_backward(vector: bool):
    """The gradient without the forward's indices: the forward again for them, then their scatter
    (the search and the scatter in one kernel, a plane per work-item, took 2-3x as long on PoCL)."""

    def kernel(grad, input, kernel, stride, padding, dilation, ceil_mode):
        if grad.dtype is not input.dtype or not input.dtype.is_floating_point:
            return _decomposition("max_pool2d_backward")(grad, input, kernel, stride, padding, dilation, ceil_mode)
        indices = _max_pool(input, kernel, stride, padding, dilation, ceil_mode, True, vector)[1]
        return _scatter_max_grad(grad, input, indices)

    return kernel


def _max_pool2d_with_indices_backward(grad, input, indices, kernel, stride, padding, dilation, ceil_mode):
    if grad.dtype is not input.dtype or not input.dtype.is_floating_point:
        return _decomposition("max_pool2d_with_indices_backward")(grad, input, indices, kernel, stride, padding,
                                                                  dilation, ceil_mode)
    return _scatter_max_grad(grad, input, indices)


def _avg_pool2d(input, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override):
    if not input.dtype.is_floating_point or input.ndim != 4:
        return _decomposition("avg_pool2d")(input, kernel, stride, padding, ceil_mode, count_include_pad,
                                            divisor_override)
    n, c, h, w = input.shape
    oh, ow = (_pool_out(size, k, s, p, 1, ceil_mode) for size, k, s, p in zip((h, w), kernel, stride, padding))
    out = input.new_empty((n, c, oh, ow))
    rows = n * c * oh
    if rows == 0 or ow == 0:
        return out
    state = _state(input)
    g, l = _pool_global(rows)  # one work-item per output row
    _fk(state, input.dtype.name, "avg_pool2d")(state.queue, g, l, *_operand(out), *_operand(input), *input.stride(), c,
                                               h, w, oh, ow, *kernel, *stride, *padding, int(count_include_pad),
                                               int(divisor_override or 0), rows)
    return out


def _avg_pool2d_backward(grad, input, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override):
    if grad.dtype is not input.dtype or not input.dtype.is_floating_point or input.ndim != 4:
        return _decomposition("avg_pool2d_backward")(grad, input, kernel, stride, padding, ceil_mode,
                                                     count_include_pad, divisor_override)
    n, c, h, w = input.shape
    grad_input = input.new_empty(input.shape)
    planes = n * c  # one work-item per plane: overlapping windows add in output order
    if planes and h * w:
        state = _state(input)
        g, l = _pool_global(planes)
        _fk(state, input.dtype.name, "avg_pool2d_backward")(
            state.queue, g, l, *_operand(grad_input), *_operand(grad), *grad.stride(), c, h, w, *grad.shape[2:],
            *kernel, *stride, *padding, int(count_include_pad), int(divisor_override or 0), planes)
    return grad_input


# --- linear --------------------------------------------------------------------------------------

#: Multiply-adds up to which a linear layer's forward (linear_small) and its parameters' gradients
#: (linear_param_grads) run as kernels of one work-item per output element; larger layers keep
#: the blocked matrix product, which a plain loop cannot match.
_SMALL_LAYER_PRODUCTS = 1 << 16


def _linear(input, weight, bias):
    """input @ weight.t() + bias as one blocked matmul whose accumulators start at the bias (the
    decomposition's broadcast add was a strided kernel: 2 ms of the MLP step's 32), or for a
    small layer as linear_small, one work-item per output starting at the bias. The
    gradients stay the composite's own (nn/functional.py's _linear_backward)."""
    dtype = input.dtype.name
    if (dtype not in _source.MATMUL_COLS or weight.dtype is not input.dtype or weight.ndim != 2 or input.ndim == 0
            or (bias is not None and (bias.dtype is not input.dtype or tuple(bias.shape) != (weight.shape[0],)))):
        return _decomposition("linear")(input, weight, bias)
    outputs, features = weight.shape
    lead = tuple(input.shape[:-1])
    rows = math.prod(lead)
    out = input.new_empty(lead + (outputs,))
    if rows == 0 or outputs == 0:
        return out
    state = _state(input)
    if features == 0:
        if bias is None:
            out.zero_()
        else:
            out.copy_(bias.expand(out.shape))
        return out
    x = input
    if input.ndim != 2:
        # The leading dims as one: a view when they merge, else a contiguous copy.
        shape_c, (st,) = _coalesce(lead, (input.stride()[:-1],))
        if len(shape_c) == 1:
            x_strides = (st[0], input.stride()[-1])
        else:
            x = input.contiguous()
            x_strides = (features, x.stride()[-1])
    else:
        x_strides = tuple(input.stride())
    sw0, sw1 = weight.stride()
    if dtype in ("float32", "float64") and rows * outputs * features <= _SMALL_LAYER_PRODUCTS:
        # A layer smaller than a launch: one work-item per output, no tiles (linear_small).
        g, l = _global(rows * outputs, state)
        b_operand = (*_operand(out), 0) if bias is None else (*_operand(bias), bias.stride()[0])
        _fk(state, dtype, "linear_small")(state.queue, g, l, *_operand(out), *_operand(x), *x_strides,
                                          *_operand(weight), sw0, sw1, *b_operand, int(bias is not None), rows,
                                          outputs, features)
        return out
    gemm_blocked(state, dtype, 1, rows, outputs, features, (*_operand(out), (0, outputs, 1)),
                 (*_operand(x), (0, *x_strides)), (*_operand(weight), (0, sw1, sw0)),
                 None if bias is None else (*_operand(bias), bias.stride()[0]))
    return out


def _linear_param_grads(grad, input):
    # One launch where the decomposition makes two (a matmul and a column sum), for the layers
    # whose launches cost more than their arithmetic (issue 14's small regression: Linear(4, 1)).
    batch, outputs = grad.shape
    features = input.shape[1]
    dtype = grad.dtype.name
    if (dtype not in ("float32", "float64") or input.dtype is not grad.dtype or batch == 0
            or batch * outputs * features > _SMALL_LAYER_PRODUCTS):
        return _decomposition("linear_param_grads")(grad, input)
    grad_weight = grad.new_empty((outputs, features))
    grad_bias = grad.new_empty((outputs,))
    items = outputs * (features + 1)
    if items == 0:
        return grad_weight, grad_bias
    state = _state(grad)
    g, l = _global(items, state)
    _fk(state, dtype, "linear_param_grads")(state.queue, g, l, *_operand(grad_weight), *_operand(grad_bias),
                                            *_operand(grad), *grad.stride(), *_operand(input), *input.stride(), batch,
                                            outputs, features)
    return grad_weight, grad_bias


# --- convolutions --------------------------------------------------------------------------------

def _gemm(state, dtype: str, batch: int, m: int, n: int, k: int, out, a, b) -> None:
    """out[i] = a[i] @ b[i] for i < batch; each operand is (buffer, offset, (batch, row, column)
    strides)."""
    (obuf, ooff, ost), (abuf, aoff, ast), (bbuf, boff, bst) = out, a, b
    if dtype in _source.MATMUL_COLS:
        gemm_blocked(state, dtype, batch, m, n, k, out, a, b)
        return
    t = _source.TILE
    g = ((n + t - 1) // t * t, (m + t - 1) // t * t, batch)
    _kernel(state, "matmul", dtype, "matmul")(state.queue, g, (t, t, 1), obuf, ooff, abuf, aoff, bbuf, boff, m, n, k,
                                              *ost, *ast, *bst)


def _im2col(state, dtype: str, x, out_hw, kernel, stride, padding, dilation, col_strides):
    """The columns of x (N, C, H, W) in a new scratch buffer, (n, k, l) at ``col_strides``."""
    n, c, h, w = x.shape
    rows = n * c * kernel[0] * kernel[1] * out_hw[0]  # one work-item per row of output positions
    cols = state.allocate(rows * out_hw[1] * x.dtype.itemsize)
    g, l = _rows_global(rows)
    _fk(state, dtype, "im2col")(state.queue, g, l, cols.buffer, 0, *col_strides, *_operand(x), *x.stride(), c, h, w,
                                *out_hw, *_geometry(kernel, stride, padding, dilation), rows)
    return cols


def _conv_covers(*tensors) -> bool:
    return all(t.dtype.is_floating_point and t.dtype is tensors[0].dtype and math.prod(t.shape) > 0 for t in tensors)


def _padded_input(state, dtype: str, x, padding):
    """x (N, C, H, W) copied into a zero-padded contiguous scratch buffer; (buffer, HP, WP)."""
    n, c, h, w = x.shape
    hp, wp = h + 2 * padding[0], w + 2 * padding[1]
    padded = state.allocate(n * c * hp * wp * x.dtype.itemsize)
    g, l = _rows_global(n * c * hp)
    _fk(state, dtype, "pad_input")(state.queue, g, l, padded.buffer, *_operand(x), *x.stride(), c, h, w, hp, wp,
                                   *padding, n * c * hp, n * c * hp)
    return padded, hp, wp


def _transposed_weight(state, dtype: str, weight, groups: int, flipped: bool):
    """The weight as conv_implicit reads it, (groups, taps, out channels of the group) contiguous
    in a scratch buffer (plus one vector of spare elements). Not flipped: conv2d's own weight,
    taps (c, ki, kj). Flipped: the weight of the convolution that gives conv2d's input gradient
    at stride 1: taps (o, KH - 1 - ki, KW - 1 - kj), out channels c."""
    o, cg, kh, kw = weight.shape
    s0, s1, s2, s3 = weight.stride()
    if s1 != kh * kw * s3 or s2 != kw * s3:  # the taps must merge into one dim
        weight = weight.contiguous()
        s0, s1, s2, s3 = weight.stride()
    buf, off = _operand(weight)
    cols = _fused_source.CONV_COLS[dtype]
    out = state.allocate((o * cg * kh * kw + cols) * weight.dtype.itemsize)
    if flipped:  # (O, KH * KW, Cg): for each o, the taps reversed, channels last
        copy_tiles(state, dtype, out.buffer, buf, off + (kh * kw - 1) * s3, (s0, -s3, s1), (o, kh * kw, cg))
    else:  # (groups, Cg * KH * KW, O / groups)
        og = o // groups
        copy_tiles(state, dtype, out.buffer, buf, off, (og * s0, s3, s0), (groups, cg * kh * kw, og))
    return out


def _conv_implicit(state, dtype: str, out, x, weight_t, kernel, bias, groups: int, stride, padding, dilation) -> None:
    """out (N, O, OH, OW, contiguous) = the convolution of x with the transposed weight (see
    _transposed_weight) and bias, at any stride, as one implicit product (conv_implicit)."""
    n, c = x.shape[:2]
    o, oh, ow = out.shape[1:]
    og = o // groups
    padded, hp, wp = _padded_input(state, dtype, x, padding)
    rows, cols = _fused_source.CONV_ROWS, _fused_source.CONV_COLS[dtype]
    items = n * groups * -(-(oh * ow) // rows) * -(-og // cols)
    bbuf, boff = _operand(bias) if bias is not None else (weight_t.buffer, 0)
    # One work-item per group (groups of 2 to 8 measured the same on PoCL).
    _fk(state, dtype, "conv_implicit")(
        state.queue, (items,), (1,), *_operand(out), padded.buffer, c, hp, wp, weight_t.buffer, bbuf, boff,
        bias.stride()[0] if bias is not None else 0, int(bias is not None), c // groups, o, og, oh, ow, *kernel,
        *stride, *dilation, items)


def _conv_rows(state, dtype: str, out, x, weight, bias, groups: int, stride, padding, dilation) -> None:
    """out (N, O, OH, OW, contiguous) = conv2d of x at unit width stride for few taps per output
    channel (the conv_rows kernel: an output row of a few channels per work-item)."""
    n, c = x.shape[:2]
    o, cg, kh, kw = weight.shape
    oh = out.shape[2]
    padded, hp, wp = _padded_input(state, dtype, x, padding)
    wbuf, woff = _operand(_contiguous(weight))
    og = o // groups
    items = n * groups * -(-og // _fused_source.CONV_ROWS_CHANNELS) * oh
    bbuf, boff = _operand(bias) if bias is not None else (wbuf, 0)
    # One work-item per group, as the other vector kernels.
    _fk(state, dtype, "conv_rows")(
        state.queue, (items,), (1,), *_operand(out), padded.buffer, c, hp, wp, wbuf, woff, bbuf, boff,
        bias.stride()[0] if bias is not None else 0, int(bias is not None), cg, o, og, oh, out.shape[3], kh, kw,
        stride[0], *dilation, items)


def _conv2d(input, weight, bias, stride, padding, dilation, groups):
    n, c, h, w = input.shape
    o, cg, kh, kw = weight.shape
    oh = (h + 2 * padding[0] - dilation[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (w + 2 * padding[1] - dilation[1] * (kw - 1) - 1) // stride[1] + 1
    if not _conv_covers(input, weight) or oh <= 0 or ow <= 0:
        return _decomposition("conv2d")(input, weight, bias, stride, padding, dilation, groups)
    state = _state(input)
    dtype = input.dtype.name
    out = input.new_empty((n, o, oh, ow))
    if dtype in _fused_source.CONV_COLS and stride[1] == 1 and cg * kh * kw <= _fused_source.WEIGHT_ROWS_MAX_TAPS:
        _conv_rows(state, dtype, out, input, weight, bias, groups, stride, padding, dilation)
        return out
    if dtype in _fused_source.CONV_COLS:
        weight_t = _transposed_weight(state, dtype, weight, groups, False)
        _conv_implicit(state, dtype, out, input, weight_t, (kh, kw), bias, groups, stride, padding, dilation)
        return out
    big_l, kg = oh * ow, cg * kh * kw
    k_all = c * kh * kw
    cols = _im2col(state, dtype, input, (oh, ow), (kh, kw), stride, padding, dilation, (k_all * big_l, big_l, 1))
    wt = _contiguous(weight)
    wbuf, woff = _operand(wt)
    obuf, ooff = _operand(out)
    og = o // groups
    for gi in range(groups):
        _gemm(state, dtype, n, og, big_l, kg, (obuf, ooff + gi * og * big_l, (o * big_l, big_l, 1)),
              (wbuf, woff + gi * og * kg, (0, kg, 1)), (cols.buffer, gi * kg * big_l, (k_all * big_l, big_l, 1)))
    if bias is not None:
        total = n * o * big_l
        g, l = _global(total, state)
        _fk(state, dtype, "add_channel_bias")(state.queue, g, l, obuf, ooff, *_operand(bias), bias.stride()[0], o,
                                              big_l, total)
    return out


def _conv2d_input_backward(grad, weight, input_shape, stride, padding, dilation, groups):
    if grad.dtype.name in ("float16", "bfloat16"):
        # Each input position sums kh * kw products through 16-bit columns or accumulators:
        # computed in float32 and rounded once, as the CPU does (5 ulps off otherwise).
        result = _conv2d_input_backward(grad.float(), weight.float(), input_shape, stride, padding, dilation, groups)
        return result.to(grad.dtype)
    if not _conv_covers(grad, weight) or math.prod(input_shape) == 0:
        return _decomposition("conv2d_input_backward")(grad, weight, input_shape, stride, padding, dilation, groups)
    n, c, h, w = input_shape
    o, cg, kh, kw = weight.shape
    oh, ow = grad.shape[2:]
    state = _state(grad)
    dtype = grad.dtype.name
    if dtype in _fused_source.CONV_COLS and tuple(stride) == (1, 1):
        # At stride 1 the input gradient is the convolution of grad with the weight flipped in
        # both spatial dims and with its channel dims swapped, padded by (k - 1) * d - p.
        out = grad.new_empty(tuple(input_shape))
        pad = ((kh - 1) * dilation[0] - padding[0], (kw - 1) * dilation[1] - padding[1])
        weight_t = _transposed_weight(state, dtype, weight, groups, True)
        _conv_implicit(state, dtype, out, grad, weight_t, (kh, kw), None, groups, (1, 1), pad, dilation)
        return out
    big_l, kg, k_all, og = oh * ow, cg * kh * kw, c * kh * kw, o // groups
    gr, wt = _contiguous(grad), _contiguous(weight)
    gbuf, goff = _operand(gr)
    wbuf, woff = _operand(wt)
    cols = state.allocate(n * k_all * big_l * grad.dtype.itemsize)
    for gi in range(groups):
        # columns[n, g] (Kg, L) = weight[g]^T (Kg, O/g) @ grad[n, g] (O/g, L)
        _gemm(state, dtype, n, kg, big_l, og, (cols.buffer, gi * kg * big_l, (k_all * big_l, big_l, 1)),
              (wbuf, woff + gi * og * kg, (0, 1, kg)), (gbuf, goff + gi * og * big_l, (o * big_l, big_l, 1)))
    out = grad.new_empty(tuple(input_shape))
    rows = n * c * h  # one work-item per input row
    g, l = _rows_global(rows)
    _fk(state, dtype, "col2im")(state.queue, g, l, *_operand(out), cols.buffer, 0, c, h, w, oh, ow,
                                *_geometry((kh, kw), stride, padding, dilation), rows)
    return out


def copy_tiles(state, dtype: str, dst_buffer, src_buffer, src_offset: int, src_strides, shape) -> None:
    """Copy the (B, R, CC) view of src at ``src_strides`` into the contiguous dst, 16 x 16 tiles
    at a time (the fast way to make a transposed matrix contiguous)."""
    b, r, cc = shape
    items = b * -(-r // 16) * -(-cc // 16)
    if items:
        g, l = _rows_global(items)
        _fk(state, dtype, "copy_tiles")(state.queue, g, l, dst_buffer, src_buffer, src_offset, *src_strides, r, cc,
                                        items)


def _conv_weight_direct(state, dtype: str, grad, input, weight_shape, stride, padding, dilation, groups):
    """conv2d's weight gradient as one implicit product (the conv_weight_direct kernel) over the
    padded input and the gradient transposed to (N, OH * OW, O)."""
    n, c, h, w = input.shape
    o, cg, kh, kw = weight_shape
    oh, ow = grad.shape[2:]
    itemsize = grad.dtype.itemsize
    padded, hp, wp = _padded_input(state, dtype, input, padding)
    cols = _fused_source.CONV_COLS[dtype]
    transposed = state.allocate((n * oh * ow * o + cols) * itemsize)  # spare: the last vector load
    sn, so, sh, sw = grad.stride()
    if sh != ow * sw:  # (OH, OW) must merge into one dim of positions
        grad = grad.contiguous()
        sn, so, sh, sw = grad.stride()
    copy_tiles(state, dtype, transposed.buffer, *_operand(grad), (sn, sw, so), (n, oh * ow, o))
    out = grad.new_empty(weight_shape)
    og, kg = o // groups, cg * kh * kw
    blocks = groups * -(-kg // _fused_source.CONV_ROWS) * -(-og // cols)
    # Too few blocks to keep the device busy, or a gradient too big to stay in cache while every
    # block streams it: split the images into parts (partial sums added after, in part order).
    # The part is the slowest index of the work-items, so the blocks of one part run one after
    # the other over the same part of the gradient (CNN's second layer, 64 x 288 taps over 64
    # images of 24x24: every block re-read the whole 9.4 MB gradient from memory).
    per_part = _weight_grad_parts(n, blocks, oh * ow * o * itemsize)
    parts = -(-n // per_part)
    target = (backend_storage(out).buffer, out.storage_offset())
    if parts > 1:
        partial = state.allocate(parts * o * kg * itemsize)
        target = (partial.buffer, 0)
    items = parts * blocks
    _fk(state, dtype, "conv_weight_direct")(
        state.queue, (items,), (1,), *target, padded.buffer, c, hp, wp, transposed.buffer, o, og, cg, oh, ow, kh, kw,
        *stride, *dilation, n, per_part, items)
    if parts > 1:
        g, l = _global(o * kg, state)
        _fk(state, dtype, "sum_batches")(state.queue, g, l, *_operand(out), partial.buffer, parts, o * kg)
    return out


def _weight_grad_parts(n: int, blocks: int, per_image_bytes: int) -> int:
    """Images per part of the weight gradient's partial sums: enough parts to give the device
    _WEIGHT_GRAD_ITEMS work-items, and parts small enough that a part's gradient stays in cache
    while every block of it streams it."""
    parts = min(n, max(-(-_WEIGHT_GRAD_ITEMS // blocks), -(-n * per_image_bytes // _WEIGHT_GRAD_PART_BYTES)),
                _WEIGHT_GRAD_MAX_PARTS)
    return -(-n // parts)


def _conv_weight_rows(state, dtype: str, grad, input, weight_shape, stride, padding, dilation, groups):
    """conv2d's weight gradient for few taps per output channel at unit width stride (the
    conv_weight_rows kernel): the gradient read in place, positions in the vector lanes."""
    n = input.shape[0]
    o, cg, kh, kw = weight_shape
    oh, ow = grad.shape[2:]
    if grad.stride()[3] != 1:
        grad = grad.contiguous()
    padded, hp, wp = _padded_input(state, dtype, input, padding)
    out = grad.new_empty(weight_shape)
    og, kg = o // groups, cg * kh * kw
    blocks = groups * -(-kg // _fused_source.WEIGHT_ROWS_TAPS) * -(-og // _fused_source.WEIGHT_ROWS_CHANNELS)
    per_part = _weight_grad_parts(n, blocks, oh * ow * o * grad.dtype.itemsize)
    parts = -(-n // per_part)
    target = (backend_storage(out).buffer, out.storage_offset())
    if parts > 1:
        partial = state.allocate(parts * o * kg * grad.dtype.itemsize)
        target = (partial.buffer, 0)
    items = parts * blocks
    sgn, sgo, sgh, _ = grad.stride()
    # One work-item per group, as conv_weight_direct (vector code: PoCL has nothing to vectorize across items).
    _fk(state, dtype, "conv_weight_rows")(
        state.queue, (items,), (1,), *target, padded.buffer, input.shape[1], hp, wp, *_operand(grad), sgn, sgo, sgh, o, og, cg,
        oh, ow, kh, kw, stride[0], *dilation, n, per_part, items)
    if parts > 1:
        g, l = _global(o * kg, state)
        _fk(state, dtype, "sum_batches")(state.queue, g, l, *_operand(out), partial.buffer, parts, o * kg)
    return out


def _conv2d_weight_backward(grad, input, weight_shape, stride, padding, dilation, groups):
    if not _conv_covers(grad, input) or math.prod(weight_shape) == 0:
        return _decomposition("conv2d_weight_backward")(grad, input, weight_shape, stride, padding, dilation, groups)
    n, c = input.shape[:2]
    o, cg, kh, kw = weight_shape
    oh, ow = grad.shape[2:]
    state = _state(grad)
    dtype = grad.dtype.name
    if dtype in _fused_source.CONV_COLS:
        if stride[1] == 1 and cg * kh * kw <= _fused_source.WEIGHT_ROWS_MAX_TAPS:
            return _conv_weight_rows(state, dtype, grad, input, tuple(weight_shape), stride, padding, dilation, groups)
        return _conv_weight_direct(state, dtype, grad, input, tuple(weight_shape), stride, padding, dilation, groups)
    big_l, kg, k_all, og = oh * ow, cg * kh * kw, c * kh * kw, o // groups
    # Columns as (N, L, K), so that the product's right operand has unit column stride.
    cols = _im2col(state, dtype, input, (oh, ow), (kh, kw), stride, padding, dilation, (big_l * k_all, 1, k_all))
    gr = _contiguous(grad)
    gbuf, goff = _operand(gr)
    out = grad.new_empty(tuple(weight_shape))
    per_image = backend_storage(out).buffer, out.storage_offset()
    if n > 1:  # one product per image, then their sum in image order (the decomposition's)
        partial = state.allocate(n * o * kg * grad.dtype.itemsize)
        per_image = partial.buffer, 0
    for gi in range(groups):
        # product[n, g] (O/g, Kg) = grad[n, g] (O/g, L) @ columns[n, :, g] (L, Kg)
        _gemm(state, dtype, n, og, kg, big_l, (per_image[0], per_image[1] + gi * og * kg, (o * kg, kg, 1)),
              (gbuf, goff + gi * og * big_l, (o * big_l, big_l, 1)), (cols.buffer, gi * kg, (big_l * k_all, k_all, 1)))
    if n > 1:
        total = o * kg
        g, l = _global(total, state)
        _fk(state, dtype, "sum_batches")(state.queue, g, l, *_operand(out), partial.buffer, n, total)
    return out


# --- optimizer steps -----------------------------------------------------------------------------

def _covers_step(param, others) -> bool:
    """Whether the fused step kernels take these: a floating parameter and, besides the None
    ones, tensors of its dtype and shape, all contiguous."""
    return param.dtype.is_floating_point and is_contiguous(param) and all(
        t is None or (t.dtype is param.dtype and t.shape == param.shape and is_contiguous(t)) for t in others)


def _adam_step(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, lr, beta1, beta2, eps, weight_decay, step, decoupled):
    args = (param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, lr, beta1, beta2, eps, weight_decay, step, decoupled)
    if not _covers_step(param, args[1:5]):
        return _decomposition("adam_step_")(*args)
    n = math.prod(param.shape)
    if n == 0:
        return param
    state = _state(param)
    weight = 1 - beta1  # lerp's weight, and PyTorch's choice of formula by its size
    vmax = max_exp_avg_sq if max_exp_avg_sq is not None else param
    g, l = _global(n, state)
    _fk(state, param.dtype.name, "adam_step")(
        state.queue, g, l, *_operand(param), *_operand(grad), *_operand(exp_avg), *_operand(exp_avg_sq),
        *_operand(vmax), int(max_exp_avg_sq is not None), n, 1 - lr * weight_decay, weight_decay,
        int(weight_decay != 0), int(bool(decoupled)), weight, 1 - weight, int(abs(weight) < 0.5), beta2, 1 - beta2,
        (1 - beta2**step) ** 0.5, eps, -(lr / (1 - beta1**step)))
    return param


def _sgd_step(param, grad, momentum_buffer, lr, momentum, dampening, weight_decay, nesterov, maximize, first_step):
    # One launch per parameter where the decomposition makes 4 with momentum (issue 14).
    args = (param, grad, momentum_buffer, lr, momentum, dampening, weight_decay, nesterov, maximize, first_step)
    if not _covers_step(param, args[1:3]):
        return _decomposition("sgd_step_")(*args)
    n = math.prod(param.shape)
    if n == 0:
        return param
    state = _state(param)
    g, l = _global(n, state)
    flags = int(bool(maximize)), int(weight_decay != 0)
    if momentum_buffer is None:
        _fk(state, param.dtype.name, "sgd_step_plain")(state.queue, g, l, *_operand(param), *_operand(grad), *flags, n,
                                                       weight_decay, -lr)
    else:
        _fk(state, param.dtype.name, "sgd_step")(
            state.queue, g, l, *_operand(param), *_operand(grad), *_operand(momentum_buffer), int(bool(first_step)),
            int(bool(nesterov)), *flags, n, weight_decay, momentum, 1 - dampening, -lr)
    return param


def _decomposing_float8(name: str, adapter):
    """``adapter``, except that an op on float8 tensors runs its decomposition: the CPU has no fused
    float8 kernels, and the decomposition (each op rounding to 8 bits) gives both devices the same
    results (a fused softmax would round only once). Every fused op's first argument is a tensor
    of the op's dtype, and float8 mixes with no other floating dtype, so it alone is checked."""
    float8 = _source.FLOAT8_FORMATS

    def kernel(first, *args, **kwargs):
        if first.dtype.name in float8:
            return _decomposition(name)(first, *args, **kwargs)
        return adapter(first, *args, **kwargs)

    return kernel


def table(vector: bool = True) -> dict:
    """Op name -> fused kernel, for the composite ops this backend runs natively. ``vector=False``
    gives adapters that launch only the program's scalar kernels (CUDA compiles no others)."""
    adapters = {
        "relu": _relu, "relu_backward": _relu_backward, "softmax": _softmax(False), "log_softmax": _softmax(True),
        "log_softmax_backward": _log_softmax_backward,
        "cross_entropy": _cross_entropy, "cross_entropy_backward": _cross_entropy_backward, "nll_loss": _nll_loss, "layer_norm": _layer_norm,
        "max_pool2d": _max_pool2d(vector), "max_pool2d_with_indices": _max_pool2d_with_indices(vector),
        "max_pool2d_backward": _max_pool2d_backward(vector),
        "max_pool2d_with_indices_backward": _max_pool2d_with_indices_backward, "avg_pool2d": _avg_pool2d,
        "avg_pool2d_backward": _avg_pool2d_backward, "conv2d": _conv2d,
        "conv2d_input_backward": _conv2d_input_backward, "conv2d_weight_backward": _conv2d_weight_backward,
        "adam_step_": _adam_step, "sgd_step_": _sgd_step, "linear": _linear, "smooth_l1_loss": _smooth_l1_loss,
        "smooth_l1_loss_backward": _smooth_l1_loss_backward, "gelu": _gelu, "gelu_backward": _gelu_backward,
        "linear_param_grads": _linear_param_grads, "index_extremes": _index_extremes,
    }
    return {name: _decomposing_float8(name, adapter) for name, adapter in adapters.items()}
