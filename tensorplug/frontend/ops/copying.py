"""Copies, casts, fills and moves between devices (the ``copy`` primitive family)."""
from __future__ import annotations

import numpy as np

from ...dispatcher import AUTOGRAD, Operator, local_state
from .. import dtypes as _dt
from .. import memory_format as _mf
from ..device import device as _device_type
from ..shapes import broadcast_shapes
from ..autograd.graph import Node
from ..tensor import Tensor, empty_tensor, resolve_device, undeclared_dtype_error
from ..views import expand
from ._common import bump_version, check_no_internal_overlap, is_number, keyset

__all__ = ["copy_", "fill_", "zero_", "to_dtype", "to", "contiguous", "clone", "cpu", "to_numpy", "copy_from_numpy", "inplace_source"]

_AUTOGRAD_MASK = AUTOGRAD.mask

COPY = Operator("copy_")
FILL = Operator("fill_", differentiable=False)


def _same_layout(a: Tensor, b: Tensor) -> bool:
    return a._offset == b._offset and a._stride == b._stride and a._shape == b._shape


def copy_(self: Tensor, other, non_blocking: bool = False) -> Tensor:
    """Copy ``other`` (broadcast to ``self``'s shape, converted to its dtype) into ``self`` (PyTorch 2.13 names
    it ``other``; its documentation still says ``src``)."""
    if is_number(other):
        return fill_(self, other)
    if not isinstance(other, Tensor):
        raise TypeError(f"copy_(): argument 'other' must be Tensor, not {type(other).__name__}")
    check_no_internal_overlap("copy_", self)
    if other._shape != self._shape:
        if broadcast_shapes(self._shape, other._shape) != self._shape:
            raise RuntimeError(
                f"copy_(): The size of the source tensor {list(other._shape)} must be broadcastable to the "
                f"destination's size {list(self._shape)}"
            )
        other = expand(other, self._shape)
    if other._device is not self._device:
        other = _move(other, self._device)
    elif other._storage is self._storage and not _same_layout(other, self):
        other = clone(other)  # a partial overlap would read values the copy already overwrote
    COPY.lookup(keyset(self, other))(self, other)
    bump_version(self)
    return self


def fill_(self: Tensor, value) -> Tensor:
    if type(value) in (int, float) and (value == 0 or value == 1):
        # Zeros and ones (factories, gradient seeds) fit every dtype: skip the value checks.
        check_no_internal_overlap("fill_", self)
        FILL.lookup(keyset(self))(self, value)
        bump_version(self)
        return self
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with {value.ndim} dimensions.")
        if value._keys & _AUTOGRAD_MASK and local_state.mask & _AUTOGRAD_MASK:
            # A value that requires grad gets the sum of the filled elements' gradients: fill
            # records that, and copy_ writes its result in place (recording the write).
            from .index_updates import fill

            return self.copy_(fill(self, value))
        value = value.item()
    if isinstance(value, (complex, np.complexfloating)) or self._dtype.is_complex:
        return _fill_complex(self, value)
    if not is_number(value):
        raise TypeError(f"fill_(): argument 'value' must be a Number, not {type(value).__name__}")
    check_no_internal_overlap("fill_", self)
    dtype = self._dtype
    if not dtype.is_floating_point and dtype is not _dt.bool and isinstance(value, float) and value != value:
        raise RuntimeError(f"fill_(): cannot fill a {dtype.name} tensor with nan")
    FILL.lookup(keyset(self))(self, number_for("fill_", value, dtype))
    bump_version(self)
    return self


