"""Tensor factories: tensor, empty, zeros, ones, full, arange, linspace, eye, the random ones,
the ``*_like`` variants, and zero-copy ``from_numpy``."""
from __future__ import annotations

import math
import operator
import warnings

import numpy as np

from .. import _hotpath
from ..dispatcher import Operator
from . import dtypes as _dt
from . import factory_options
from . import memory_format as _mf
from .ops._common import is_number, keyset, write_out
from .ops.copying import check_scalar_fits, copy_from_numpy, empty_in_format, fill_, to_dtype
from .random import blocks_for, default_generator
from .shapes import check_shape, contiguous_layout
from .tensor import Tensor, empty_tensor, make_tensor, resolve_device
from .ops.out_rehearsal import rehearse_out

__all__ = [
    "tensor", "as_tensor", "asarray", "from_numpy", "frombuffer", "empty", "zeros", "ones", "full", "arange", "linspace", "logspace",
    "eye", "rand", "randn", "randint", "randperm", "empty_like", "zeros_like", "ones_like", "full_like",
    "rand_like", "randn_like", "randint_like", "uniform_", "normal_", "random_", "bernoulli",
]

UNIFORM = Operator("uniform_", differentiable=False)
NORMAL = Operator("normal_", differentiable=False)
RANDINT = Operator("randint_", differentiable=False)


def _finish(t: Tensor, requires_grad: bool) -> Tensor:
    t._version_ref[0] = 0  # filling a new tensor is not a change anyone could observe
    return t.requires_grad_(True) if requires_grad else t


def _infer_dtype(array: np.ndarray, data) -> _dt.dtype:
    """The dtype PyTorch gives Python data: floats -> default dtype, ints -> int64, bools -> bool."""
    if isinstance(data, np.ndarray) or (isinstance(data, np.generic)):
        return _dt.from_numpy_dtype(array.dtype)
    kind = array.dtype.kind
    if kind == "b":
        return _dt.bool
    if kind in "iu":
        return _dt.int64
    if kind == "f":
        return _dt.get_default_dtype()
    if kind == "c":
        return _dt.get_default_dtype().to_complex()
    raise TypeError(f"tensor(): could not infer the dtype of {type(data).__name__} data (numpy kind {array.dtype!r})")


def _nested_tensors_to_numpy(data, inside_list: bool = False):
    if isinstance(data, Tensor):
        if inside_list:
            # A tensor inside a list is one number, as in PyTorch: [tp.tensor([1.0]), ...] is 1-d,
            # not (n, 1).
            if data.numel() != 1:
                raise ValueError(f"tensor(): only one element tensors can be converted to Python scalars "
                                 f"(a tensor of shape {list(data.shape)} inside the list)")
            data = data.reshape(())
        host = data.detach().cpu()
        return host.numpy() if host._dtype.numpy is not None else np.asarray(host.item())
    if isinstance(data, (list, tuple)):
        return [_nested_tensors_to_numpy(item, True) for item in data]
    return data


def _scalar_dtype(leaf) -> _dt.dtype:
    """The dtype one item of a list counts as: its own for a tensor or a NumPy scalar, PyTorch's
    for a Python number."""
    if isinstance(leaf, Tensor):
        return leaf._dtype
    if isinstance(leaf, np.generic):
        return _dt.from_numpy_dtype(leaf.dtype)
    return _dt.dtype_of_scalar(leaf)


def _leaves(data):
    """The items of nested lists and tuples, depth first."""
    if isinstance(data, (list, tuple)):
        for item in data:
            yield from _leaves(item)
    else:
        yield data


def _items_dtype(data) -> _dt.dtype | None:
    """For a list holding tensors or NumPy scalars, the promotion of its items' dtypes
    ([np.float64(0.1), 1] is float64 and [np.int8(1)] int8, as in PyTorch; NumPy's own inference
    gave float32 and int64); None for a list of Python numbers only."""
    leaves = list(_leaves(data))
    if not any(isinstance(leaf, (Tensor, np.generic)) for leaf in leaves):
        return None
    result = None
    for leaf in leaves:
        if not isinstance(leaf, (Tensor, np.generic, bool, int, float, complex)):
            return None  # not numbers: the NumPy path raises its error
        kind = _scalar_dtype(leaf)
        result = kind if result is None else _dt.promote_types(result, kind)
    return result


def _numpy_ints_as_python(data):
    """NumPy integer scalars as Python ints, which NumPy range-checks for uint64 (np.int64(-3)
    raises OverflowError where NumPy's cast wrapped it to 2**64 - 3)."""
    if isinstance(data, list):
        return [_numpy_ints_as_python(item) for item in data]
    return int(data) if isinstance(data, np.integer) else data


def _is_big_python_int(leaf) -> bool:
    return isinstance(leaf, int) and not isinstance(leaf, bool) and abs(leaf) > 2 ** 53


