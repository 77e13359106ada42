"""Activations, softmax and dropout for ``tp.nn.functional`` (composite ops).

Pointwise activations are decompositions into elementwise primitives. Where a branch that
``where`` discards could overflow (``exp`` of a large input), its input is clamped first: an
unselected branch still receives a zero gradient, and ``0 * inf`` would poison it with NaN.
softmax and log_softmax subtract the row maximum and carry explicit derivatives, so a backend
may replace them with fused kernels.
"""
from __future__ import annotations

import math
import warnings

from ..frontend.ops import copying, reductions
from ..frontend.ops._composite import composite
from ..frontend.ops.elementwise import UNARY, where
from ..frontend.shapes import normalize_dim
from ..frontend.tensor import Tensor

__all__ = [
    "relu", "relu_", "relu6", "leaky_relu", "leaky_relu_", "elu", "elu_", "selu", "selu_", "celu", "celu_", "gelu", "silu",
    "mish", "softplus", "hardtanh", "hardtanh_", "hardsigmoid", "hardswish", "sigmoid", "tanh", "logsigmoid",
    "softsign", "tanhshrink", "threshold", "threshold_", "glu", "softmax", "softmin", "log_softmax",
    "gumbel_softmax", "dropout", "dropout1d", "dropout2d", "dropout3d",
]

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def check_tensor(op: str, value, name: str = "input") -> None:
    if not isinstance(value, Tensor):
        raise TypeError(f"{op}(): argument '{name}' must be Tensor, not {type(value).__name__}")


def check_floating(op: str, input: Tensor) -> None:
    check_tensor(op, input)
    if not input._dtype.is_floating_point:
        raise RuntimeError(f"{op}(): expected a floating-point input, but got {input._dtype.name}")


def _at_most(x: Tensor, bound: float) -> Tensor:
    """min(x, bound), with the whole gradient going to x at x == bound (``minimum`` would split it)."""
    return where(x > bound, bound, x)


def _inplace(input: Tensor, result: Tensor) -> Tensor:
    from ..frontend.ops._common import write_inplace

    return write_inplace("inplace activation", input, result)


# --- pointwise -----------------------------------------------------------------------------
def _relu_backward_backward(grad, args, output, kwargs, needs):
    return (_relu_grad(grad, args[1]),)


@composite("relu_backward", derivative=_relu_backward_backward)
def _relu_grad(grad, output):
    """relu's gradient from its output: 0 where the output is <= 0, the gradient elsewhere
    (NaN outputs included). Linear in grad; the output carries no gradient."""
    return where(output <= 0, 0, grad)


def _relu_derivative(grad, args, output, kwargs, needs):
    return (_relu_grad(grad, output),)


# relu and its gradient carry explicit derivatives so that a backend can run each as one pass
# (the decompositions take two: a comparison, then where).
@composite("relu", derivative=_relu_derivative, save_output=True)
def _relu(input):
    # "0 where input < 0": NaN (for which every comparison is false) and -0.0 pass through,
    # as in PyTorch.
    return where(input < 0, 0, input)


def relu(input, inplace=False):
    """max(input, 0); the gradient at 0 is 0, as in PyTorch."""
    check_tensor("relu", input)
    source = copying.inplace_source(input) if inplace else input
    result = _relu(source)
    return _inplace(input, result) if inplace else result


def relu_(input):
    return relu(input, inplace=True)


def _hardtanh_derivative(grad, args, output, kwargs, needs):
    # PyTorch's: the gradient passes strictly inside (min_val, max_val); 0 at the bounds and at
    # NaN (PyTorch's scalar kernel; its vectorized float32 kernel passes NaN's gradient).
    input, min_val, max_val = args
    return (where((input > min_val) & (input < max_val), grad, 0.0),)


@composite("hardtanh", derivative=_hardtanh_derivative)
def _hardtanh(input, min_val, max_val):
    return where(input <= min_val, min_val, where(input >= max_val, max_val, input))


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    check_floating("hardtanh", input)
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    source = copying.inplace_source(input) if inplace else input
    result = _hardtanh(source, min_val, max_val)
    return _inplace(input, result) if inplace else result


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    return hardtanh(input, min_val, max_val, inplace=True)


def relu6(input, inplace=False):
    return hardtanh(input, 0.0, 6.0, inplace)


