"""``out_dtype=`` of the matrix products (``mm``, ``bmm``, ``addmm``, ``baddbmm``): float16 or
bfloat16 operands multiplied and accumulated in float32, and returned in float32.

PyTorch 2.13 documents the argument for exactly that case (and the trivial one, ``out_dtype``
equal to the operands' dtype) and implements it on CUDA only; tensorplug computes it the same way
on every backend (docs/deviations.md). Widening the operands first is exact: the product of two
half-precision numbers fits a float32 significand, so only the accumulation's precision changes,
which is the point of the argument.
"""
from __future__ import annotations

from .. import dtypes as _dt
from ..tensor import Tensor
from .copying import to_dtype

__all__ = ["widen_for_out_dtype"]

_HALF_PRECISION = (_dt.float16, _dt.bfloat16)


def _check_out_dtype(op: str, operand_dtype: _dt.dtype, out_dtype) -> None:
    if not isinstance(out_dtype, _dt.dtype):
        raise TypeError(f"{op}(): argument 'out_dtype' must be tensorplug.dtype, not {type(out_dtype).__name__}")
    if out_dtype is operand_dtype or (out_dtype is _dt.float32 and operand_dtype in _HALF_PRECISION):
        return
    raise RuntimeError(
        f"{op}(): out_dtype must be the operands' dtype or float32 for float16/bfloat16 operands, but got "
        f"out_dtype={out_dtype.name} for {operand_dtype.name} operands"
    )


def widen_for_out_dtype(op: str, out_dtype, left: Tensor, right: Tensor, bias: Tensor | None = None) -> tuple:
    """``(left, right)`` (and ``bias``, for addmm/baddbmm) converted to ``out_dtype`` after
    checking the combination. The two factors must share a dtype; the added ``bias`` may have
    theirs or ``out_dtype`` (a float32 bias with half-precision factors is the usual case)."""
    for name, t in (("mat1", left), ("mat2", right)) + ((("input", bias),) if bias is not None else ()):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}(): argument '{name}' must be Tensor, not {type(t).__name__}")
    if left._dtype is not right._dtype:
        raise RuntimeError(f"{op}(): expected both factors to have the same dtype, but got {left._dtype.name} and "
                           f"{right._dtype.name}")
    _check_out_dtype(op, left._dtype, out_dtype)
    if bias is not None and bias._dtype not in (left._dtype, out_dtype):
        raise RuntimeError(f"{op}(): input must have the factors' dtype ({left._dtype.name}) or out_dtype "
                           f"({out_dtype.name}), but got {bias._dtype.name}")
    widened = tuple(to_dtype(t, out_dtype) for t in (left, right))
    return widened if bias is None else (to_dtype(bias, out_dtype),) + widened