def _truncated_numbers(data, dtype: _dt.dtype):
    """Nested Python numbers as exact Python ints, floats truncated toward zero."""
    if isinstance(data, (list, tuple)):
        return [_truncated_numbers(item, dtype) for item in data]
    if isinstance(data, (float, np.floating)):
        if not math.isfinite(data):
            raise RuntimeError(f"tensor(): value {data} cannot be converted to type {dtype.name} without overflow")
        return math.trunc(float(data))  # (NumPy's float16 has no __trunc__)
    return int(data)


def _is_beyond_int64(leaf) -> bool:
    return isinstance(leaf, int) and not -2 ** 63 <= leaf < 2 ** 63


def _is_complex(leaf) -> bool:
    return isinstance(leaf, (complex, np.complexfloating)) or (isinstance(leaf, Tensor) and leaf._dtype.category > 1)


def _is_python_float(leaf) -> bool:
    return isinstance(leaf, (float, np.floating))


def _big_ints_as_floats(data, dtype, big: int):
    """Data holding a Python int beyond int64 (which NumPy reads as uint64, float64 or objects), as
    PyTorch reads it: each such int as a float where the tensor is floating or complex (a float or
    complex number among the data, or such a dtype asked for), ``ValueError`` otherwise."""
    if dtype is not None:
        floating = dtype.category >= 2
    else:
        floating = any(_is_python_float(x) or _is_complex(x) for x in _leaves(data))
    if not floating:
        raise ValueError(f"tensor(): value {big} does not fit in int64 (Overflow when unpacking long long)")
    # (float() raises OverflowError beyond the float range, as PyTorch does)
    return _map_leaves(data, lambda leaf: float(leaf) if _is_beyond_int64(leaf) else leaf)


def _map_leaves(data, function):
    if isinstance(data, (list, tuple)):
        return [_map_leaves(item, function) for item in data]
    return function(data)


def tensor(data, *, dtype=None, device=None, requires_grad=False, pin_memory=False) -> Tensor:
    """A new tensor holding a copy of ``data`` (nested lists, numbers, NumPy arrays, tensors);
    ``pin_memory`` is accepted (host memory needs no pinning here, see ``Tensor.pin_memory``)."""
    dtype = _dt.as_dtype(dtype)
    if isinstance(data, Tensor):
        result = data.detach().to(device=device if device is not None else data._device, dtype=dtype or data._dtype, copy=True)
        return _finish(result, requires_grad)
    if data.__class__ is list and dtype is None:
        # A flat list of floats, ints or bools (a target, a few constants): written in C into host
        # memory; None for any other list or device, which the NumPy path below takes.
        made = _hotpath.tensor_from_list(data, _dt.get_default_dtype(), _dt.float64, _dt.int64, _dt.bool,
                                         resolve_device(device))
        if made is not None:
            return _finish(made, requires_grad)
    try:
        array = np.asarray(_nested_tensors_to_numpy(data))
    except ValueError as exc:
        if str(exc).startswith("tensor():"):
            raise
        raise ValueError(f"tensor(): expected a sequence of equal-length sequences ({exc})") from None
    if array.dtype.kind in "ufO" and isinstance(data, (list, tuple, int)) and dtype is not _dt.uint64:
        big = next((leaf for leaf in _leaves(data) if _is_beyond_int64(leaf)), None)
        if big is not None:
            data = _big_ints_as_floats(data, dtype, big)
            array = np.asarray(_nested_tensors_to_numpy(data))
    if array.dtype == object:
        raise TypeError(f"tensor(): could not convert {type(data).__name__} to a tensor: it holds non-numeric values")
    inferred = _infer_dtype(array, data)
    if dtype is None and isinstance(data, (list, tuple)):
        inferred = _items_dtype(data) or inferred
    dtype = inferred if dtype is None else dtype
    dev = resolve_device(device)
    if dtype is not inferred and inferred.category < 2 <= dtype.category:
        array = array.astype(np.float64)
    if inferred.is_complex and not dtype.is_complex:
        raise TypeError(f"tensor(): can't convert complex data to {dtype.name}")
    # A NumPy scalar, alone or in a list, is checked as the Python number it holds, as PyTorch
    # checks it (np.int64(300) as int8 raised there and wrapped to 44 here).
    python_data = not isinstance(data, np.ndarray)
    if dtype is _dt.uint64 and python_data and array.dtype.kind in "iuf":
        # NumPy reads ints above 2**63 mixed with smaller ones as float64, which rounds them: read
        # the Python numbers again straight into uint64 (a negative int raises OverflowError, as
        # in PyTorch). A Python float is refused before NumPy would truncate it (1.5 -> 1) or
        # raise without naming the op (1e300, NaN), as PyTorch refuses it.
        if any(_is_python_float(leaf) for leaf in _leaves(data)):
            raise TypeError("tensor(): an integer is required for dtype uint64, but the data holds a Python float")
        try:
            array = np.array(_numpy_ints_as_python(_nested_tensors_to_numpy(data)), dtype=np.uint64)
        except OverflowError as exc:
            raise OverflowError(f"tensor(): {exc}") from None
    elif array.size and python_data and dtype.category < 2:
        # Python numbers are checked as PyTorch checks each one (256 does not fit uint8, -1 wraps
        # to 255); the smallest and the largest decide. NumPy data converts as NumPy casts it.
        if array.dtype.kind == "f" and dtype.category == 1 and any(_is_big_python_int(leaf) for leaf in _leaves(data)):
            # Ints mixed with floats: NumPy read them all as float64, which rounds ints beyond
            # 2**53 ([2**53 + 1, 0.5] as int64 gave 2**53); read each number again, exactly.
            array = np.array(_truncated_numbers(data, dtype), dtype=object)
        for bound in (array.min(), array.max()):
            check_scalar_fits("tensor", bound.item() if isinstance(bound, np.generic) else bound, dtype)
    return _finish(copy_from_numpy(array, dtype, dev), requires_grad)


