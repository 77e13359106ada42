"""Pointwise composites with PyTorch's promotion: ``addcmul``, ``addcdiv``, ``heaviside``,
``fmax``, ``fmin``, ``gcd``, ``lcm``, ``deg2rad``, ``rad2deg``, ``float_power`` and ``ldexp``.

Each checks its operands and works out the result dtype first, then composes primitives (so
gradients come from them, and every backend has the op).
"""
from __future__ import annotations

import math

from .. import dtypes as _dt
from ..tensor import Tensor
from ._common import is_number, write_out
from ._pointwise_args import check_tensor, float_operand, inplace_variant, promoted_operands, refuse_complex
from .elementwise import BINARY, COMPARE, UNARY, where
from .reductions import any as _any
from .out_rehearsal import rehearse_out

__all__ = [
    "addcmul", "addcdiv", "heaviside", "fmax", "fmin", "gcd", "lcm", "deg2rad", "rad2deg", "float_power", "ldexp",
]

_ADDCDIV_INTEGER = (
    "Integer division with addcdiv is no longer supported, and in a future  release addcdiv will perform a true "
    "division of tensor1 and tensor2. The historic addcdiv behavior can be implemented as (input + value * "
    "torch.trunc(tensor1 / tensor2)).to(input.dtype) for integer inputs and as (input + value * tensor1 / tensor2) "
    "for float inputs. The future addcdiv behavior is just the latter implementation: (input + value * tensor1 / "
    "tensor2), for all dtypes."
)


def _value_for(op: str, value, dtype: _dt.dtype):
    """``value`` converted as PyTorch converts addcmul's scalar: to the result dtype's kind (a
    float value truncates for integer tensors, as there)."""
    if isinstance(value, Tensor):
        if value.numel() != 1:
            raise RuntimeError(f"{op}(): value must be a number or a one-element tensor, got shape {list(value._shape)}")
        value = value.item()
    if isinstance(value, complex) and not dtype.is_complex:
        raise RuntimeError(f"{op}(): value cannot be converted to type {dtype.name} without overflow")
    if not is_number(value) and not isinstance(value, complex):
        raise TypeError(f"{op}(): argument 'value' must be Number, not {type(value).__name__}")
    if dtype.is_floating_point:
        return float(value)
    return value if dtype.is_complex else int(value)


def _tensor_operands(op: str, input, tensor1, tensor2) -> tuple:
    for name, t in (("input", input), ("tensor1", tensor1), ("tensor2", tensor2)):
        check_tensor(op, t, name)
    return promoted_operands(op, input, tensor1, tensor2, names=("input", "tensor1", "tensor2"), allow_complex=True)


def addcmul(input, tensor1, tensor2, *, value=1, out=None) -> Tensor:
    """``input + value * tensor1 * tensor2``, broadcast, in the three tensors' promoted dtype.

    >>> tp.addcmul(tp.tensor([1.0]), tp.tensor([2.0]), tp.tensor([3.0]), value=0.5).tolist()
    [4.0]
    """
    if out is not None:
        rehearse_out(addcmul, locals())
    a, t1, t2 = _tensor_operands("addcmul", input, tensor1, tensor2)
    if a._dtype is _dt.bool:
        raise NotImplementedError("addcmul(): not implemented for 'Bool'")
    scale = _value_for("addcmul", value, a._dtype)
    product = t1 * t2
    return write_out("addcmul", out, a + (product if scale == 1 else product * scale))


def addcdiv(input, tensor1, tensor2, *, value=1, out=None) -> Tensor:
    """``input + value * tensor1 / tensor2`` for floating tensors (PyTorch refuses integer
    tensor1 and tensor2: its old addcdiv truncated).

    >>> tp.addcdiv(tp.tensor([1.0]), tp.tensor([3.0]), tp.tensor([2.0]), value=2).tolist()
    [4.0]
    """
    if out is not None:
        rehearse_out(addcdiv, locals())
    for name, t in (("input", input), ("tensor1", tensor1), ("tensor2", tensor2)):
        check_tensor("addcdiv", t, name)
    if not (tensor1._dtype.is_floating_point or tensor1._dtype.is_complex) and not (
            tensor2._dtype.is_floating_point or tensor2._dtype.is_complex):
        raise RuntimeError(_ADDCDIV_INTEGER)
    a, t1, t2 = _tensor_operands("addcdiv", input, tensor1, tensor2)
    scale = _value_for("addcdiv", value, a._dtype)
    quotient = t1 / t2
    return write_out("addcdiv", out, a + (quotient if scale == 1 else quotient * scale))