def check_scalar_fits(op: str, value, dtype: _dt.dtype) -> None:
    """Refuse a Python number that ``dtype`` cannot hold, by PyTorch's rule (c10's checked
    conversion: "value cannot be converted to type uint8_t without overflow"). A float must lie
    within the dtype's range before it is truncated (-0.5 and 255.5 do not fit uint8); an integer
    may be negative down to -max in an unsigned dtype, where it wraps (-1 is 255 in uint8, -256 is
    refused); infinities and NaN are values of every floating dtype; anything fits bool."""
    if dtype is _dt.bool or isinstance(value, bool) or dtype.is_complex:
        return
    if dtype.is_floating_point:
        if dtype is not _dt.float64 and value == value and abs(value) != float("inf"):
            # The float8 types too: a finite number beyond the largest value is refused here,
            # although converting a tensor saturates or overflows (PyTorch's checked conversion).
            largest = _dt.finfo(dtype).max
            if abs(float(value)) > largest:
                raise RuntimeError(f"{op}(): value {value} cannot be converted to type {dtype.name} without overflow")
        return
    info = np.iinfo(_dt.numpy_dtype(dtype))
    low = info.min if info.min < 0 or isinstance(value, (float, np.floating)) else -int(info.max)
    if not low <= value <= info.max:  # Python compares ints and floats exactly; NaN never fits
        raise RuntimeError(f"{op}(): value {value} cannot be converted to type {dtype.name} without overflow")


def number_for(op: str, value, dtype: _dt.dtype):
    """``value`` as a kernel of ``dtype`` gets it (docs/backend-contract.md, issue 15), after
    :func:`check_scalar_fits`: a bool for bool (anything is != 0), an integer for integer dtypes
    (truncated toward zero; a negative one wraps into uint8, so -1 is 255, as in PyTorch)."""
    check_scalar_fits(op, value, dtype)
    if dtype is _dt.bool:
        return bool(value)
    if dtype.is_floating_point:
        return value
    if dtype.is_complex:
        return complex(value)
    if isinstance(value, complex):
        raise RuntimeError(f"{op}(): value {value} cannot be converted to type {dtype.name}; a complex value needs a "
                           f"complex tensor")
    value = int(value)
    return value + 256 if dtype is _dt.uint8 and value < 0 else value


def _fill_complex(self: Tensor, value) -> Tensor:
    if not (is_number(value) or isinstance(value, (complex, np.complexfloating))):
        raise TypeError(f"fill_(): argument 'value' must be a Number, not {type(value).__name__}")
    if not self._dtype.is_complex and complex(value).imag != 0:
        raise RuntimeError(f"fill_(): value cannot be converted to type {self._dtype.name} without overflow: {value}")
    check_no_internal_overlap("fill_", self)
    value = complex(value)
    FILL.lookup(keyset(self))(self, value if self._dtype.is_complex else number_for("fill_", value.real, self._dtype))
    bump_version(self)
    return self


def zero_(self: Tensor) -> Tensor:
    return fill_(self, 0)


def to_dtype(t: Tensor, dtype: _dt.dtype) -> Tensor:
    """``t`` converted to ``dtype`` (``t`` itself when it already has it)."""
    if t._dtype is dtype:
        return t
    if dtype.__class__ is type:  # a Python type (sum(dtype=float)), read as PyTorch reads it
        return to_dtype(t, _dt.as_dtype(dtype))
    dev = t._device
    if dtype._part is None and dtype not in dev._dtypes:
        raise undeclared_dtype_error(dev, dtype, "to")
    out = empty_tensor(t._shape, dtype, dev)
    COPY.lookup(keyset(out, t))(out, t)  # out's keys too: a complex result needs the Complex key
    return out


def empty_in_format(shape: tuple, dtype: _dt.dtype, dev, fmt) -> Tensor:
    """A new tensor with uninitialized memory, dense in memory format ``fmt`` (not preserve)."""
    out = empty_tensor(shape, dtype, dev)
    if fmt is not _mf.contiguous_format:
        out._stride = _mf.format_strides(shape, fmt)  # a fresh tensor: nothing else has read its strides
    return out


def _resolve_format(op: str, t: Tensor, memory_format) -> object:
    fmt = _mf.check_memory_format(op, memory_format)
    return _mf.suggest_format(t._shape, t._stride) if fmt is _mf.preserve_format else fmt


def contiguous(t: Tensor, memory_format=None) -> Tensor:
    """``t`` itself when it is dense in ``memory_format`` (default contiguous_format), else a copy that is."""
    if memory_format is None or memory_format is _mf.contiguous_format:
        if t.is_contiguous():
            return t
        return clone(t, memory_format=_mf.contiguous_format)
    fmt = _mf.check_memory_format("contiguous", memory_format)
    if fmt is _mf.preserve_format:
        raise RuntimeError("preserve memory format is unsupported by the contiguous operator")
    if _mf.is_contiguous_as(t._shape, t._stride, fmt):
        return t
    return clone(t, memory_format=fmt)


