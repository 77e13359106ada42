"""Normalization for ``tp.nn.functional``: batch_norm, layer_norm, group_norm, instance_norm,
normalize and cosine_similarity.

batch_norm and layer_norm carry explicit derivatives (recomputing the statistics from the saved
input), so backends may fuse them. batch_norm's running statistics travel as one tuple argument:
the op updates them in place, and a saved tensor argument would then fail the version check at
backward time, although its gradient never needs them in training mode.
"""
from __future__ import annotations

import operator

from ..frontend import dtypes as _dt
from ..frontend.autograd import no_grad
from ..frontend.ops import copying, reductions
from ..frontend.ops._composite import composite
from ..frontend.ops._numpy_names import axis_as_dim
from ..frontend.ops.elementwise import BINARY, COMPARE, UNARY, where
from ..frontend.ops.out_rehearsal import rehearse_out
from ..frontend.shapes import normalize_dim
from ..frontend.tensor import Tensor
from ..frontend.autocast_hook import autocast_function
from ._activations import check_tensor

__all__ = ["batch_norm", "instance_norm", "layer_norm", "group_norm", "normalize", "cosine_similarity"]


def _shape_str(shape) -> str:
    return str(list(shape))


# --- mixed precision ------------------------------------------------------------------------
def _half_with_float32(input: Tensor, *params) -> bool:
    """A float16/bfloat16 input normalized with float32 parameters or statistics (a bfloat16
    activation meeting a float32 norm layer under autocast). PyTorch computes such a norm in
    float32 and returns the input's dtype; the gradients then come back in each tensor's dtype."""
    return input._dtype in (_dt.float16, _dt.bfloat16) and any(
        p is not None and p._dtype is _dt.float32 for p in params)


def _float(t):
    return None if t is None else t.float()


# --- layer_norm ----------------------------------------------------------------------------
def _layer_stats(x: Tensor, dims: tuple, eps: float):
    mean = x.mean(dims, keepdim=True)
    centered = x - mean
    var = (centered * centered).mean(dims, keepdim=True)
    return centered, UNARY["rsqrt"](var + eps)


def _layer_norm_backward(grad, args, output, kwargs, needs):
    input, normalized_shape, weight, bias, eps = args
    k = len(normalized_shape)
    dims = tuple(range(input.ndim - k, input.ndim))
    lead = tuple(range(input.ndim - k))
    centered, rstd = _layer_stats(input, dims, eps)
    xhat = centered * rstd
    g = grad * weight if weight is not None else grad
    grad_input = grad_weight = grad_bias = None
    if needs[0]:
        grad_input = rstd * (g - g.mean(dims, keepdim=True) - xhat * (g * xhat).mean(dims, keepdim=True))
    if needs[1]:
        grad_weight = (grad * xhat).sum(lead) if lead else grad * xhat
    if needs[2]:
        grad_bias = grad.sum(lead) if lead else grad
    return grad_input, grad_weight, grad_bias


@composite("layer_norm", derivative=_layer_norm_backward, differentiable=(0, 2, 3))
def _layer_norm(input, normalized_shape, weight, bias, eps):
    dims = tuple(range(input.ndim - len(normalized_shape), input.ndim))
    centered, rstd = _layer_stats(input, dims, eps)
    out = centered * rstd
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out


def normalized_shape_of(op: str, input, normalized_shape, *affine) -> tuple:
    """``normalized_shape`` as a tuple, checked against the trailing dims of ``input`` and the
    shapes of the affine tensors (weight, bias; None skipped): layer_norm's and rms_norm's rules."""
    check_tensor(op, input)
    shape = (operator.index(normalized_shape),) if not isinstance(normalized_shape, (tuple, list)) else tuple(
        operator.index(s) for s in normalized_shape
    )
    k = len(shape)
    if k == 0 or input.ndim < k or input._shape[input.ndim - k:] != shape:
        raise RuntimeError(
            f"Given normalized_shape={_shape_str(shape)}, expected input with shape [*, {', '.join(map(str, shape))}], "
            f"but got input of size{_shape_str(input._shape)}"
        )
    for name, t in zip(("weight", "bias"), affine):
        if t is not None and t._shape != shape:
            raise RuntimeError(
                f"Expected {name} to be of same shape as normalized_shape, but got {name} of shape "
                f"{_shape_str(t._shape)} and normalized_shape = {_shape_str(shape)}"
            )
    return shape


