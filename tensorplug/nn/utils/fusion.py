"""``tp.nn.utils.fusion``: fold an eval-mode batch norm into the convolution or linear layer
before it, as ``torch.nn.utils.fusion``.

In eval mode batch norm is the per-channel affine map ``y = (x - mean) * s + beta`` with
``s = gamma / sqrt(var + eps)``; applied to ``W x + b`` it gives ``(s W) x + (b - mean) * s + beta``,
one layer with a rescaled weight and a new bias. Only the running statistics are used, so the
fused layer equals conv -> bn in eval mode, not in training mode.

>>> import tensorplug as tp
>>> conv, bn = tp.nn.Conv2d(2, 3, 3).eval(), tp.nn.BatchNorm2d(3).eval()
>>> x = tp.randn(1, 2, 5, 5)
>>> bool(tp.allclose(fuse_conv_bn_eval(conv, bn)(x), bn(conv(x)), atol=1e-6))
True
"""
from __future__ import annotations

import copy
from typing import TypeVar

from ...frontend.autograd import no_grad
from ...frontend.factories import zeros_like
from ...frontend.tensor import Tensor
from ..module import Module
from ..parameter import Parameter

__all__ = ["fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval", "fuse_linear_bn_weights"]

ConvT = TypeVar("ConvT", bound=Module)
LinearT = TypeVar("LinearT", bound=Module)


def _check_eval_statistics(layer: Module, bn: Module) -> None:
    """Both modules in eval mode and the batch norm holding running statistics."""
    if layer.training or bn.training:
        raise ValueError(f"Fusion only for eval! (call .eval() on the {type(layer).__name__} and the {type(bn).__name__})")
    if bn.running_mean is None or bn.running_var is None:
        raise ValueError("bn.running_mean and bn.running_var must not be None "
                         "(a batch norm built with track_running_stats=False cannot be folded)")


def _bn_scale_and_shift(bias: Tensor, bn_rm: Tensor, bn_rv: Tensor, bn_eps: float, bn_w: Tensor | None,
                        bn_b: Tensor | None) -> tuple[Tensor, Tensor]:
    """(s, (b - mean) * s + beta): the per-channel factor for the weight and the fused bias; a
    missing gamma counts as 1 and a missing beta as 0 (affine=False)."""
    scale = bn_rv.add(bn_eps).rsqrt()
    if bn_w is not None:
        scale = bn_w * scale
    fused_bias = (bias - bn_rm) * scale
    if bn_b is not None:
        fused_bias = fused_bias + bn_b
    return scale, fused_bias


def fuse_conv_bn_weights(conv_w: Tensor, conv_b: Tensor | None, bn_rm: Tensor, bn_rv: Tensor, bn_eps: float,
                         bn_w: Tensor | None, bn_b: Tensor | None, transpose: bool = False) -> tuple[Parameter, Parameter]:
    """The weight and bias of one convolution equal to the convolution (``conv_w``, ``conv_b``)
    followed by eval-mode batch norm; ``transpose`` for a transposed convolution, whose output
    channels are weight dim 1. The results keep the convolution's dtypes and requires_grad flags
    (the bias's is False when ``conv_b`` is None)."""
    channel_dim = 1 if transpose else 0
    if conv_w.dim() < 2 or conv_w.shape[channel_dim] != bn_rm.numel():
        raise ValueError(
            f"fuse_conv_bn_weights(): the batch norm has {bn_rm.numel()} channels but the convolution weight of shape "
            f"{tuple(conv_w.shape)} has {conv_w.shape[channel_dim] if conv_w.dim() >= 2 else 'no'} output channels "
            f"(weight dim {channel_dim}{', grouped transposed convolutions cannot be fused' if transpose else ''})"
        )
    bias_dtype = conv_w.dtype if conv_b is None else conv_b.dtype
    bias_requires_grad = False if conv_b is None else conv_b.requires_grad
    with no_grad():
        bias = zeros_like(bn_rm) if conv_b is None else conv_b
        scale, fused_bias = _bn_scale_and_shift(bias, bn_rm, bn_rv, bn_eps, bn_w, bn_b)
        # The per-channel factor broadcast along the output-channel dim of the weight.
        factor_shape = [1] * conv_w.dim()
        factor_shape[channel_dim] = -1
        fused_weight = (conv_w * scale.reshape(factor_shape)).to(dtype=conv_w.dtype)
        fused_bias = fused_bias.to(dtype=bias_dtype)
    return Parameter(fused_weight, conv_w.requires_grad), Parameter(fused_bias, bias_requires_grad)


def fuse_conv_bn_eval(conv: ConvT, bn: Module, transpose: bool = False) -> ConvT:
    """A copy of ``conv`` computing ``bn(conv(x))`` of the eval-mode modules in one convolution."""
    _check_eval_statistics(conv, bn)
    fused = copy.deepcopy(conv)
    fused.weight, fused.bias = fuse_conv_bn_weights(fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps,
                                                    bn.weight, bn.bias, transpose)
    return fused


def fuse_linear_bn_weights(linear_w: Tensor, linear_b: Tensor | None, bn_rm: Tensor, bn_rv: Tensor, bn_eps: float,
                           bn_w: Tensor | None, bn_b: Tensor | None) -> tuple[Parameter, Parameter]:
    """The weight and bias of one linear layer equal to the linear layer followed by eval-mode
    batch norm over its outputs (or one batch-norm channel shared by all outputs); ``bn_w`` and
    ``bn_b`` may be None (affine=False)."""
    if bn_rm.numel() not in (linear_w.shape[0], 1):
        raise ValueError(f"fuse_linear_bn_weights(): the batch norm has {bn_rm.numel()} channels, the linear weight "
                         f"of shape {tuple(linear_w.shape)} has {linear_w.shape[0]} outputs")
    bias_requires_grad = False if linear_b is None else linear_b.requires_grad
    with no_grad():
        # One zero per output (not per batch-norm channel, which may be a single shared one).
        bias = bn_rm.new_zeros(linear_w.shape[0]) if linear_b is None else linear_b
        scale, fused_bias = _bn_scale_and_shift(bias, bn_rm, bn_rv, bn_eps, bn_w, bn_b)
        fused_weight = linear_w * scale.unsqueeze(-1)
    return Parameter(fused_weight, linear_w.requires_grad), Parameter(fused_bias, bias_requires_grad)


def fuse_linear_bn_eval(linear: LinearT, bn: Module) -> LinearT:
    """A copy of ``linear`` computing ``bn(linear(x))`` of the eval-mode modules in one linear layer."""
    _check_eval_statistics(linear, bn)
    if linear.out_features != bn.num_features and bn.num_features != 1:
        raise ValueError("To fuse, linear.out_features == bn.num_features or bn.num_features == 1, got "
                         f"linear.out_features={linear.out_features} and bn.num_features={bn.num_features}")
    fused = copy.deepcopy(linear)
    fused.weight, fused.bias = fuse_linear_bn_weights(fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps,
                                                      bn.weight, bn.bias)
    return fused
