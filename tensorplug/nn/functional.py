"""``tp.nn.functional``: activations, losses, convolutions, pooling and normalization, with
PyTorch's names, arguments, defaults and semantics.

Every function is composite (written with tensorplug ops), so it runs on any backend whose
primitives pass and gets gradients from them. The ops that backends typically fuse (softmax,
log_softmax, nll_loss, cross_entropy, layer_norm, batch_norm, conv2d, max_pool2d, avg_pool2d)
also carry explicit derivatives, which is what lets a backend override them.

>>> import tensorplug as tp
>>> import tensorplug.nn.functional as F
>>> F.softmax(tp.tensor([[1.0, 1.0]]), dim=1).tolist()
[[0.5, 0.5]]

The groups live in private modules: ``_activations`` (activations, softmax, dropout),
``_conv``, ``_conv3d``, ``_embedding_bag``, ``_fold`` (unfold, fold), ``_pooling`` (pooling, interpolate), ``_pooling3d``, ``_sampling`` (grid_sample, affine_grid),
``_normalization``, ``_losses`` and ``_ctc_loss``; the rest
(linear layers, embeddings, attention, padding) is here.
"""
from __future__ import annotations

import math

from ..frontend import dtypes as _dt
from ..frontend.autograd.views import sum_to_shape
from ..frontend.factories import arange
from ..frontend.ops import copying, reductions
from ..frontend.ops.shaping import pad  # noqa: F401  (re-exported: F.pad is tp.pad)
from ..frontend.ops._composite import composite
from ..frontend.ops._numpy_names import dim_keywords, required_dim
from ..frontend.ops.elementwise import COMPARE, where
from ..frontend.meta_device import has_values, refuse_data_dependent
from ..frontend.tensor import Tensor
from ..frontend.autocast_hook import autocast_function
from ..frontend.autograd.grad_mode import is_grad_enabled
from ._linear_grads import linear_param_grads
from . import _activations, _conv, _embedding_bag, _fold, _losses, _normalization, _pooling, _sampling
from . import (
    _alpha_dropout, _channel_shuffle, _conv3d, _ctc_loss, _fractional_pooling, _pooling3d, _leaky_variants, _lp_pool, _margin_losses, _max_unpool, _pdist, _rms_norm,
    _pool_indices, _shrink, _upsample,
)
from ._alpha_dropout import *  # noqa: F401,F403
from ._channel_shuffle import *  # noqa: F401,F403
from ._conv3d import *  # noqa: F401,F403
from ._ctc_loss import *  # noqa: F401,F403
from ._pooling3d import *  # noqa: F401,F403
from ._fractional_pooling import *  # noqa: F401,F403
from ._leaky_variants import *  # noqa: F401,F403
from ._lp_pool import *  # noqa: F401,F403
from ._margin_losses import *  # noqa: F401,F403
from ._max_unpool import *  # noqa: F401,F403
from ._pdist import *  # noqa: F401,F403
from ._pool_indices import *  # noqa: F401,F403
from ._rms_norm import *  # noqa: F401,F403
from ._shrink import *  # noqa: F401,F403
from ._upsample import *  # noqa: F401,F403
from ._activations import *  # noqa: F401,F403
from ._activations import _dropout, _softmax, check_tensor
from ._conv import *  # noqa: F401,F403
from ._embedding_bag import *  # noqa: F401,F403
from ._fold import *  # noqa: F401,F403
from ._losses import *  # noqa: F401,F403
from ._normalization import *  # noqa: F401,F403
from ._pooling import *  # noqa: F401,F403
from ._sampling import *  # noqa: F401,F403

__all__ = (
    _activations.__all__ + _conv.__all__ + _embedding_bag.__all__ + _fold.__all__ + _pooling.__all__ + _sampling.__all__ + _normalization.__all__ + _losses.__all__
    + _alpha_dropout.__all__ + _channel_shuffle.__all__ + _conv3d.__all__ + _ctc_loss.__all__ + _fractional_pooling.__all__ + _pooling3d.__all__ + _leaky_variants.__all__ + _lp_pool.__all__
    + _margin_losses.__all__ + _max_unpool.__all__ + _pdist.__all__ + _pool_indices.__all__ + _rms_norm.__all__ + _shrink.__all__
    + _upsample.__all__
    + ["linear", "bilinear", "embedding", "one_hot", "pad", "scaled_dot_product_attention", "pairwise_distance",
       "pixel_shuffle", "pixel_unshuffle", "multi_head_attention_forward", "linear_cross_entropy"]
)


