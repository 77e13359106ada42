"""The CPU kernel table: one small adapter per primitive, from tensors to the C++ entry points.

Each adapter reads tensors through the contract's public attributes and hands the C++ module
operands as ``(storage, offset, strides)`` tuples; Python numbers pass through unchanged. The
C++ side checks every operand against its storage before touching memory.

Fused kernels also override some composite nn ops (softmax, log_softmax, conv2d and the two
halves of its gradient, max_pool2d with its indices and its gradient (by search or through the
indices), avg_pool2d, layer_norm, cross_entropy and its gradient, adam_step_, relu and its
gradient, smooth_l1_loss and its gradient, linear, gelu and its gradient, ctc_loss and its
gradient). They get the composite's own arguments, allocate their result with the public
``Tensor.new_empty`` and return it (adam_step_ updates its arguments in place and returns the
parameter); a case the C++ kernel does not cover (another dtype) runs the op's decomposition
instead. Gradients come from each op's explicit derivative.
"""
from __future__ import annotations

import math

from ...dispatcher import get_operator
from ..api import FAMILIES, backend_storage, is_contiguous, strided
from ._load import load_kernels

_K = load_kernels()
_DTYPE_CODES = dict(_K.DTYPES)
_NUMBERS = (bool, int, float)

__all__ = ["table"]


class _DtypeCodes(dict):
    """dtype -> the C++ side's dtype code, filled on first use of each dtype."""

    def __missing__(self, dtype):
        code = self[dtype] = _DTYPE_CODES[dtype.name]
        return code


_codes = _DtypeCodes()
# The dict's own lookup (C, no frame once a dtype was seen): every adapter calls it.
_code = _codes.__getitem__


# A tensor as the C++ side's operand (storage, offset, strides), in one C call.
_operand = strided


def _value(x):
    return x if x.__class__ in _NUMBERS else strided(x)


def _unary(code: int):
    unary = _K.unary

    def kernel(out, a):
        dtype = a.dtype
        unary(code, _code(dtype), out.shape, strided(out), strided(a))

    return kernel


# Arithmetic between a 16-bit float tensor and a Python number runs in float32 with the number
# rounded to float32, not to the tensor's dtype (as PyTorch does): float16 * 70000.0 is finite
# although 70000 is not a float16, and float16 / 1e5 is not a division by infinity.
_WIDE_SCALAR_OPS = frozenset({"add", "sub", "mul", "div"})
_SIXTEEN_BIT = frozenset({"float16", "bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz"})


def _in_float32(code: int, entry, out, a, b):
    import tensorplug  # the public dtype, imported late: the package is still loading when this module is

    if not math.prod(out.shape):
        return
    f32 = _code(tensorplug.float32)
    shape = out.shape
    operands = []
    for x in (a, b):
        if x.__class__ in _NUMBERS:
            operands.append(x)
            continue
        wide = x.new_empty(shape, dtype=tensorplug.float32)
        _K.copy(shape, f32, _operand(wide), _code(x.dtype), _operand(x))
        operands.append(_operand(wide))
    result = out.new_empty(shape, dtype=tensorplug.float32)
    entry(code, f32, shape, _operand(result), operands[0], operands[1])
    _K.copy(shape, _code(out.dtype), _operand(out), f32, _operand(result))


def _binary(code: int, entry, name: str = ""):
    widen = name in _WIDE_SCALAR_OPS

    def kernel(out, a, b):
        # Operands are built inline: every Python call saved here is about 5% of a small op.
        if a.__class__ in _NUMBERS:
            dtype = b.dtype
        elif b.__class__ in _NUMBERS:
            dtype = a.dtype
        else:  # two tensors, the common case
            dtype = a.dtype
            entry(code, _code(dtype), out.shape, strided(out), strided(a), strided(b))
            return
        if widen and dtype.name in _SIXTEEN_BIT:
            _in_float32(code, entry, out, a, b)
            return
        entry(code, _code(dtype), out.shape, strided(out),
              a if a.__class__ in _NUMBERS else strided(a), b if b.__class__ in _NUMBERS else strided(b))

    return kernel


