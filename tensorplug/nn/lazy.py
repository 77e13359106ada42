"""Lazy layers: ``LazyLinear``, ``LazyConv1d/2d/3d``, ``LazyConvTranspose1d/2d/3d``,
``LazyBatchNorm1d/2d/3d`` and ``LazyInstanceNorm1d/2d/3d``, whose input size (features or
channels) is read from the first input. Until then their weight (and bias, and running
statistics) are empty placeholders; the first call gives them their shape in place, initializes
them as the eager layer does, and turns the module into that layer (``Linear``, ``Conv2d``,
``BatchNorm2d``, ...), as PyTorch's do. Parameters keep their identity, so an optimizer made
before the first call trains them.
"""
from __future__ import annotations

from ..frontend.factories import empty
from ..frontend.tensor import Tensor
from .instancenorm import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d
from .layers import (
    BatchNorm1d, BatchNorm2d, BatchNorm3d, Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d,
    Linear,
)
from .module import Module
from .parameter import Parameter, UninitializedBuffer, UninitializedParameter, is_lazy, replace_tensor_data

__all__ = [
    "LazyLinear", "LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d", "LazyConvTranspose2d",
    "LazyConvTranspose3d", "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d", "LazyInstanceNorm1d",
    "LazyInstanceNorm2d", "LazyInstanceNorm3d",
]


class _LazyModule:
    """Materializes on the first forward, then becomes ``cls_to_become``."""

    cls_to_become: type = Module

    def has_uninitialized_params(self) -> bool:
        return any(is_lazy(t) for t in (*self._parameters.values(), *self._buffers.values()))

    def _infer(self, input: Tensor) -> None:
        raise NotImplementedError

    def forward(self, *args, **kwargs):
        input = args[0] if args else next(iter(kwargs.values()))
        if not isinstance(input, Tensor):
            raise TypeError(f"{type(self).__name__}: the first call needs a Tensor input to infer its size, got "
                            f"{type(input).__name__}")
        self._infer(input)
        self.__class__ = self.cls_to_become
        return self.forward(*args, **kwargs)


def _give_shape(param: Tensor, shape: tuple) -> None:
    if is_lazy(param):
        param.materialize(shape)
    else:
        replace_tensor_data(param, empty(shape, dtype=param._dtype, device=param._device))


def _empty_placeholders(module: Module, *names: str) -> None:
    """Empty the named tensors (those that exist) until the first input gives their shape; they
    are UninitializedParameter (or UninitializedBuffer) until then, as in PyTorch."""
    for name in names:
        value = getattr(module, name)
        if value is not None:
            replace_tensor_data(value, empty((0,), dtype=value._dtype, device=value._device))
            value.__class__ = UninitializedParameter if isinstance(value, Parameter) else UninitializedBuffer


