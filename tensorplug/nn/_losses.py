"""Loss functions for ``tp.nn.functional``.

nll_loss and cross_entropy (with class-index targets) are composite ops with explicit
derivatives over a canonical (N, C, R) input, R being the flattened extra dims, so a backend may
fuse them; the public functions check and reshape, then call the op. cross_entropy's derivative
is an op too, cross_entropy_backward (one fused kernel on the CPU instead of about ten). mse_loss and smooth_l1_loss
are such ops too (one backward node instead of five to nine). Everything else is a short
decomposition whose gradient comes from the primitives.
"""
from __future__ import annotations

import functools
import math
import warnings

from ..frontend import dtypes as _dt
from ..frontend.factories import ones_like, zeros_like
from ..frontend.ops import copying
from ..frontend.ops._common import on_common_device, trusted_indices
from ..frontend.ops._composite import composite
from ..frontend.ops.elementwise import BINARY, COMPARE, UNARY, where
from ..frontend.ops.math_ops import xlogy
from ..frontend.tensor import Tensor
from ..frontend.views import broadcast_tensors
from ..frontend.autocast_hook import autocast_function
from ._activations import _log_softmax, _softmax, _softplus, check_tensor

__all__ = [
    "nll_loss", "cross_entropy", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "binary_cross_entropy",
    "binary_cross_entropy_with_logits", "kl_div", "soft_margin_loss", "poisson_nll_loss", "triplet_margin_loss",
]

_REDUCTIONS = ("none", "mean", "sum")


def _legacy_reduction(size_average, reduce) -> str:
    """PyTorch's mapping of the deprecated size_average/reduce flags to a reduction."""
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    warnings.warn("size_average and reduce args will be deprecated, please use reduction='{}' instead.".format(
        "none" if not reduce else "mean" if size_average else "sum"), stacklevel=3)
    if not reduce:
        return "none"
    return "mean" if size_average else "sum"


def _reduction(reduction: str, size_average=None, reduce=None, allowed=_REDUCTIONS) -> str:
    if size_average is not None or reduce is not None:
        return _legacy_reduction(size_average, reduce)
    if reduction not in allowed:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return reduction