# --- linear layers -------------------------------------------------------------------------
def _linear_backward(grad, args, output, kwargs, needs):
    """One node for the whole layer (PyTorch records addmm and the weight's transpose): the
    decomposition's matmul reshapes, expands and bias broadcast would otherwise each record a
    node, and on small layers those nodes, not the products, are the cost of backward."""
    input, weight, bias = args
    matrix = weight if weight.ndim == 2 else weight.unsqueeze(0)  # 1-D weight: one output
    outputs, features = matrix._shape
    batch = math.prod(input._shape[:-1])
    # The gradient and the input as (batch, out) and (batch, in) matrices; reshaped only when
    # they are not already (a 2-D input, the common case, needs no view: issue 14).
    rows = grad if grad._shape == (batch, outputs) else grad.reshape(batch, outputs)
    grad_input = grad_weight = grad_bias = None
    if needs[0]:
        grad_input = rows @ matrix
        if grad_input._shape != input._shape:
            grad_input = grad_input.reshape(input._shape)
    if needs[1]:
        x = input if input._shape == (batch, features) else input.reshape(batch, features)
        if needs[2] and weight.ndim == 2 and bias._shape == (outputs,) and not is_grad_enabled():
            # Both as one op that a backend may fuse (_linear_grads.py); it records nothing, so
            # not under create_graph.
            grad_weight, grad_bias = linear_param_grads(rows, x)
            return grad_input, grad_weight, grad_bias
        grad_weight = rows.t() @ x
        if grad_weight._shape != weight._shape:
            grad_weight = grad_weight.reshape(weight._shape)
    if needs[2]:
        grad_bias = rows.sum(0) if bias._shape == (outputs,) else sum_to_shape(grad, bias._shape)
    return grad_input, grad_weight, grad_bias


@composite("linear", derivative=_linear_backward, differentiable=(0, 1, 2))
def _linear(input, weight, bias):
    out = input @ weight.t() if weight.ndim == 2 else input @ weight
    return out + bias if bias is not None else out


def linear(input, weight, bias=None):
    """``input @ weight.T + bias``: weight is (out_features, in_features).

    >>> linear(tp.ones(2, 3), tp.ones(4, 3)).shape
    (2, 4)
    """
    check_tensor("linear", input)
    check_tensor("linear", weight, "weight")
    if weight.ndim not in (1, 2):
        raise RuntimeError(f"linear(): weight should be 1-D or 2-D, but got weight of size {list(weight._shape)}")
    if input.ndim == 0 or input._shape[-1] != weight._shape[-1]:
        rows = "x".join(map(str, input._shape[-2:] if input.ndim > 1 else (1,) + input._shape))
        raise RuntimeError(
            f"linear(): mat1 and mat2 shapes cannot be multiplied ({rows} and "
            f"{'x'.join(map(str, reversed(weight._shape)))})"
        )
    return _linear(input, weight, bias)


@autocast_function("bilinear")
def bilinear(input1, input2, weight, bias=None):
    """``y[..., k] = input1 @ weight[k] @ input2 + bias[k]``; weight is (out, in1, in2)."""
    check_tensor("bilinear", input1, "input1")
    check_tensor("bilinear", input2, "input2")
    check_tensor("bilinear", weight, "weight")
    if weight.ndim != 3:
        raise RuntimeError(f"bilinear(): weight must be 3-dimensional, but got weight of size {list(weight._shape)}")
    if input1._shape[:-1] != input2._shape[:-1]:
        raise RuntimeError(
            f"bilinear(): input batch dimensions do not match: got {list(input1._shape[:-1])} and {list(input2._shape[:-1])}"
        )
    if input1._shape[-1] != weight._shape[1] or input2._shape[-1] != weight._shape[2]:
        raise RuntimeError(
            f"bilinear(): input1 size {input1._shape[-1]} and input2 size {input2._shape[-1]} do not match "
            f"weight size {list(weight._shape)}"
        )
    lead = input1._shape[:-1]
    x1 = input1.reshape(-1, 1, 1, input1._shape[-1])
    x2 = input2.reshape(-1, 1, input2._shape[-1])
    out = ((x1 @ weight).squeeze(-2) * x2).sum(-1)
    if bias is not None:
        out = out + bias
    return out.reshape(lead + (weight._shape[0],))