def _where(out, cond, a, b):
    _K.where(_code(out.dtype), out.shape, _operand(out), _operand(cond), _value(a), _value(b))


def _copy(dst, src):
    _K.copy(dst.shape, _code(dst.dtype), _operand(dst), _code(src.dtype), _operand(src))


def _fill(dst, value):
    _K.fill(_code(dst.dtype), dst.shape, _operand(dst), value)


def _reduce(code: int):
    def kernel(out, a, dims):
        # The C++ reduction wants out's strides over a's dims, 0 where a dim is reduced.
        storage, offset, out_strides = strided(out)
        strides = tuple(0 if d in dims else s for d, s in enumerate(out_strides))
        _K.reduce(code, _code(a.dtype), _code(out.dtype), a.shape, strided(a), (storage, offset, strides), tuple(dims))

    return kernel


def _scan(code: int):
    def kernel(out, a, dim):
        _K.cumulative(code, _code(a.dtype), a.shape, _operand(out), _operand(a), dim)

    return kernel


def _matmul(out, a, b):
    batch, m, k = a.shape
    n = b.shape[2]
    _K.matmul(_code(a.dtype), batch, m, n, k, _operand(out), _operand(a), _operand(b))


def _gather(out, a, dim, index):
    _K.gather(_code(a.dtype), dim, index.shape, _operand(out), _operand(a), a.shape, _operand(index))


def _scatter(self, dim, index, src, reduce):
    reduce_code = 0 if reduce is None else 1
    _K.scatter(_code(self.dtype), dim, reduce_code, index.shape, _operand(self), self.shape, _operand(index), _value(src))


def _index_get(out, a, indices):
    shape = indices[0].shape
    _K.index_get(_code(a.dtype), _operand(out), _operand(a), a.shape, [_operand(i) for i in indices], shape)


def _index_put(self, indices, values, accumulate):
    shape = indices[0].shape
    _K.index_put(_code(self.dtype), _operand(self), self.shape, [_operand(i) for i in indices], shape, _value(values), bool(accumulate))


def _random(entry):
    def kernel(out, seed, offset, a, b):
        # out is contiguous (the frontend guarantees it): the C++ side sees it as one flat run.
        flat = (backend_storage(out), out.storage_offset(), (1,))
        entry(_code(out.dtype), flat, math.prod(out.shape), seed, offset, a, b)

    return kernel


def _sort(values, indices, a, dim, descending, stable):
    _K.sort(_code(a.dtype), a.shape, _operand(values), _operand(indices), _operand(a), dim, bool(descending), bool(stable))


# --- fused composite ops ------------------------------------------------------------------------
_FUSED_DTYPES = ("float32", "float64")


def _decomposition(name: str):
    """The composite op's own decomposition: what runs where a fused kernel does not apply."""
    return get_operator(name).decomposition


def _contiguous(t):
    return t if t.is_contiguous() else t.contiguous()


def _softmax(log: bool):
    name = "log_softmax" if log else "softmax"
    entry = _K.softmax

    def kernel(input, dim):
        if input.dtype.name not in _FUSED_DTYPES or input.ndim == 0:
            return _decomposition(name)(input, dim)
        x = _contiguous(input)
        shape = x.shape
        dim %= len(shape)
        size, inner = shape[dim], math.prod(shape[dim + 1:])
        strides = (size * inner, inner, 1)
        out = x.new_empty(shape)
        entry(_code(x.dtype), log, math.prod(shape[:dim]), size, inner,
              (backend_storage(out), out.storage_offset(), strides), (backend_storage(x), x.storage_offset(), strides))
        return out

    return kernel


# float16/bfloat16 convolutions (autocast's) run the float32 kernels on widened copies and round
# once: the decomposition in 16 bits rounds every partial sum and ran at a third of float32's speed.
# A bfloat16 forward on a CPU with bf16 dot products runs as it is (the same single rounding).
_HALF_DTYPES = ("float16", "bfloat16")
_NATIVE_CONV_DTYPES = _FUSED_DTYPES + (("bfloat16",) if _K.has_bf16_dot() else ())


