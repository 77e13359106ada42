"""Data types and the standard's data type functions: ``astype``, ``can_cast``, ``finfo``, ``iinfo``,
``isdtype``, ``result_type``.

The namespace's dtypes are tensorplug's own dtype objects, so ``x.dtype == xp.float32`` holds for
every tensor. The standard's promotion differs from PyTorch's in one place that matters here: a
zero-dimensional array takes full part in promotion (PyTorch gives 0-d tensors a lower priority),
so every namespace function promotes with :func:`result_type` before calling a tp op.
"""
from __future__ import annotations

import builtins
from dataclasses import dataclass

import numpy as np

from ..frontend import dtypes as _d
from ..frontend.device import canonical_device as _canonical_device
from ..frontend.tensor import Tensor

__all__ = [
    "bool", "int8", "int16", "int32", "int64", "uint8", "float32", "float64", "complex64", "complex128",
    "astype", "can_cast", "finfo", "iinfo", "isdtype", "result_type",
]

bool, int8, int16, int32, int64, uint8, float32, float64, complex64, complex128 = (
    _d.bool, _d.int8, _d.int16, _d.int32, _d.int64, _d.uint8, _d.float32, _d.float64, _d.complex64, _d.complex128,
)

# The dtypes of the standard that tensorplug has (no uint16/32/64).
STANDARD_DTYPES = (bool, int8, int16, int32, int64, uint8, float32, float64, complex64, complex128)
DEFAULT_INT = int64
DEFAULT_INDEX = int64

def default_float() -> _d.dtype:
    return _d.get_default_dtype()


def default_complex() -> _d.dtype:
    """The standard's default complex dtype: the complex counterpart of the default real one."""
    return _d.get_default_dtype().to_complex()


def check_dtype(dtype) -> _d.dtype:
    if not isinstance(dtype, _d.dtype):
        raise TypeError(f"expected a tensorplug dtype (xp.float32, xp.int64, ...), got {dtype!r}")
    return dtype


def promote(a: _d.dtype, b: _d.dtype) -> _d.dtype:
    """The standard's promotion of two array dtypes.

    Within a kind the standard's lattice and tp.promote_types agree for every dtype tensorplug
    has, and so do they between real and complex floating dtypes (float64 with complex64 is
    complex128: the wider precision and the complex kind); across the other kinds (bool with
    numbers, integers with floats) the standard leaves the result to the implementation, and this
    follows PyTorch (the higher kind wins).
    """
    return a if a is b else _d.promote_types(a, b)


def _scalar_kind(value) -> int:
    if isinstance(value, builtins.bool):
        return 0
    if isinstance(value, builtins.int):
        return 1
    if isinstance(value, builtins.float):
        return 2
    if isinstance(value, complex):
        return 3
    raise TypeError(f"expected an array, a dtype or a Python bool/int/float/complex, got {type(value).__name__}")


def scalar_default_dtype(value) -> _d.dtype:
    """The dtype a Python scalar gets on its own (asarray(value), full(shape, value))."""
    return (bool, DEFAULT_INT, default_float(), default_complex())[_scalar_kind(value)]


def dtype_for_scalar_with(value, array_dtype: _d.dtype) -> _d.dtype:
    """The dtype a Python scalar operand takes beside an array of ``array_dtype``.

    The standard: the scalar takes the array's dtype when its kind fits (a bool with bool arrays,
    an int with integer or floating arrays, a float with real or complex floating arrays, a
    complex with complex arrays). Otherwise (a float with an integer array, a complex with a real
    one, which the standard leaves unspecified) the scalar's default dtype joins the promotion, as
    in PyTorch, except that a complex scalar beside a real floating array keeps the array's
    precision (float32 with 1j is complex64, as NumPy and PyTorch).
    """
    kind = _scalar_kind(value)
    if kind <= array_dtype.category and not (array_dtype is bool and kind != 0):
        return array_dtype
    if kind == 3 and array_dtype.category == 2:
        return array_dtype.to_complex()
    return promote(array_dtype, scalar_default_dtype(value))


def result_type(*arrays_and_dtypes) -> _d.dtype:
    """The dtype that results from applying the standard's promotion rules to the arguments."""
    dtypes = [a.dtype if isinstance(a, Tensor) else a for a in arrays_and_dtypes]
    typed = [d for d in dtypes if isinstance(d, _d.dtype)]
    scalars = [d for d in dtypes if not isinstance(d, _d.dtype)]
    if not typed:
        raise ValueError("result_type needs at least one array or dtype (Python scalars alone have no dtype)")
    out = typed[0]
    for d in typed[1:]:
        out = promote(out, d)
    for s in scalars:
        out = dtype_for_scalar_with(s, out)
    return out