# --- embeddings ----------------------------------------------------------------------------
def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False, sparse=False):
    """Rows of ``weight`` picked by the integer ``input``; row ``padding_idx`` gets no gradient.
    With ``max_norm``, the picked rows are renormalized in place first (as PyTorch);
    ``scale_grad_by_freq`` divides each row's gradient by how often its index occurs in
    ``input``; ``sparse`` gives a leaf weight a sparse gradient (nn/_embedding_lookup.py)."""
    check_tensor("embedding", input)
    check_tensor("embedding", weight, "weight")
    if weight.ndim != 2:
        raise RuntimeError(f"embedding(): 'weight' must be 2-D, but got weight of size {list(weight._shape)}")
    if input._dtype is not _dt.int64 and input._dtype is not _dt.int32:
        raise RuntimeError(
            f"Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; "
            f"but got {input._dtype.name} instead (while checking arguments for embedding)"
        )
    rows = weight._shape[0]
    if padding_idx is not None:
        if not -rows <= padding_idx < rows:
            raise AssertionError("Padding_idx must be within num_embeddings")
        padding_idx = padding_idx + rows if padding_idx < 0 else padding_idx
    flat = copying.to_dtype(input, _dt.int64).reshape(-1)
    if max_norm is not None:
        _renorm_rows(weight, flat, float(max_norm), float(norm_type))
    if sparse or scale_grad_by_freq:
        from ._embedding_lookup import embedding_lookup

        out = embedding_lookup(weight, flat, padding_idx, bool(sparse), bool(scale_grad_by_freq))
        return out.reshape(input._shape + (weight._shape[1],))
    out = weight.index_select(0, flat)
    if padding_idx is not None:
        padded = COMPARE["eq"](flat, padding_idx).unsqueeze(1)
        out = where(padded, out.detach(), out)
    return out.reshape(input._shape + (weight._shape[1],))


def _renorm_rows(weight: Tensor, indices: Tensor, max_norm: float, norm_type: float) -> None:
    from ..frontend.autograd import no_grad

    with no_grad():
        picked = weight.index_select(0, indices)
        norms = (picked.abs() ** norm_type).sum(1, keepdim=True) ** (1.0 / norm_type)
        scale = where(norms > max_norm, max_norm / (norms + 1e-7), 1.0)
        weight.index_put_((indices,), picked * scale)


def one_hot(input, num_classes=-1):
    """int64 one-hot encoding with a new last dim of ``num_classes`` (max + 1 when -1)."""
    check_tensor("one_hot", input, "input")
    if input._dtype is not _dt.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if input.numel() == 0:
        if num_classes <= 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
    elif not has_values(input):  # a meta tensor: nothing to check, and no largest class to infer
        if num_classes == -1:
            refuse_data_dependent("one_hot() without num_classes", input)
    else:
        # Data-dependent checks, as PyTorch makes them (they read two numbers back).
        if reductions.amin(input).item() < 0:
            raise RuntimeError("Class values must be non-negative.")
        largest = reductions.amax(input).item()
        if num_classes == -1:
            num_classes = largest + 1
        elif largest >= num_classes:
            raise RuntimeError("Class values must be smaller than num_classes.")
    classes = arange(num_classes, device=input._device)
    return copying.to_dtype(COMPARE["eq"](input.unsqueeze(-1), classes), _dt.int64)