def _reduce(loss: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


# --- nll_loss and cross_entropy -----------------------------------------------------------
def _class_weights(target_safe: Tensor, weight, valid: Tensor, dtype) -> Tensor:
    """Per-target weight w[t] (1 without weights), zero where the target is ignored."""
    mask = copying.to_dtype(valid, dtype)
    if weight is None:
        return mask
    return weight.index_select(0, target_safe.reshape(-1)).reshape(target_safe._shape) * mask


def _targets(target: Tensor, ignore_index: int):
    valid = COMPARE["ne"](target, ignore_index)
    return where(valid, target, 0), valid


def _loss_scale(grad, reduction, denominator):
    """The gradient of each per-sample loss, given the reduced loss's gradient."""
    if reduction == "none":
        return grad
    if reduction == "mean":
        return grad / denominator
    return grad


def _trusting_indices(fn):
    """The losses' decompositions and derivatives gather and scatter at targets that nll_loss or
    cross_entropy range-checked on entry: no second and third host read of the same values."""
    @functools.wraps(fn)
    def run(*args, **kwargs):
        with trusted_indices():
            return fn(*args, **kwargs)

    return run


@_trusting_indices
def _nll_loss_backward(grad, args, output, kwargs, needs):
    input, target, weight, reduction, ignore_index = args
    safe, valid = _targets(target, ignore_index)
    w = _class_weights(safe, weight, valid, input._dtype)
    scale = _loss_scale(grad, reduction, w.sum())
    picked = -(scale * w)
    return (zeros_like(input).scatter(1, safe.unsqueeze(1), picked.unsqueeze(1)),)


@composite("nll_loss", derivative=_nll_loss_backward)
@_trusting_indices
def _nll_loss(input, target, weight, reduction, ignore_index):
    safe, valid = _targets(target, ignore_index)
    w = _class_weights(safe, weight, valid, input._dtype)
    losses = -(input.gather(1, safe.unsqueeze(1)).squeeze(1) * w)
    if reduction == "none":
        return losses
    if reduction == "sum":
        return losses.sum()
    return losses.sum() / w.sum()


def _smoothed_targets(input, target, weight, ignore_index, label_smoothing):
    """q[n, c, r]: the weight each log-probability gets in the per-sample loss."""
    safe, valid = _targets(target, ignore_index)
    w_target = _class_weights(safe, weight, valid, input._dtype)
    classes = input._shape[1]
    q = zeros_like(input).scatter(1, safe.unsqueeze(1), (w_target * (1.0 - label_smoothing)).unsqueeze(1))
    if label_smoothing:
        spread = copying.to_dtype(valid, input._dtype).unsqueeze(1) * (label_smoothing / classes)
        q = q + (spread * weight.reshape(1, classes, 1) if weight is not None else spread)
    return q, w_target


@_trusting_indices
def _cross_entropy_backward(grad, args, output, kwargs, needs):
    return (_cross_entropy_grad(grad, *args),)


def _cross_entropy_row_factor(grad, input, target, weight, reduction, ignore_index, label_smoothing):
    """c[n, 1, r] with cross_entropy_backward = c * softmax(input) - scale * q: the loss scale
    times the row's total target weight sum_c q_c."""
    safe, valid = _targets(target, ignore_index)
    w_target = _class_weights(safe, weight, valid, input._dtype)
    scale = _loss_scale(grad, reduction, w_target.sum())
    if not label_smoothing:
        return (scale * w_target).unsqueeze(1)
    q, _ = _smoothed_targets(input, target, weight, ignore_index, label_smoothing)
    if reduction == "none":
        scale = scale.unsqueeze(1)
    return scale * q.sum(1, keepdim=True)


def _cross_entropy_grad_backward(grad, args, output, kwargs, needs):
    # cross_entropy_backward is linear in its grad and c * softmax(input) plus a constant in its
    # input (c from _cross_entropy_row_factor): softmax's derivative gives the second term.
    output_grad, input, *rest = args
    grad_output_grad = grad_input = None
    if needs[0]:
        unit = _cross_entropy_grad(ones_like(output_grad), input, *rest)
        grad_output_grad = (grad * unit).sum(1) if rest[2] == "none" else (grad * unit).sum()
    if needs[1]:
        probabilities = _softmax(input, 1)
        factor = _cross_entropy_row_factor(output_grad, input, *rest)
        grad_input = factor * probabilities * (grad - (grad * probabilities).sum(1, keepdim=True))
    return grad_output_grad, grad_input


@composite("cross_entropy_backward", derivative=_cross_entropy_grad_backward, differentiable=(0, 1))
def _cross_entropy_grad(grad, input, target, weight, reduction, ignore_index, label_smoothing):
    """cross_entropy's gradient with respect to its (N, C, R) input: per row, the loss scale times
    softmax(input) * sum_c q_c - q, where q_c is the weight the row's loss gives log-probability
    c (0 on a row whose target is ignore_index)."""
    if not label_smoothing:
        # q is w_t at the target and 0 elsewhere: softmax * (scale * w_t), minus scale * w_t at the
        # target, with no one-hot tensor.
        safe, valid = _targets(target, ignore_index)
        w_target = _class_weights(safe, weight, valid, input._dtype)
        scaled = (_loss_scale(grad, reduction, w_target.sum()) * w_target).unsqueeze(1)
        return (_softmax(input, 1) * scaled).scatter_add(1, safe.unsqueeze(1), -scaled)
    q, w_target = _smoothed_targets(input, target, weight, ignore_index, label_smoothing)
    scale = _loss_scale(grad, reduction, w_target.sum())
    probabilities = _softmax(input, 1)
    if reduction == "none":
        scale = scale.unsqueeze(1)
    return scale * (probabilities * q.sum(1, keepdim=True) - q)


@composite("cross_entropy", derivative=_cross_entropy_backward)
@_trusting_indices
def _cross_entropy(input, target, weight, reduction, ignore_index, label_smoothing):
    log_probs = _log_softmax(input, 1)
    if not label_smoothing:
        # Only the target's log-probability counts: nll_loss gathers it.
        return _nll_loss(log_probs, target, weight, reduction, ignore_index)
    q, w_target = _smoothed_targets(input, target, weight, ignore_index, label_smoothing)
    losses = -(log_probs * q).sum(1)
    if reduction == "none":
        return losses
    if reduction == "sum":
        return losses.sum()
    return losses.sum() / w_target.sum()


# PyTorch's names for dtypes in messages ("Long", "Float", ...).
_TORCH_NAMES = {
    "float16": "Half", "bfloat16": "BFloat16", "float32": "Float", "float64": "Double", "int8": "Char",
    "int16": "Short", "int32": "Int", "int64": "Long", "uint8": "Byte", "bool": "Bool",
}


def _check_target_dtype(target: Tensor) -> None:
    if target._dtype not in (_dt.int64, _dt.uint8):
        raise RuntimeError(f"expected target dtype to be Long or Byte, but got {_TORCH_NAMES[target._dtype.name]}")


def _check_index_target(op: str, input: Tensor, target: Tensor):
    """Validate (input, class-index target); return both in canonical (N, C, R) / (N, R) form and
    the shape of an unreduced loss."""
    if input.ndim == 0:
        raise ValueError(f"{op}(): Expected 1 or more dimensions (got 0)")
    if input.ndim == 1:
        if target.ndim != 0:
            raise RuntimeError(f"{op}(): 0D target tensor expected for 1D input, but got target of size {list(target._shape)}")
        _check_target_dtype(target)
        return input.reshape(1, -1, 1), copying.to_dtype(target, _dt.int64).reshape(1, 1), ()
    if target.ndim != 0 and input._shape[0] != target._shape[0]:
        raise ValueError(f"Expected input batch_size ({input._shape[0]}) to match target batch_size ({target._shape[0]}).")
    if input.ndim == 2 and target.ndim != 1:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if input.ndim > 2 and target._shape != input._shape[:1] + input._shape[2:]:
        raise RuntimeError(f"Expected target size {list(input._shape[:1] + input._shape[2:])}, got {list(target._shape)}")
    _check_target_dtype(target)
    n, c = input._shape[:2]
    # The spatial size is computed, not inferred with -1: a batch of zero makes -1 ambiguous.
    rest = math.prod(input._shape[2:])
    return input.reshape(n, c, rest), copying.to_dtype(target, _dt.int64).reshape(n, rest), target._shape


def _check_classes(op: str, target: Tensor, classes: int, ignore_index) -> None:
    """Every target is a class in [0, classes) or ignore_index (PyTorch: IndexError "Target -1
    is out of bounds"); checked before any kernel so that no backend reads another class."""
    from ..frontend.ops._common import check_index_range

    check_index_range(op, target, classes, 1, ignore=int(ignore_index))


def _check_weight(op: str, weight, input: Tensor):
    if weight is None:
        return None
    check_tensor(op, weight, "weight")
    classes = input._shape[0] if input.ndim == 1 else input._shape[1]
    if weight.ndim != 1 or weight._shape[0] != classes:
        raise RuntimeError(
            f"{op}(): weight tensor should be defined either for all {classes} classes or no classes but got weight "
            f"tensor of shape: {list(weight._shape)}"
        )
    return copying.to_dtype(weight, input._dtype)


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
    """Negative log-likelihood of class-index targets given log-probabilities (class dim 1)."""
    check_tensor("nll_loss", input)
    check_tensor("nll_loss", target, "target")
    reduction = _reduction(reduction, size_average, reduce)
    x, t, loss_shape = _check_index_target("nll_loss", input, target)
    _check_classes("nll_loss", t, x._shape[1], ignore_index)
    w = _check_weight("nll_loss", weight, input)
    result = _nll_loss(x, t, w, reduction, int(ignore_index))
    return result.reshape(loss_shape) if reduction == "none" else result


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean", label_smoothing=0.0):
    """Cross entropy of unnormalized logits (class dim 1) against class indices or class
    probabilities (a float target of the input's shape), with optional label smoothing."""
    check_tensor("cross_entropy", input)
    check_tensor("cross_entropy", target, "target")
    reduction = _reduction(reduction, size_average, reduce)
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    if not input._dtype.is_floating_point:
        raise RuntimeError(f"cross_entropy(): expected a floating-point input, but got {input._dtype.name}")
    w = _check_weight("cross_entropy", weight, input)
    if target._dtype.is_floating_point and target._shape == input._shape:
        return _cross_entropy_probabilities(input, target, w, ignore_index, reduction, label_smoothing)
    x, t, loss_shape = _check_index_target("cross_entropy", input, target)
    _check_classes("cross_entropy", t, x._shape[1], ignore_index)
    result = _cross_entropy(x, t, w, reduction, int(ignore_index), float(label_smoothing))
    return result.reshape(loss_shape) if reduction == "none" else result


def _cross_entropy_probabilities(input, target, weight, ignore_index, reduction, label_smoothing):
    if ignore_index >= 0:
        raise RuntimeError("ignore_index is not supported for floating point target")
    if input.ndim == 1:
        input, target = input.unsqueeze(0), target.unsqueeze(0)
        squeeze = True
    else:
        squeeze = False
    classes = input._shape[1]
    if label_smoothing:
        target = target * (1.0 - label_smoothing) + label_smoothing / classes
    product = _log_softmax(input, 1) * copying.to_dtype(target, input._dtype)
    if weight is not None:
        product = product * weight.reshape((1, classes) + (1,) * (input.ndim - 2))
    losses = -product.sum(1)
    if reduction == "none":
        return losses.squeeze(0) if squeeze else losses
    if reduction == "sum":
        return losses.sum()
    return losses.sum() / (input.numel() // classes)


# --- regression losses ---------------------------------------------------------------------
def _pair_inputs(op: str, input, target, warn_size: bool = True):
    check_tensor(op, input)
    check_tensor(op, target, "target")
    if warn_size and target._shape != input._shape:
        warnings.warn(
            f"Using a target size ({list(target._shape)}) that is different to the input size ({list(input._shape)}). "
            "This will likely lead to incorrect results due to broadcasting. Please ensure they have the same size.",
            stacklevel=3,
        )
    if target._shape == input._shape:  # nothing to broadcast (the usual case)
        return input, target
    # The pointwise losses are elementwise in PyTorch: a 0-d CPU target (or input) joins the
    # other's device before broadcasting makes it a CPU tensor with dimensions.
    return broadcast_tensors(*on_common_device(op, input, target))


def _weighted(op: str, loss: Tensor, weight, input: Tensor, reduction: str, mean_by_weight: bool) -> Tensor:
    if weight is None:
        return _reduce(loss, reduction)
    if weight._shape != input._shape:
        raise ValueError("Weights and input must have the same size.")
    loss = loss * weight
    if reduction == "mean" and mean_by_weight:
        return loss.sum() / weight.sum()
    return _reduce(loss, reduction)


def _mse_loss_backward(grad, args, output, kwargs, needs):
    input, target, reduction = args
    diff = input - target
    per_element = diff * (_pointwise_loss_scale(grad, reduction, diff.numel()) * 2.0)
    return (per_element if needs[0] else None, -per_element if needs[1] else None)


def _one_dtype(a: Tensor, b: Tensor) -> tuple:
    """Both operands in their promoted dtype: the pointwise loss ops take one dtype (the casts,
    above the op, record their own nodes)."""
    if a._dtype is b._dtype:
        return a, b
    dtype = _dt.promote_types(a._dtype, b._dtype)
    return copying.to_dtype(a, dtype), copying.to_dtype(b, dtype)


def _pointwise_loss_scale(grad, reduction: str, count: int):
    """The gradient reaching each element of a pointwise loss from its reduced value."""
    return grad * (1.0 / count) if reduction == "mean" and count else grad


@composite("mse_loss", derivative=_mse_loss_backward, differentiable=(0, 1))
def _mse_loss(input, target, reduction):
    # One node instead of five (sub, mul, sum, view, div): a regression step's backward is
    # mostly per-node cost on small batches.
    diff = input - target
    return _reduce(diff * diff, reduction)


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Mean squared error (``weight`` multiplies each squared error; the mean then divides by
    the weights' sum, as PyTorch)."""
    reduction = _reduction(reduction, size_average, reduce)
    a, b = _pair_inputs("mse_loss", input, target)
    if weight is None:
        return _mse_loss(*_one_dtype(a, b), reduction)
    diff = a - b
    return _weighted("mse_loss", diff * diff, weight, input, reduction, True)


@autocast_function("l1_loss")
def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    reduction = _reduction(reduction, size_average, reduce)
    a, b = _pair_inputs("l1_loss", input, target)
    return _weighted("l1_loss", UNARY["abs"](a - b), weight, input, reduction, True)


def _smooth_l1_loss_backward(grad, args, output, kwargs, needs):
    grad_input = _smooth_l1_grad(grad, *args)
    return (grad_input if needs[0] else None, -grad_input if needs[1] else None)


def _smooth_l1_slope(diff, beta):
    """d/dd of the loss at d = diff: d / beta inside (-beta, beta), +-1 outside; NaN stays NaN.
    At beta = 0 it is L1's sign(d), 0 at d = 0, as in PyTorch."""
    if beta == 0:
        return UNARY["sign"](diff)
    # The default beta of 1 divides nothing: one kernel fewer on backends without a fused kernel.
    return (diff if beta == 1.0 else diff / beta).clamp(-1.0, 1.0)


def _smooth_l1_grad_backward(grad, args, output, kwargs, needs):
    # smooth_l1_loss_backward is linear in its grad (times the slope) and, inside (-beta, beta),
    # grad * scale * (input - target) / beta in its input: outside, and at beta = 0, the slope is
    # constant and its derivative 0 (PyTorch's smooth_l1_loss_double_backward).
    output_grad, input, target, reduction, beta = args
    diff = input - target
    grad_output_grad = grad_input = None
    if needs[0]:
        per_element = grad * _smooth_l1_slope(diff, beta)
        grad_output_grad = (per_element if reduction == "none"
                            else _pointwise_loss_scale(per_element.sum(), reduction, diff.numel()))
    if (needs[1] or needs[2]) and beta > 0:
        inside = copying.to_dtype(UNARY["abs"](diff) < beta, grad._dtype)
        grad_input = grad * inside * _pointwise_loss_scale(output_grad, reduction, diff.numel()) / beta
    elif needs[1] or needs[2]:
        grad_input = grad * 0.0
    return (grad_output_grad,
            grad_input if needs[1] else None,
            -grad_input if needs[2] and grad_input is not None else None)


@composite("smooth_l1_loss_backward", derivative=_smooth_l1_grad_backward, differentiable=(0, 1, 2))
def _smooth_l1_grad(grad, input, target, reduction, beta):
    """smooth_l1_loss's gradient with respect to its input (the target's is its negation): the
    slope at input - target times the loss's gradient, divided by the element count for mean.
    An op of its own so that a backend may give it one fused kernel (issue 14)."""
    return _smooth_l1_slope(input - target, beta) * _pointwise_loss_scale(grad, reduction, input.numel())


@composite("smooth_l1_loss", derivative=_smooth_l1_loss_backward, differentiable=(0, 1))
def _smooth_l1_loss(input, target, reduction, beta):
    # One node instead of six to nine (sub, abs, compare, where and the arithmetic of both sides).
    d = UNARY["abs"](input - target)
    if beta == 0:
        return _reduce(d, reduction)
    return _reduce(where(d < beta, d * d * (0.5 / beta), d - 0.5 * beta), reduction)


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """0.5 * d**2 / beta where |d| < beta, else |d| - 0.5 * beta."""
    reduction = _reduction(reduction, size_average, reduce)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    a, b = _pair_inputs("smooth_l1_loss", input, target)
    return _smooth_l1_loss(*_one_dtype(a, b), reduction, float(beta))


@autocast_function("huber_loss")
def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """0.5 * d**2 where |d| < delta, else delta * (|d| - 0.5 * delta)."""
    reduction = _reduction(reduction)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    a, b = _pair_inputs("huber_loss", input, target)
    d = UNARY["abs"](a - b)
    loss = where(d < delta, d * d * 0.5, (d - 0.5 * delta) * delta)
    return _weighted("huber_loss", loss, weight, input, reduction, False)


@autocast_function("soft_margin_loss")
def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    reduction = _reduction(reduction, size_average, reduce)
    a, b = _pair_inputs("soft_margin_loss", input, target)
    return _reduce(_softplus(-a * b, 1.0, 20.0), reduction)


@autocast_function("poisson_nll_loss")
def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None, reduction="mean"):
    reduction = _reduction(reduction, size_average, reduce)
    a, b = _pair_inputs("poisson_nll_loss", input, target, warn_size=False)
    loss = UNARY["exp"](a) - b * a if log_input else a - b * UNARY["log"](a + eps)
    if full:
        safe = where(b > 1, b, 1.0)
        stirling = safe * UNARY["log"](safe) - safe + UNARY["log"](safe * (2 * 3.141592653589793)) * 0.5
        loss = loss + where(b > 1, stirling, 0.0)
    return _reduce(loss, reduction)


# --- probability losses --------------------------------------------------------------------
@autocast_function("binary_cross_entropy")
def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """-(t * log(x) + (1 - t) * log(1 - x)), each log clamped at -100 as in PyTorch."""
    reduction = _reduction(reduction, size_average, reduce)
    check_tensor("binary_cross_entropy", input)
    check_tensor("binary_cross_entropy", target, "target")
    if target._shape != input._shape:
        raise ValueError(
            f"Using a target size ({list(target._shape)}) that is different to the input size ({list(input._shape)}) is "
            "deprecated. Please ensure they have the same size."
        )
    log_x = BINARY["maximum"](UNARY["log"](input), -100.0)
    log_1mx = BINARY["maximum"](UNARY["log1p"](-input), -100.0)
    loss = -(target * log_x + (1 - target) * log_1mx)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


@autocast_function("binary_cross_entropy_with_logits")
def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None, reduction="mean", pos_weight=None):
    """Sigmoid plus binary cross entropy in one stable expression; ``pos_weight`` weighs the
    positive term per class."""
    reduction = _reduction(reduction, size_average, reduce)
    check_tensor("binary_cross_entropy_with_logits", input)
    check_tensor("binary_cross_entropy_with_logits", target, "target")
    if target._shape != input._shape:
        raise ValueError(f"Target size ({list(target._shape)}) must be the same as input size ({list(input._shape)})")
    return _binary_cross_entropy_with_logits(input, target, weight, pos_weight, reduction)


def _binary_cross_entropy_with_logits(input, target, weight, pos_weight, reduction: str):
    """The loss of checked operands (broadcast together, as ATen's op broadcasts them)."""
    # log(1 + exp(-x)), computed without overflow.
    log_sigmoid_neg = _softplus(-input, 1.0, 20.0)
    if pos_weight is not None:
        log_weight = (pos_weight - 1) * target + 1
        loss = (1 - target) * input + log_weight * log_sigmoid_neg
    else:
        loss = (1 - target) * input + log_sigmoid_neg
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


@autocast_function("kl_div")
def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """KL(target || exp(input)) pointwise: target * (log(target) - input); ``batchmean`` divides
    the sum by the batch size."""
    reduction = _reduction(reduction, size_average, reduce, _REDUCTIONS + ("batchmean",))
    check_tensor("kl_div", input)
    check_tensor("kl_div", target, "target")
    if reduction == "mean":
        warnings.warn(
            "reduction: 'mean' divides the total loss by both the batch size and the support size."
            "'batchmean' divides only by the batch size, and aligns with the KL div math definition."
            "'mean' will be changed to behave the same as 'batchmean' in the next major release.",
            stacklevel=2,
        )
    return _kl_div(input, target, reduction, log_target)


def _kl_div(input, target, reduction: str, log_target: bool):
    """kl_div of checked operands, without the warning for ``mean`` (ATen's op,
    ``torch.kl_div``, gives none)."""
    if log_target:
        loss = UNARY["exp"](target) * (target - input)
    else:
        # PyTorch's formula, with xlogy's gradient: NaN with respect to a target of 0 (0 / 0), as there.
        loss = xlogy(target, target) - target * input
    if reduction == "batchmean":
        return loss.sum() / (input._shape[0] if input.ndim else 1)
    return _reduce(loss, reduction)


# --- metric learning -----------------------------------------------------------------------
@autocast_function("triplet_margin_loss")
def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False, size_average=None,
                        reduce=None, reduction="mean"):
    """max(d(a, p) - d(a, n) + margin, 0) with d(x, y) = ||x - y + eps||_p over the last dim.

    With ``swap``, d(a, n) is replaced by min(d(a, n), d(p, n)) (the distance swap of Balntas et
    al.). Inputs are (N, D) or unbatched (D,).
    """
    reduction = _reduction(reduction, size_average, reduce)
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    return _triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap, reduction)


def _triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap, reduction: str):
    """triplet_margin_loss with any margin (ATen's op, ``torch.triplet_margin_loss``, takes one
    of 0 or below; the functional form refuses it)."""
    for name, t in (("anchor", anchor), ("positive", positive), ("negative", negative)):
        check_tensor("triplet_margin_loss", t, name)
    if not anchor.ndim == positive.ndim == negative.ndim:
        raise RuntimeError(
            "The anchor, positive, and negative tensors are expected to have the same number of dimensions, but "
            f"got: anchor {anchor.ndim}D, positive {positive.ndim}D, and negative {negative.ndim}D inputs")
    from ._normalization import _vector_norm

    def distance(x, y):
        diff = x - y + eps
        return _vector_norm(diff, float(p), diff.ndim - 1).squeeze(-1)

    d_positive = distance(anchor, positive)
    d_negative = distance(anchor, negative)
    if swap:
        d_negative = BINARY["minimum"](d_negative, distance(positive, negative))
    loss = (d_positive - d_negative + margin).clamp_min(0.0)
    return _reduce(loss, reduction)