def _widened(t):
    return None if t is None else t.float()


def _conv2d(input, weight, bias, stride, padding, dilation, groups):
    if input.dtype.name in _HALF_DTYPES and input.dtype.name not in _NATIVE_CONV_DTYPES:
        out = _conv2d(input.float(), weight.float(), _widened(bias), stride, padding, dilation, groups)
        return out.to(input.dtype)
    if input.dtype.name not in _NATIVE_CONV_DTYPES:
        return _decomposition("conv2d")(input, weight, bias, stride, padding, dilation, groups)
    n, _, h, w = input.shape
    o, _, kh, kw = weight.shape
    oh = (h + 2 * padding[0] - dilation[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (w + 2 * padding[1] - dilation[1] * (kw - 1) - 1) // stride[1] + 1
    out = input.new_empty((n, o, oh, ow))
    weight = _contiguous(weight)
    _K.conv2d(_code(input.dtype), input.shape, weight.shape, _operand(out), _operand(input), _operand(weight),
              None if bias is None else _operand(bias), tuple(stride), tuple(padding), tuple(dilation), groups)
    return out


def _conv2d_input_backward(grad, weight, input_shape, stride, padding, dilation, groups):
    if grad.dtype.name in _HALF_DTYPES:
        out = _conv2d_input_backward(grad.float(), weight.float(), input_shape, stride, padding, dilation, groups)
        return out.to(grad.dtype)
    if grad.dtype.name not in _FUSED_DTYPES:
        return _decomposition("conv2d_input_backward")(grad, weight, input_shape, stride, padding, dilation, groups)
    out = grad.new_empty(tuple(input_shape))
    grad, weight = _contiguous(grad), _contiguous(weight)
    _K.conv2d_input_backward(_code(grad.dtype), out.shape, weight.shape, _operand(out), _operand(grad), _operand(weight),
                             tuple(stride), tuple(padding), tuple(dilation), groups)
    return out


def _conv2d_weight_backward(grad, input, weight_shape, stride, padding, dilation, groups):
    if grad.dtype.name in _HALF_DTYPES:
        out = _conv2d_weight_backward(grad.float(), input.float(), weight_shape, stride, padding, dilation, groups)
        return out.to(grad.dtype)
    if grad.dtype.name not in _FUSED_DTYPES:
        return _decomposition("conv2d_weight_backward")(grad, input, weight_shape, stride, padding, dilation, groups)
    out = grad.new_empty(tuple(weight_shape))
    grad = _contiguous(grad)
    _K.conv2d_weight_backward(_code(grad.dtype), input.shape, out.shape, _operand(out), _operand(grad), _operand(input),
                              tuple(stride), tuple(padding), tuple(dilation), groups)
    return out


def _pool_out(size: int, k: int, s: int, p: int, d: int, ceil_mode: bool) -> int:
    """Output size of one pooled dim (the formula of tensorplug.nn._pooling, which backends may
    not import): ceil_mode's last window must start inside the input or its left padding."""
    out = (size + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1
    return out


def _pool_hw(input, kernel, stride, padding, dilation, ceil_mode) -> tuple:
    return tuple(_pool_out(size, k, s, p, d, ceil_mode)
                 for size, k, s, p, d in zip(input.shape[2:], kernel, stride, padding, dilation))


def _max_pool2d(input, kernel, stride, padding, dilation, ceil_mode):
    if input.dtype.name not in _FUSED_DTYPES:
        return _decomposition("max_pool2d")(input, kernel, stride, padding, dilation, ceil_mode)
    out_hw = _pool_hw(input, kernel, stride, padding, dilation, ceil_mode)
    out = input.new_empty(input.shape[:2] + out_hw)
    _K.max_pool2d(_code(input.dtype), input.shape, out_hw, _operand(out), None, _operand(input),
                  tuple(kernel), tuple(stride), tuple(padding), tuple(dilation))
    return out


def _max_pool2d_with_indices(input, kernel, stride, padding, dilation, ceil_mode):
    if input.dtype.name not in _FUSED_DTYPES:
        return _decomposition("max_pool2d_with_indices")(input, kernel, stride, padding, dilation, ceil_mode)
    import tensorplug  # the public dtype, imported late: the package is still loading when this module is

    out_hw = _pool_hw(input, kernel, stride, padding, dilation, ceil_mode)
    out = input.new_empty(input.shape[:2] + out_hw)
    indices = input.new_empty(out.shape, dtype=tensorplug.int64)
    _K.max_pool2d(_code(input.dtype), input.shape, out_hw, _operand(out), _operand(indices), _operand(input),
                  tuple(kernel), tuple(stride), tuple(padding), tuple(dilation))
    return out, indices


def _max_pool2d_backward(grad, input, kernel, stride, padding, dilation, ceil_mode):
    if input.dtype.name not in _FUSED_DTYPES:
        return _decomposition("max_pool2d_backward")(grad, input, kernel, stride, padding, dilation, ceil_mode)
    out_hw = tuple(grad.shape[2:])
    grad_input = input.new_empty(input.shape)
    _K.max_pool2d_backward(_code(input.dtype), input.shape, out_hw, _operand(grad_input), _operand(grad),
                           _operand(input), tuple(kernel), tuple(stride), tuple(padding), tuple(dilation))
    return grad_input


def _max_pool2d_with_indices_backward(grad, input, indices, kernel, stride, padding, dilation, ceil_mode):
    if input.dtype.name not in _FUSED_DTYPES or grad.dtype != input.dtype:
        return _decomposition("max_pool2d_with_indices_backward")(grad, input, indices, kernel, stride, padding,
                                                                  dilation, ceil_mode)
    grad_input = input.new_empty(input.shape)
    _K.max_pool2d_with_indices_backward(_code(input.dtype), input.shape, tuple(grad.shape[2:]), _operand(grad_input),
                                        _operand(grad), _operand(indices))
    return grad_input


def _avg_pool2d(input, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override):
    if input.dtype.name not in _FUSED_DTYPES:
        return _decomposition("avg_pool2d")(input, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override)
    out_hw = _pool_hw(input, kernel, stride, padding, (1, 1), ceil_mode)
    out = input.new_empty(input.shape[:2] + out_hw)
    _K.avg_pool2d(_code(input.dtype), input.shape, out_hw, _operand(out), _operand(input), tuple(kernel),
                  tuple(stride), tuple(padding), bool(count_include_pad), int(divisor_override or 0))
    return out


def _flat(t, length: int):
    """A contiguous tensor as a (storage, offset, strides) operand of shape (length,)."""
    t = _contiguous(t)
    return (backend_storage(t), t.storage_offset(), (1,))


def _layer_norm(input, normalized_shape, weight, bias, eps):
    if input.dtype.name not in _FUSED_DTYPES:
        return _decomposition("layer_norm")(input, normalized_shape, weight, bias, eps)
    x = _contiguous(input)
    cols = math.prod(normalized_shape)
    rows = x.numel() // cols if cols else 0
    out = x.new_empty(x.shape)
    strides = (cols, 1)
    _K.layer_norm(_code(x.dtype), rows, cols, (backend_storage(out), out.storage_offset(), strides),
                  (backend_storage(x), x.storage_offset(), strides),
                  None if weight is None else _flat(weight, cols), None if bias is None else _flat(bias, cols), float(eps))
    return out


def _lstm_sequence_forward(projected, w_hh, h0, c0):
    if projected.dtype.name not in _FUSED_DTYPES:
        return _decomposition("lstm_sequence_forward")(projected, w_hh, h0, c0)
    steps, batch, gates = projected.shape
    hidden = gates // 4
    hs = projected.new_empty((steps, batch, hidden))
    cs = projected.new_empty((steps, batch, hidden))
    acts = projected.new_empty((steps, batch, gates))
    _K.lstm_forward(_code(projected.dtype), steps, batch, hidden, *(_operand(t) for t in (projected, w_hh, h0, c0, hs, cs,
                                                                                           acts)))
    return hs, cs, acts


def _lstm_sequence_backward(w_hh, h0, c0, hs, cs, acts, grad_hs, grad_hn, grad_cn):
    if hs.dtype.name not in _FUSED_DTYPES:
        return _decomposition("lstm_sequence_backward")(w_hh, h0, c0, hs, cs, acts, grad_hs, grad_hn, grad_cn)
    steps, batch, hidden = hs.shape
    grad_projected = acts.new_empty(acts.shape)
    grad_w_hh, grad_h0, grad_c0 = w_hh.new_empty(w_hh.shape), h0.new_empty(h0.shape), c0.new_empty(c0.shape)
    _K.lstm_backward(_code(hs.dtype), steps, batch, hidden, *(_operand(t) for t in (
        w_hh, h0, c0, hs, cs, acts, grad_hs, grad_hn, grad_cn, grad_projected, grad_w_hh, grad_h0, grad_c0)))
    return grad_projected, grad_w_hh, grad_h0, grad_c0


def _gru_sequence_forward(projected, w_hh, b_hh, h0):
    if projected.dtype.name not in _FUSED_DTYPES:
        return _decomposition("gru_sequence_forward")(projected, w_hh, b_hh, h0)
    steps, batch, gates = projected.shape
    hidden = gates // 3
    hs = projected.new_empty((steps, batch, hidden))
    acts = projected.new_empty((steps, batch, 4 * hidden))
    _K.gru_forward(_code(projected.dtype), steps, batch, hidden, *(_operand(t) for t in (projected, w_hh, b_hh, h0, hs,
                                                                                          acts)))
    return hs, acts


def _gru_sequence_backward(w_hh, h0, hs, acts, grad_hs, grad_hn):
    if hs.dtype.name not in _FUSED_DTYPES:
        return _decomposition("gru_sequence_backward")(w_hh, h0, hs, acts, grad_hs, grad_hn)
    steps, batch, hidden = hs.shape
    grad_projected = hs.new_empty((steps, batch, 3 * hidden))
    grad_w_hh, grad_b_hh, grad_h0 = w_hh.new_empty(w_hh.shape), w_hh.new_empty((3 * hidden,)), h0.new_empty(h0.shape)
    _K.gru_backward(_code(hs.dtype), steps, batch, hidden, *(_operand(t) for t in (
        w_hh, h0, hs, acts, grad_hs, grad_hn, grad_projected, grad_w_hh, grad_b_hh, grad_h0)))
    return grad_projected, grad_w_hh, grad_b_hh, grad_h0


def _rnn_sequence_forward(projected, w_hh, h0, nonlinearity):
    if projected.dtype.name not in _FUSED_DTYPES:
        return _decomposition("rnn_sequence_forward")(projected, w_hh, h0, nonlinearity)
    steps, batch, hidden = projected.shape
    hs = projected.new_empty((steps, batch, hidden))
    _K.rnn_forward(_code(projected.dtype), steps, batch, hidden, int(nonlinearity == "tanh"),
                   *(_operand(t) for t in (projected, w_hh, h0, hs)))
    return hs


def _rnn_sequence_backward(w_hh, h0, hs, grad_hs, grad_hn, nonlinearity):
    if hs.dtype.name not in _FUSED_DTYPES:
        return _decomposition("rnn_sequence_backward")(w_hh, h0, hs, grad_hs, grad_hn, nonlinearity)
    steps, batch, hidden = hs.shape
    grad_projected = hs.new_empty(hs.shape)
    grad_w_hh, grad_h0 = w_hh.new_empty(w_hh.shape), h0.new_empty(h0.shape)
    _K.rnn_backward(_code(hs.dtype), steps, batch, hidden, int(nonlinearity == "tanh"), *(_operand(t) for t in (
        w_hh, h0, hs, grad_hs, grad_hn, grad_projected, grad_w_hh, grad_h0)))
    return grad_projected, grad_w_hh, grad_h0


def _adam_step(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, lr, beta1, beta2, eps, weight_decay, step, decoupled):
    args = (param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, lr, beta1, beta2, eps, weight_decay, step, decoupled)
    tensors = [t for t in args[:5] if t is not None]
    if param.dtype.name not in _FUSED_DTYPES or any(
            t.dtype != param.dtype or t.shape != param.shape or not is_contiguous(t) for t in tensors):
        return _decomposition("adam_step_")(*args)
    n = math.prod(param.shape)

    def flat(t):
        return (backend_storage(t), t.storage_offset(), (1,))

    _K.adam_step(_code(param.dtype), n, flat(param), flat(grad), flat(exp_avg), flat(exp_avg_sq),
                 None if max_exp_avg_sq is None else flat(max_exp_avg_sq), lr, beta1, beta2, eps, weight_decay,
                 1 - beta1**step, (1 - beta2**step) ** 0.5, bool(decoupled))
    return param


_REDUCTION_CODES = {"none": 0, "mean": 1, "sum": 2}


def _relu(input):
    if input.dtype.name == "bool":
        return _decomposition("relu")(input)
    out = input.new_empty(input.shape)
    _K.unary(_K.UNARY_OPS["relu"], _code(input.dtype), out.shape, _operand(out), _operand(input))
    return out


def _relu_backward(grad, output):
    if grad.dtype is not output.dtype or not grad.dtype.is_floating_point:
        return _decomposition("relu_backward")(grad, output)
    result = grad.new_empty(output.shape)
    _K.binary(_K.BINARY_OPS["relu_backward"], _code(grad.dtype), output.shape, _operand(result), _operand(grad),
              _operand(output))
    return result


def _cross_entropy(input, target, weight, reduction, ignore_index, label_smoothing):
    if input.dtype.name not in _FUSED_DTYPES:
        return _decomposition("cross_entropy")(input, target, weight, reduction, ignore_index, label_smoothing)
    n, c, r = input.shape
    code = _REDUCTION_CODES[reduction]
    out = input.new_empty((n, r) if code == 0 else ())
    _K.cross_entropy(_code(input.dtype), n, c, r, code, _operand(out), _operand(input), _operand(target),
                     None if weight is None else _operand(weight), int(ignore_index), float(label_smoothing))
    return out


def _cross_entropy_backward(grad, input, target, weight, reduction, ignore_index, label_smoothing):
    if input.dtype.name not in _FUSED_DTYPES or grad.dtype != input.dtype:
        return _decomposition("cross_entropy_backward")(grad, input, target, weight, reduction, ignore_index,
                                                        label_smoothing)
    n, c, r = input.shape
    out = input.new_empty(input.shape)
    _K.cross_entropy_backward(_code(input.dtype), n, c, r, _REDUCTION_CODES[reduction], _operand(out), _operand(grad),
                              _operand(input), _operand(target), None if weight is None else _operand(weight),
                              int(ignore_index), float(label_smoothing))
    return out


def _linear(input, weight, bias):
    dtype = input.dtype
    shape = input.shape
    # Anything but matching float operands (the op called with shapes the frontend would have
    # refused included) is the decomposition's, which raises its errors.
    if (dtype.name not in _FUSED_DTYPES or weight.dtype is not dtype or len(weight.shape) != 2 or not shape
            or shape[-1] != weight.shape[1]
            or (bias is not None and (bias.dtype is not dtype or bias.shape != weight.shape[:1]))):
        return _decomposition("linear")(input, weight, bias)
    # The leading dims of input as one dim of rows, when its strides allow it without a copy.
    strides = input.stride()
    rows, row_stride = 1, strides[-2] if len(shape) > 1 else 0
    for i in range(len(shape) - 2, -1, -1):
        if shape[i] != 1 and strides[i] != row_stride * rows:
            return _decomposition("linear")(input, weight, bias)
        rows *= shape[i]
    outputs, features = weight.shape
    out = input.new_empty(shape[:-1] + (outputs,))
    storage, offset, _ = _operand(input)
    a = (storage, offset, (row_stride, strides[-1]))
    storage, offset, _ = _operand(out)
    _K.linear(_code(dtype), rows, outputs, features, (storage, offset, (outputs, 1)), a, _operand(weight),
              None if bias is None else _operand(bias))
    return out


def _gelu(input, approximate):
    if input.dtype.name not in _FUSED_DTYPES or not is_contiguous(input):
        return _decomposition("gelu")(input, approximate)
    out = input.new_empty(input.shape)
    n = input.numel()
    _K.gelu(_code(input.dtype), int(approximate == "tanh"), n, _flat(out, n), None, _flat(input, n))
    return out


def _gelu_backward(grad, input, approximate):
    if (input.dtype.name not in _FUSED_DTYPES or grad.dtype is not input.dtype or grad.shape != input.shape
            or not is_contiguous(input)):
        return _decomposition("gelu_backward")(grad, input, approximate)
    out = input.new_empty(input.shape)
    n = input.numel()
    # One value expanded to every element (sum's backward) is read in place; other layouts are copied.
    one_value = n > 0 and all(st == 0 for st in grad.stride())
    grad_operand = (backend_storage(grad), grad.storage_offset(), (0,)) if one_value else _flat(grad, n)
    _K.gelu(_code(input.dtype), int(approximate == "tanh"), n, _flat(out, n), grad_operand, _flat(input, n))
    return out


def _smooth_l1_loss(input, target, reduction, beta):
    dtype = input.dtype
    if dtype.name not in _FUSED_DTYPES or target.dtype is not dtype or target.shape != input.shape:
        return _decomposition("smooth_l1_loss")(input, target, reduction, beta)
    code = _REDUCTION_CODES[reduction]
    out = input.new_empty(input.shape if code == 0 else ())
    _K.smooth_l1_loss(_code(dtype), input.shape, code, beta, _operand(out), _operand(input), _operand(target))
    return out


def _smooth_l1_loss_backward(grad, input, target, reduction, beta):
    dtype = input.dtype
    if (dtype.name not in _FUSED_DTYPES or target.dtype is not dtype or grad.dtype is not dtype
            or target.shape != input.shape or grad.shape != (input.shape if reduction == "none" else ())):
        return _decomposition("smooth_l1_loss_backward")(grad, input, target, reduction, beta)
    out = input.new_empty(input.shape)
    _K.smooth_l1_loss_backward(_code(dtype), input.shape, _REDUCTION_CODES[reduction], beta, _operand(out),
                               _operand(grad), _operand(input), _operand(target))
    return out


def _ctc_fits(log_probs, targets, input_lengths, target_lengths) -> bool:
    """The layouts the CTC kernels take: float log_probs (T, N, C), int64 targets (N, S) and
    lengths (N,) (the composite's own; anything else runs the decomposition)."""
    if log_probs.dtype.name not in _FUSED_DTYPES or len(log_probs.shape) != 3:
        return False
    batch = log_probs.shape[1]
    return (targets.dtype.name == "int64" and len(targets.shape) == 2 and targets.shape[0] == batch
            and all(t.dtype.name == "int64" and t.shape == (batch,) for t in (input_lengths, target_lengths)))


def _ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, reduction, zero_infinity):
    if not _ctc_fits(log_probs, targets, input_lengths, target_lengths):
        return _decomposition("ctc_loss")(log_probs, targets, input_lengths, target_lengths, blank, reduction,
                                          zero_infinity)
    steps, batch, classes = log_probs.shape
    code = _REDUCTION_CODES[reduction]
    out = log_probs.new_empty((batch,) if code == 0 else ())
    # The kernel checks every length against T and S and every label against C before reading.
    _K.ctc_loss(_code(log_probs.dtype), (steps, batch, classes, targets.shape[1]), int(blank), code,
                int(bool(zero_infinity)), _operand(out), _operand(log_probs), _operand(targets),
                _operand(input_lengths), _operand(target_lengths))
    return out


def _ctc_loss_backward(grad, log_probs, targets, input_lengths, target_lengths, blank, reduction, zero_infinity):
    code = _REDUCTION_CODES[reduction]
    if (not _ctc_fits(log_probs, targets, input_lengths, target_lengths) or grad.dtype is not log_probs.dtype
            or grad.shape != ((log_probs.shape[1],) if code == 0 else ())):
        return _decomposition("ctc_loss_backward")(grad, log_probs, targets, input_lengths, target_lengths, blank,
                                                   reduction, zero_infinity)
    steps, batch, classes = log_probs.shape
    out = log_probs.new_empty(log_probs.shape)
    _K.ctc_loss_backward(_code(log_probs.dtype), (steps, batch, classes, targets.shape[1]), int(blank), code,
                         int(bool(zero_infinity)), _operand(out), _operand(grad), _operand(log_probs),
                         _operand(targets), _operand(input_lengths), _operand(target_lengths))
    return out


# The family numbers of _K.tensor_kernel.
_UNARY, _BINARY, _COMPARE, _REDUCE = 0, 1, 2, 3


def table() -> dict:
    """Op name -> kernel: every primitive of the contract, and the fused composite ops."""
    kernels = {"copy_": _copy, "fill_": _fill, "where": _where, "matmul": _matmul, "gather": _gather,
               "scatter_": _scatter, "index_get": _index_get, "index_put_": _index_put,
               "uniform_": _random(_K.uniform), "normal_": _random(_K.normal), "randint_": _random(_K.randint),
               "sort": _sort,
               "softmax": _softmax(False), "log_softmax": _softmax(True), "conv2d": _conv2d,
               "conv2d_input_backward": _conv2d_input_backward, "conv2d_weight_backward": _conv2d_weight_backward,
               "max_pool2d": _max_pool2d, "max_pool2d_with_indices": _max_pool2d_with_indices,
               "max_pool2d_backward": _max_pool2d_backward,
               "max_pool2d_with_indices_backward": _max_pool2d_with_indices_backward, "avg_pool2d": _avg_pool2d,
               "layer_norm": _layer_norm, "cross_entropy": _cross_entropy,
               "cross_entropy_backward": _cross_entropy_backward, "lstm_sequence_forward": _lstm_sequence_forward,
               "lstm_sequence_backward": _lstm_sequence_backward, "gru_sequence_forward": _gru_sequence_forward,
               "gru_sequence_backward": _gru_sequence_backward, "rnn_sequence_forward": _rnn_sequence_forward,
               "rnn_sequence_backward": _rnn_sequence_backward, "adam_step_": _adam_step,
               "relu": _relu, "relu_backward": _relu_backward, "smooth_l1_loss": _smooth_l1_loss,
               "linear": _linear, "gelu": _gelu, "gelu_backward": _gelu_backward,
               "smooth_l1_loss_backward": _smooth_l1_loss_backward, "ctc_loss": _ctc_loss,
               "ctc_loss_backward": _ctc_loss_backward}
    # The elementwise families run as TensorKernel objects, which read the tensors in C and hand
    # whatever they do not cover to the Python adapter beside them (tensor_kernel.cpp).
    for name in FAMILIES["unary"]:
        code = _K.UNARY_OPS[name]
        kernels[name] = _K.tensor_kernel(_UNARY, code, _unary(code), False)
    for name in FAMILIES["binary"]:
        code = _K.BINARY_OPS[name]
        kernels[name] = _K.tensor_kernel(_BINARY, code, _binary(code, _K.binary, name), name in _WIDE_SCALAR_OPS)
    for name in FAMILIES["compare"]:
        code = _K.COMPARE_OPS[name]
        kernels[name] = _K.tensor_kernel(_COMPARE, code, _binary(code, _K.compare), False)
    for name in FAMILIES["reduce"]:
        code = _K.REDUCE_OPS[name]
        kernels[name] = _K.tensor_kernel(_REDUCE, code, _reduce(code), False)
    for name in FAMILIES["scan"]:
        kernels[name] = _scan(_K.CUMULATIVE_OPS[name])
    return kernels
