"""Argument checks shared by tp.linalg, with PyTorch 2.13's messages, and ``LinAlgError``.

The checks run in the frontend, before any kernel, so every device raises the same error for the
same mistake; only the checks that need the values (a singular matrix) run in the kernel.
"""
from __future__ import annotations

from ..frontend import dtypes as _dt
from ..frontend.tensor import Tensor

__all__ = ["LinAlgError", "check_tensor", "check_float", "check_matrix", "check_square", "check_same_dtype",
           "scalar_type_name", "batch_prefix"]


class LinAlgError(RuntimeError):
    """A linear-algebra routine failed on the values it was given (a singular matrix, a matrix
    that is not positive-definite), as torch.linalg.LinAlgError; a RuntimeError subclass, so
    ``except RuntimeError`` keeps working."""


# PyTorch names dtypes by their C++ scalar types in these messages.
_SCALAR_TYPE_NAMES = {
    "float16": "Half", "bfloat16": "BFloat16", "float32": "Float", "float64": "Double", "int8": "Char",
    "uint8": "Byte", "int16": "Short", "int32": "Int", "int64": "Long", "bool": "Bool",
}


def scalar_type_name(dtype: _dt.dtype) -> str:
    return _SCALAR_TYPE_NAMES.get(dtype.name, dtype.name)


def check_tensor(op: str, value, name: str = "A") -> Tensor:
    if not isinstance(value, Tensor):
        raise TypeError(f"{op}(): argument '{name}' must be Tensor, not {type(value).__name__}")
    return value


def check_float(op: str, t: Tensor) -> None:
    """float32 and float64 only: integers are refused as PyTorch refuses them, and so are the
    half-precision types (LAPACK has no routines for them)."""
    if t._dtype in (_dt.float32, _dt.float64, _dt.complex64, _dt.complex128):
        return
    if t._dtype.is_floating_point:
        raise RuntimeError(f"{op}: Low precision dtypes not supported. Got {scalar_type_name(t._dtype)}")
    raise RuntimeError(f"{op}: Expected a floating point or complex tensor as input. Got {scalar_type_name(t._dtype)}")


def check_matrix(op: str, t: Tensor, name: str = "A") -> None:
    if t.ndim < 2:
        raise RuntimeError(f"{op}: The input tensor {name} must have at least 2 dimensions.")


def check_square(op: str, t: Tensor, name: str = "A") -> None:
    check_matrix(op, t, name)
    rows, cols = t._shape[-2:]
    if rows != cols:
        raise RuntimeError(f"{op}: {name} must be batches of square matrices, but they are {rows} by {cols} matrices")


def check_same_dtype(op: str, a: Tensor, b: Tensor, names: tuple = ("A", "B")) -> None:
    if a._dtype is not b._dtype:
        raise RuntimeError(
            f"{op}: Expected {names[0]} and {names[1]} to have the same dtype, but found {names[0]} of type "
            f"{scalar_type_name(a._dtype)} and {names[1]} of type {scalar_type_name(b._dtype)} instead"
        )


def batch_prefix(batch_shape: tuple, index: int) -> str:
    """PyTorch's "(Batch element i): " for batched inputs (the index into the flattened batch)."""
    return f"(Batch element {index}): " if batch_shape else ""