@autocast_function("layer_norm")
def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Normalize over the last ``len(normalized_shape)`` dims, then scale and shift."""
    shape = normalized_shape_of("layer_norm", input, normalized_shape, weight, bias)
    if not input._dtype.is_floating_point:
        raise RuntimeError(f"layer_norm(): expected a floating-point input, but got {input._dtype.name}")
    if _half_with_float32(input, weight, bias):
        return _layer_norm(input.float(), shape, _float(weight), _float(bias), float(eps)).to(input._dtype)
    return _layer_norm(input, shape, weight, bias, float(eps))


# --- batch_norm ----------------------------------------------------------------------------
def _channel_view(t: Tensor, ndim: int) -> Tensor:
    return t.reshape((1, -1) + (1,) * (ndim - 2))


def _batch_stats(x: Tensor, dims: tuple, eps: float):
    mean = x.mean(dims, keepdim=True)
    centered = x - mean
    var = (centered * centered).mean(dims, keepdim=True)
    return mean, centered, var


def _batch_norm_backward(grad, args, output, kwargs, needs):
    input, stats, weight, bias, training, momentum, eps = args
    dims = (0,) + tuple(range(2, input.ndim))
    if training or stats[0] is None:
        _, centered, var = _batch_stats(input, dims, eps)
    else:
        centered = input - _channel_view(stats[0], input.ndim)
        var = _channel_view(stats[1], input.ndim)
    rstd = UNARY["rsqrt"](var + eps)
    xhat = centered * rstd
    g = grad * _channel_view(weight, input.ndim) if weight is not None else grad
    grad_input = grad_weight = grad_bias = None
    if needs[0]:
        if training or stats[0] is None:
            grad_input = rstd * (g - g.mean(dims, keepdim=True) - xhat * (g * xhat).mean(dims, keepdim=True))
        else:
            grad_input = g * rstd
    if needs[1]:
        grad_weight = (grad * xhat).sum(dims)
    if needs[2]:
        grad_bias = grad.sum(dims)
    return grad_input, grad_weight, grad_bias


@composite("batch_norm", derivative=_batch_norm_backward, differentiable=(0, 2, 3))
def _batch_norm(input, stats, weight, bias, training, momentum, eps):
    running_mean, running_var = stats
    dims = (0,) + tuple(range(2, input.ndim))
    if training or running_mean is None:
        mean, centered, var = _batch_stats(input, dims, eps)
        if training:
            _update_running(running_mean, running_var, mean, var, input.numel() // input._shape[1], momentum)
    else:
        centered = input - _channel_view(running_mean, input.ndim)
        var = _channel_view(running_var, input.ndim)
    out = centered * UNARY["rsqrt"](var + eps)
    if weight is not None:
        out = out * _channel_view(weight, input.ndim)
    if bias is not None:
        out = out + _channel_view(bias, input.ndim)
    return out


def _update_running(running_mean, running_var, mean, var, count: int, momentum: float) -> None:
    """running = (1 - momentum) * running + momentum * batch (the variance unbiased), in place."""
    with no_grad():
        if running_mean is not None:
            copying.copy_(running_mean, running_mean * (1 - momentum) + mean.reshape(-1) * momentum)
        if running_var is not None:
            unbiased = var.reshape(-1) * (count / max(count - 1, 1))
            copying.copy_(running_var, running_var * (1 - momentum) + unbiased * momentum)


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5):
    """Normalize each channel (dim 1) by batch statistics when ``training`` (updating the running
    statistics in place), else by the running statistics."""
    check_tensor("batch_norm", input)
    if input.ndim < 2:
        raise ValueError(f"batch_norm(): expected 2D or more input (got {input.ndim}D input)")
    channels = input._shape[1]
    for name, t in (("running_mean", running_mean), ("running_var", running_var), ("weight", weight), ("bias", bias)):
        if t is not None and t.numel() != channels:
            raise RuntimeError(f"{name} should contain {channels} elements not {t.numel()}")
    if not training and (running_mean is None or running_var is None):
        raise RuntimeError("batch_norm(): running_mean and running_var must be defined in evaluation mode")
    if training:
        count = input.numel() // channels if channels else 0
        if count <= 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got input size {_shape_str(input._shape)}")
    if not input._dtype.is_floating_point:
        raise RuntimeError(f"batch_norm(): expected a floating-point input, but got {input._dtype.name}")
    momentum = 0.0 if momentum is None else float(momentum)
    if _half_with_float32(input, running_mean, running_var, weight, bias):
        # The running statistics stay the caller's float32 buffers, updated in place.
        return _batch_norm(input.float(), (running_mean, running_var), _float(weight), _float(bias), bool(training),
                           momentum, float(eps)).to(input._dtype)
    return _batch_norm(input, (running_mean, running_var), weight, bias, bool(training), momentum, float(eps))


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True, momentum=0.1, eps=1e-5):
    """Normalize each (sample, channel) plane over its spatial dims."""
    check_tensor("instance_norm", input)
    if input.ndim < 3:
        raise ValueError(f"instance_norm(): expected 3D or more input (got {input.ndim}D input)")
    if not use_input_stats:
        return batch_norm(input, running_mean, running_var, weight, bias, False, momentum, eps)
    n, c = input._shape[:2]
    dims = tuple(range(2, input.ndim))
    mean, centered, var = _batch_stats(input, dims, eps)
    if running_mean is not None or running_var is not None:
        count = input.numel() // (n * c)
        _update_running(running_mean, running_var, mean.mean(0), var.mean(0), count, momentum)
    out = centered * UNARY["rsqrt"](var + eps)
    if weight is not None:
        out = out * _channel_view(weight, input.ndim)
    if bias is not None:
        out = out + _channel_view(bias, input.ndim)
    return out


@autocast_function("group_norm")
def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Normalize over groups of ``C / num_groups`` channels (and all spatial dims) per sample."""
    check_tensor("group_norm", input)
    if input.ndim < 2:
        raise RuntimeError(f"group_norm(): Expected at least 2 dimensions for input tensor but received {input.ndim}")
    n, c = input._shape[:2]
    if num_groups <= 0 or c % num_groups:
        raise RuntimeError(
            f"Expected number of channels in input to be divisible by num_groups, but got input of shape "
            f"{_shape_str(input._shape)} and num_groups={num_groups}"
        )
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and (t.ndim != 1 or t.numel() != c):
            raise RuntimeError(f"Expected {name} to be a vector of size equal to the number of channels in input, but got {name} of shape {_shape_str(t._shape)} and input of shape {_shape_str(input._shape)}")
    if _half_with_float32(input, weight, bias):
        return group_norm(input.float(), num_groups, _float(weight), _float(bias), eps).to(input._dtype)
    grouped = input.reshape(n, num_groups, -1)
    centered, rstd = _layer_stats(grouped, (2,), float(eps))
    out = (centered * rstd).reshape(input._shape)
    if weight is not None:
        out = out * _channel_view(weight, input.ndim)
    if bias is not None:
        out = out + _channel_view(bias, input.ndim)
    return out


