"""dtypes and PyTorch's type promotion rules.

Promotion follows ``torch.result_type``: operands fall in three priority groups (tensors with
dimensions, zero-dim tensors, Python scalars); a lower group only matters when its category
(bool < integer < floating < complex) is higher than the higher group's. Python floats promote to
the default dtype, Python ints to int64, Python complex numbers to the default dtype's complex
counterpart.

complex64 and complex128 are stored as (real, imag) pairs of float32 and float64: a backend never
sees them (docs/complex.md), so they are kept out of ``all_dtypes``, the dtypes a backend declares.

uint16/uint32/uint64 and the float8 family are backend dtypes that a backend declares or not
(docs/dtypes.md). PyTorch 2.13 has no promotion rule between them and the other integer types
(nor between a float8 type and any other dtype); ``promote_types`` refuses those pairs as PyTorch does.
"""
from __future__ import annotations

import numpy as np

__all__ = [
    "dtype", "bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
    "float64", "complex64", "complex128", "uint16", "uint32", "uint64", "float8_e4m3fn", "float8_e5m2",
    "float8_e4m3fnuz", "float8_e5m2fnuz", "cfloat", "cdouble", "half", "float", "double", "short", "int", "long",
    "all_dtypes", "complex_dtypes", "promote_types",
    "get_default_dtype", "set_default_dtype", "from_numpy_dtype", "dtype_of_scalar", "finfo", "iinfo",
]

_builtin_bool, _builtin_int, _builtin_float = bool, int, float


class dtype:
    """A tensor element type: ``tp.float32``, ``tp.int64``, ``tp.bool``, ..."""

    __slots__ = ("name", "itemsize", "is_floating_point", "is_complex", "is_signed", "category", "numpy", "_rank",
                 "_part")

    def __init__(self, name: str, itemsize: int, category: int, is_signed: bool, numpy_dtype, rank: int, part=None):
        self.name = name
        self.itemsize = itemsize
        self.category = category  # 0 bool, 1 integer, 2 floating, 3 complex
        self.is_floating_point = category == 2
        self.is_complex = category == 3
        self.is_signed = is_signed
        self.numpy = numpy_dtype
        self._rank = rank
        self._part = part  # a complex dtype's real and imaginary parts' dtype

    def __repr__(self) -> str:
        return f"tensorplug.{self.name}"

    def __reduce__(self):
        return (_dtype_by_name, (self.name,))

    def to_real(self) -> "dtype":
        """The dtype of the real and imaginary parts of a complex dtype; a real dtype itself."""
        return self._part if self._part is not None else self

    def to_complex(self) -> "dtype":
        """The complex dtype whose parts have this floating dtype (float32 -> complex64)."""
        if self.is_complex:
            return self
        found = _complex_of.get(self.name)
        if found is None:
            raise TypeError(f"to_complex(): {self.name} has no complex counterpart (float32 and float64 have)")
        return found


def _ml_dtypes_numpy(name: str):
    """NumPy's dtype for bfloat16 or a float8 type, from the optional ml_dtypes package (None without it)."""
    try:
        import ml_dtypes  # optional: NumPy interop for bfloat16 and the float8 types
    except ImportError:
        return None
    return np.dtype(getattr(ml_dtypes, name))


bool = dtype("bool", 1, 0, False, np.dtype(np.bool_), 0)
uint8 = dtype("uint8", 1, 1, False, np.dtype(np.uint8), 1)
int8 = dtype("int8", 1, 1, True, np.dtype(np.int8), 2)
int16 = dtype("int16", 2, 1, True, np.dtype(np.int16), 3)
int32 = dtype("int32", 4, 1, True, np.dtype(np.int32), 4)
int64 = dtype("int64", 8, 1, True, np.dtype(np.int64), 5)
float16 = dtype("float16", 2, 2, True, np.dtype(np.float16), 6)
bfloat16 = dtype("bfloat16", 2, 2, True, None, 7)
float32 = dtype("float32", 4, 2, True, np.dtype(np.float32), 8)
float64 = dtype("float64", 8, 2, True, np.dtype(np.float64), 9)
complex64 = dtype("complex64", 8, 3, True, np.dtype(np.complex64), 10, part=float32)
complex128 = dtype("complex128", 16, 3, True, np.dtype(np.complex128), 11, part=float64)
uint16 = dtype("uint16", 2, 1, False, np.dtype(np.uint16), 12)
uint32 = dtype("uint32", 4, 1, False, np.dtype(np.uint32), 13)
uint64 = dtype("uint64", 8, 1, False, np.dtype(np.uint64), 14)
float8_e4m3fn = dtype("float8_e4m3fn", 1, 2, True, None, 15)
float8_e5m2 = dtype("float8_e5m2", 1, 2, True, None, 16)
float8_e4m3fnuz = dtype("float8_e4m3fnuz", 1, 2, True, None, 17)
float8_e5m2fnuz = dtype("float8_e5m2fnuz", 1, 2, True, None, 18)
half, float, double = float16, float32, float64
short, int, long = int16, int32, int64
cfloat, cdouble = complex64, complex128

