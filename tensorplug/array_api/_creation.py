"""Creation functions: ``arange``, ``asarray``, ``empty``, ``empty_like``, ``eye``,
``from_dlpack``, ``full``, ``full_like``, ``linspace``, ``meshgrid``, ``ones``, ``ones_like``,
``tril``, ``triu``, ``zeros``, ``zeros_like``.

Default dtypes are the standard's: Python ints give the default integer dtype (int64), Python
floats tp's default floating dtype (float32 unless ``tp.set_default_dtype`` changed it).
"""
from __future__ import annotations

import builtins
import math
import operator

import numpy as np

from ..frontend import factories as _f
from ..frontend.device import canonical_device as _canonical_device
from ..frontend.dlpack import from_dlpack as _from_dlpack
from ..frontend.ops.shaping import tril as _tril, triu as _triu
from ..frontend.tensor import Tensor
from ..frontend import views as _v
from . import _dtypes as d
from ._helpers import check_array

__all__ = [
    "arange", "asarray", "empty", "empty_like", "eye", "from_dlpack", "full", "full_like", "linspace", "meshgrid",
    "ones", "ones_like", "tril", "triu", "zeros", "zeros_like",
]


def _shape(shape) -> tuple:
    if isinstance(shape, (tuple, list)):
        return tuple(operator.index(n) for n in shape)
    return (operator.index(shape),)


def _dev(device):
    # "opencl" and the tensor's "opencl:0" are one device: compare canonical forms
    return None if device is None else _canonical_device(device)


def _dtype(dtype):
    return None if dtype is None else d.check_dtype(dtype)


def _kind_of_nested(obj) -> int:
    """The highest kind (0 bool, 1 int, 2 float, 3 complex) among the Python scalars in a nested sequence."""
    if isinstance(obj, Tensor):
        return obj.dtype.category
    if isinstance(obj, (builtins.bool, np.bool_)):
        return 0
    if isinstance(obj, (builtins.int, np.integer)):
        return 1
    if isinstance(obj, (builtins.float, np.floating)):
        return 2
    if isinstance(obj, (builtins.complex, np.complexfloating)):
        return 3
    if isinstance(obj, (list, tuple)):
        return builtins.max((_kind_of_nested(o) for o in obj), default=2)
    raise TypeError(f"asarray cannot convert an object of type {type(obj).__name__}")


def asarray(obj, /, *, dtype=None, device=None, copy=None) -> Tensor:
    """An array from an array, a Python scalar, a nested sequence, a buffer (a NumPy array) or a
    DLPack provider. ``copy=True`` always copies; ``copy=False`` raises ValueError where a copy
    would be needed; ``copy=None`` copies only when it must."""
    dtype, device = _dtype(dtype), _dev(device)
    if isinstance(obj, Tensor):
        target_dtype = dtype or obj.dtype
        target_device = device or obj.device
        if target_dtype is obj.dtype and target_device == obj.device:
            return obj.clone() if copy else obj
        if copy is False:
            raise ValueError(f"asarray(copy=False) cannot convert {obj.dtype!r} on {obj.device} to "
                             f"{target_dtype!r} on {target_device} without a copy")
        return obj.to(device=target_device, dtype=target_dtype)
    if isinstance(obj, (np.ndarray, np.generic)) or hasattr(obj, "__array_interface__"):
        array = np.asarray(obj)
        # a read-only buffer cannot be shared by a writable tensor: copy it
        out = _f.from_numpy(array if array.flags.writeable else array.copy())
        needs_copy = (dtype is not None and dtype is not out.dtype) or (device is not None and device.type != "cpu")
        if copy is False and (needs_copy or not array.flags.writeable):
            raise ValueError("asarray(copy=False) would need a copy to convert this buffer")
        converted = out.to(device=device or out.device, dtype=dtype or out.dtype)
        return converted.clone() if (copy and converted is out) else converted
    if hasattr(obj, "__dlpack__") and not isinstance(obj, (list, tuple)):
        return asarray(_from_dlpack(obj), dtype=dtype, device=device, copy=copy)
    if copy is False:
        raise ValueError("asarray(copy=False) of a Python scalar or sequence must copy")
    if dtype is None:
        dtype = (d.bool, d.DEFAULT_INT, d.default_float(), d.default_complex())[_kind_of_nested(obj)]
    if isinstance(obj, (list, tuple)) and builtins.any(isinstance(o, Tensor) for o in _flatten(obj)):
        obj = _to_nested_python(obj)
    if dtype.category == 1:
        _check_integer_range(obj, dtype)
    return _f.tensor(obj, dtype=dtype, device=device)