def as_tensor(data, dtype=None, device=None) -> Tensor:
    """Like ``tensor`` but shares memory with ``data`` when it can (a CPU tensor or NumPy array)."""
    dtype = _dt.as_dtype(dtype)
    if isinstance(data, Tensor):
        return data.to(device=device or data._device, dtype=dtype or data._dtype)
    if isinstance(data, np.ndarray) and resolve_device(device).type == "cpu" and dtype is None:
        return from_numpy(data)
    return tensor(data, dtype=dtype, device=device)


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=False) -> Tensor:
    """torch.asarray: the array API's ``asarray`` (a tensor is returned itself and a CPU buffer is
    shared unless ``dtype``/``device`` ask for a conversion or ``copy=True``; ``copy=False``
    refuses any copy), and ``requires_grad=True`` marks the result (``obj`` itself when it is
    returned)."""
    from ..array_api import asarray as array_api_asarray  # (tp.array_api is built on this module)

    result = array_api_asarray(obj, dtype=dtype, device=device, copy=copy)
    return result.requires_grad_() if requires_grad else result


def from_numpy(array: np.ndarray) -> Tensor:
    """A CPU tensor sharing ``array``'s memory (writes through either are seen by both)."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"from_numpy(): expected np.ndarray (got {type(array).__name__})")
    dtype = _dt.from_numpy_dtype(array.dtype)
    itemsize = array.dtype.itemsize
    dev = resolve_device("cpu")
    if array.flags.c_contiguous and array.flags.writeable:
        # The common case, without reading __array_interface__ (a new dict per access: four of
        # them were most of a 16 us call; PyTorch takes 0.9 us).
        shape = array.shape
        return make_tensor(dev._backend.wrap_host(array), shape, contiguous_layout(shape)[0], 0, dtype, dev)
    if any(s < 0 for s in array.strides):
        raise ValueError(
            "from_numpy(): At least one stride in the given numpy array is negative, and tensors with negative "
            "strides are not currently supported. (You can probably work around this by making a copy of your "
            "array with array.copy().)"
        )
    if any(s % itemsize for s in array.strides):
        raise ValueError(f"from_numpy(): given numpy array strides {array.strides} are not a multiple of the element byte size {itemsize}")
    if not array.flags.writeable:
        warnings.warn(
            "The given NumPy array is not writable, and tensorplug does not support non-writable tensors. "
            "This means writing to this tensor will result in undefined behavior.",
            UserWarning,
            stacklevel=2,
        )
    owner = _contiguous_owner(array)
    if owner is None:  # no contiguous buffer holds this view (rare): share nothing, copy
        return copy_from_numpy(array, dtype, dev)
    storage = dev._backend.wrap_host(owner)
    offset_bytes = array.__array_interface__["data"][0] - owner.__array_interface__["data"][0]
    strides = tuple(s // itemsize for s in array.strides)
    return make_tensor(storage, tuple(array.shape), strides, offset_bytes // itemsize, dtype, dev)


def frombuffer(buffer, *, dtype, count=-1, offset=0, requires_grad=False) -> Tensor:
    """A 1-D CPU tensor over the memory of an object with the buffer protocol (``bytes``,
    ``bytearray``, ``array.array``, ``memoryview``, ...): ``count`` elements of ``dtype`` (every
    element when -1) from byte ``offset``. Writes through either are seen by both; the tensor
    keeps the buffer alive.

    >>> tp.frombuffer(bytearray(b"\\x01\\x00\\x02\\x00"), dtype=tp.int16).tolist()
    [1, 2]
    """
    if not isinstance(dtype, _dt.dtype):
        raise TypeError(f"frombuffer(): argument 'dtype' must be tensorplug.dtype, not {type(dtype).__name__}")
    try:
        view = memoryview(buffer)
    except TypeError:
        raise ValueError("object does not implement Python buffer protocol.") from None
    count, offset = operator.index(count), operator.index(offset)
    length, itemsize = view.nbytes, dtype.itemsize
    # PyTorch 2.13's checks and messages, in its order.
    if length <= 0 or count == 0:
        raise ValueError(f"both buffer length ({length}) and count ({count}) must not be 0")
    if not 0 <= offset < length:
        raise ValueError(f"offset ({offset} bytes) must be non-negative and no greater than buffer length ({length} bytes) "
                         f"minus 1")
    if count < 0:
        if (length - offset) % itemsize:
            raise ValueError(f"buffer length ({length - offset} bytes) after offset ({offset} bytes) must be a multiple of "
                             f"element size ({itemsize})")
        count = (length - offset) // itemsize
    elif length - offset < count * itemsize:
        raise ValueError(f"requested buffer length ({count} * {itemsize} bytes) after offset ({offset} bytes) must not be "
                         f"greater than actual buffer length ({length} bytes)")
    if view.readonly:
        warnings.warn(
            "The given buffer is not writable, and tensorplug does not support non-writable tensors. This means you can "
            "write to the underlying (supposedly non-writable) buffer using the tensor. You may want to copy the buffer "
            "to protect its data or make it writable before converting it to a tensor.",
            UserWarning,
            stacklevel=2,
        )
    array = np.frombuffer(view.cast("B") if view.ndim != 1 or view.format != "B" else view, dtype=_dt.numpy_dtype(dtype),
                          count=count, offset=offset)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the read-only warning above is frombuffer's own
        result = from_numpy(array)
    return _finish(result, requires_grad)


def _contiguous_owner(array: np.ndarray):
    """``array`` itself if C-contiguous, else the nearest C-contiguous array it views, or None."""
    candidate = array
    while isinstance(candidate, np.ndarray):
        if candidate.flags.c_contiguous:
            start = array.__array_interface__["data"][0] - candidate.__array_interface__["data"][0]
            if start % array.dtype.itemsize == 0 and start >= 0:
                return candidate
            return None
        candidate = candidate.base
    return None


def _factory_dtype(dtype) -> _dt.dtype:
    return _dt.get_default_dtype() if dtype is None else _dt.as_dtype(dtype)


def empty(*sizes, size=None, dtype=None, device=None, requires_grad=False, memory_format=None, out=None, layout=None,
          pin_memory=False) -> Tensor:
    if out is not None:
        rehearse_out(empty, locals())
    if size is not None or out is not None or layout is not None or pin_memory:
        sizes, dtype, device = factory_options.resolve("empty", sizes, size, dtype, device, out, layout, pin_memory)
    shape = check_shape("empty", sizes)
    dtype, dev = _factory_dtype(dtype), resolve_device(device)
    if memory_format is None:
        result = _finish(empty_tensor(shape, dtype, dev), requires_grad)
        return result if out is None else _into("empty", out, result)
    fmt = _mf.check_memory_format("empty", memory_format)
    if fmt is _mf.preserve_format:
        raise RuntimeError("empty(): unsupported memory format preserve_format")
    return _into("empty", out, _finish(empty_in_format(shape, dtype, dev, fmt), requires_grad))


def full(size, fill_value, *, dtype=None, device=None, requires_grad=False, out=None, layout=None,
         pin_memory=False) -> Tensor:
    if out is not None:
        rehearse_out(full, locals())
    if out is not None or layout is not None or pin_memory:
        _, dtype, device = factory_options.resolve("full", (), None, dtype, device, out, layout, pin_memory)
        if out is not None:
            return _into("full", out, full(size, fill_value, dtype=dtype, device=device, requires_grad=requires_grad))
    shape = check_shape("full", (size,) if isinstance(size, int) else tuple(size))
    if isinstance(fill_value, int):
        _dt.dtype_of_scalar(fill_value)  # an int beyond 64 bits raises OverflowError whatever the dtype, as in PyTorch
    if dtype is None:
        is_scalar = is_number(fill_value) or isinstance(fill_value, (complex, np.complexfloating))
        dtype = _dt.dtype_of_scalar(fill_value) if is_scalar else _dt.get_default_dtype()
    t = empty_tensor(shape, dtype, resolve_device(device))
    return _finish(fill_(t, fill_value), requires_grad)


def zeros(*sizes, size=None, dtype=None, device=None, requires_grad=False, out=None, layout=None,
          pin_memory=False) -> Tensor:
    if out is not None:
        rehearse_out(zeros, locals())
    if size is not None or out is not None or layout is not None or pin_memory:
        sizes, dtype, device = factory_options.resolve("zeros", sizes, size, dtype, device, out, layout, pin_memory)
    shape = check_shape("zeros", sizes)
    result = _finish(fill_(empty_tensor(shape, _factory_dtype(dtype), resolve_device(device)), 0), requires_grad)
    return result if out is None else _into("zeros", out, result)


def ones(*sizes, size=None, dtype=None, device=None, requires_grad=False, out=None, layout=None,
         pin_memory=False) -> Tensor:
    if out is not None:
        rehearse_out(ones, locals())
    if size is not None or out is not None or layout is not None or pin_memory:
        sizes, dtype, device = factory_options.resolve("ones", sizes, size, dtype, device, out, layout, pin_memory)
    shape = check_shape("ones", sizes)
    result = _finish(fill_(empty_tensor(shape, _factory_dtype(dtype), resolve_device(device)), 1), requires_grad)
    return result if out is None else _into("ones", out, result)


def _into(op: str, out, result: Tensor) -> Tensor:
    """``result``, or, given ``out=``, ``out`` holding it (resized as PyTorch resizes it)."""
    return result if out is None else write_out(op, out, result)


def _like(input: Tensor, dtype, device):
    return (input._dtype if dtype is None else _dt.as_dtype(dtype)), (input._device if device is None else resolve_device(device))


def empty_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=None, layout=None,
               pin_memory=False) -> Tensor:
    """An uninitialized tensor shaped as ``input``; ``memory_format`` (default preserve_format,
    which keeps a channels-last layout) picks its layout."""
    if layout is not None:
        factory_options.check_layout("empty_like", layout)
    dtype, dev = _like(input, dtype, device)
    if memory_format is None and (len(input._shape) < 4 or input.is_contiguous()):
        return _finish(empty_tensor(input._shape, dtype, dev), requires_grad)
    fmt = _mf.check_memory_format("empty_like", memory_format)
    if fmt is _mf.preserve_format:
        fmt = _mf.suggest_format(input._shape, input._stride)
    return _finish(empty_in_format(input._shape, dtype, dev, fmt), requires_grad)


def zeros_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=None, layout=None,
               pin_memory=False) -> Tensor:
    """Zeros shaped as ``input``; with ``layout=tp.sparse_coo``, a sparse tensor without entries,
    as PyTorch makes (the one sparse layout its ``*_like`` factories build)."""
    if layout is not None:
        if factory_options.is_sparse_coo(layout) and isinstance(input, Tensor) and input.ndim:
            return _sparse_zeros_like(input, dtype, device, requires_grad)
        factory_options.check_layout("zeros_like", layout)
    out = empty_like(input, dtype=dtype, device=device, memory_format=memory_format)
    return _finish(fill_(out, 0), requires_grad)


def _sparse_zeros_like(input: Tensor, dtype, device, requires_grad: bool):
    """A coalesced sparse COO tensor of ``input``'s shape with no entries: every dim sparse."""
    from ..sparse import SparseTensor

    dtype, dev = _like(input, dtype, device)
    indices = empty_tensor((input.ndim, 0), _dt.int64, dev)
    values = _finish(empty_tensor((0,), dtype, dev), requires_grad)
    return SparseTensor(indices, values, input._shape, coalesced=True)