# --- attention and distances -------------------------------------------------------------
def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    """softmax(query @ key^T * scale + mask) @ value over (..., L, E) / (..., S, E) inputs.

    A bool ``attn_mask`` marks the positions that take part; a float one is added to the scores;
    ``is_causal`` masks the upper triangle (top-left aligned). A query that may attend to no key
    gets a zero output (PyTorch 2.13's safe softmax), with zero gradients.
    """
    for name, t in (("query", query), ("key", key), ("value", value)):
        check_tensor("scaled_dot_product_attention", t, name)
    if query.ndim < 2 or key.ndim < 2 or value.ndim < 2:
        raise RuntimeError("scaled_dot_product_attention(): query, key and value must be at least 2-dimensional")
    if query._shape[-1] != key._shape[-1]:
        raise RuntimeError(
            f"scaled_dot_product_attention(): query and key must have the same embedding size, but got "
            f"query {list(query._shape)} and key {list(key._shape)}"
        )
    if key._shape[-2] != value._shape[-2]:
        raise RuntimeError(
            f"scaled_dot_product_attention(): key and value must have the same sequence length, but got "
            f"key {list(key._shape)} and value {list(value._shape)}"
        )
    if is_causal and attn_mask is not None:
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True")
    if enable_gqa and query.ndim >= 3 and key._shape[-3] != query._shape[-3]:
        heads, kv_heads = query._shape[-3], key._shape[-3]
        if heads % kv_heads:
            raise RuntimeError(f"scaled_dot_product_attention(): {heads} query heads are not a multiple of {kv_heads} key/value heads")
        key, value = _repeat_heads(key, heads // kv_heads), _repeat_heads(value, heads // kv_heads)
    length, source = query._shape[-2], key._shape[-2]
    factor = 1.0 / math.sqrt(query._shape[-1]) if scale is None else scale
    scores = (query @ key.transpose(-2, -1)) * factor
    if is_causal:
        rows = arange(length, device=query._device).unsqueeze(1)
        attn_mask = COMPARE["ge"](rows, arange(source, device=query._device))
    blocked_rows = None
    if attn_mask is not None:
        if attn_mask._dtype is _dt.bool:
            scores = where(attn_mask, scores, float("-inf"))
        else:
            scores = scores + attn_mask
        if not is_causal:
            # A query whose every key is masked gets a zero output, as PyTorch 2.13's
            # _safe_softmax gives, not NaN: a fully padded sequence must not poison a batch. Its
            # scores are zeroed first so that softmax's backward sees no NaN either.
            blocked_rows = COMPARE["eq"](scores, float("-inf")).all(-1, keepdim=True)
            scores = where(blocked_rows, 0.0, scores)
    weights = _softmax(scores, scores.ndim - 1)
    if blocked_rows is not None:
        weights = where(blocked_rows, 0.0, weights)
    if dropout_p > 0.0:
        weights = _dropout(weights, float(dropout_p), weights._shape)
    return weights @ value


def _repeat_heads(t: Tensor, times: int) -> Tensor:
    """(..., H, S, E) -> (..., H * times, S, E), each head repeated ``times`` times in a row."""
    shape = t._shape
    expanded = t.unsqueeze(-3).expand(shape[:-2] + (times,) + shape[-2:])
    return expanded.reshape(shape[:-3] + (shape[-3] * times,) + shape[-2:])


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False, keepdims=None):
    """||x1 - x2 + eps||_p over the last dim."""
    if keepdims is not None:
        _, keepdim = dim_keywords("pairwise_distance", None, None, keepdim, keepdims)
    check_tensor("pairwise_distance", x1, "x1")
    check_tensor("pairwise_distance", x2, "x2")
    from ._normalization import _vector_norm

    diff = x1 - x2 + eps
    norm = _vector_norm(diff, float(p), diff.ndim - 1)
    return norm if keepdim else norm.squeeze(-1)


# --- pixel shuffle ---------------------------------------------------------------------------
# Both are a reshape, a permute and a reshape: views and one copy, so every backend runs them
# and autograd differentiates them through the views.
def _check_pixel_factor(op: str, name: str, input, factor) -> None:
    check_tensor(op, input)
    if isinstance(factor, bool) or not isinstance(factor, int):
        raise TypeError(f"{op}(): argument '{name}' must be int, not {type(factor).__name__}")
    if input.ndim < 3:
        raise RuntimeError(f"{op} expects input to have at least 3 dimensions, but got input with {input.ndim} dimension(s)")
    if factor <= 0:
        raise RuntimeError(f"{op} expects a positive {name}, but got {factor}")


