"""The ``_ex`` variants (``cholesky_ex``, ``inv_ex``, ``solve_ex``): the result and LAPACK's
``info`` per matrix (0, or the order of the leading minor that is not positive-definite, or the
first zero pivot), raising only with ``check_errors=True``.

They call the plain routine on the whole batch; only when it fails do they go matrix by matrix,
to find which ones fail and why. A failed matrix's result is NaN (PyTorch leaves LAPACK's
partial factorization there, docs/deviations.md): ``info`` is what says it failed.
"""
from __future__ import annotations

from typing import NamedTuple

from ..frontend import dtypes as _dt
from ..frontend.factories import full_like, tensor as _tensor, zeros
from ..frontend.ops._common import write_out
from ..frontend.ops.joining import stack
from ..frontend.tensor import Tensor
from ..frontend.ops.out_rehearsal import rehearse_out
from ._checks import LinAlgError, check_square, check_tensor
from ._host import first_non_positive_minor, first_zero_pivot, to_host
from ._solvers import _is_vector_rhs, cholesky, inv, solve

__all__ = ["cholesky_ex", "inv_ex", "solve_ex"]


class linalg_cholesky_ex(NamedTuple):
    L: Tensor
    info: Tensor


class linalg_inv_ex(NamedTuple):
    inverse: Tensor
    info: Tensor


class linalg_solve_ex(NamedTuple):
    result: Tensor
    info: Tensor


def _with_info(compute, A: Tensor, operands: tuple, failed_like, info_of, check_errors: bool) -> tuple:
    """(``compute(*operands)``, info). ``operands`` share A's batch dims; ``failed_like(i)`` is a
    tensor of the shape a failed matrix's result has; ``info_of(matrix)`` is LAPACK's info."""
    batch = A._shape[:-2]
    try:
        return compute(*operands), zeros(batch, dtype=_dt.int32, device=A._device)
    except LinAlgError:
        if check_errors:
            raise
    flat = [o.reshape((-1,) + o._shape[len(batch):]) for o in operands]
    results, infos = [], []
    for i in range(flat[0]._shape[0]):
        try:
            results.append(compute(*(f[i] for f in flat)))
            infos.append(0)
        except LinAlgError:
            results.append(full_like(failed_like(flat, i), float("nan")))
            infos.append(info_of(to_host(flat[0][i])))
    result = stack(results).reshape(batch + results[0]._shape)
    return result, _tensor(infos, dtype=_dt.int32, device=A._device).reshape(batch)


def cholesky_ex(A, *, upper=False, check_errors=False, out=None) -> linalg_cholesky_ex:
    """``(L, info)``: ``linalg.cholesky`` without raising; ``info`` is 0, or the order of the
    first leading minor that is not positive-definite."""
    if out is not None:
        rehearse_out(cholesky_ex, locals())
    check_tensor("linalg.cholesky_ex", A)
    check_square("linalg.cholesky_ex", A)
    L, info = _with_info(lambda M: cholesky(M, upper=upper), A, (A,), lambda flat, i: flat[0][i],
                         lambda a: first_non_positive_minor(a, upper), check_errors)
    return linalg_cholesky_ex(*_written("linalg.cholesky_ex", out, L, info))


def inv_ex(A, *, check_errors=False, out=None) -> linalg_inv_ex:
    """``(inverse, info)``: ``linalg.inv`` without raising; ``info`` is 0, or the 1-based index
    of the first zero pivot of A's LU factorization."""
    if out is not None:
        rehearse_out(inv_ex, locals())
    check_tensor("linalg.inv_ex", A)
    check_square("linalg.inv_ex", A)
    X, info = _with_info(inv, A, (A,), lambda flat, i: flat[0][i], _zero_pivot, check_errors)
    return linalg_inv_ex(*_written("linalg.inv_ex", out, X, info))


def solve_ex(A, B, *, left=True, check_errors=False, out=None) -> linalg_solve_ex:
    """``(result, info)``: ``linalg.solve`` without raising (``info`` as ``inv_ex``'s)."""
    if out is not None:
        rehearse_out(solve_ex, locals())
    check_tensor("linalg.solve_ex", A)
    check_tensor("linalg.solve_ex", B, "B")
    check_square("linalg.solve_ex", A)
    if A.ndim > 2 and not _is_vector_rhs(A, B):
        # Batched: give both the same batch dims, so that matrix i of each goes together.
        from ..frontend.shapes import broadcast_shapes

        batch = broadcast_shapes(A._shape[:-2], B._shape[:-2] if B.ndim >= 2 else ())
        A, B = A.expand(batch + A._shape[-2:]), B.expand(batch + B._shape[-2:])
    X, info = _with_info(lambda M, R: solve(M, R, left=left), A, (A, B), lambda flat, i: flat[1][i], _zero_pivot,
                         check_errors)
    return linalg_solve_ex(*_written("linalg.solve_ex", out, X, info))


def _zero_pivot(a) -> int:
    return first_zero_pivot(a) or a.shape[-1]  # a NaN rather than a zero pivot: the last one


def _written(op: str, out, result: Tensor, info: Tensor) -> tuple:
    if out is None:
        return result, info
    return tuple(write_out(op, o, r) for o, r in zip(out, (result, info)))
