"""Argument handling shared by the composite pointwise ops (special functions, float tests,
addcmul and kin): operand checks and promotion, done once before any kernel runs, and the
in-place variants made from the out-of-place functions.
"""
from __future__ import annotations

import functools

from .. import dtypes as _dt
from ..shapes import broadcast_shapes
from ..tensor import Tensor
from ._common import check_same_device, is_number, on_common_device, write_inplace

__all__ = ["check_tensor", "float_operand", "promoted_operands", "result_dtype_of", "inplace_variant", "refuse_complex"]


def check_tensor(op: str, value, name: str = "input") -> None:
    if not isinstance(value, Tensor):
        raise TypeError(f"{op}(): argument '{name}' must be Tensor, not {type(value).__name__}")


def refuse_complex(op: str, *tensors) -> None:
    """These composites are real formulas: a complex operand is refused before computing, as the
    ops without a Complex kernel are (docs/deviations.md)."""
    for t in tensors:
        if isinstance(t, Tensor) and t._dtype.is_complex:
            raise NotImplementedError(f"{op}(): not implemented for complex tensors (got {t._dtype.name})")


def float_operand(op: str, input) -> Tensor:
    """``input`` in the dtype a floating unary op computes in: integers and bools become the
    default dtype, as in PyTorch's unary float ops (``lgamma(int64)`` is float32)."""
    check_tensor(op, input)
    refuse_complex(op, input)
    if input._dtype.is_floating_point:
        return input
    return input.to(_dt.get_default_dtype())


def result_dtype_of(*operands) -> _dt.dtype:
    """torch.result_type over any number of tensors and Python numbers: tensors with dims first,
    then 0-d tensors, then numbers, a lower group counting only when its category is higher."""
    dims = zero = wrapped = None
    for x in operands:
        if isinstance(x, Tensor):
            if x._shape:
                dims = x._dtype if dims is None else _dt.promote_types(dims, x._dtype)
            else:
                zero = x._dtype if zero is None else _dt.promote_types(zero, x._dtype)
        elif x is not None:
            scalar = _dt.dtype_of_scalar(x)
            wrapped = scalar if wrapped is None else _dt.promote_types(wrapped, scalar)
    return _dt.combine_categories(dims, _dt.combine_categories(zero, wrapped))


def promoted_operands(op: str, *operands, floating: bool = False, names=("input", "other"), allow_complex: bool = False) -> tuple:
    """The operands as tensors of their common dtype (the default float dtype when ``floating``
    and that dtype is not floating) on one device; numbers become 0-d tensors. Shapes are checked
    to broadcast."""
    tensors = [x for x in operands if isinstance(x, Tensor)]
    if not tensors:
        raise TypeError(f"{op}(): expected at least one Tensor argument")
    for name, x in zip(names, operands):
        if not isinstance(x, Tensor) and not is_number(x):
            raise TypeError(f"{op}(): argument '{name}' must be Tensor or Number, not {type(x).__name__}")
    if not allow_complex:
        refuse_complex(op, *tensors)
    operands = on_common_device(op, *operands)
    tensors = [x for x in operands if isinstance(x, Tensor)]
    broadcast_shapes(*(t._shape for t in tensors), op=op)
    dtype = result_dtype_of(*operands)
    if floating and not dtype.is_floating_point:
        dtype = _dt.get_default_dtype()
    from ..factories import tensor

    dev = tensors[0]._device
    return tuple(x.to(dtype) if isinstance(x, Tensor) else tensor(x, dtype=dtype, device=dev) for x in operands)


def inplace_variant(func, name: str | None = None):
    """``self.op_(...)``: ``func(self, ...)`` written back into ``self``, whose shape and dtype
    must hold the result (PyTorch's rule for in-place ops). While autograd records, the result is
    computed from a copy of ``self`` (``inplace_source``): the graph may save the values that the
    write-back overwrites."""
    from .copying import inplace_source

    name = name or func.__name__ + "_"

    @functools.wraps(func)
    def inplace(self, *args, **kwargs):
        check_tensor(name, self, "self")
        return write_inplace(name, self, func(inplace_source(self), *args, **kwargs))

    inplace.__name__ = inplace.__qualname__ = name
    return inplace
