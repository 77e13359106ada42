"""Comparing whole tensors: ``isclose`` (elementwise), ``allclose`` and ``equal`` (one bool),
composite over comparisons and reductions.

``isclose`` follows PyTorch's formula exactly, including its dtypes: equal values (infinities
included) are close; otherwise ``|input - other| <= atol + |rtol * other|`` with a finite error;
bool operands are compared in the default float dtype, integers as PyTorch's mixed integer and
float arithmetic gives.
"""
from __future__ import annotations

from .. import dtypes as _dt
from ..shapes import broadcast_shapes
from ..meta_device import refuse_data_dependent
from ..tensor import Tensor
from ._common import check_same_device, on_common_device
from ._composite import composite

__all__ = ["isclose", "allclose", "equal"]


@composite("isclose")
def _isclose(input: Tensor, other: Tensor, rtol: float, atol: float, equal_nan: bool) -> Tensor:
    from .elementwise import UNARY

    close = input == other
    if equal_nan and input._dtype.is_floating_point:
        close = close | (UNARY["isnan"](input) & UNARY["isnan"](other))
    if rtol == 0 and atol == 0:
        return close
    if input._dtype is _dt.bool:
        input, other = input.to(_dt.get_default_dtype()), other.to(_dt.get_default_dtype())
    allowed = (other * rtol).abs() + atol
    actual = (input - other).abs()
    return close | (UNARY["isfinite"](actual) & (actual <= allowed))


def _check_types(op: str, input, other) -> None:
    for name, value in (("input", input), ("other", other)):
        if not isinstance(value, Tensor):
            raise TypeError(f"{op}(): argument '{name}' must be Tensor, not {type(value).__name__}")


def isclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> Tensor:
    """Elementwise ``|input - other| <= atol + rtol * |other|`` (equal infinities are close; NaN
    only with ``equal_nan``), broadcasting; both tensors must have one dtype.

    >>> tp.isclose(tp.tensor([1.0, 2.0]), tp.tensor([1.0 + 1e-9, 2.1])).tolist()
    [True, False]
    """
    _check_types("isclose", input, other)
    # Elementwise, so a 0-d CPU tensor joins another device's tensor (PyTorch's isclose is
    # composite over elementwise ops); equal() is not elementwise and keeps one device.
    input, other = on_common_device("isclose", input, other)
    if input._dtype is not other._dtype:
        raise RuntimeError(f"isclose(): {input._dtype.name} did not match {other._dtype.name} (input and other must "
                           f"have the same dtype)")
    if rtol < 0:
        raise RuntimeError(f"isclose(): rtol must be greater than or equal to zero, but got {rtol}")
    if atol < 0:
        raise RuntimeError(f"isclose(): atol must be greater than or equal to zero, but got {atol}")
    broadcast_shapes(input._shape, other._shape, op="isclose")
    return _isclose(input, other, float(rtol), float(atol), bool(equal_nan))


def allclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> bool:
    """Whether every element of ``input`` is close to ``other`` (see :func:`isclose`)."""
    return bool(isclose(input, other, rtol, atol, equal_nan).all().item())


def equal(input: Tensor, other: Tensor) -> bool:
    """True if the two tensors have the same shape and the same values (NaN is never equal;
    values compare after type promotion, so ``1 == 1.0``)."""
    _check_types("equal", input, other)
    check_same_device("equal", input, other)
    if input._shape != other._shape:
        return False
    if input.numel() == 0:
        return True
    refuse_data_dependent("equal()", input, other, why="its answer is whether the values are equal")
    return bool((input == other).all().item())


def _allclose_method(self, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> bool:
    return allclose(self, other, rtol, atol, equal_nan)


def _isclose_method(self, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> Tensor:
    return isclose(self, other, rtol, atol, equal_nan)


#: Tensor methods this module provides: name -> function (attached by frontend.methods).
TENSOR_METHODS: dict = {"isclose": _isclose_method, "allclose": _allclose_method, "equal": equal}