def clone(input: Tensor, memory_format=None) -> Tensor:
    """A copy of ``input``; ``memory_format`` (default preserve_format, which keeps a channels-last
    layout) picks the copy's layout."""
    if memory_format is None and input.is_contiguous():
        out = empty_tensor(input._shape, input._dtype, input._device)
    else:
        out = empty_in_format(input._shape, input._dtype, input._device, _resolve_format("clone", input, memory_format))
    COPY.lookup(keyset(input))(out, input)
    return out


def to_numpy(t: Tensor) -> np.ndarray:
    """``t``'s values as a NumPy array (a view for host-memory backends, else a copy)."""
    if t._dtype.is_complex:  # the backend holds (real, imag) pairs: NumPy reads them as complex
        from ..complex import view_as_real

        pairs = t._device._backend.to_host(view_as_real(t))
        return pairs.view(t._dtype.numpy)[..., 0]
    return t._device._backend.to_host(t)


def copy_from_numpy(array: np.ndarray, dtype: _dt.dtype, dev) -> Tensor:
    """A new tensor on ``dev`` holding ``array`` converted to ``dtype``."""
    if dtype not in dev._dtypes and dtype._part is None:
        raise undeclared_dtype_error(dev, dtype)
    if dtype is _dt.bfloat16 or dtype in _dt.float8_dtypes:
        # NumPy has no bfloat16 or float8 of its own: stage through float32 and convert on device
        # (exact for bfloat16; for float8, PyTorch too rounds a float64 to float32 first).
        with np.errstate(over="ignore"):  # beyond float32's range is +-inf, silently, as in PyTorch
            staged = np.asarray(array, dtype=np.float32)
        return to_dtype(copy_from_numpy(staged, _dt.float32, dev), dtype)
    shape = tuple(np.shape(array))  # ascontiguousarray turns 0-d arrays into 1-d ones
    # A narrowing cast (1e300 to float32 is inf) converts silently, as PyTorch's does: NumPy's
    # RuntimeWarning would be an error under warnings-as-errors.
    with np.errstate(over="ignore"):
        array = np.ascontiguousarray(array, dtype=_dt.numpy_dtype(dtype)).reshape(shape)
    out = empty_tensor(shape, dtype, dev)
    if array.size:
        if dtype.is_complex:  # the backend stores (real, imag) pairs of the part dtype
            from ..complex import view_as_real

            pairs = array.reshape(-1).view(dtype._part.numpy).reshape(shape + (2,))
            dev._backend.copy_from_host(view_as_real(out), pairs)
        else:
            dev._backend.copy_from_host(out, array)
    return out


def _move(t: Tensor, dev) -> Tensor:
    """``t``'s values in a new tensor on ``dev``; while autograd records, the gradient of the
    result flows back to ``t`` (moved to ``t``'s device), as PyTorch's ToCopyBackward0 does."""
    moved = _move_values(t, dev)
    if t._keys & _AUTOGRAD_MASK and local_state.mask & _AUTOGRAD_MASK:
        from ..autograd.graph import gradient_edge, set_history

        set_history(moved, _DeviceCopyNode(gradient_edge(t), t._device))
    return moved


def _move_values(t: Tensor, dev) -> Tensor:
    if dev.type == "meta":  # the meta device keeps no values: nothing to read from t's device
        return empty_tensor(t._shape, t._dtype, dev)
    if t._dtype._part is None and t._dtype not in dev._dtypes:
        raise undeclared_dtype_error(dev, t._dtype, "to")
    # Between devices, data goes through host memory: every backend can copy to and from it.
    # The staging conversions below are values only: _move records the one node that matters.
    if t._dtype in _dt.float8_dtypes or t._dtype is _dt.bfloat16:
        t = t.detach()
    if t._dtype in _dt.float8_dtypes:  # NumPy has no float8 types: move the bytes
        return _move_values(contiguous(t).view(_dt.uint8), dev).view(t._dtype)
    if t._dtype is _dt.bfloat16:
        return to_dtype(_move_values(to_dtype(t, _dt.float32), dev), _dt.bfloat16)
    host = to_numpy(t)
    return copy_from_numpy(host, t._dtype, dev)