def _check_integer_range(obj, dtype) -> None:
    # tp.tensor wraps out-of-range Python ints around silently; the standard's asarray must not
    # give a different number than it was given
    info = np.iinfo(dtype.numpy)
    for value in _flatten(obj):
        if isinstance(value, builtins.int) and not info.min <= value <= info.max:
            raise OverflowError(f"Python int {value} is out of range for {dtype!r} [{info.min}, {info.max}]")


def _flatten(obj):
    if isinstance(obj, (list, tuple)):
        for o in obj:
            yield from _flatten(o)
    else:
        yield obj


def _to_nested_python(obj):
    if isinstance(obj, Tensor):
        return obj.tolist()
    if isinstance(obj, (list, tuple)):
        return [_to_nested_python(o) for o in obj]
    return obj


def arange(start, /, stop=None, step=1, *, dtype=None, device=None) -> Tensor:
    """Evenly spaced values in [start, stop) with ``step``; ceil((stop - start) / step) of them."""
    if stop is None:
        start, stop = 0, start
    if step == 0:
        raise ValueError("arange step must not be zero")
    dtype = _dtype(dtype)
    if dtype is None:
        all_int = builtins.all(isinstance(v, builtins.int) for v in (start, stop, step))
        dtype = d.DEFAULT_INT if all_int else d.default_float()
    n = builtins.max(0, math.ceil((stop - start) / step))
    if dtype.category == 1 and builtins.all(isinstance(v, builtins.int) for v in (start, stop, step)):
        return _f.arange(start, start + n * step, step, dtype=dtype, device=_dev(device))
    # computed as start + i * step, which is what the standard's length rule describes
    return (_f.arange(n, dtype=d.float64, device=_dev(device)) * step + start).to(dtype)


def empty(shape, *, dtype=None, device=None) -> Tensor:
    """An uninitialized array of ``shape``."""
    return _f.empty(_shape(shape), dtype=_dtype(dtype) or d.default_float(), device=_dev(device))


def empty_like(x: Tensor, /, *, dtype=None, device=None) -> Tensor:
    """An uninitialized array shaped like x (x's dtype and device unless given)."""
    check_array(x)
    return _f.empty(x.shape, dtype=_dtype(dtype) or x.dtype, device=_dev(device) or x.device)


def zeros(shape, *, dtype=None, device=None) -> Tensor:
    """An array of zeros."""
    return _f.zeros(_shape(shape), dtype=_dtype(dtype) or d.default_float(), device=_dev(device))


def zeros_like(x: Tensor, /, *, dtype=None, device=None) -> Tensor:
    """Zeros shaped like x."""
    check_array(x)
    return _f.zeros(x.shape, dtype=_dtype(dtype) or x.dtype, device=_dev(device) or x.device)


def ones(shape, *, dtype=None, device=None) -> Tensor:
    """An array of ones."""
    return _f.ones(_shape(shape), dtype=_dtype(dtype) or d.default_float(), device=_dev(device))


def ones_like(x: Tensor, /, *, dtype=None, device=None) -> Tensor:
    """Ones shaped like x."""
    check_array(x)
    return _f.ones(x.shape, dtype=_dtype(dtype) or x.dtype, device=_dev(device) or x.device)


def full(shape, fill_value, *, dtype=None, device=None) -> Tensor:
    """An array of ``shape`` filled with ``fill_value`` (its dtype from the value's kind unless given)."""
    dtype = _dtype(dtype) or d.scalar_default_dtype(fill_value)
    if dtype.category == 1:
        _check_integer_range(fill_value, dtype)
    return _f.full(_shape(shape), fill_value, dtype=dtype, device=_dev(device))


