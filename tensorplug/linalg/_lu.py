"""The LU decomposition with partial pivoting: ``lu_factor``, ``lu_factor_ex``, ``lu`` and
``lu_solve`` (issue 13).

One op, ``linalg_lu_factor_ex``, factors ``P^T A = L U`` (LU packed in one matrix, LAPACK's
1-based row interchanges, ``info`` the first zero pivot) on the host, as the other
decompositions do; its derivative covers square, wide and tall matrices. ``lu`` unpacks it and
``lu_solve`` is two triangular solves and a permutation, composites whose gradients come from
``solve_triangular`` and the unpacking.
"""
from __future__ import annotations

import numpy as np

from ..frontend import dtypes as _dt
from ..frontend.autocast_hook import autocast_function
from ..frontend.ops._common import check_same_device, write_out
from ..frontend.tensor import Tensor
from . import _results
from ._checks import (LinAlgError, batch_prefix, check_float, check_matrix, check_same_dtype, check_square,
                      check_tensor)
from ._host import to_device, to_host
from ._op import linalg_op
from ._solvers import solve_triangular
from ..frontend.ops.out_rehearsal import rehearse_out

__all__ = ["lu_factor", "lu_factor_ex", "lu", "lu_solve"]


def _pivot_magnitudes(column: np.ndarray) -> np.ndarray:
    # LAPACK's i?amax compares |re| + |im| for complex numbers, not the modulus; the same
    # measure picks the same pivot rows.
    return np.abs(column.real) + np.abs(column.imag) if np.iscomplexobj(column) else np.abs(column)


def _factor_on_host(a: np.ndarray) -> tuple:
    """(LU, pivots, info) of a batch of m x n matrices by right-looking Gaussian elimination
    with partial pivoting, one column at a time over the whole batch."""
    batch_shape, (m, n) = a.shape[:-2], a.shape[-2:]
    work = np.array(a.reshape((-1, m, n)), copy=True)
    count, k = work.shape[0], min(m, n)
    pivots = np.zeros((count, k), dtype=np.int32)
    info = np.zeros(count, dtype=np.int32)
    every = np.arange(count)
    for j in range(k):
        best = j + np.argmax(_pivot_magnitudes(work[:, j:, j]), axis=1)  # first of equal maxima, as LAPACK
        row_j = work[every, j].copy()
        work[every, j] = work[every, best]
        work[every, best] = row_j
        pivots[:, j] = best + 1
        diagonal = work[:, j, j]
        zero = diagonal == 0
        info[(info == 0) & zero] = j + 1
        # A zero pivot leaves its (all-zero) column unscaled, as LAPACK does.
        work[:, j + 1:, j] /= np.where(zero, 1, diagonal)[:, None]
        work[:, j + 1:, j + 1:] -= work[:, j + 1:, j:j + 1] * work[:, j:j + 1, j + 1:]
    return (work.reshape(a.shape), pivots.reshape(batch_shape + (k,)), info.reshape(batch_shape))


def _permutation_from_pivots(pivots: Tensor, rows: int, like: Tensor) -> Tensor:
    """P (``*, rows, rows``, ``like``'s dtype and device) with ``A = P L U`` for LAPACK's
    sequential row interchanges ``pivots``."""
    swaps = to_host(pivots).astype(np.int64) - 1
    batch_shape, k = swaps.shape[:-1], swaps.shape[-1]
    order = np.broadcast_to(np.arange(rows), batch_shape + (rows,)).copy().reshape(-1, rows)
    flat_swaps, every = swaps.reshape(-1, k), np.arange(order.shape[0])
    for j in range(k):
        target = flat_swaps[:, j]
        held = order[every, j].copy()
        order[every, j] = order[every, target]
        order[every, target] = held
    # Row i of P^T A is row order[i] of A, so P[order[i], i] = 1.
    matrix = (np.arange(rows)[:, None] == order[:, None, :]).reshape(batch_shape + (rows, rows))
    return to_device(matrix, like, like._dtype)


def _unit_lower(LU: Tensor, columns: int) -> Tensor:
    """L from packed LU: the strict lower triangle of its first ``columns`` columns, ones on
    the diagonal."""
    from ..frontend.factories import eye

    part = LU[..., :columns].tril(-1)
    return part + eye(part._shape[-2], columns, dtype=LU._dtype, device=LU._device)


