"""``nextafter``: the representable float next to ``input`` in the direction of ``other``.

A composite over the float's bits: ``view(dtype)`` reads a float as the signed integer of its
size, where a step of one unit in the last place is +-1 (for either sign, adding one moves away
from zero), so every backend has the op without a kernel of its own; a backend with a native
``nextafter`` may fuse it (docs/backend-contract.md).
"""
from __future__ import annotations

from .. import dtypes as _dt
from ..shapes import broadcast_shapes
from ..tensor import Tensor
from ._common import on_common_device, write_out
from ._composite import composite
from ._pointwise_args import check_tensor, inplace_variant, refuse_complex, result_dtype_of
from .copying import to_dtype
from .elementwise import BINARY, COMPARE, UNARY, where
from .out_rehearsal import rehearse_out

__all__ = ["nextafter"]

# The signed integer dtype of each floating dtype's size, by name (the dtype objects are the same
# on every device).
_BITS_DTYPE = {"float16": "int16", "bfloat16": "int16", "float32": "int32", "float64": "int64"}

# PyTorch's names in its dtype-dispatch errors ("nextafter_cpu" not implemented for 'Long').
_TORCH_NAMES = {"int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool"}


def _nextafter_derivative(grad, args, output, kwargs, needs):
    """PyTorch's (torch 2.13): the gradient passes to ``input`` unchanged; ``other`` gets zeros."""
    from ..factories import zeros_like

    _, other = args
    return (grad if needs[0] else None, zeros_like(other) if needs[1] else None)


@composite("nextafter", derivative=_nextafter_derivative, differentiable=(0, 1))
def _nextafter(input: Tensor, other: Tensor) -> Tensor:
    bits_dtype = getattr(_dt, _BITS_DTYPE[input._dtype.name])
    bits = input.view(bits_dtype)
    # Away from zero is +1 on the bits for either sign (the magnitude sits in the low bits, the
    # sign bit above them), toward zero is -1: -tiny toward zero becomes -0.0, as C's nextafter.
    away_from_zero = COMPARE["eq"](COMPARE["gt"](other, input), COMPARE["gt"](input, 0))
    stepped = where(away_from_zero, bits + 1, bits - 1)
    # From either zero the step is the smallest subnormal carrying other's sign: bits 1, or the
    # sign bit and 1 (the integer's minimum plus one).
    smallest_negative = -(2 ** (8 * bits_dtype.itemsize - 1)) + 1
    from_zero = where(COMPARE["gt"](other, 0), 1, smallest_negative).to(bits_dtype)
    result = where(COMPARE["eq"](input, 0), from_zero, stepped).view(input._dtype)
    # Equal operands give other (so nextafter(0.0, -0.0) is -0.0); NaN in either gives NaN.
    result = where(COMPARE["eq"](input, other), other, result)
    either_nan = UNARY["isnan"](input) | UNARY["isnan"](other)
    return where(either_nan, BINARY["add"](input, other), result)


def nextafter(input: Tensor, other: Tensor, *, out: Tensor | None = None) -> Tensor:
    """The next representable value after ``input`` toward ``other``, elementwise, in the operands'
    promoted floating dtype (broadcast). ``other`` itself where they are equal; NaN where either
    is NaN. Integer results are refused, as in PyTorch.

    >>> one = tp.tensor([1.0], dtype=tp.float64)
    >>> (tp.nextafter(one, one * 2) - one).item()
    2.220446049250313e-16
    """
    if out is not None:
        rehearse_out(nextafter, locals())
    check_tensor("nextafter", input)
    check_tensor("nextafter", other, "other")
    refuse_complex("nextafter", input, other)
    dtype = result_dtype_of(input, other)
    if not dtype.is_floating_point:
        raise NotImplementedError(f"nextafter(): not implemented for '{_TORCH_NAMES.get(dtype.name, dtype.name)}'")
    # An elementwise op: a 0-d CPU operand joins another device's tensor, as in PyTorch.
    input, other = on_common_device("nextafter", input, other)
    shape = broadcast_shapes(input._shape, other._shape, op="nextafter")
    a, b = (to_dtype(x, dtype).expand(shape) for x in (input, other))
    return write_out("nextafter", out, _nextafter(a, b))


#: Tensor methods this module provides: name -> function (attached by frontend.methods).
TENSOR_METHODS: dict = {"nextafter": nextafter, "nextafter_": inplace_variant(nextafter)}
