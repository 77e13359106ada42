"""Linear algebra functions of the main namespace: ``matmul``, ``matrix_transpose``,
``tensordot``, ``vecdot``."""
from __future__ import annotations

import operator

from ..frontend.complex import conj as _conj
from ..frontend.ops import reductions as _r
from ..frontend.ops.linalg import matmul as _matmul
from ..frontend.tensor import Tensor
from ..frontend import views as _v
from ._helpers import check_array, normalize_axis, promote_operands

__all__ = ["matmul", "matrix_transpose", "tensordot", "vecdot"]


def matmul(x1: Tensor, x2: Tensor, /) -> Tensor:
    """Matrix product with NumPy's rules for 1-D operands and broadcast batch axes."""
    check_array(x1, "x1")
    check_array(x2, "x2")
    if x1.ndim == 0 or x2.ndim == 0:
        raise ValueError("matmul needs arrays of at least one dimension")
    a, b = promote_operands(x1, x2)
    return _matmul(a, b)


def matrix_transpose(x: Tensor, /) -> Tensor:
    """x with its last two axes swapped (a view)."""
    check_array(x)
    if x.ndim < 2:
        raise ValueError(f"matrix_transpose needs at least two dimensions, got shape {x.shape}")
    return x.transpose(-1, -2)


def tensordot(x1: Tensor, x2: Tensor, /, *, axes=2) -> Tensor:
    """Sum of products over the last ``axes`` axes of x1 and the first of x2, or over the axes
    paired in ``axes = (x1_axes, x2_axes)``."""
    a, b = promote_operands(check_array(x1, "x1"), check_array(x2, "x2"))
    if isinstance(axes, (tuple, list)):
        if len(axes) != 2:
            raise ValueError(f"axes must be an int or a pair of sequences, got {axes!r}")
        axes_a = [normalize_axis(i, a.ndim) for i in ((axes[0],) if isinstance(axes[0], int) else axes[0])]
        axes_b = [normalize_axis(i, b.ndim) for i in ((axes[1],) if isinstance(axes[1], int) else axes[1])]
    else:
        n = operator.index(axes)
        if n < 0 or n > a.ndim or n > b.ndim:
            raise ValueError(f"axes={n} must be between 0 and the dimensions of both arrays ({a.ndim}, {b.ndim})")
        axes_a = list(range(a.ndim - n, a.ndim))
        axes_b = list(range(n))
    if len(axes_a) != len(axes_b):
        raise ValueError(f"axes pair different numbers of axes: {axes!r}")
    for i, j in zip(axes_a, axes_b):
        if a.shape[i] != b.shape[j]:
            raise ValueError(f"contracted axes differ in size: x1 axis {i} is {a.shape[i]}, x2 axis {j} is {b.shape[j]}")
    from ..frontend.ops.products import contract

    return contract(a, b, axes_a, axes_b)


def vecdot(x1: Tensor, x2: Tensor, /, *, axis: int = -1) -> Tensor:
    """Dot products of the vectors along ``axis`` of the broadcast x1 and x2: sum(conj(x1) * x2)
    (the conjugate matters for complex arrays only)."""
    a, b = promote_operands(check_array(x1, "x1"), check_array(x2, "x2"))
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError("vecdot needs arrays of at least one dimension")
    a, b = _v.broadcast_tensors(a, b)
    axis = normalize_axis(axis, a.ndim)
    if a.dtype.category == 3:
        a = _conj(a)
    # the sum keeps the promoted dtype (an integer vecdot must not widen to int64)
    return _r.sum(a * b, dim=axis, dtype=a.dtype)