class LazyLinear(_LazyModule, Linear):
    """A ``Linear`` layer whose ``in_features`` is the last dim of its first input.

    >>> layer = tp.nn.LazyLinear(3)
    >>> layer(tp.ones(2, 5)).shape, type(layer).__name__, layer.in_features
    ((2, 3), 'Linear', 5)
    """

    cls_to_become = Linear

    def __init__(self, out_features: int, bias: bool = True, device=None, dtype=None):
        Module.__init__(self)
        self.in_features = 0
        self.out_features = out_features
        self.weight = UninitializedParameter(empty((0,), device=device, dtype=dtype))
        if bias:
            self.bias = UninitializedParameter(empty((0,), device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)

    def reset_parameters(self) -> None:
        if self.in_features:  # nothing to initialize before the shapes are known
            Linear.reset_parameters(self)

    def _infer(self, input: Tensor) -> None:
        if input.ndim == 0:
            raise RuntimeError("LazyLinear: the input must have at least one dimension to infer in_features")
        self.in_features = input.shape[-1]
        _give_shape(self.weight, (self.out_features, self.in_features))
        if self.bias is not None:
            _give_shape(self.bias, (self.out_features,))
        self.reset_parameters()


class _LazyConv(_LazyModule):
    def __init__(self, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", device=None, dtype=None):
        # Built as the eager layer with one input channel per group (a valid shape), then the
        # weight is emptied until the first input says how many channels there are.
        self.cls_to_become.__init__(self, groups, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                                    padding_mode, device, dtype)
        self.in_channels = 0
        _empty_placeholders(self, "weight", "bias")

    def reset_parameters(self) -> None:
        if self.in_channels:
            self.cls_to_become.reset_parameters(self)

    def _infer(self, input: Tensor) -> None:
        nd = self._nd
        if input.ndim not in (nd + 1, nd + 2):
            raise RuntimeError(f"{type(self).__name__}: expected a {nd + 1}D (unbatched) or {nd + 2}D (batched) input to "
                               f"infer in_channels, got {input.ndim}D")
        channels = input.shape[-nd - 1]
        if channels % self.groups:
            raise ValueError("in_channels must be divisible by groups")
        self.in_channels = channels
        if self._transposed:
            _give_shape(self.weight, (channels, self.out_channels // self.groups) + self.kernel_size)
        else:
            _give_shape(self.weight, (self.out_channels, channels // self.groups) + self.kernel_size)
        if self.bias is not None:
            _give_shape(self.bias, (self.out_channels,))
        self.reset_parameters()


class LazyConv1d(_LazyConv, Conv1d):
    """A ``Conv1d`` whose ``in_channels`` comes from its first input."""

    cls_to_become = Conv1d


class LazyConv2d(_LazyConv, Conv2d):
    """A ``Conv2d`` whose ``in_channels`` comes from its first input."""

    cls_to_become = Conv2d


class LazyConv3d(_LazyConv, Conv3d):
    """A ``Conv3d`` whose ``in_channels`` comes from its first input."""

    cls_to_become = Conv3d


class _LazyConvTranspose(_LazyConv):
    def __init__(self, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1, bias=True,
                 dilation=1, padding_mode="zeros", device=None, dtype=None):
        # As _LazyConv: built with one input channel per group, then emptied.
        self.cls_to_become.__init__(self, groups, out_channels, kernel_size, stride, padding, output_padding, groups,
                                    bias, dilation, padding_mode, device, dtype)
        self.in_channels = 0
        _empty_placeholders(self, "weight", "bias")


class LazyConvTranspose1d(_LazyConvTranspose, ConvTranspose1d):
    """A ``ConvTranspose1d`` whose ``in_channels`` comes from its first input."""

    cls_to_become = ConvTranspose1d


class LazyConvTranspose2d(_LazyConvTranspose, ConvTranspose2d):
    """A ``ConvTranspose2d`` whose ``in_channels`` comes from its first input."""

    cls_to_become = ConvTranspose2d


class LazyConvTranspose3d(_LazyConvTranspose, ConvTranspose3d):
    """A ``ConvTranspose3d`` whose ``in_channels`` comes from its first input."""

    cls_to_become = ConvTranspose3d


class _LazyNorm(_LazyModule):
    """Lazy batch and instance normalization: ``num_features`` is the channel count of the first
    input. PyTorch's defaults for both are affine=True and track_running_stats=True (the lazy
    instance norms too, unlike the eager ones)."""

    _spatial_dims: int | None = None  # instance norms: their spatial dims (an unbatched input is allowed)

    def __init__(self, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, device=None, dtype=None, *,
                 bias=True):
        self.cls_to_become.__init__(self, 0, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)
        _empty_placeholders(self, *(name for name in ("weight", "bias", "running_mean", "running_var")
                                    if getattr(self, name, None) is not None))

    def reset_parameters(self) -> None:
        if self.num_features:
            self.cls_to_become.reset_parameters(self)

    def _infer(self, input: Tensor) -> None:
        unbatched = self._spatial_dims is not None and input.ndim == self._spatial_dims + 1
        if input.ndim < 2 and not unbatched:
            raise RuntimeError(f"{type(self).__name__}: expected an input with a channel dim to infer num_features, "
                               f"got {input.ndim}D")
        self.num_features = input.shape[0 if unbatched else 1]
        for name in ("weight", "bias", "running_mean", "running_var"):
            if getattr(self, name) is not None:
                _give_shape(getattr(self, name), (self.num_features,))
        self.reset_parameters()


class LazyBatchNorm1d(_LazyNorm, BatchNorm1d):
    """A ``BatchNorm1d`` whose ``num_features`` comes from its first input."""

    cls_to_become = BatchNorm1d


class LazyBatchNorm2d(_LazyNorm, BatchNorm2d):
    """A ``BatchNorm2d`` whose ``num_features`` comes from its first input."""

    cls_to_become = BatchNorm2d


class LazyBatchNorm3d(_LazyNorm, BatchNorm3d):
    """A ``BatchNorm3d`` whose ``num_features`` comes from its first input."""

    cls_to_become = BatchNorm3d


class LazyInstanceNorm1d(_LazyNorm, InstanceNorm1d):
    """An ``InstanceNorm1d`` whose ``num_features`` comes from its first input."""

    cls_to_become = InstanceNorm1d
    _spatial_dims = 1


class LazyInstanceNorm2d(_LazyNorm, InstanceNorm2d):
    """An ``InstanceNorm2d`` whose ``num_features`` comes from its first input."""

    cls_to_become = InstanceNorm2d
    _spatial_dims = 2


class LazyInstanceNorm3d(_LazyNorm, InstanceNorm3d):
    """An ``InstanceNorm3d`` whose ``num_features`` comes from its first input."""

    cls_to_become = InstanceNorm3d
    _spatial_dims = 3