def heaviside(input, values, *, out=None) -> Tensor:
    """The step function: 0 below 0, ``values`` at 0, 1 above (NaN counts as below); ``input``
    and ``values`` must have one dtype, as in PyTorch.

    >>> tp.heaviside(tp.tensor([-1.0, 0.0, 2.0]), tp.tensor(0.5)).tolist()
    [0.0, 0.5, 1.0]
    """
    if out is not None:
        rehearse_out(heaviside, locals())
    check_tensor("heaviside", input)
    if isinstance(values, Tensor) and values._dtype is not input._dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes.")
    a, v = promoted_operands("heaviside", input, values, names=("input", "values"))
    above = COMPARE["gt"](a, 0).to(a._dtype)
    return write_out("heaviside", out, where(COMPARE["eq"](a, 0), v, above))


def _nan_ignoring(op: str, input, other, keep_first: str, out) -> Tensor:
    a, b = promoted_operands(op, input, other)
    # The first operand wins ties and wherever the second is NaN, so a NaN survives only where
    # both are NaN; the gradient follows the same choice (PyTorch's formula for fmax/fmin).
    take_first = COMPARE[keep_first](a, b) | UNARY["isnan"](b)
    return write_out(op, out, where(take_first, a, b))


def fmax(input, other, *, out=None) -> Tensor:
    """The elementwise maximum that ignores NaN (NaN only where both are NaN).

    >>> tp.fmax(tp.tensor([1.0, float("nan")]), tp.tensor([float("nan"), 2.0])).tolist()
    [1.0, 2.0]
    """
    if out is not None:
        rehearse_out(fmax, locals())
    return _nan_ignoring("fmax", input, other, "ge", out)


def fmin(input, other, *, out=None) -> Tensor:
    """The elementwise minimum that ignores NaN (NaN only where both are NaN)."""
    if out is not None:
        rehearse_out(fmin, locals())
    return _nan_ignoring("fmin", input, other, "le", out)


def _integer_operands(op: str, input, other) -> tuple:
    a, b = promoted_operands(op, input, other)
    if a._dtype.category != 1:
        raise NotImplementedError(f"{op}(): not implemented for '{a._dtype.name}' tensors (integer tensors only)")
    return a, b


def _gcd(a: Tensor, b: Tensor) -> Tensor:
    a, b = UNARY["abs"](a), UNARY["abs"](b)
    # Euclid's algorithm on every element at once; it ends within ~90 rounds for 64 bits (the
    # Fibonacci worst case). The remainder is the truncating one (fmod): abs leaves the most
    # negative integer negative, and Python's floored remainder by it gave gcd(-2**63, -1) = -1
    # (PyTorch: 1). A zero divisor is replaced by 1 in the unused branch: integer remainder by
    # zero raises on the CPU.
    while _any(COMPARE["ne"](a, 0)).item():
        nonzero = COMPARE["ne"](a, 0)
        remainder = BINARY["fmod"](b, where(nonzero, a, 1))
        a, b = where(nonzero, remainder, a), where(nonzero, a, b)
    return b


def gcd(input, other, *, out=None) -> Tensor:
    """The greatest common divisor of integer tensors (non-negative; ``gcd(0, 0) = 0``).

    >>> tp.gcd(tp.tensor([12, -9, 0]), tp.tensor([18, 6, 5])).tolist()
    [6, 3, 5]
    """
    if out is not None:
        rehearse_out(gcd, locals())
    return write_out("gcd", out, _gcd(*_integer_operands("gcd", input, other)))


