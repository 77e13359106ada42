"""``linalg.cond``: the condition number of (batches of) matrices (issue 13).

For ``p`` None, 2 and -2 it is the ratio of the extreme singular values (any m x n matrix); for
'fro', 'nuc', inf, -inf, 1 and -1 it is ``norm(A, p) * norm(inv(A), p)`` of square matrices,
inf where A is singular (PyTorch's value, rather than the inverse's error).
"""
from __future__ import annotations

import math

from ..frontend import dtypes as _dt
from ..frontend.ops._common import write_out
from ..frontend.ops.elementwise import COMPARE, where
from ..frontend.tensor import Tensor
from ._checks import check_float, check_matrix, check_square, check_tensor
from ._decompositions import _svdvals
from ._norms import matrix_norm
from ..frontend.ops.out_rehearsal import rehearse_out

__all__ = ["cond"]

_SINGULAR_VALUE_ORDERS = (None, 2, -2)
_NORM_ORDERS = ("fro", "nuc", math.inf, -math.inf, 1, -1)


def _real_dtype(dtype: _dt.dtype) -> _dt.dtype:
    return {_dt.complex64: _dt.float32, _dt.complex128: _dt.float64}.get(dtype, dtype)


def _by_singular_values(A: Tensor, p) -> Tensor:
    values = _svdvals(A)
    largest, smallest = values.amax(-1), values.amin(-1)
    return largest / smallest if p != -2 else smallest / largest


def _by_norms(A: Tensor, p) -> Tensor:
    from ._solvers import det, inv

    # inv raises on a singular matrix, so those get the identity in its place and inf after.
    singular = COMPARE["eq"](det(A.detach()), 0)
    eye = A.new_zeros(A._shape[-1:] * 2)
    eye.diagonal().fill_(1)
    mask = singular.unsqueeze(-1).unsqueeze(-1)
    safe = where(mask, eye, A)
    product = matrix_norm(safe, p) * matrix_norm(inv(safe), p)
    return where(singular, math.inf, product)


def cond(A, p=None, *, out=None) -> Tensor:
    """The condition number of ``A`` in the ``p`` norm (None: the 2-norm)."""
    if out is not None:
        rehearse_out(cond, locals())
    op = "linalg.cond"
    check_tensor(op, A)
    check_matrix(op, A)
    if isinstance(p, bool) or not (p in _SINGULAR_VALUE_ORDERS or p in _NORM_ORDERS):
        raise RuntimeError(f"{op} got an invalid norm type: {p}")
    by_norms = p not in _SINGULAR_VALUE_ORDERS
    if by_norms:
        check_square(f"{op}(ord={p})", A)
    check_float(op, A)
    if A.numel() == 0:  # PyTorch: 0 for empty matrices
        return write_out(op, out, A.new_zeros(A._shape[:-2], dtype=_real_dtype(A._dtype)))
    return write_out(op, out, _by_norms(A, p) if by_norms else _by_singular_values(A, p))