# --- vector norms --------------------------------------------------------------------------
def _vector_norm(x: Tensor, p: float, dim: int) -> Tensor:
    """||x||_p along ``dim`` (kept), computed as PyTorch's norm kernel computes it (issue 16):
    float16/bfloat16 accumulate in float32 and float32 in float32 (3e38 squared overflows to
    inf, 1e-30 squared underflows to 0, as there), a norm over one element is ``|x|``, NaN
    propagates; the gradient is PyTorch's (0 at a zero vector, NaN at an infinite one)."""
    if p == float("inf"):
        return reductions.amax(UNARY["abs"](x), dim, keepdim=True)
    return _norm_along(x, p, dim)


def _norm_along_derivative(grad, args, output, kwargs, needs):
    # PyTorch's norm_backward: x |x|^(p-2) * grad / norm^(p-1), zero where the norm is zero.
    x, p, dim = args
    if p == 1:
        return (grad * UNARY["sign"](x),)
    zero = COMPARE["eq"](output, 0)
    if p == 2:
        return (x * where(zero, 0.0, grad / output),)
    scale = where(zero, 0.0, grad / output ** (p - 1))
    if p < 2:
        return (UNARY["sign"](x) * UNARY["abs"](x) ** (p - 1) * scale,)
    return (x * UNARY["abs"](x) ** (p - 2) * scale,)


@composite("vector_norm_along", derivative=_norm_along_derivative, save_output=True)
def _norm_along(x: Tensor, p: float, dim: int) -> Tensor:
    if p == 1 or (x._shape[dim] == 1 and p > 0):
        return UNARY["abs"](x).sum(dim, keepdim=True)
    if x._dtype in (_dt.float16, _dt.bfloat16):
        return copying.to_dtype(_norm_along(copying.to_dtype(x, _dt.float32), p, dim), x._dtype)
    powered = UNARY["abs"](x) ** p if p != 2 else x * x
    total = powered.sum(dim, keepdim=True)
    return UNARY["sqrt"](total) if p == 2 else total ** (1.0 / p)


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """``input / max(||input||_p, eps)`` along ``dim``; ``out=`` is div's, as in PyTorch."""
    if out is not None:
        rehearse_out(normalize, locals())
    check_tensor("normalize", input)
    d = normalize_dim("normalize", dim, input.ndim)
    norm = BINARY["maximum"](_vector_norm(input, float(p), d), eps)
    return BINARY["div"](input, norm, out=out)


@autocast_function("cosine_similarity")
def cosine_similarity(x1, x2, dim=1, eps=1e-8, axis=None):
    """Cosine of the angle between ``x1`` and ``x2`` along ``dim`` (broadcast together)."""
    if axis is not None:
        dim = axis_as_dim("cosine_similarity", dim, axis, 1)
    check_tensor("cosine_similarity", x1, "x1")
    check_tensor("cosine_similarity", x2, "x2")
    from ..frontend.views import broadcast_tensors

    a, b = broadcast_tensors(x1, x2)
    d = normalize_dim("cosine_similarity", dim, a.ndim)
    # As PyTorch: each norm is clamped to eps without the clamp entering the gradient.
    na, nb = _vector_norm(a, 2.0, d), _vector_norm(b, 2.0, d)
    # (Written so that an infinite norm stays inf: inf + (inf - inf) would be NaN.)
    na = where(na < eps, na + (eps - na).detach(), na)
    nb = where(nb < eps, nb + (eps - nb).detach(), nb)
    return ((a / na) * (b / nb)).sum(d)