#: The dtypes a backend may declare and compute in.
all_dtypes = (bool, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64, uint16, uint32, uint64,
              float8_e4m3fn, float8_e5m2, float8_e4m3fnuz, float8_e5m2fnuz)
#: The unsigned integer types wider than a byte, which PyTorch 2.13 does not promote with other integers.
wide_unsigned_dtypes = (uint16, uint32, uint64)
#: The 8-bit float types, which PyTorch 2.13 does not promote with any other dtype.
float8_dtypes = (float8_e4m3fn, float8_e5m2, float8_e4m3fnuz, float8_e5m2fnuz)
#: Complex dtypes: (real, imag) pairs of a part dtype that a backend declares (docs/complex.md).
complex_dtypes = (complex64, complex128)
_complex_of = {"float32": complex64, "float64": complex128}
_by_name = {d.name: d for d in all_dtypes + complex_dtypes}
_by_numpy = {d.numpy: d for d in all_dtypes + complex_dtypes if d.numpy is not None}


def _dtype_by_name(name: str) -> dtype:
    return _by_name[name]


def numpy_dtype(d: dtype) -> np.dtype:
    """The NumPy dtype of ``d`` (bfloat16 and the float8 types need the optional ``ml_dtypes`` package)."""
    if d.numpy is None:
        found = _ml_dtypes_numpy(d.name)
        if found is None:
            raise TypeError(f"{d.name} tensors need the ml_dtypes package for NumPy interop: pip install ml_dtypes")
        d.numpy = found
        _by_numpy[found] = d
    return d.numpy


def from_numpy_dtype(np_dtype) -> dtype:
    found = _by_numpy.get(np.dtype(np_dtype))
    if found is None:
        named = _by_name.get(np.dtype(np_dtype).name)
        if named is not None and named.numpy is None:  # an ml_dtypes type: bfloat16, a float8
            numpy_dtype(named)
            return named
        raise TypeError(
            f"can't convert np.ndarray of type numpy.{np.dtype(np_dtype).name}. The only supported types are: "
            "float64, float32, float16, complex64, complex128, int64, int32, int16, int8, uint64, uint32, uint16, "
            "uint8, and bool."
        )
    return found


def _has_no_promotion(a: dtype, b: dtype) -> _builtin_bool:
    # PyTorch 2.13 refuses: a float8 type with any other dtype; uint16/32/64 with any other
    # integer, bool or complex dtype (they promote only with the real floating types).
    if a is b:
        return False
    if a in float8_dtypes or b in float8_dtypes:
        return True
    for wide, other in ((a, b), (b, a)):
        if wide in wide_unsigned_dtypes and other.category != 2:
            return True
    return False


def _build_promotion_table() -> dict[tuple[dtype, dtype], dtype]:
    table = {}
    every = all_dtypes + complex_dtypes
    for a in every:
        for b in every:
            if _has_no_promotion(a, b):
                continue  # promote_types raises for a pair missing from the table
            if a.is_complex or b.is_complex:
                table[a, b] = _promote_complex(a, b)
            elif a.category != b.category:
                table[a, b] = a if a.category > b.category else b
            elif a is b:
                table[a, b] = a
            elif a.category == 2:
                # float16 with bfloat16 has no common 16-bit type; like PyTorch, use float32.
                pair = {a.name, b.name}
                table[a, b] = float32 if pair == {"float16", "bfloat16"} else max(a, b, key=lambda d: d.itemsize)
            else:
                table[a, b] = _promote_integers(a, b)
    return table


