"""``round(input, *, decimals=0)``: rounding to a number of decimal places, as PyTorch's.

``decimals=d`` scales by 10**d, rounds half to even and scales back (for negative ``d``, divides
by 10**-d and multiplies back), in the input's dtype, as PyTorch's kernel does; so 2.675 rounds
to 2.68 in float32 (its nearest float is above 2.675). ``decimals=0`` is the plain round, whose C
fast path the positional call keeps.
"""
from __future__ import annotations

from ._common import write_inplace, write_out
from .copying import inplace_source
from .elementwise import UNARY
from .out_rehearsal import rehearse_out

__all__ = ["round", "round_method", "round_decimals_"]

_plain_round = UNARY["round"]


def _check_decimals(op: str, input, decimals) -> None:
    if isinstance(decimals, bool) or not isinstance(decimals, int):
        raise TypeError(f"{op}(): argument 'decimals' must be int, not {type(decimals).__name__}")
    if not input._dtype.is_floating_point:
        raise NotImplementedError(f"{op}(): rounding to decimals={decimals} is not implemented for {input._dtype} "
                                  f"(shape {list(input._shape)}); PyTorch rounds floating tensors only")


def _scaled_round(input, decimals: int):
    if decimals >= 0:
        scale = 10.0 ** decimals
        return _plain_round(input * scale) / scale
    scale = 10.0 ** -decimals
    return _plain_round(input / scale) * scale


def round(input, *, decimals: int = 0, out=None):
    """Round to ``decimals`` decimal places (half to even)."""
    if out is not None:
        rehearse_out(round, locals())
    if decimals == 0 and not isinstance(decimals, bool):
        return _plain_round(input, out=out)
    _check_decimals("round", input, decimals)
    return write_out("round", out, _scaled_round(input, decimals))


def round_method(self, *, decimals: int = 0):
    """``Tensor.round(decimals=...)``."""
    if decimals == 0 and not isinstance(decimals, bool):
        return _plain_round(self)
    _check_decimals("round", self, decimals)
    return _scaled_round(self, decimals)


def round_decimals_(self, decimals: int):
    """``Tensor.round_(decimals=d)`` for d != 0 (d == 0 is the plain in-place round)."""
    _check_decimals("round_", self, decimals)
    return write_inplace("round_", self, _scaled_round(inplace_source(self), decimals))