def pixel_shuffle(input, upscale_factor):
    """Rearrange (*, C*r*r, H, W) into (*, C, H*r, W*r), as sub-pixel convolution upscales.

    >>> pixel_shuffle(tp.arange(4.0).view(1, 4, 1, 1), 2).view(2, 2).tolist()
    [[0.0, 1.0], [2.0, 3.0]]
    """
    _check_pixel_factor("pixel_shuffle", "upscale_factor", input, upscale_factor)
    r = upscale_factor
    *batch, channels, height, width = input._shape
    if channels % (r * r):
        raise RuntimeError(
            "pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of "
            f"upscale_factor, but input.size(-3)={channels} is not divisible by {r * r}")
    n = len(batch)
    out = input.reshape(*batch, channels // (r * r), r, r, height, width)
    out = out.permute(*range(n), n, n + 3, n + 1, n + 4, n + 2)
    return out.reshape(*batch, channels // (r * r), height * r, width * r)


def pixel_unshuffle(input, downscale_factor):
    """Rearrange (*, C, H*r, W*r) into (*, C*r*r, H, W): the inverse of ``pixel_shuffle``."""
    _check_pixel_factor("pixel_unshuffle", "downscale_factor", input, downscale_factor)
    r = downscale_factor
    *batch, channels, height, width = input._shape
    for name, size, dim in (("height", height, -2), ("width", width, -1)):
        if size % r:
            raise RuntimeError(f"pixel_unshuffle expects {name} to be divisible by downscale_factor, "
                               f"but input.size({dim})={size} is not divisible by {r}")
    n = len(batch)
    out = input.reshape(*batch, channels, height // r, r, width // r, r)
    out = out.permute(*range(n), n, n + 2, n + 4, n + 1, n + 3)
    return out.reshape(*batch, channels * r * r, height // r, width // r)


def _softmax_method(self, dim=None, dtype=None, axis=None):
    # The method takes NumPy's ``axis`` (PyTorch's native method does); F.softmax does not.
    return softmax(self, required_dim("softmax", dim, axis), dtype=dtype)  # noqa: F405


def _log_softmax_method(self, dim=None, dtype=None, axis=None):
    return log_softmax(self, required_dim("log_softmax", dim, axis), dtype=dtype)  # noqa: F405


#: Tensor methods this module provides: name -> function (attached by frontend.methods).
TENSOR_METHODS: dict = {
    "softmax": _softmax_method,
    "log_softmax": _log_softmax_method,
    "relu": relu,  # noqa: F405
    "relu_": relu_,  # noqa: F405
    "prelu": prelu,  # noqa: F405
    "hardshrink": hardshrink,  # noqa: F405
}


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias, bias_k,
                                 bias_v, add_zero_attn, dropout_p, out_proj_weight, out_proj_bias, training=True,
                                 key_padding_mask=None, need_weights=True, attn_mask=None, use_separate_proj_weight=False,
                                 q_proj_weight=None, k_proj_weight=None, v_proj_weight=None, static_k=None, static_v=None,
                                 average_attn_weights=True, is_causal=False):
    """``nn.MultiheadAttention``'s forward with its parameters as arguments (torch's functional
    form; sequence-first inputs): runs the module's implementation."""
    from ._multihead_attention import multi_head_attention_forward as forward

    return forward(query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias, bias_k, bias_v,
                   add_zero_attn, dropout_p, out_proj_weight, out_proj_bias, training, key_padding_mask, need_weights,
                   attn_mask, use_separate_proj_weight, q_proj_weight, k_proj_weight, v_proj_weight, static_k, static_v,
                   average_attn_weights, is_causal)


# Last: the module builds on linear and cross_entropy above.
from ._linear_cross_entropy import linear_cross_entropy  # noqa: E402,F401
