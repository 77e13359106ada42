"""Padding layers (ReflectionPad, ReplicationPad, CircularPad, ZeroPad, ConstantPad in 1, 2 and 3 dims):
modules over ``F.pad``, with PyTorch's argument forms and reprs.

``padding`` is an int (the same on every side) or a tuple of (left, right[, top, bottom[, front,
back]]), the last dim first, as ``F.pad`` takes it.
"""
from __future__ import annotations

from ..frontend.tensor import Tensor
from . import functional as F
from .module import Module

__all__ = [
    "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d",
    "ReplicationPad3d", "CircularPad1d", "CircularPad2d", "CircularPad3d", "ZeroPad1d", "ZeroPad2d", "ZeroPad3d", "ConstantPad1d", "ConstantPad2d", "ConstantPad3d",
]


def _expand_padding(padding, dims: int, name: str) -> tuple:
    if isinstance(padding, int) and not isinstance(padding, bool):
        return (padding,) * (2 * dims)
    padding = tuple(padding)
    if len(padding) != 2 * dims or not all(isinstance(p, int) and not isinstance(p, bool) for p in padding):
        raise ValueError(f"{name}: padding must be an int or a tuple of {2 * dims} ints, got {padding!r}")
    return padding


class _PadNd(Module):
    _dims: int = 1
    _mode: str = "constant"

    def __init__(self, padding) -> None:
        super().__init__()
        self.padding = _expand_padding(padding, self._dims, type(self).__name__)

    def _check_input(self, input) -> None:
        # PyTorch accepts an unbatched (C, *spatial) or batched (N, C, *spatial) input.
        expected = (self._dims + 1, self._dims + 2)
        if not isinstance(input, Tensor):
            raise TypeError(f"{type(self).__name__}: expected a Tensor input, got {type(input).__name__}")
        if input.ndim not in expected:
            raise ValueError(f"{type(self).__name__}: expected {expected[0]}D or {expected[1]}D input, got "
                             f"{input.ndim}D input of shape {list(input.shape)}")

    def forward(self, input):
        self._check_input(input)
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    def __init__(self, padding, value: float) -> None:
        super().__init__(padding)
        self.value = value

    def forward(self, input):
        # Constant padding takes any input with at least as many dims as it pads, as PyTorch's.
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


class ReflectionPad1d(_PadNd):
    """Pad the last dim with its reflection (the edge value not repeated): [1, 2, 3] -> [2, 1, 2, 3, 2]."""
    _dims, _mode = 1, "reflect"


class ReflectionPad2d(_PadNd):
    _dims, _mode = 2, "reflect"


class ReflectionPad3d(_PadNd):
    _dims, _mode = 3, "reflect"


class ReplicationPad1d(_PadNd):
    """Pad the last dim by repeating its edge values: [1, 2, 3] -> [1, 1, 2, 3, 3]."""
    _dims, _mode = 1, "replicate"


class ReplicationPad2d(_PadNd):
    _dims, _mode = 2, "replicate"


class ReplicationPad3d(_PadNd):
    _dims, _mode = 3, "replicate"


class CircularPad1d(_PadNd):
    """Pad the last dim by wrapping around: [1, 2, 3] -> [3, 1, 2, 3, 1]."""
    _dims, _mode = 1, "circular"


class CircularPad2d(_PadNd):
    _dims, _mode = 2, "circular"


class CircularPad3d(_PadNd):
    _dims, _mode = 3, "circular"


class ConstantPad1d(_ConstantPadNd):
    _dims = 1


class ConstantPad2d(_ConstantPadNd):
    _dims = 2


class ConstantPad3d(_ConstantPadNd):
    _dims = 3


class ZeroPad1d(ConstantPad1d):
    def __init__(self, padding) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ZeroPad2d(ConstantPad2d):
    def __init__(self, padding) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ZeroPad3d(ConstantPad3d):
    def __init__(self, padding) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"