def _square_gradient(L: Tensor, U: Tensor, gL: Tensor, gU: Tensor) -> Tensor:
    """The gradient wrt P^T A of square L U: L^-H (tril_-1(L^H gL) + triu(gU U^H)) U^-H."""
    inner = (L.mH @ gL).tril(-1) + (gU @ U.mH).triu()
    left = solve_triangular(L.mH, inner, upper=True, unitriangular=True)
    return solve_triangular(U.mH, left, upper=False, left=False)


def _lu_factor_backward(grads, inputs, outputs, needs):
    from ..frontend.ops.joining import cat

    g = grads[0]
    LU, pivots = outputs[0], outputs[1]
    if g is None:
        return (None,)
    m, n = LU._shape[-2:]
    k = min(m, n)
    L, U = _unit_lower(LU, k), LU[..., :k, :].triu()
    gL, gU = g[..., :, :k].tril(-1), g[..., :k, :].triu()
    if m == n:
        permuted = _square_gradient(L, U, gL, gU)
    elif m < n:  # A = P L [U1 U2]: U2's gradient reaches A2 and, through dU2 = -L^-1 dL U2, L
        U1, U2, gU1, gU2 = U[..., :k], U[..., k:], gU[..., :k], gU[..., k:]
        through_u2 = solve_triangular(L.mH, gU2, upper=True, unitriangular=True)
        first = _square_gradient(L, U1, gL - (through_u2 @ U2.mH).tril(-1), gU1)
        permuted = cat([first, through_u2], -1)
    else:  # P^T A = [L1; L2] U: L2's gradient reaches the lower rows and, through dL2, U
        L1, L2, gL1, gL2 = L[..., :k, :], L[..., k:, :], gL[..., :k, :], gL[..., k:, :]
        through_l2 = solve_triangular(U.mH, gL2, upper=False, left=False)
        first = _square_gradient(L1, U, gL1, gU - (L2.mH @ through_l2).triu())
        permuted = cat([first, through_l2], -2)
    return (_permutation_from_pivots(pivots, m, permuted) @ permuted,)


@linalg_op("linalg_lu_factor_ex", derivative=_lu_factor_backward, differentiable_outputs=(0,))
def _lu_factor_ex(A, pivot):
    """(LU, pivots, info) of ``A (*, m, n)``: packed factors, int32 1-based row interchanges
    (``*, min(m, n)``), int32 index of the first zero pivot (0 if none)."""
    LU, pivots, info = _factor_on_host(to_host(A))
    return to_device(LU, A), to_device(pivots, A, _dt.int32), to_device(info, A, _dt.int32)


def _check_factor_args(op: str, A, pivot) -> None:
    check_tensor(op, A)
    if A.ndim < 2:
        raise RuntimeError(f"torch.lu_factor: Expected tensor with 2 or more dimensions. Got size: "
                           f"{list(A._shape)} instead")
    check_float(op, A)
    if not pivot:
        raise RuntimeError(f"{op}: LU without pivoting is not implemented on the CPU")


def _raise_zero_pivot(op: str, info: Tensor) -> None:
    """PyTorch's error for a zero on U's diagonal, naming the first batch element that has one."""
    flat = to_host(info).reshape(-1)
    bad = np.flatnonzero(flat)
    if bad.size:
        index, position = int(bad[0]), int(flat[bad[0]])
        raise LinAlgError(f"torch.{op}: {batch_prefix(info._shape, index)}U[{position},{position}] is zero and using "
                          f"it on lu_solve would result in a division by zero. If you still want to perform the "
                          f"factorization, consider calling linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)")


@autocast_function("linalg")
def lu_factor_ex(A, *, pivot: bool = True, check_errors: bool = False, out=None) -> _results.linalg_lu_factor_ex:
    """``(LU, pivots, info)``: the packed LU factors of ``A``, LAPACK's row interchanges and the
    position of the first zero pivot (0: none), without raising unless ``check_errors``."""
    if out is not None:
        rehearse_out(lu_factor_ex, locals())
    op = "linalg.lu_factor_ex"
    _check_factor_args(op, A, pivot)
    LU, pivots, info = _lu_factor_ex(A, bool(pivot))
    if check_errors:
        _raise_zero_pivot(op, info)
    if out is not None:
        LU, pivots, info = (write_out(op, o, r) for o, r in zip(out, (LU, pivots, info)))
    return _results.linalg_lu_factor_ex(LU, pivots, info)


