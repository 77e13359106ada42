"""PyTorch's legacy constructors: ``tp.Tensor(...)`` and the typed names (``tp.FloatTensor``,
``tp.LongTensor``, ...), still common in real code.

Their rules, as in PyTorch:

- ``Tensor()`` is an empty 1-d tensor; ``Tensor(2, 3)`` or ``Tensor(tp.Size([2, 3]))`` an
  uninitialized one of that shape (``t.shape`` is a plain tuple here, so ``Tensor(t.shape)`` is
  data: write ``Tensor(*t.shape)``); ``Tensor([[1, 2]])`` (any nested sequence or NumPy array) a copy of the data;
  ``Tensor(t)`` of a tensor of the right dtype shares ``t``'s data (another dtype is a TypeError).
- ``tp.Tensor`` makes the default float dtype; ``FloatTensor`` float32, ``LongTensor`` int64, ...
- ``isinstance(t, tp.FloatTensor)`` is True for CPU float32 tensors, as in PyTorch.
"""
from __future__ import annotations

import numbers

from . import dtypes as _dt
from .size import Size

__all__ = ["legacy_construct", "FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "ByteTensor", "CharTensor",
           "ShortTensor", "IntTensor", "LongTensor", "BoolTensor"]


def _is_size(args: tuple) -> bool:
    return all(isinstance(a, numbers.Integral) and not isinstance(a, bool) for a in args)


def legacy_construct(name: str, dtype, args: tuple, kwargs: dict):
    """What ``name(*args, **kwargs)`` makes (``dtype`` None: the default float dtype)."""
    from .factories import empty, tensor
    from .tensor import Tensor

    dtype = dtype or _dt.get_default_dtype()
    device = kwargs.pop("device", None)
    if kwargs:
        raise TypeError(f"{name}(): unexpected keyword argument(s) {', '.join(sorted(kwargs))}")
    if not args:
        return empty(0, dtype=dtype, device=device)
    if len(args) == 1 and isinstance(args[0], Size):
        args = tuple(args[0])  # a Size is a shape, not data
    if _is_size(args):
        if any(a < 0 for a in args):
            raise RuntimeError(f"{name}(): negative dimension in size {list(args)}")
        return empty(*args, dtype=dtype, device=device)  # uninitialized, as in PyTorch
    if len(args) != 1:
        raise TypeError(f"{name}(): expected a sequence, a tensor or sizes (ints), got {len(args)} arguments of types "
                        f"{', '.join(type(a).__name__ for a in args)}")
    data = args[0]
    if isinstance(data, Tensor):
        if data.dtype != dtype:
            raise TypeError(f"{name}(): expected {dtype} (got {data.dtype}); convert with .to({dtype}) instead")
        return data.detach() if device is None or data.device == device else data.detach().to(device)
    if isinstance(data, (str, bytes)) or not hasattr(data, "__len__"):
        raise TypeError(f"{name}(): new(): data must be a sequence (got {type(data).__name__})")
    return tensor(data, dtype=dtype, device=device)


class _LegacyMeta(type):
    def __instancecheck__(cls, obj) -> bool:
        from .tensor import Tensor

        return isinstance(obj, Tensor) and obj.dtype == cls.dtype and obj.device.type == "cpu"

    def __call__(cls, *args, **kwargs):
        return legacy_construct(cls.__name__, cls.dtype, args, dict(kwargs))

    def __repr__(cls) -> str:
        return f"<class 'tensorplug.{cls.__name__}'>"


def _legacy_type(name: str, dtype):
    return _LegacyMeta(name, (), {"dtype": dtype, "__doc__": f"Legacy constructor of CPU {dtype.name} tensors."})


FloatTensor = _legacy_type("FloatTensor", _dt.float32)
DoubleTensor = _legacy_type("DoubleTensor", _dt.float64)
HalfTensor = _legacy_type("HalfTensor", _dt.float16)
BFloat16Tensor = _legacy_type("BFloat16Tensor", _dt.bfloat16)
ByteTensor = _legacy_type("ByteTensor", _dt.uint8)
CharTensor = _legacy_type("CharTensor", _dt.int8)
ShortTensor = _legacy_type("ShortTensor", _dt.int16)
IntTensor = _legacy_type("IntTensor", _dt.int32)
LongTensor = _legacy_type("LongTensor", _dt.int64)
BoolTensor = _legacy_type("BoolTensor", _dt.bool)


_LEGACY_NAMES = {cls.dtype: cls.__name__ for cls in (FloatTensor, DoubleTensor, HalfTensor, BFloat16Tensor, ByteTensor,
                                                     CharTensor, ShortTensor, IntTensor, LongTensor, BoolTensor)}
_LEGACY_NAMES[_dt.complex64] = "ComplexFloatTensor"
_LEGACY_NAMES[_dt.complex128] = "ComplexDoubleTensor"
_LEGACY_DTYPES = {name: dtype for dtype, name in _LEGACY_NAMES.items()}


def type_name(t) -> str:
    """``t.type()``: PyTorch's legacy type name, under tensorplug's name ('tensorplug.FloatTensor',
    'tensorplug.opencl.FloatTensor' for a tensor on another device)."""
    name = _LEGACY_NAMES.get(t.dtype, f"{t.dtype.name}Tensor")
    return f"tensorplug.{name}" if t.device.type == "cpu" else f"tensorplug.{t.device.type}.{name}"


def convert_type(t, target, non_blocking: bool = False):
    """``t.type(target)``: a legacy type (``tp.FloatTensor``: a CPU tensor of its dtype), a type
    name ('torch.FloatTensor', 'tensorplug.cuda.LongTensor'; PyTorch's module name is read too, so
    that strings written for PyTorch keep working) or a dtype."""
    from .ops.copying import to, to_dtype

    if isinstance(target, _LegacyMeta):
        return to(t, "cpu", target.dtype, non_blocking=non_blocking)
    if isinstance(target, str):
        parts = target.split(".")
        dtype = _LEGACY_DTYPES.get(parts[-1])
        if dtype is None or parts[0] not in ("torch", "tensorplug") or len(parts) not in (2, 3):
            raise ValueError(f"invalid type: {target!r}")
        return to(t, "cpu" if len(parts) == 2 else parts[1], dtype, non_blocking=non_blocking)
    if isinstance(target, _dt.dtype):
        return to_dtype(t, target)
    if isinstance(target, type):  # t.type(float): PyTorch reads a Python type as a type name it lacks
        raise ValueError(f"invalid type: {target.__name__!r}")
    raise TypeError(f"type(): expected a dtype, a legacy tensor type or a type name, got {type(target).__name__}")