def _promote_complex(a: dtype, b: dtype) -> dtype:
    # PyTorch: complex wins; its width is the wider of the parts (complex64 with float64 gives
    # complex128); anything below floating keeps the complex dtype.
    parts = [d.to_real() for d in (a, b) if d.category >= 2]
    wide = float64 if any(p is float64 for p in parts) else float32
    return _complex_of[wide.name]


def _promote_integers(a: dtype, b: dtype) -> dtype:
    if a.is_signed == b.is_signed:
        return a if a.itemsize >= b.itemsize else b
    unsigned, signed = (a, b) if not a.is_signed else (b, a)
    if signed.itemsize > unsigned.itemsize:
        return signed
    return {1: int16, 2: int32, 4: int64, 8: int64}[unsigned.itemsize]


_promotion = _build_promotion_table()


def _promotion_error(a: dtype, b: dtype) -> RuntimeError:
    family = "float8 types" if a in float8_dtypes or b in float8_dtypes else "uint16, uint32, uint64 types"
    return RuntimeError(f"Promotion for {family} is not supported, attempted to promote {a.name} and {b.name} "
                        f"(as in PyTorch 2.13; convert one operand first, e.g. with .to())")


def promote_types(type1: dtype, type2: dtype) -> dtype:
    """The smallest dtype both ``type1`` and ``type2`` convert to without losing their category."""
    found = _promotion.get((type1, type2))
    if found is None:
        raise _promotion_error(type1, type2)
    return found


_default_dtype = float32


def get_default_dtype() -> dtype:
    return _default_dtype


# PyTorch reads the Python types as dtypes wherever it takes one (``torch.ones(n, n, dtype=bool)``,
# ``x.to(float)``): bool, int64, float64 (not the default float) and complex128.
_PYTHON_TYPE_DTYPES = {_builtin_bool: bool, _builtin_int: int64, _builtin_float: float64, complex: complex128}


def as_dtype(value):
    """``value`` with a Python type (``bool``, ``int``, ``float``, ``complex``) replaced by the
    dtype PyTorch reads it as; anything else unchanged (None, a dtype, or what the caller
    rejects)."""
    return _PYTHON_TYPE_DTYPES.get(value, value) if value.__class__ is type else value


def set_default_dtype(d: dtype) -> None:
    """Set the dtype of Python floats and of float factories (float32 or float64, as PyTorch)."""
    global _default_dtype
    if not isinstance(d, dtype) or not d.is_floating_point:
        raise TypeError(f"only floating-point types are supported as the default type, got {d!r}")
    _default_dtype = d


def dtype_of_scalar(value) -> dtype:
    """The dtype a Python scalar takes when it stands alone (tp.tensor(3.0) -> default float)."""
    if isinstance(value, _builtin_bool):
        return bool
    if isinstance(value, _builtin_int):
        if not -(1 << 63) <= value < (1 << 64):
            # PyTorch takes a Python int through a 64-bit integer (int64 or, above it, uint64):
            # a larger one raises instead of wrapping into a wrong operand.
            raise OverflowError(f"int too big to convert: {value} does not fit in 64 bits")
        return int64
    if isinstance(value, _builtin_float):
        return _default_dtype
    if isinstance(value, complex):
        return _default_dtype.to_complex()
    # NumPy scalars (np.float32(2), an element read from an ndarray) count as the Python
    # number of their kind, as in PyTorch.
    if isinstance(value, np.bool_):
        return bool
    if isinstance(value, np.integer):
        return int64
    if isinstance(value, np.floating):
        return _default_dtype
    if isinstance(value, np.complexfloating):
        return _default_dtype.to_complex()
    raise TypeError(f"expected a Python number, got {type(value).__name__}")


def combine_categories(higher: dtype | None, lower: dtype | None) -> dtype | None:
    """torch.result_type's rule for joining a higher-priority group's dtype with a lower one's."""
    if higher is None:
        return lower
    if lower is None or higher.category == 3:
        return higher
    if lower.category == 3:
        # A complex operand of a lower group turns a real result complex, keeping the higher
        # group's floating width (float64 tensor * 1j is complex128, float32 one complex64).
        if higher.category == 2:
            return higher.to_complex() if higher in (float32, float64) else complex64
        return lower
    if higher.category == 2:
        return higher
    if higher is bool or lower.category == 2:
        return promote_types(higher, lower)
    return higher