@composite("leaky_relu")
def _leaky_relu(input, negative_slope):
    return where(input > 0, input, input * negative_slope)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    check_floating("leaky_relu", input)
    source = copying.inplace_source(input) if inplace else input
    result = _leaky_relu(source, negative_slope)
    return _inplace(input, result) if inplace else result


def leaky_relu_(input, negative_slope=0.01):
    return leaky_relu(input, negative_slope, inplace=True)


@composite("elu")
def _elu(input, alpha, scale):
    # NaN takes the identity branch, value and gradient, as in PyTorch ("x <= 0 ? ... : x"); the
    # other branch sees 0 there, so its gradient (0 * exp(NaN)) cannot poison it.
    nonpositive = input <= 0
    negative = UNARY["expm1"](where(nonpositive, input, 0.0)) * alpha
    result = where(nonpositive, negative, input)
    return result * scale if scale != 1.0 else result


def elu(input, alpha=1.0, inplace=False):
    check_floating("elu", input)
    source = copying.inplace_source(input) if inplace else input
    result = _elu(source, alpha, 1.0)
    return _inplace(input, result) if inplace else result


def elu_(input, alpha=1.0):
    return elu(input, alpha, inplace=True)


def selu(input, inplace=False):
    check_floating("selu", input)
    source = copying.inplace_source(input) if inplace else input
    result = _elu(source, _SELU_ALPHA, _SELU_SCALE)
    return _inplace(input, result) if inplace else result


def selu_(input):
    return selu(input, inplace=True)


def celu(input, alpha=1.0, inplace=False):
    check_floating("celu", input)
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError")
    source = copying.inplace_source(input) if inplace else input
    result = where(source > 0, source, UNARY["expm1"](_at_most(source, 0.0) / alpha) * alpha)
    return _inplace(input, result) if inplace else result


def celu_(input, alpha=1.0):
    return celu(input, alpha, inplace=True)


_GELU_CUBIC = 0.044715
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


def _gelu_slope_parts(input):
    """For the tanh form: (t, du) with t = tanh(u), u = sqrt(2/pi) (x + 0.044715 x^3), du = u'."""
    t = UNARY["tanh"]((input + input * input * input * _GELU_CUBIC) * _SQRT_2_OVER_PI)
    du = (input * input * (3.0 * _GELU_CUBIC) + 1.0) * _SQRT_2_OVER_PI
    return t, du


def _gelu_second_derivative(input, approximate):
    """d/dx of gelu's slope: phi(x) (2 - x^2); for the tanh form (1 - t^2) (u' + x (u'' - 2 t u'^2) / 2)."""
    if approximate == "tanh":
        t, du = _gelu_slope_parts(input)
        ddu = input * (6.0 * _GELU_CUBIC * _SQRT_2_OVER_PI)
        return (1.0 - t * t) * (du + input * 0.5 * (ddu - t * du * du * 2.0))
    pdf = UNARY["exp"](input * input * -0.5) * (1.0 / math.sqrt(2.0 * math.pi))
    return pdf * (2.0 - input * input)


def _gelu_backward_derivative(grad, args, output, kwargs, needs):
    # gelu_backward(g, x) = g * gelu'(x): linear in g, and g * gelu''(x) in x (double backward).
    output_grad, input, approximate = args
    return (_gelu_grad(grad, input, approximate) if needs[0] else None,
            grad * output_grad * _gelu_second_derivative(input, approximate) if needs[1] else None)


@composite("gelu_backward", derivative=_gelu_backward_derivative, differentiable=(0, 1))
def _gelu_grad(grad, input, approximate):
    """gelu's gradient: grad * (Phi(x) + x phi(x)), or the tanh form's exact derivative. An op of
    its own so that a backend may give it one fused kernel (issue 14)."""
    if approximate == "tanh":
        t, du = _gelu_slope_parts(input)
        return grad * ((t + 1.0) * 0.5 + input * 0.5 * (1.0 - t * t) * du)
    cdf = (UNARY["erf"](input * (1.0 / math.sqrt(2.0))) + 1.0) * 0.5
    pdf = UNARY["exp"](input * input * -0.5) * (1.0 / math.sqrt(2.0 * math.pi))
    return grad * (cdf + input * pdf)


