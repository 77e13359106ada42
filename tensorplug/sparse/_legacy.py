"""PyTorch's deprecated sparse legacy constructors: ``tp.sparse.FloatTensor(indices, values, size)``
and the other typed names of ``torch.sparse`` (``DoubleTensor``, ``LongTensor``, ...).

Their call forms, as in PyTorch 2.13, each with its deprecation warning (PyTorch's text):

- ``FloatTensor(indices, values, size)`` and ``FloatTensor(indices, values)`` (the size inferred
  from the indices): ``tp.sparse_coo_tensor(indices, values, size)``, uncoalesced, sharing the
  tensors. The values keep their dtype, as in PyTorch: ``sparse.FloatTensor`` of float64 values
  is float64. The indices must be int64.
- ``FloatTensor()``, ``FloatTensor(2, 3)``, ``FloatTensor(tp.Size([2, 3]))``, ``FloatTensor(size=(2, 3))``:
  an empty (no entries) coalesced tensor of that shape and the type's dtype (``()`` gives ``(0,)``).

They make CPU tensors (another ``device`` is a ``RuntimeError``); ``isinstance(s,
tp.sparse.FloatTensor)`` is True for a CPU float32 sparse tensor.
"""
from __future__ import annotations

import numbers
import warnings

from ..frontend import dtypes as _dt
from ..frontend.size import Size
from ..frontend.tensor import Tensor
from ..frontend.views import _dtype_name

__all__ = ["FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "ByteTensor", "CharTensor", "ShortTensor",
           "IntTensor", "LongTensor"]

_SIGNATURES = ("new() received an invalid combination of arguments - got ({got}), but expected one of:\n"
               " * (*, torch.device device = None)\n"
               " * (Tensor indices, Tensor values, *, torch.device device = None)\n"
               " * (Tensor indices, Tensor values, tuple of ints size, *, torch.device device = None)\n"
               " * (tuple of ints size, *, torch.device device = None)\n")


def _invalid(args: tuple, kwargs: dict) -> TypeError:
    got = [type(a).__name__ for a in args] + [f"{k}={type(v).__name__}" for k, v in kwargs.items()]
    return TypeError(_SIGNATURES.format(got=", ".join(got)))


def _deprecated(form: str, replacement: str) -> None:
    warnings.warn(f"torch.sparse.SparseTensor({form}) is deprecated.  Please use torch.sparse_coo_tensor({replacement}).",
                  UserWarning, stacklevel=5)


def _check_cpu(device) -> None:
    from ..frontend.device import device as as_device

    if device is not None and as_device(device).type != "cpu":
        raise RuntimeError(f"legacy constructor expects device type: cpu but device type: {as_device(device).type} "
                           "was passed")


def _is_int(a) -> bool:
    return isinstance(a, numbers.Integral) and not isinstance(a, bool)


def _from_entries(indices: Tensor, values: Tensor, size, device):
    from . import sparse_coo_tensor

    _check_cpu(values.device)
    _check_cpu(device)
    if indices.dtype is not _dt.int64:
        raise RuntimeError(f"expected scalar type Long but found {_dtype_name(indices.dtype)}")
    if size is None:
        _deprecated("indices, values, *, device=", "indices, values, dtype=, device=")
    else:
        _deprecated("indices, values, shape, *, device=", "indices, values, shape, dtype=, device=")
        size = tuple(size)
    return sparse_coo_tensor(indices, values, size)


def _empty(dtype, size: tuple, device):
    from ..frontend.factories import empty
    from . import SparseTensor

    _check_cpu(device)
    if size:
        _deprecated("shape, *, device=", "shape, dtype=, device=")
    else:
        _deprecated("", "(0,), dtype=")
        size = (0,)
    if any(n < 0 for n in size):
        raise RuntimeError(f"sparse tensor: negative dimension in size {list(size)}")
    indices = empty(len(size), 0, dtype=_dt.int64)
    return SparseTensor(indices, empty(0, dtype=dtype), size, coalesced=True)


def legacy_sparse_construct(dtype, args: tuple, kwargs: dict):
    """What ``torch.sparse.<Type>Tensor(*args, **kwargs)`` makes, for the type's ``dtype``."""
    kwargs = dict(kwargs)
    device = kwargs.pop("device", None)
    unknown = set(kwargs) - {"indices", "values", "size"}
    if unknown:
        raise TypeError(f"new() got an unexpected keyword argument '{sorted(unknown)[0]}'")
    if (args and isinstance(args[0], Tensor)) or "indices" in kwargs or "values" in kwargs:
        if len(args) > 3:
            raise TypeError(f"new() takes 3 positional arguments but {len(args)} were given")
        named = dict(zip(("indices", "values", "size"), args))
        for name, value in kwargs.items():
            if name in named:
                raise TypeError(f"new() got multiple values for argument '{name}'")
            named[name] = value
        indices, values, size = named.get("indices"), named.get("values"), named.get("size")
        if not isinstance(indices, Tensor) or not isinstance(values, Tensor) or (
                size is not None and not all(_is_int(n) for n in size)):
            raise _invalid(args, kwargs)
        return _from_entries(indices, values, size, device)
    if "size" in kwargs:
        if args:
            raise _invalid(args, kwargs)
        args = tuple(kwargs["size"])
    elif len(args) == 1 and isinstance(args[0], Size):
        args = tuple(args[0])
    elif len(args) == 1 and isinstance(args[0], (tuple, list)):
        raise TypeError("torch.sparse.SparseTensor(sequence) only accepts sizes.  Please use torch.sparse_coo_tensor() "
                        "or construct a strided tensor and convert it to sparse via to_sparse.")
    if not all(_is_int(n) for n in args):
        raise _invalid(args, kwargs)
    return _empty(dtype, tuple(int(n) for n in args), device)


class _SparseLegacyMeta(type):
    def __instancecheck__(cls, obj) -> bool:
        from . import SparseTensor

        return isinstance(obj, SparseTensor) and obj.dtype == cls.dtype and obj.device.type == "cpu"

    def __call__(cls, *args, **kwargs):
        return legacy_sparse_construct(cls.dtype, args, kwargs)

    def __repr__(cls) -> str:
        return f"<class 'tensorplug.sparse.{cls.__name__}'>"


def _legacy_type(name: str, dtype):
    from . import sparse_coo

    return _SparseLegacyMeta(name, (), {
        "dtype": dtype, "is_sparse": True, "layout": sparse_coo, "__module__": "tensorplug.sparse",
        "__doc__": f"Deprecated legacy constructor of CPU sparse COO tensors ({dtype.name} when empty)."})


FloatTensor = _legacy_type("FloatTensor", _dt.float32)
DoubleTensor = _legacy_type("DoubleTensor", _dt.float64)
HalfTensor = _legacy_type("HalfTensor", _dt.float16)
BFloat16Tensor = _legacy_type("BFloat16Tensor", _dt.bfloat16)
ByteTensor = _legacy_type("ByteTensor", _dt.uint8)
CharTensor = _legacy_type("CharTensor", _dt.int8)
ShortTensor = _legacy_type("ShortTensor", _dt.int16)
IntTensor = _legacy_type("IntTensor", _dt.int32)
LongTensor = _legacy_type("LongTensor", _dt.int64)
