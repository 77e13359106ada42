"""Shared argument handling: axis normalization and the promotion of operands."""
from __future__ import annotations

import builtins
import operator

from ..frontend.tensor import Tensor
from ..frontend.factories import tensor as _tensor
from . import _dtypes as d


def check_array(x, name: str = "x") -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{name} must be a tensorplug Tensor (use xp.asarray), got {type(x).__name__}")
    return x


def normalize_axis(axis, ndim: int) -> int:
    axis = operator.index(axis)
    if not -ndim <= axis < ndim:
        raise IndexError(f"axis {axis} is out of bounds for an array of {ndim} dimensions")
    return axis % ndim if ndim else 0


def normalize_axes(axis, ndim: int) -> tuple:
    """``axis`` (None, an int or a tuple) as a sorted tuple of distinct non-negative axes."""
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if not isinstance(axis, (tuple, list)) else tuple(axis)
    out = tuple(normalize_axis(a, ndim) for a in axes)
    if len(set(out)) != len(out):
        raise ValueError(f"repeated axis in {axis!r}")
    return tuple(sorted(out))


def cast(x: Tensor, dtype) -> Tensor:
    return x if x.dtype is dtype else x.to(dtype)


def scalar_to_array(value, like: Tensor) -> Tensor:
    """A Python scalar operand as a 0-d array on ``like``'s device, with the dtype the standard
    gives it beside ``like``."""
    return _tensor(value, dtype=d.dtype_for_scalar_with(value, like.dtype), device=like.device)


def promote_operands(*operands) -> tuple:
    """Operands (arrays and Python scalars) converted to arrays of one common dtype.

    At least one operand must be an array; scalars take their dtype from the arrays as the
    standard says, and 0-d arrays promote like any other array (unlike PyTorch, where a 0-d
    tensor's dtype only matters when its kind is higher).
    """
    arrays = [o for o in operands if isinstance(o, Tensor)]
    if not arrays:
        raise TypeError("at least one operand must be an array; got only Python scalars")
    dtype = d.result_type(*operands)
    out = []
    for o in operands:
        if isinstance(o, Tensor):
            out.append(cast(o, dtype))
        elif isinstance(o, (builtins.bool, builtins.int, builtins.float, builtins.complex)):
            out.append(_tensor(o, dtype=dtype, device=arrays[0].device))
        else:
            raise TypeError(f"expected an array or a Python bool/int/float/complex operand, got {type(o).__name__}")
    return tuple(out)