def _gelu_derivative(grad, args, output, kwargs, needs):
    input, approximate = args
    return (_gelu_grad(grad, input, approximate),)


@composite("gelu", derivative=_gelu_derivative)
def _gelu(input, approximate):
    if approximate == "tanh":
        inner = (input + input * input * input * _GELU_CUBIC) * _SQRT_2_OVER_PI
        return input * 0.5 * (UNARY["tanh"](inner) + 1.0)
    return input * 0.5 * (UNARY["erf"](input * (1.0 / math.sqrt(2.0))) + 1.0)


def gelu(input, approximate="none"):
    """x * Phi(x); ``approximate='tanh'`` uses the tanh approximation."""
    check_floating("gelu", input)
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    return _gelu(input, approximate)


def _silu_derivative(grad, args, output, kwargs, needs):
    # PyTorch's grad * s * (1 + x * (1 - s)), s = sigmoid(x): at x = -3e38 it is -0 where the
    # product rule's terms give inf * 0.
    (input,) = args
    s = UNARY["sigmoid"](input)
    return (grad * s * (input * (1.0 - s) + 1.0),)


@composite("silu", derivative=_silu_derivative)
def _silu(input):
    return input * UNARY["sigmoid"](input)


def silu(input, inplace=False):
    check_floating("silu", input)
    source = copying.inplace_source(input) if inplace else input
    result = _silu(source)
    return _inplace(input, result) if inplace else result


@composite("softplus")
def _softplus(input, beta, threshold):
    scaled = input * beta if beta != 1 else input
    # exp only sees values up to the threshold: the other branch is the identity.
    soft = UNARY["log1p"](UNARY["exp"](_at_most(scaled, float(threshold))))
    if beta != 1:
        soft = soft / beta
    return where(scaled > threshold, input, soft)


def softplus(input, beta=1.0, threshold=20.0):
    """log(1 + exp(beta * x)) / beta, reverting to x where beta * x > threshold."""
    check_floating("softplus", input)
    return _softplus(input, beta, threshold)


@composite("mish")
def _mish(input):
    return input * UNARY["tanh"](_softplus(input, 1.0, 20.0))


def mish(input, inplace=False):
    check_floating("mish", input)
    source = copying.inplace_source(input) if inplace else input
    result = _mish(source)
    return _inplace(input, result) if inplace else result


def hardsigmoid(input, inplace=False):
    check_floating("hardsigmoid", input)
    source = copying.inplace_source(input) if inplace else input
    result = _hardtanh(source / 6.0 + 0.5, 0.0, 1.0)
    return _inplace(input, result) if inplace else result


def hardswish(input, inplace=False):
    check_floating("hardswish", input)
    source = copying.inplace_source(input) if inplace else input
    result = where(source <= -3.0, 0.0, where(source >= 3.0, source, source * (source + 3.0) / 6.0))
    return _inplace(input, result) if inplace else result


def sigmoid(input):
    return UNARY["sigmoid"](input)


def tanh(input):
    return UNARY["tanh"](input)


def logsigmoid(input):
    check_floating("logsigmoid", input)
    return -_softplus(-input, 1.0, 20.0)


def softsign(input):
    return input / (UNARY["abs"](input) + 1)


def tanhshrink(input):
    return input - UNARY["tanh"](input)


def threshold(input, threshold, value, inplace=False):
    """``input`` where it is greater than ``threshold``, else ``value``."""
    check_tensor("threshold", input)
    source = copying.inplace_source(input) if inplace else input
    result = where(source <= threshold, value, source)  # NaN is kept, as in PyTorch
    return _inplace(input, result) if inplace else result


def threshold_(input, threshold, value):
    return globals()["threshold"](input, threshold, value, inplace=True)


def glu(input, dim=-1):
    check_floating("glu", input)
    if input.ndim == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    d = normalize_dim("glu", dim, input.ndim)
    size = input._shape[d]
    if size % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {d} is size {size}")
    half = size // 2
    return input.narrow(d, 0, half) * UNARY["sigmoid"](input.narrow(d, half, half))


# --- softmax -------------------------------------------------------------------------------
def _softmax_backward(grad, args, output, kwargs, needs):
    dim = args[1]
    return (output * (grad - (grad * output).sum(dim, keepdim=True)),)


