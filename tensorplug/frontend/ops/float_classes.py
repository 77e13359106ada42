"""Questions about floating-point values: ``signbit``, ``isposinf``, ``isneginf``, ``isreal``,
and ``frexp``, which splits a float into mantissa and exponent. Composites over comparisons and
arithmetic (no op reads a float's bits, so every backend has them).
"""
from __future__ import annotations

from collections import namedtuple

from .. import dtypes as _dt
from ..tensor import Tensor
from ._common import write_out
from ._pointwise_args import check_tensor, refuse_complex
from .elementwise import BINARY, COMPARE, UNARY, where
from .out_rehearsal import rehearse_out

__all__ = ["signbit", "isposinf", "isneginf", "isreal", "frexp"]

frexp_result = namedtuple("frexp", ["mantissa", "exponent"])


def _bools_like(input: Tensor, value: bool) -> Tensor:
    from ..factories import full

    return full(input._shape, value, dtype=_dt.bool, device=input._device)


def signbit(input, *, out=None) -> Tensor:
    """True where the sign bit is set: negative numbers, -0.0 and NaNs with the sign bit.

    >>> tp.signbit(tp.tensor([-0.0, 0.0, -2.0])).tolist()
    [True, False, True]
    """
    if out is not None:
        rehearse_out(signbit, locals())
    check_tensor("signbit", input)
    refuse_complex("signbit", input)
    if input._dtype.is_floating_point:
        # copysign carries the sign bit over, -0.0's and NaN's included, where a comparison would not.
        result = COMPARE["lt"](BINARY["copysign"](1.0, input), 0)
    elif input._dtype.is_signed:
        result = COMPARE["lt"](input, 0)
    else:
        result = _bools_like(input, False)
    return write_out("signbit", out, result)


def _infinity_test(op: str, input, positive: bool, out) -> Tensor:
    check_tensor(op, input)
    refuse_complex(op, input)
    if not input._dtype.is_floating_point:
        return write_out(op, out, _bools_like(input, False))
    return write_out(op, out, COMPARE["eq"](input, float("inf") if positive else float("-inf")))


def isposinf(input, *, out=None) -> Tensor:
    """True where ``input`` is +inf."""
    if out is not None:
        rehearse_out(isposinf, locals())
    return _infinity_test("isposinf", input, True, out)


def isneginf(input, *, out=None) -> Tensor:
    """True where ``input`` is -inf."""
    if out is not None:
        rehearse_out(isneginf, locals())
    return _infinity_test("isneginf", input, False, out)


def isreal(input) -> Tensor:
    """True where the imaginary part is 0 (everywhere for a real tensor).

    >>> tp.isreal(tp.tensor([1 + 0j, 1j])).tolist()
    [True, False]
    """
    check_tensor("isreal", input)
    if not input._dtype.is_complex:
        return _bools_like(input, True)
    from ..complex import imag

    return COMPARE["eq"](imag(input), 0)


def frexp(input, *, out=None):
    """``(mantissa, exponent)`` with ``input = mantissa * 2 ** exponent``, ``0.5 <= |mantissa| <
    1`` and an int32 exponent; zeros, infinities and NaN keep their value with exponent 0. The
    mantissa's gradient is ``2 ** -exponent``, as PyTorch's.

    >>> m, e = tp.frexp(tp.tensor([8.0, -3.0]))
    >>> m.tolist(), e.tolist()
    ([0.5, -0.75], [4, 2])
    """
    if out is not None:
        rehearse_out(frexp, locals())
    check_tensor("frexp", input)
    if not input._dtype.is_floating_point:
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    from ..autograd import no_grad

    with no_grad():
        magnitude = UNARY["abs"](input)
        special = COMPARE["eq"](magnitude, 0) | ~UNARY["isfinite"](input)
        safe = where(special, 1.0, magnitude)
        exponent = UNARY["floor"](UNARY["log2"](safe)) + 1
        # log2 rounds: one step corrects an exponent that is off by one at a power of two.
        scaled = _times_power_of_two(safe, -exponent)
        exponent = exponent + COMPARE["ge"](scaled, 1.0).to(exponent._dtype) - COMPARE["lt"](scaled, 0.5).to(exponent._dtype)
        exponent = where(special, 0.0, exponent)
    mantissa = _times_power_of_two(input, -exponent)
    exponent = exponent.to(_dt.int32)
    if out is not None:
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            raise TypeError("frexp(): argument 'out' must be a tuple of two Tensors (mantissa, exponent)")
        mantissa = write_out("frexp", out[0], mantissa, exact_dtype=True)
        exponent = write_out("frexp", out[1], exponent, exact_dtype=True)
    return frexp_result(mantissa, exponent)


def _times_power_of_two(x: Tensor, power: Tensor) -> Tensor:
    """``x * 2 ** power`` in two factors, so that neither overflows or underflows where the
    product does not (float32's exponents run from -149 to 127)."""
    half = UNARY["trunc"](power / 2)
    return x * UNARY["exp2"](half) * UNARY["exp2"](power - half)


#: Tensor methods this module provides: name -> function (attached by frontend.methods).
TENSOR_METHODS: dict = {name: globals()[name] for name in __all__}
