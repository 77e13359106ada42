"""The Python array API standard (2024.12) on tensorplug tensors.

``x.__array_namespace__()`` returns this module for any tensor, on any device, so array-API-aware
code (SciPy, scikit-learn with ``array_api_dispatch=True``) runs on tensorplug::

    import tensorplug as tp
    x = tp.randn(3, 4)
    xp = x.__array_namespace__()
    xp.std(x, axis=0, correction=1)

Arrays are ordinary ``tp.Tensor`` objects, dtypes are tp's dtypes. Functions follow the standard
where it differs from PyTorch (``axis``/``keepdims``, promotion of 0-d arrays, ``sum`` dtypes,
``unique_*``, ...); tp's own functions keep PyTorch's behaviour. What is covered and what is not:
docs/array-api.md.

``import tensorplug`` imports this package to attach ``Tensor.__array_namespace__``; the function
modules load on first use of one of their names (PEP 562 ``__getattr__``), so that import stays
cheap.
"""
from __future__ import annotations

import importlib
import math as _math

__array_api_version__ = "2024.12"

e = _math.e
inf = _math.inf
nan = _math.nan
pi = _math.pi
newaxis = None

# Where each public name lives (tests/array_api checks this against the modules' __all__).
_MODULE_NAMES = {
    "_creation": (
        "arange", "asarray", "empty", "empty_like", "eye", "from_dlpack", "full", "full_like", "linspace",
        "meshgrid", "ones", "ones_like", "tril", "triu", "zeros", "zeros_like",
    ),
    "_dtypes": (
        "bool", "int8", "int16", "int32", "int64", "uint8", "float32", "float64", "complex64", "complex128", "astype", "can_cast", "finfo",
        "iinfo", "isdtype", "result_type",
    ),
    "_elementwise": (
        "abs", "acos", "acosh", "add", "asin", "asinh", "atan", "atan2", "atanh", "bitwise_and",
        "bitwise_left_shift", "bitwise_invert", "bitwise_or", "bitwise_right_shift", "bitwise_xor", "ceil", "clip",
        "conj", "copysign", "cos", "cosh", "divide", "equal", "exp", "expm1", "floor", "floor_divide", "greater",
        "greater_equal", "hypot", "imag", "isfinite", "isinf", "isnan", "less", "less_equal", "log", "log1p",
        "log2", "log10", "logaddexp", "logical_and", "logical_not", "logical_or", "logical_xor", "maximum",
        "minimum", "multiply", "negative", "nextafter", "not_equal", "positive", "pow", "real", "reciprocal",
        "remainder", "round", "sign", "signbit", "sin", "sinh", "square", "sqrt", "subtract", "tan", "tanh", "trunc",
    ),
    "_indexing": ("take", "take_along_axis"),
    "_info": ("__array_namespace_info__",),
    "_linear_algebra": ("matmul", "matrix_transpose", "tensordot", "vecdot"),
    "_manipulation": (
        "broadcast_arrays", "broadcast_to", "concat", "expand_dims", "flip", "moveaxis", "permute_dims", "repeat",
        "reshape", "roll", "squeeze", "stack", "tile", "unstack",
    ),
    "_searching": ("argmax", "argmin", "count_nonzero", "nonzero", "searchsorted", "where"),
    "_set": ("unique_all", "unique_counts", "unique_inverse", "unique_values"),
    "_sorting": ("argsort", "sort"),
    "_statistical": (
        "sum", "prod", "mean", "std", "var", "max", "min", "cumulative_sum", "cumulative_prod", "all", "any", "diff",
    ),
}
_HOME = {name: module for module, names in _MODULE_NAMES.items() for name in names}

__all__ = [
    "__array_api_version__", "e", "inf", "nan", "pi", "newaxis", "linalg", "fft",
    *(name for names in _MODULE_NAMES.values() for name in names),
]


def __getattr__(name: str):
    if name in ("linalg", "fft"):
        return importlib.import_module(f".{name}", __name__)
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module 'tensorplug.array_api' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__() -> list:
    return sorted(set(globals()) | set(__all__))