def ones_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=None, layout=None,
              pin_memory=False) -> Tensor:
    if layout is not None:
        factory_options.check_layout("ones_like", layout)
    out = empty_like(input, dtype=dtype, device=device, memory_format=memory_format)
    return _finish(fill_(out, 1), requires_grad)


def full_like(input, fill_value, *, dtype=None, device=None, requires_grad=False, memory_format=None, layout=None,
              pin_memory=False) -> Tensor:
    if layout is not None:
        factory_options.check_layout("full_like", layout)
    out = empty_like(input, dtype=dtype, device=device, memory_format=memory_format)
    return _finish(fill_(out, fill_value), requires_grad)


def arange(start, end=None, step=1, *, dtype=None, device=None, requires_grad=False, out=None, layout=None,
           pin_memory=False) -> Tensor:
    """Values from ``start`` up to (not including) ``end`` in steps of ``step``."""
    if out is not None:
        rehearse_out(arange, locals())
    if out is not None or layout is not None or pin_memory:
        _, dtype, device = factory_options.resolve("arange", (), None, dtype, device, out, layout, pin_memory)
        if out is not None:
            return _into("arange", out, arange(start, end, step, dtype=dtype, device=device, requires_grad=requires_grad))
    dtype = _dt.as_dtype(dtype)
    if end is None:
        start, end = 0, start
    for name, v in (("start", start), ("end", end), ("step", step)):
        if isinstance(v, Tensor):
            v = v.item()
        if not is_number(v) or (isinstance(v, float) and not math.isfinite(v)):
            raise RuntimeError(f"arange(): {name} must be a finite number, got {v!r}")
    if step == 0:
        raise RuntimeError("arange(): step must be nonzero")
    if (end - start) * step < 0:
        raise RuntimeError(f"arange(): upper bound and larger bound inconsistent with step sign (start={start}, end={end}, step={step})")
    count = max(0, math.ceil((end - start) / step))
    check_shape("arange", (count,))
    if dtype is None:
        dtype = _dt.int64 if all(isinstance(v, int) for v in (start, end, step)) else _dt.get_default_dtype()
    _refuse_bool_range("arange", dtype)
    values = start + np.arange(count, dtype=np.float64 if dtype.is_floating_point else np.int64) * step
    return _finish(copy_from_numpy(values, dtype, resolve_device(device)), requires_grad)