def full_like(x: Tensor, /, fill_value, *, dtype=None, device=None) -> Tensor:
    """An array shaped like x filled with ``fill_value`` (x's dtype unless given)."""
    check_array(x)
    if (_dtype(dtype) or x.dtype).category == 1:
        _check_integer_range(fill_value, _dtype(dtype) or x.dtype)
    return _f.full(x.shape, fill_value, dtype=_dtype(dtype) or x.dtype, device=_dev(device) or x.device)


def eye(n_rows: int, n_cols=None, /, *, k: int = 0, dtype=None, device=None) -> Tensor:
    """A 2-D array with ones on the k-th diagonal and zeros elsewhere."""
    n_cols = n_rows if n_cols is None else n_cols
    dev = _dev(device)
    rows = _f.arange(n_rows, dtype=d.DEFAULT_INT, device=dev).reshape(-1, 1)
    cols = _f.arange(n_cols, dtype=d.DEFAULT_INT, device=dev).reshape(1, -1)
    return ((cols - rows) == k).to(_dtype(dtype) or d.default_float())


def linspace(start, stop, /, num: int, *, dtype=None, device=None, endpoint: builtins.bool = True) -> Tensor:
    """``num`` evenly spaced values from start to stop (stop left out when ``endpoint`` is False)."""
    complex_ends = isinstance(start, builtins.complex) or isinstance(stop, builtins.complex)
    dtype = _dtype(dtype) or (d.default_complex() if complex_ends else d.default_float())
    if complex_ends and dtype.category != 3:
        raise TypeError(f"linspace with complex start or stop needs a complex dtype, got {dtype!r}")
    num = operator.index(num)
    if num < 0:
        raise ValueError(f"num must be non-negative, got {num}")
    dev = _dev(device)
    divisions = (num - 1) if endpoint else num
    # complex128 steps for complex ends (the real and imaginary parts are spaced together)
    i = _f.arange(num, dtype=d.float64, device=dev)
    if dtype.category == 3:
        i = i.to(d.complex128)
    if divisions > 0:
        out = start + i * ((stop - start) / divisions)
        if endpoint and num > 1:
            # the last value is exactly stop, as the standard asks
            out = out.clone()
            out[-1] = stop
    else:
        out = i * 0 + start
    return out.to(dtype)


def meshgrid(*arrays: Tensor, indexing: str = "xy") -> list:
    """Coordinate arrays from 1-D arrays (``indexing`` 'xy' for Cartesian, 'ij' for matrix)."""
    if indexing not in ("xy", "ij"):
        raise ValueError(f"indexing must be 'xy' or 'ij', got {indexing!r}")
    for a in arrays:
        check_array(a, "each array")
        if a.ndim != 1:
            raise ValueError(f"meshgrid needs 1-D arrays, got shape {a.shape}")
    if not arrays:
        return []
    shape = [a.shape[0] for a in arrays]
    if indexing == "xy" and len(arrays) > 1:
        shape[0], shape[1] = shape[1], shape[0]
    out = []
    for i, a in enumerate(arrays):
        axis = i
        if indexing == "xy" and len(arrays) > 1 and i < 2:
            axis = 1 - i
        view_shape = [1] * len(arrays)
        view_shape[axis] = a.shape[0]
        out.append(_v.broadcast_to(a.reshape(view_shape), tuple(shape)))
    return out


def tril(x: Tensor, /, *, k: int = 0) -> Tensor:
    """The lower triangle (on and below the k-th diagonal) of the last two axes."""
    check_array(x)
    if x.ndim < 2:
        raise ValueError(f"tril needs at least two dimensions, got shape {x.shape}")
    return _tril(x, k)


def triu(x: Tensor, /, *, k: int = 0) -> Tensor:
    """The upper triangle (on and above the k-th diagonal) of the last two axes."""
    check_array(x)
    if x.ndim < 2:
        raise ValueError(f"triu needs at least two dimensions, got shape {x.shape}")
    return _triu(x, k)


def from_dlpack(x, /, *, device=None, copy=None) -> Tensor:
    """An array sharing memory with a DLPack provider (copied when ``copy=True`` or to move it)."""
    out = _from_dlpack(x)
    return asarray(out, device=device, copy=copy)