def lcm(input, other, *, out=None) -> Tensor:
    """The least common multiple of integer tensors (non-negative; 0 where either is 0).

    >>> tp.lcm(tp.tensor([4, -6, 0]), tp.tensor([6, 4, 5])).tolist()
    [12, 12, 0]
    """
    if out is not None:
        rehearse_out(lcm, locals())
    a, b = _integer_operands("lcm", input, other)
    divisor = _gcd(a, b)
    safe = where(COMPARE["eq"](divisor, 0), 1, divisor)
    return write_out("lcm", out, UNARY["abs"](BINARY["floor_divide"](a, safe) * b))


def _angle_conversion(op: str, input, factor: float, out) -> Tensor:
    x = float_operand(op, input)
    return write_out(op, out, x * factor)


def deg2rad(input, *, out=None) -> Tensor:
    """Degrees to radians (integers give the default float dtype)."""
    if out is not None:
        rehearse_out(deg2rad, locals())
    return _angle_conversion("deg2rad", input, math.pi / 180, out)


def rad2deg(input, *, out=None) -> Tensor:
    """Radians to degrees (integers give the default float dtype)."""
    if out is not None:
        rehearse_out(rad2deg, locals())
    return _angle_conversion("rad2deg", input, 180 / math.pi, out)


def float_power(input, exponent, *, out=None) -> Tensor:
    """``input ** exponent`` computed in float64 (complex128 when either is complex), whatever
    the operands' dtypes.

    >>> tp.float_power(tp.tensor([2]), 3).dtype
    tensorplug.float64
    """
    if out is not None:
        rehearse_out(float_power, locals())
    from ..factories import tensor

    if not isinstance(input, Tensor) and not isinstance(exponent, Tensor):
        raise TypeError("float_power(): expected at least one Tensor argument")
    operands = (input, exponent)
    complex_ = any((x._dtype.is_complex if isinstance(x, Tensor) else isinstance(x, complex)) for x in operands)
    dtype = _dt.complex128 if complex_ else _dt.float64
    dev = next(x for x in operands if isinstance(x, Tensor))._device
    base, power = (x.to(dtype) if isinstance(x, Tensor) else tensor(x, dtype=dtype, device=dev) for x in operands)
    return write_out("float_power", out, BINARY["pow"](base, power))


def _float_power_(self, exponent):
    check_tensor("float_power_", self, "self")
    wanted = _dt.complex128 if self._dtype.is_complex or isinstance(exponent, complex) or (
        isinstance(exponent, Tensor) and exponent._dtype.is_complex) else _dt.float64
    if self._dtype is not wanted:
        raise RuntimeError(f"the base given to float_power_ has dtype {self._dtype.name} but the operation's result "
                           f"requires dtype {wanted.name}")
    return inplace_variant(float_power)(self, exponent)


def ldexp(input, other, *, out=None) -> Tensor:
    """``input * 2 ** other``, in the operands' promoted floating dtype.

    >>> tp.ldexp(tp.tensor([1.0]), tp.tensor([3])).tolist()
    [8.0]
    """
    if out is not None:
        rehearse_out(ldexp, locals())
    check_tensor("ldexp", input)
    refuse_complex("ldexp", input, other)
    a, b = promoted_operands("ldexp", input, other, floating=True)
    return write_out("ldexp", out, a * UNARY["exp2"](b))


#: Tensor methods this module provides: name -> function (attached by frontend.methods).
TENSOR_METHODS: dict = {name: globals()[name] for name in __all__}
TENSOR_METHODS.update({name + "_": inplace_variant(globals()[name]) for name in (
    "addcmul", "addcdiv", "heaviside", "fmax", "fmin", "gcd", "lcm", "deg2rad", "rad2deg", "ldexp")})
TENSOR_METHODS["float_power_"] = _float_power_
del TENSOR_METHODS["fmax_"], TENSOR_METHODS["fmin_"]  # PyTorch has no in-place fmax/fmin