def _refuse_bool_range(op: str, dtype) -> None:
    # A range of bools is all True after its first element: PyTorch has no kernel for it and
    # raises NotImplementedError, which ported code may catch.
    if dtype is _dt.bool:
        raise NotImplementedError(f"{op}(): not implemented for dtype bool")


def _is_complex_end(value) -> bool:
    if isinstance(value, Tensor):
        return value._dtype.is_complex
    return isinstance(value, (complex, np.complexfloating))


def _spaced(op: str, start, end, steps, dtype):
    """``steps`` evenly spaced float64 (or complex128) values from ``start`` to ``end``, and the
    result dtype: complex ends (or a complex ``dtype``) space the real and imaginary parts
    together; complex ends make the default dtype's complex counterpart."""
    steps = operator.index(steps)
    dtype = _dt.as_dtype(dtype)
    if steps < 0:
        raise RuntimeError(f"{op}(): number of steps must be non-negative, got {steps}")
    complex_ends = _is_complex_end(start) or _is_complex_end(end)
    if dtype is None:
        dtype = _dt.get_default_dtype().to_complex() if complex_ends else _dt.get_default_dtype()
    _refuse_bool_range(op, dtype)
    if complex_ends and not dtype.is_complex:
        raise RuntimeError(f"{op}(): complex start or end ({start!r}, {end!r}) need a complex dtype, got {dtype.name}")
    if dtype.is_complex:
        return np.linspace(complex(start), complex(end), steps, dtype=np.complex128), dtype
    return np.linspace(float(start), float(end), steps, dtype=np.float64), dtype