def _log_softmax_grad_derivative(grad, args, output, kwargs, needs):
    # h = g - e * sum(g) along dim, e = exp(y): linear in g (its transpose maps grad to
    # grad - sum(grad * e)), and dh_k / dy_k = -e_k * sum(g) in the output (double backward).
    output_grad, log_probs, dim = args
    e = UNARY["exp"](log_probs)
    return (grad - (grad * e).sum(dim, keepdim=True) if needs[0] else None,
            -(grad * e * output_grad.sum(dim, keepdim=True)) if needs[1] else None)


@composite("log_softmax_backward", derivative=_log_softmax_grad_derivative, differentiable=(0, 1))
def _log_softmax_grad(grad, output, dim):
    """log_softmax's gradient from its output: grad - exp(output) * grad.sum(dim). An op of its
    own so that a backend may give it one kernel (the decomposition is four launches on OpenCL)."""
    return grad - UNARY["exp"](output) * grad.sum(dim, keepdim=True)


def _log_softmax_backward(grad, args, output, kwargs, needs):
    return (_log_softmax_grad(grad, output, args[1]),)


@composite("softmax", derivative=_softmax_backward, save_output=True)
def _softmax(input, dim):
    if input.numel() == 0:  # no rows to normalize (and the maximum of nothing does not exist)
        return input.clone()
    # Subtracting the maximum keeps exp from overflowing; the maximum carries no gradient.
    shifted = input - reductions.amax(input, dim, keepdim=True).detach()
    exps = UNARY["exp"](shifted)
    return exps / exps.sum(dim, keepdim=True)


@composite("log_softmax", derivative=_log_softmax_backward, save_output=True)
def _log_softmax(input, dim):
    if input.numel() == 0:
        return input.clone()
    shifted = input - reductions.amax(input, dim, keepdim=True).detach()
    return shifted - UNARY["log"](UNARY["exp"](shifted).sum(dim, keepdim=True))


def _softmax_dim(op: str, input: Tensor, dim, stacklevel: int) -> int:
    if dim is None:
        warnings.warn(
            f"Implicit dimension choice for {op} has been deprecated. Change the call to include dim=X as an argument.",
            stacklevel=stacklevel,
        )
        dim = 0 if input.ndim in (0, 1, 3) else 1
    return normalize_dim(op, dim, input.ndim)


def _softmax_input(op: str, input, dim, dtype, stacklevel: int):
    check_tensor(op, input)
    if dtype is not None:
        input = copying.to_dtype(input, dtype)
    if not input._dtype.is_floating_point:
        raise RuntimeError(f"{op}(): expected a floating-point input, but got {input._dtype.name}")
    if input.ndim == 0:
        # A 0-d tensor is one row of one element.
        return input, 0, True
    return input, _softmax_dim(op, input, dim, stacklevel + 1), False


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    """exp(x) / exp(x).sum(dim), computed stably (in ``dtype`` when given)."""
    x, d, scalar = _softmax_input("softmax", input, dim, dtype, _stacklevel)
    if scalar:
        return _softmax(x.reshape(1), 0).reshape(())
    return _softmax(x, d)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    check_tensor("softmin", input)
    return softmax(-input if dtype is None else -copying.to_dtype(input, dtype), dim, _stacklevel + 1)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    """log(softmax(x)), computed stably as x - max - log(sum(exp(x - max)))."""
    x, d, scalar = _softmax_input("log_softmax", input, dim, dtype, _stacklevel)
    if scalar:
        return _log_softmax(x.reshape(1), 0).reshape(())
    return _log_softmax(x, d)


def gumbel_softmax(logits, tau: float = 1, hard: bool = False, eps: float = 1e-10, dim: int = -1):
    """A sample from the Gumbel-softmax distribution over ``dim``: softmax((logits + g) / tau)
    with g drawn from Gumbel(0, 1). With ``hard``, the one-hot of the sample's argmax in the
    forward pass and the soft sample's gradient in the backward pass (straight-through)."""
    check_tensor("gumbel_softmax", logits, "logits")
    if eps != 1e-10:
        warnings.warn("`eps` parameter is deprecated and has no effect.", stacklevel=2)
    from ..frontend.factories import rand_like, zeros_like

    # -log(-log(U)) for U uniform in [0, 1): a U of 0 gives -inf, a category never drawn.
    gumbels = -(-rand_like(logits).log()).log()
    y_soft = softmax((logits + gumbels) / tau, dim)
    if not hard:
        return y_soft
    index = reductions.argmax(y_soft, dim, keepdim=True)
    y_hard = zeros_like(logits).scatter_(dim, index, 1.0)
    return y_hard - y_soft.detach() + y_soft