class _DeviceCopyNode(Node):
    """Backward of a copy to another device: the gradient goes back to the source's device."""

    __slots__ = ("source_device",)

    def __init__(self, edge, source_device):
        super().__init__((edge,))
        self.source_device = source_device

    def name(self) -> str:
        return "ToCopyBackward0"

    def backward(self, grads: tuple) -> tuple:
        (grad,) = grads
        return (None if grad is None else _move(grad, self.source_device),)


def _parse_to_args(args, kwargs):
    dev, dtype = kwargs.pop("device", None), _dt.as_dtype(kwargs.pop("dtype", None))
    copy = kwargs.pop("copy", False)
    kwargs.pop("non_blocking", None)
    if kwargs:
        raise TypeError(f"to() got unexpected keyword arguments {sorted(kwargs)}")
    for arg in args:
        if isinstance(arg, Tensor):
            dev, dtype = arg._device, arg._dtype
        elif isinstance(arg, _dt.dtype):
            dtype = arg
        elif arg.__class__ is type and _dt.as_dtype(arg) is not arg:
            dtype = _dt.as_dtype(arg)  # a Python type read as a dtype: x.to(float) is float64
        elif isinstance(arg, (str, _device_type)):
            dev = arg
        elif isinstance(arg, bool):
            continue  # non_blocking / copy given positionally
        else:
            raise TypeError(f"to() received an invalid combination of arguments: {args!r}")
    return dev, dtype, copy


def to(t: Tensor, *args, **kwargs) -> Tensor:
    """``t`` on another device and/or dtype: ``t.to("opencl")``, ``t.to(tp.float64)``,
    ``t.to(other)``, ``t.to(device=..., dtype=..., copy=False)``."""
    memory_format = kwargs.pop("memory_format", None) if kwargs else None
    dev, dtype, copy = _parse_to_args(args, kwargs)
    target = t._device if dev is None else resolve_device(dev)
    dtype = t._dtype if dtype is None else dtype
    if memory_format is not None:
        return _to_format(t, target, dtype, copy, memory_format)
    if target is t._device:
        if dtype is t._dtype:
            return clone(t) if copy else t
        out = to_dtype(t, dtype)
    else:
        out = _move(to_dtype(t, dtype), target)
    if len(t._shape) in (4, 5) and not t.is_contiguous():
        # preserve_format, to()'s default: a channels-last input gives a channels-last result.
        fmt = _mf.suggest_format(t._shape, t._stride)
        if fmt is not _mf.contiguous_format:
            out = contiguous(out, memory_format=fmt)
    return out


def _to_format(t: Tensor, target, dtype, copy: bool, memory_format) -> Tensor:
    fmt = _resolve_format("to", t, memory_format)
    if target is not t._device:
        t = _move(t, target)
        copy = False  # already a new tensor
    # PyTorch aliases only when t already has fmt's exact strides (not merely dense in fmt's order).
    if dtype is t._dtype and not copy and t._stride == _mf.format_strides(t._shape, fmt):
        return t
    out = empty_in_format(t._shape, dtype, t._device, fmt)
    COPY.lookup(keyset(out, t))(out, t)
    return out


def inplace_source(t: Tensor) -> Tensor:
    """What an in-place composite (``x.clamp_()``, ``F.relu(x, inplace=True)``) computes from.

    Such ops compute out of place and copy the result into ``t``. While autograd records, the
    graph may save ``t``'s values, which that copy would overwrite: compute from a copy instead
    (its CopyBackward keeps gradients flowing to ``t``'s history).
    """
    if t._keys & _AUTOGRAD_MASK and local_state.mask & _AUTOGRAD_MASK:
        return clone(t)
    return t


def cpu(t: Tensor) -> Tensor:
    return to(t, "cpu")