def linspace(start, end, steps, *, dtype=None, device=None, requires_grad=False, out=None, layout=None,
             pin_memory=False) -> Tensor:
    if out is not None:
        rehearse_out(linspace, locals())
    if out is not None or layout is not None or pin_memory:
        _, dtype, device = factory_options.resolve("linspace", (), None, dtype, device, out, layout, pin_memory)
        if out is not None:
            return _into("linspace", out, linspace(start, end, steps, dtype=dtype, device=device,
                                                   requires_grad=requires_grad))
    values, dtype = _spaced("linspace", start, end, steps, dtype)
    return _finish(copy_from_numpy(values, dtype, resolve_device(device)), requires_grad)


def logspace(start, end, steps, base=10.0, *, dtype=None, device=None, requires_grad=False, out=None, layout=None,
             pin_memory=False) -> Tensor:
    """``base ** linspace(start, end, steps)``: ``steps`` values spaced evenly on a log scale
    (complex ends give complex values, as PyTorch)."""
    if out is not None:
        rehearse_out(logspace, locals())
    if out is not None or layout is not None or pin_memory:
        _, dtype, device = factory_options.resolve("logspace", (), None, dtype, device, out, layout, pin_memory)
        if out is not None:
            return _into("logspace", out, logspace(start, end, steps, base, dtype=dtype, device=device,
                                                   requires_grad=requires_grad))
    exponents, dtype = _spaced("logspace", start, end, steps, dtype)
    base = float(base)
    values = np.power(base if exponents.dtype.kind == "f" else complex(base), exponents)
    return _finish(copy_from_numpy(values, dtype, resolve_device(device)), requires_grad)


def eye(n, m=None, *, dtype=None, device=None, requires_grad=False, out=None, layout=None, pin_memory=False) -> Tensor:
    if out is not None:
        rehearse_out(eye, locals())
    if out is not None or layout is not None or pin_memory:
        _, dtype, device = factory_options.resolve("eye", (), None, dtype, device, out, layout, pin_memory)
        if out is not None:
            return _into("eye", out, eye(n, m, dtype=dtype, device=device, requires_grad=requires_grad))
    m = n if m is None else m
    shape = check_shape("eye", (n, m))
    t = fill_(empty_tensor(shape, _factory_dtype(dtype), resolve_device(device)), 0)
    if n and m:
        from .views import diagonal

        fill_(diagonal(t), 1)
    t._version_ref[0] = 0
    return _finish(t, requires_grad)


# --- random ---------------------------------------------------------------------------------
def _random_fill(op: Operator, out: Tensor, generator, per_block: int, a, b) -> Tensor:
    gen = default_generator(out._device) if generator is None else generator
    if gen.device.type != out._device.type:
        raise RuntimeError(f"Expected a '{out._device.type}' device type for generator but found '{gen.device.type}'")
    n = out.numel()
    seed, offset = gen.take(blocks_for(n, per_block))
    if n == 0:
        return out
    target = out if out.is_contiguous() else empty_tensor(out._shape, out._dtype, out._device)
    op.lookup(keyset(target))(target, seed, offset, a, b)
    if target is not out:
        from .ops.copying import copy_

        copy_(out, target)
    else:
        out._version_ref[0] += 1
    return out


def _uniform_per_block(dtype: _dt.dtype) -> int:
    return 2 if dtype is _dt.float64 else 4


def _from_keyword(op: str, from_, default, keywords: dict):
    """The lower bound of random_/uniform_, which PyTorch names ``from``: a Python keyword, so it
    arrives only through ``**{"from": v}`` (generated code and keyword-forwarding wrappers do
    that). ``from_`` is tensorplug's spelling; any other keyword is refused as Python would."""
    for name in keywords:
        if name != "from":
            raise TypeError(f"{op}() got an unexpected keyword argument '{name}'")
    if not keywords:
        return from_
    if from_ != default:
        raise TypeError(f"{op}() got multiple values for argument 'from'")
    return keywords["from"]