# --- dropout -------------------------------------------------------------------------------
def _check_p(p) -> None:
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


@composite("dropout")
def _dropout(input, p, mask_shape):
    from ..frontend.factories import rand

    if p == 1.0:
        return input * 0.0
    keep = rand(mask_shape, dtype=input._dtype, device=input._device) >= p
    return input * copying.to_dtype(keep, input._dtype) * (1.0 / (1.0 - p))


def _dropout_any(op, input, p, training, inplace, mask_shape, drop=None):
    """The checks and in-place handling every dropout shares; ``drop(source, p, mask_shape)``
    (plain dropout by default) computes the result."""
    check_tensor(op, input)
    _check_p(p)
    if not training or p == 0.0:
        return input
    if not input._dtype.is_floating_point:
        raise RuntimeError(f"{op}(): expected a floating-point input, but got {input._dtype.name}")
    source = copying.inplace_source(input) if inplace else input
    result = (drop or _dropout)(source, float(p), tuple(mask_shape))
    return _inplace(input, result) if inplace else result


def dropout(input, p=0.5, training=True, inplace=False):
    """Zero each element with probability ``p`` (from ``tp.rand``) and scale the rest by 1/(1-p)."""
    return _dropout_any("dropout", input, p, training, inplace, getattr(input, "_shape", ()))


def dropout1d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of a (N, C, L) or (C, L) input."""
    check_tensor("dropout1d", input)
    if input.ndim not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {input.ndim}D input.")
    return _dropout_any("dropout1d", input, p, training, inplace, input._shape[:-1] + (1,))


def dropout2d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of a (N, C, H, W) input. As PyTorch 2.13: a 3-D input is read as
    (N, C, L) (one mask per (N, C) row), any other rank drops elementwise; both warn."""
    check_tensor("dropout2d", input)
    if input.ndim not in (3, 4):
        warnings.warn(
            f"dropout2d: Received a {input.ndim}-D input to dropout2d, which is deprecated and will result in an error "
            "in a future release. To retain the behavior and silence this warning, please use dropout instead. Note "
            "that dropout2d exists to provide channel-wise dropout on inputs with 2 spatial dimensions, a channel "
            "dimension, and an optional batch dimension (i.e. 3D or 4D inputs).",
            stacklevel=2,
        )
        return dropout(input, p, training, inplace)
    if input.ndim == 3:
        warnings.warn(
            "dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout behavior is "
            "desired - input is interpreted as shape (N, C, L), where C is the channel dim. This behavior will change "
            "in a future release to interpret the input as one without a batch dimension, i.e. shape (C, H, W). To "
            "maintain the 1D channel-wise dropout behavior, please switch to using dropout1d instead.",
            stacklevel=2,
        )
        return _dropout_any("dropout2d", input, p, training, inplace, input._shape[:-1] + (1,))
    return _dropout_any("dropout2d", input, p, training, inplace, input._shape[:-2] + (1, 1))



def dropout3d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of a (N, C, D, H, W) or (C, D, H, W) input. As PyTorch 2.13, any
    other rank warns and is read as unbatched: one mask value per entry of its first dim."""
    check_tensor("dropout3d", input)
    if input.ndim not in (4, 5):
        warnings.warn(
            f"dropout3d: Received a {input.ndim}-D input to dropout3d, which is deprecated and will result in an error "
            "in a future release. To retain the behavior and silence this warning, please use dropout instead. Note "
            "that dropout3d exists to provide channel-wise dropout on inputs with 3 spatial dimensions, a channel "
            "dimension, and an optional batch dimension (i.e. 4D or 5D inputs).",
            stacklevel=2,
        )
    channels = 2 if input.ndim == 5 else 1
    mask_shape = input._shape[:channels] + (1,) * (input.ndim - channels)
    return _dropout_any("dropout3d", input, p, training, inplace, mask_shape)