@autocast_function("linalg")
def lu_factor(A, *, pivot: bool = True, out=None) -> _results.linalg_lu_factor:
    """``(LU, pivots)`` of ``A``; raises :class:`LinAlgError` when U has a zero on its diagonal.

    >>> import tensorplug as tp
    >>> tp.linalg.lu_factor(tp.tensor([[1.0, 2.0], [3.0, 4.0]])).pivots.tolist()
    [2, 2]
    """
    if out is not None:
        rehearse_out(lu_factor, locals())
    op = "linalg.lu_factor"
    _check_factor_args(op, A, pivot)
    LU, pivots, info = _lu_factor_ex(A, bool(pivot))
    _raise_zero_pivot(op, info)
    if out is not None:
        LU, pivots = (write_out(op, o, r) for o, r in zip(out, (LU, pivots)))
    return _results.linalg_lu_factor(LU, pivots)


@autocast_function("linalg")
def lu(A, *, pivot: bool = True, out=None) -> _results.linalg_lu:
    """``(P, L, U)`` with ``A = P @ L @ U``: P a permutation, L unit lower trapezoidal
    (``m x k``), U upper trapezoidal (``k x n``), ``k = min(m, n)``."""
    if out is not None:
        rehearse_out(lu, locals())
    op = "linalg.lu"
    _check_factor_args(op, A, pivot)
    LU, pivots, _ = _lu_factor_ex(A, bool(pivot))
    m, n = A._shape[-2:]
    k = min(m, n)
    P = _permutation_from_pivots(pivots, m, LU)
    L, U = _unit_lower(LU, k), LU[..., :k, :].triu()
    if out is not None:
        P, L, U = (write_out(op, o, r) for o, r in zip(out, (P, L, U)))
    return _results.linalg_lu(P, L, U)


def _check_solve_args(op: str, LU, pivots, B, left: bool) -> None:
    check_tensor(op, LU, "LU")
    check_tensor(op, pivots, "pivots")
    check_tensor(op, B, "B")
    check_same_device(op, LU, pivots)
    check_same_device(op, LU, B)
    check_square(op, LU, "LU")
    check_matrix(op, B, "B")
    check_float(op, LU)
    if pivots._dtype is not _dt.int32:
        raise RuntimeError(f"{op}: pivots should be a Tensor of scalar type torch.int32")
    check_same_dtype(op, LU, B, ("LU", "B"))
    n = LU._shape[-1]
    if pivots._shape[-1:] != (n,) or pivots._shape[:-1] != LU._shape[:-2]:
        raise RuntimeError(f"{op}: Expected LU.shape[:-1] and pivots.shape to be the same, but got pivots with "
                           f"shape {list(pivots._shape)} instead")
    if (B._shape[-2] if left else B._shape[-1]) != n:
        raise RuntimeError(f"{op}: Incompatible shapes of A and B for the equation {'AX = B' if left else 'XA = B'} "
                           f"({n}x{n} and {B._shape[-2]}x{B._shape[-1]})")
    if pivots.numel():
        values = to_host(pivots)
        if values.min() < 1 or values.max() > n:
            raise RuntimeError(f"{op}: pivots must be between 1 and LU.size(-1) = {n}, but found values in "
                               f"[{int(values.min())}, {int(values.max())}]")


def lu_solve(LU, pivots, B, *, left: bool = True, adjoint: bool = False, out=None) -> Tensor:
    """The solution X of ``A X = B`` (``X A = B`` with ``left=False``; ``A^H`` for A with
    ``adjoint``) for A given as ``lu_factor``'s ``(LU, pivots)``."""
    if out is not None:
        rehearse_out(lu_solve, locals())
    op = "linalg.lu_solve"
    _check_solve_args(op, LU, pivots, B, left)
    n = LU._shape[-1]
    L, U = _unit_lower(LU, n), LU.triu()
    P = _permutation_from_pivots(pivots, n, LU)
    # solve_triangular and matmul broadcast the batch dimensions of LU and B.
    if left and not adjoint:  # P L U X = B
        inner = solve_triangular(L, P.mH @ B, upper=False, unitriangular=True)
        X = solve_triangular(U, inner, upper=True)
    elif left:  # U^H L^H P^T X = B
        inner = solve_triangular(U.mH, B, upper=False)
        X = P @ solve_triangular(L.mH, inner, upper=True, unitriangular=True)
    elif not adjoint:  # X P L U = B
        inner = solve_triangular(U, B, upper=True, left=False)
        X = solve_triangular(L, inner, upper=False, left=False, unitriangular=True) @ P.mH
    else:  # X U^H L^H P^T = B
        inner = solve_triangular(L.mH, B @ P, upper=True, left=False, unitriangular=True)
        X = solve_triangular(U.mH, inner, upper=False, left=False)
    return write_out(op, out, X)