def uniform_(self: Tensor, from_=0.0, to=1.0, *, generator=None, **from_keyword) -> Tensor:
    """Fill with numbers uniform in [from, to)."""
    from_ = _from_keyword("uniform_", from_, 0.0, from_keyword)
    if not self._dtype.is_floating_point:
        raise TypeError(f"uniform_(): expected a floating-point tensor, got {self._dtype.name}")
    if from_ > to:
        raise RuntimeError(f"uniform_(): expects to return a [from, to) range, but found from={from_} > to={to}")
    return _random_fill(UNIFORM, self, generator, _uniform_per_block(self._dtype), float(from_), float(to))


def normal_(self: Tensor, mean=0.0, std=1.0, *, generator=None) -> Tensor:
    if self._dtype.is_complex and std >= 0:
        # As PyTorch: the real and imaginary parts are independent normals of standard deviation
        # std / sqrt(2) (so E|z - mean|^2 = std^2), around the parts of a (complex) mean.
        from .complex import view_as_real

        pairs = view_as_real(self)
        _random_fill(NORMAL, pairs, generator, 4, 0.0, float(std) / math.sqrt(2.0))
        mean = complex(mean)
        if mean:
            pairs.select(-1, 0).add_(mean.real)
            pairs.select(-1, 1).add_(mean.imag)
        return self
    if not self._dtype.is_floating_point:
        raise TypeError(f"normal_(): expected a floating-point tensor, got {self._dtype.name}")
    if std < 0:
        raise RuntimeError(f"normal_(): expects std >= 0.0, but found std {std}")
    return _random_fill(NORMAL, self, generator, 4, float(mean), float(std))


def random_(self: Tensor, from_=0, to=None, *, generator=None, **from_keyword) -> Tensor:
    """Fill with integers uniform in [from_, to)."""
    from_ = _from_keyword("random_", from_, 0, from_keyword)
    if to is None:
        from_, to = 0, from_ if from_ else (2 ** 24 if self._dtype.is_floating_point else 2 ** 63 - 1)
    from_, to = operator.index(from_), operator.index(to)
    for name, bound in (("from", from_), ("to", to)):
        if not -(1 << 63) <= bound < 1 << 63:  # PyTorch: "Overflow when unpacking long long"
            raise ValueError(f"random_(): '{name}' = {bound} does not fit in int64")
    if from_ >= to:
        raise RuntimeError(f"random_(): expects 'from' to be less than 'to', but got from={from_} >= to={to}")
    if self._dtype is _dt.bool and (from_, to) != (0, 2):
        raise RuntimeError("random_(): a bool tensor takes values in [0, 2)")
    if not self._dtype.is_floating_point and self._dtype is not _dt.bool:
        # Both ends must be values of the dtype, as in PyTorch; the kernel never wraps a bound.
        info = np.iinfo(_dt.numpy_dtype(self._dtype))
        for name, bound in (("from", from_), ("to - 1", to - 1)):
            if not info.min <= bound <= info.max:
                raise RuntimeError(f"random_(): {name} is out of bounds for {self._dtype.name} ({name} = {bound}, "
                                   f"the dtype holds [{info.min}, {info.max}])")
    span = to - from_
    return _random_fill(RANDINT, self, generator, 4 if span <= 2**32 else 2, from_, to)


def rand(*sizes, size=None, generator=None, dtype=None, device=None, requires_grad=False, out=None, layout=None,
         pin_memory=False) -> Tensor:
    if out is not None:
        rehearse_out(rand, locals())
    if size is not None or out is not None or layout is not None or pin_memory:
        sizes, dtype, device = factory_options.resolve("rand", sizes, size, dtype, device, out, layout, pin_memory)
    shape = check_shape("rand", sizes)
    values = empty_tensor(shape, _factory_dtype(dtype), resolve_device(device))
    result = _finish(uniform_(values, generator=generator), requires_grad)
    return result if out is None else _into("rand", out, result)


def randn(*sizes, size=None, generator=None, dtype=None, device=None, requires_grad=False, out=None, layout=None,
          pin_memory=False) -> Tensor:
    if out is not None:
        rehearse_out(randn, locals())
    if size is not None or out is not None or layout is not None or pin_memory:
        sizes, dtype, device = factory_options.resolve("randn", sizes, size, dtype, device, out, layout, pin_memory)
    shape = check_shape("randn", sizes)
    values = empty_tensor(shape, _factory_dtype(dtype), resolve_device(device))
    result = _finish(normal_(values, generator=generator), requires_grad)
    return result if out is None else _into("randn", out, result)


def randint(low, high=None, size=None, *, generator=None, dtype=None, device=None, requires_grad=False, out=None,
            layout=None, pin_memory=False) -> Tensor:
    """Integers uniform in [low, high): ``randint(high, size)`` or ``randint(low, high, size)``."""
    if out is not None:
        rehearse_out(randint, locals())
    if out is not None or layout is not None or pin_memory:
        _, dtype, device = factory_options.resolve("randint", (), None, dtype, device, out, layout, pin_memory)
        if out is not None:
            return _into("randint", out, randint(low, high, size, generator=generator, dtype=dtype, device=device,
                                                 requires_grad=requires_grad))
    if size is None:
        if high is None:
            raise TypeError("randint(): missing required argument 'size'")
        low, high, size = 0, low, high
    elif high is None:
        low, high = 0, low
    shape = check_shape("randint", (size,) if isinstance(size, int) else tuple(size))
    out = empty_tensor(shape, _dt.int64 if dtype is None else _dt.as_dtype(dtype), resolve_device(device))
    return _finish(random_(out, low, high, generator=generator), requires_grad)