def astype(x: Tensor, dtype, /, *, copy: builtins.bool = True, device=None) -> Tensor:
    """``x`` converted to ``dtype`` (and moved to ``device``); a new array unless ``copy=False``
    and nothing needs to change. A complex array does not cast to a real numeric dtype (the
    standard: "should not be permitted"; say which part with ``real``/``imag``/``abs``); to bool it
    is True where either part is nonzero."""
    check_dtype(dtype)
    if x.dtype.category == 3 and dtype.category in (1, 2):
        raise TypeError(f"astype: casting {x.dtype!r} to {dtype!r} would discard the imaginary part, which the "
                        f"standard does not permit; cast real(x), imag(x) or abs(x) instead")
    target = x.device if device is None else _canonical_device(device)
    if x.dtype is dtype and x.device == target:
        return x.clone() if copy else x
    return x.to(device=target, dtype=dtype)


def can_cast(from_, to, /) -> builtins.bool:
    """Whether ``from_`` (a dtype or an array) casts to ``to`` under the standard's promotion rules.

    Casts across kinds (bool to integer, integer to floating) are not promotions in the standard,
    so they answer False, as the standard's own test suite expects; real floating to complex
    floating is one (float32 to complex64 or complex128, float64 to complex128).
    """
    src = from_.dtype if isinstance(from_, Tensor) else check_dtype(from_)
    check_dtype(to)
    if src.category != to.category and not (src.category == 2 and to.category == 3):
        return False
    return promote(src, to) is to


@dataclass(frozen=True)
class finfo_object:
    bits: int
    eps: float
    max: float
    min: float
    smallest_normal: float
    dtype: _d.dtype


@dataclass(frozen=True)
class iinfo_object:
    bits: int
    max: int
    min: int
    dtype: _d.dtype


def _dtype_of(type_) -> _d.dtype:
    return type_.dtype if isinstance(type_, Tensor) else check_dtype(type_)


def finfo(type, /) -> finfo_object:
    """Machine limits of a floating-point dtype (or of an array's dtype). For a complex dtype,
    those of its real and imaginary parts (the standard's: ``finfo(complex64).dtype`` is float32,
    ``bits`` 32)."""
    dtype = _dtype_of(type)
    if dtype.is_complex:
        dtype = dtype.to_real()
    if not dtype.is_floating_point:
        raise ValueError(f"finfo needs a floating-point dtype, got {dtype!r}")
    info = np.finfo(_d.numpy_dtype(dtype))
    return finfo_object(
        bits=info.bits, eps=builtins.float(info.eps), max=builtins.float(info.max), min=builtins.float(info.min),
        smallest_normal=builtins.float(info.smallest_normal), dtype=dtype,
    )


def iinfo(type, /) -> iinfo_object:
    """Machine limits of an integer dtype (or of an array's dtype)."""
    dtype = _dtype_of(type)
    if dtype.category != 1:
        raise ValueError(f"iinfo needs an integer dtype, got {dtype!r}")
    info = np.iinfo(dtype.numpy)
    return iinfo_object(bits=info.bits, max=builtins.int(info.max), min=builtins.int(info.min), dtype=dtype)


_KIND_TESTS = {
    "bool": lambda d: d.category == 0,
    "signed integer": lambda d: d.category == 1 and d.is_signed,
    "unsigned integer": lambda d: d.category == 1 and not d.is_signed,
    "integral": lambda d: d.category == 1,
    "real floating": lambda d: d.category == 2,
    "complex floating": lambda d: d.category == 3,
    "numeric": lambda d: d.category != 0,
}


def isdtype(dtype, kind) -> builtins.bool:
    """Whether ``dtype`` is of ``kind``: a dtype, a kind name ('bool', 'signed integer',
    'unsigned integer', 'integral', 'real floating', 'complex floating', 'numeric'), or a tuple
    of those (any match)."""
    check_dtype(dtype)
    if isinstance(kind, tuple):
        return builtins.any(isdtype(dtype, k) for k in kind)
    if isinstance(kind, _d.dtype):
        return dtype is kind
    if isinstance(kind, str):
        try:
            return _KIND_TESTS[kind](dtype)
        except KeyError:
            raise ValueError(f"unknown dtype kind {kind!r}; expected one of {sorted(_KIND_TESTS)}") from None
    raise TypeError(f"kind must be a dtype, a kind name or a tuple of them, got {type(kind).__name__}")