# --- numeric limits: tp.finfo and tp.iinfo -----------------------------------------------------
# (bits, eps, max, smallest normal, decimal digits) of each floating dtype, as PyTorch reports them.
_FLOAT_LIMITS = {
    "float16": (16, 2.0 ** -10, 65504.0, 2.0 ** -14, 3),
    "bfloat16": (16, 2.0 ** -7, 3.3895313892515355e38, 2.0 ** -126, 2),
    "float32": (32, 2.0 ** -23, 3.4028234663852886e38, 2.0 ** -126, 6),
    "float64": (64, 2.0 ** -52, 1.7976931348623157e308, 2.0 ** -1022, 15),
    # The float8 types: PyTorch 2.13 reports resolution 1 for all four, and eps 2**-3 for
    # e5m2fnuz although its mantissa has 2 bits (kept, so the two libraries agree).
    "float8_e4m3fn": (8, 2.0 ** -3, 448.0, 2.0 ** -6, 0),
    "float8_e5m2": (8, 2.0 ** -2, 57344.0, 2.0 ** -14, 0),
    "float8_e4m3fnuz": (8, 2.0 ** -3, 240.0, 2.0 ** -7, 0),
    "float8_e5m2fnuz": (8, 2.0 ** -3, 57344.0, 2.0 ** -15, 0),
}


class finfo:
    """Machine limits of a floating dtype (the default dtype when none is given), as
    ``torch.finfo``: ``bits``, ``eps``, ``max``, ``min``, ``tiny`` (= ``smallest_normal``),
    ``resolution`` and ``dtype`` (the dtype's name).

    >>> tp.finfo(tp.float16).max
    65504.0
    """

    __slots__ = ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype")

    def __init__(self, type: dtype | None = None):
        type = _default_dtype if type is None else type
        if not isinstance(type, dtype) or not type.is_floating_point:
            raise TypeError(f"finfo() requires a floating point input type (got {type!r}). Use tp.iinfo to handle "
                            f"integer types")
        bits, eps, largest, normal, digits = _FLOAT_LIMITS[type.name]
        self.bits, self.eps, self.max, self.min = bits, eps, largest, -largest
        self.tiny = self.smallest_normal = normal
        self.resolution = 10.0 ** -digits
        self.dtype = type.name

    def __eq__(self, other) -> _builtin_bool:
        return isinstance(other, finfo) and other.dtype == self.dtype

    def __hash__(self) -> _builtin_int:
        return hash(("finfo", self.dtype))

    def __repr__(self) -> str:
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, eps={self.eps:g}, "
                f"smallest_normal={self.smallest_normal:g}, tiny={self.tiny:g}, dtype={self.dtype})")


class iinfo:
    """Limits of an integer dtype, as ``torch.iinfo``: ``bits``, ``min``, ``max`` and ``dtype``.

    >>> tp.iinfo(tp.uint8).max
    255
    """

    __slots__ = ("bits", "min", "max", "dtype")

    def __init__(self, type: dtype):
        if type is bool:
            raise TypeError("iinfo(): tensorplug.bool is not supported by iinfo")
        if not isinstance(type, dtype) or type.category != 1:
            raise TypeError(f"iinfo() requires an integer input type (got {type!r}). Use tp.finfo to handle floating "
                            f"point types")
        self.bits = 8 * type.itemsize
        self.min = -(1 << (self.bits - 1)) if type.is_signed else 0
        self.max = (1 << (self.bits - 1)) - 1 if type.is_signed else (1 << self.bits) - 1
        self.dtype = type.name

    def __eq__(self, other) -> _builtin_bool:
        return isinstance(other, iinfo) and other.dtype == self.dtype

    def __hash__(self) -> _builtin_int:
        return hash(("iinfo", self.dtype))

    def __repr__(self) -> str:
        return f"iinfo(min={_builtin_float(self.min):g}, max={_builtin_float(self.max):g}, dtype={self.dtype})"