def randperm(n, *, generator=None, dtype=None, device=None, requires_grad=False, out=None, layout=None,
             pin_memory=False) -> Tensor:
    """A random permutation of ``0 .. n-1``: the order that sorts ``n`` random 62-bit keys (a
    composite over ``random_`` and ``sort``, so every backend has it)."""
    if out is not None:
        rehearse_out(randperm, locals())
    if out is not None or layout is not None or pin_memory:
        _, dtype, device = factory_options.resolve("randperm", (), None, dtype, device, out, layout, pin_memory)
        if out is not None:
            return _into("randperm", out, randperm(n, generator=generator, dtype=dtype, device=device,
                                                   requires_grad=requires_grad))
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        raise ValueError(f"randperm(): n must be a non-negative integer, got {n!r}")
    wanted = _dt.int64 if dtype is None else dtype
    if wanted is _dt.bool:  # PyTorch has no bool kernel (a permutation of 0 and 1 is no permutation)
        raise NotImplementedError("\"randperm\" not implemented for 'Bool'")
    keys = random_(empty_tensor((n,), _dt.int64, resolve_device(device)), 0, 1 << 62, generator=generator)
    order = keys.argsort(stable=True)
    return _finish(order if wanted is _dt.int64 else order.to(wanted), requires_grad)


def rand_like(input, *, dtype=None, device=None, requires_grad=False, generator=None, memory_format=None, layout=None,
              pin_memory=False) -> Tensor:
    if layout is not None:
        factory_options.check_layout("rand_like", layout)
    out = empty_like(input, dtype=dtype, device=device, memory_format=memory_format)
    return _finish(uniform_(out, generator=generator), requires_grad)


def randn_like(input, *, dtype=None, device=None, requires_grad=False, generator=None, memory_format=None, layout=None,
               pin_memory=False) -> Tensor:
    if layout is not None:
        factory_options.check_layout("randn_like", layout)
    out = empty_like(input, dtype=dtype, device=device, memory_format=memory_format)
    return _finish(normal_(out, generator=generator), requires_grad)


def randint_like(input, low=0, high=None, *, dtype=None, device=None, generator=None, memory_format=None, layout=None,
                 requires_grad=False, pin_memory=False) -> Tensor:
    if high is None:
        low, high = 0, low
    if layout is not None:
        factory_options.check_layout("randint_like", layout)
    out = empty_like(input, dtype=dtype, device=device, memory_format=memory_format)
    return _finish(random_(out, low, high, generator=generator), requires_grad)


def bernoulli(input, p=None, *, generator=None, out=None) -> Tensor:
    """1 with probability ``p`` (or the values of ``input``), else 0, in ``input``'s dtype."""
    if out is not None:
        rehearse_out(bernoulli, locals())
    if out is not None:
        return _bernoulli_into(input, p, generator, out)
    probs = input if p is None else p
    draws = rand_like(input, dtype=input._dtype if input._dtype.is_floating_point else None, generator=generator)
    return to_dtype(draws < probs, input._dtype)


def _bernoulli_into(input, p, generator, out) -> Tensor:
    """bernoulli's out=: PyTorch takes it only with the probabilities in ``input`` (no ``p``),
    writes the 0s and 1s into an out= of any dtype (int64 and bool included) and resizes it
    without a warning. The draws are detached, so the autograd refusal looks at ``input``."""
    from .ops._common import refuse_out_under_autograd

    if p is not None:
        raise TypeError("bernoulli(): out= is accepted only without p (the probabilities are input's values)")
    refuse_out_under_autograd("bernoulli", out, input)
    draws = bernoulli(input, generator=generator)
    if isinstance(out, Tensor) and out._device is draws._device:
        draws = to_dtype(draws, out._dtype)
    return write_out("bernoulli", out, draws, resize_warns=False)


def bernoulli_(self: Tensor, p=0.5, *, generator=None) -> Tensor:
    """Fill ``self`` in place with 1 with probability ``p`` (a number, or a tensor broadcast to
    ``self``'s shape), else 0: timm's DropPath draws its per-sample keep mask this way."""
    if isinstance(p, Tensor):
        if p._device != self._device:
            p = p.to(self._device)
        p = p.expand(self._shape)
        # Data-dependent, so checked on the values (one host read), as PyTorch checks them.
        if p.numel() and ((p < 0) | (p > 1)).any().item():
            raise RuntimeError("bernoulli_: expected every probability in p to be in [0, 1]")
    elif not 0 <= p <= 1:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p}")
    dtype = self._dtype if self._dtype.is_floating_point else _dt.float32
    draws = uniform_(empty(self._shape, dtype=dtype, device=self._device), generator=generator)
    return self.copy_(draws < p)
