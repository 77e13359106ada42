"""PyTorch's top-level names for ``nn.functional``'s functions (``torch.softmax``,
``torch.layer_norm``, ``torch.conv2d``, ...), re-exported by ``tensorplug``.

Most are the same function. Where PyTorch's top-level form has another signature (its ATen
op's: ``torch.dropout(input, p, train)``, ``torch.embedding(weight, indices, ...)``,
``torch.batch_norm`` with the running statistics after the affine tensors and a
``cudnn_enabled`` flag), the function here takes that signature and calls the functional one.
"""
from __future__ import annotations

from ..frontend.ops._numpy_names import required_dim
from . import functional as F

__all__ = [
    "softmax", "log_softmax", "layer_norm", "group_norm", "batch_norm", "instance_norm", "rms_norm", "embedding",
    "dropout", "dropout_", "alpha_dropout", "alpha_dropout_", "feature_alpha_dropout", "feature_alpha_dropout_",
    "bilinear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "prelu", "selu", "selu_", "celu",
    "celu_", "threshold", "threshold_", "relu_", "rrelu", "rrelu_", "hardshrink", "pdist", "cosine_similarity",
    "pairwise_distance", "pixel_shuffle", "pixel_unshuffle", "channel_shuffle", "native_channel_shuffle",
    "max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d", "adaptive_avg_pool1d", "adaptive_max_pool1d",
]

bilinear, conv1d, conv2d, conv3d = F.bilinear, F.conv1d, F.conv2d, F.conv3d
conv_transpose1d, conv_transpose2d, conv_transpose3d = F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d
prelu, hardshrink, pdist, relu_ = F.prelu, F.hardshrink, F.pdist, F.relu_
cosine_similarity, pairwise_distance = F.cosine_similarity, F.pairwise_distance
pixel_shuffle, pixel_unshuffle, channel_shuffle, native_channel_shuffle = (
    F.pixel_shuffle, F.pixel_unshuffle, F.channel_shuffle, F.native_channel_shuffle)
max_pool2d, adaptive_avg_pool1d = F.max_pool2d, F.adaptive_avg_pool1d
threshold_, selu_, celu_ = F.threshold_, F.selu_, F.celu_


def softmax(input, dim=None, dtype=None, axis=None):
    """torch.softmax: ``F.softmax`` with ``dim`` required (or NumPy's ``axis``, which
    ``F.softmax`` does not take, as in PyTorch)."""
    return F.softmax(input, required_dim("softmax", dim, axis), dtype=dtype)


def log_softmax(input, dim=None, dtype=None, axis=None):
    """torch.log_softmax: ``F.log_softmax`` with ``dim`` required (or NumPy's ``axis``)."""
    return F.log_softmax(input, required_dim("log_softmax", dim, axis), dtype=dtype)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5, cudnn_enable=True):
    """torch.layer_norm (``cudnn_enable`` is accepted and has no effect)."""
    return F.layer_norm(input, normalized_shape, weight, bias, eps)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5, cudnn_enabled=True):
    """torch.group_norm (``cudnn_enabled`` is accepted and has no effect)."""
    return F.group_norm(input, num_groups, weight, bias, eps)


def batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled):
    """torch.batch_norm: the affine tensors before the running statistics, every argument
    required (``cudnn_enabled`` has no effect)."""
    return F.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps, cudnn_enabled):
    """torch.instance_norm: the affine tensors before the running statistics, every argument
    required (``cudnn_enabled`` has no effect)."""
    return F.instance_norm(input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """torch.rms_norm: ``F.rms_norm``."""
    return F.rms_norm(input, normalized_shape, weight, eps)


def embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    """torch.embedding: the rows of ``weight`` at ``indices`` (note the order: weight first);
    ``padding_idx=-1`` means none, as in PyTorch's ATen op."""
    return F.embedding(indices, weight, None if padding_idx == -1 else padding_idx,
                       scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


def dropout(input, p, train):
    """torch.dropout: ``F.dropout(input, p, training=train)``, every argument required."""
    return F.dropout(input, p, train)


def dropout_(input, p, train):
    return F.dropout(input, p, train, inplace=True)


def alpha_dropout(input, p, train):
    """torch.alpha_dropout: ``F.alpha_dropout(input, p, training=train)``."""
    return F.alpha_dropout(input, p, train)


def alpha_dropout_(input, p, train):
    return F.alpha_dropout(input, p, train, inplace=True)


def feature_alpha_dropout(input, p, train):
    """torch.feature_alpha_dropout: ``F.feature_alpha_dropout(input, p, training=train)``."""
    return F.feature_alpha_dropout(input, p, train)


def feature_alpha_dropout_(input, p, train):
    return F.feature_alpha_dropout(input, p, train, inplace=True)


def selu(input):
    """torch.selu: ``F.selu`` (no ``inplace``; ``selu_`` is the in-place form)."""
    return F.selu(input)


def celu(input, alpha=1.0):
    """torch.celu: ``F.celu`` (no ``inplace``; ``celu_`` is the in-place form)."""
    return F.celu(input, alpha)


def threshold(input, threshold, value):
    """torch.threshold: ``value`` where ``input <= threshold``, else ``input``."""
    return F.threshold(input, threshold, value)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    """torch.rrelu: ``F.rrelu``."""
    return F.rrelu(input, lower, upper, training)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    return F.rrelu(input, lower, upper, training, inplace=True)


def _stride(stride):
    # ATen's default stride is an empty list, meaning "the kernel size", as None does in F.
    return None if isinstance(stride, (tuple, list)) and len(stride) == 0 else stride


def max_pool1d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """torch.max_pool1d: ``F.max_pool1d`` without ``return_indices``."""
    return F.max_pool1d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool3d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """torch.max_pool3d: ``F.max_pool3d`` without ``return_indices``."""
    return F.max_pool3d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def avg_pool1d(input, kernel_size, stride=(), padding=0, ceil_mode=False, count_include_pad=True):
    """torch.avg_pool1d: ``F.avg_pool1d``."""
    return F.avg_pool1d(input, kernel_size, _stride(stride), padding, ceil_mode, count_include_pad)


def adaptive_max_pool1d(input, output_size):
    """torch.adaptive_max_pool1d: the pair (values, indices), always (ATen's op)."""
    return F.adaptive_max_pool1d(input, output_size, return_indices=True)
