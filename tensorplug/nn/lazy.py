"""Lazy layers: ``LazyLinear``, ``LazyConv1d``, ``LazyConv2d``, whose input size (features or
channels) is read from the first input. Until then their weight is an empty placeholder
Parameter; the first call gives it (and the bias) its shape in place, initializes both as the
eager layer does, and turns the module into that layer (``Linear``, ``Conv1d``, ``Conv2d``), as
PyTorch's do. Parameters keep their identity, so an optimizer made before the first call trains
them.
"""
from __future__ import annotations

from ..frontend.factories import empty
from ..frontend.tensor import Tensor
from .layers import Conv1d, Conv2d, Linear
from .module import Module
from .parameter import Parameter, replace_tensor_data

__all__ = ["LazyLinear", "LazyConv1d", "LazyConv2d"]


class _LazyModule:
    """Materializes on the first forward, then becomes ``cls_to_become``."""

    cls_to_become: type = Module

    def has_uninitialized_params(self) -> bool:
        return True

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


def _give_shape(param: Parameter, shape: tuple) -> None:
    replace_tensor_data(param, empty(shape, dtype=param._dtype, device=param._device))


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
        self.weight = Parameter(empty((0,), device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(empty((0,), device=device, dtype=dtype))
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
        replace_tensor_data(self.weight, empty((0,), dtype=self.weight._dtype, device=self.weight._device))
        if self.bias is not None:
            replace_tensor_data(self.bias, empty((0,), dtype=self.bias._dtype, device=self.bias._device))

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
