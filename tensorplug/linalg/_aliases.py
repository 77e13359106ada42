"""PyTorch's top-level names and Tensor methods for linear algebra (``tp.det``, ``tp.inverse``,
``tp.svd``, ``Tensor.slogdet``, ...), each a thin call into tp.linalg. The names PyTorch 2.13
deprecates with a warning (torch.cholesky, torch.qr, torch.lu) are left out: use tp.linalg's."""
from __future__ import annotations

from ..frontend.factories import eye, zeros
from ..frontend.ops._common import write_out
from ..frontend.tensor import Tensor
from . import _results
from ..frontend.ops._common import check_same_device
from ._checks import check_float, check_matrix, check_same_dtype, check_square, check_tensor
from ._decompositions import _svd, svdvals
from ._householder import geqrf, householder_product, ormqr
from ._least_squares import pinv
from ._matrix_functions import chain_matmul, matrix_exp
from ._op import linalg_op
from ._solvers import _broadcast_pair, _solve_triangular, det as _linalg_det, inv, logdet, slogdet as _linalg_slogdet
from ..frontend.autocast_hook import autocast_function
from ..frontend.ops.out_rehearsal import rehearse_out

__all__ = ["det", "logdet", "slogdet", "inverse", "pinverse", "svd", "cholesky_solve", "cholesky_inverse", "matrix_power", "matrix_exp",
           "chain_matmul", "top_level_matrix_power", "geqrf", "orgqr", "ormqr"]


def det(input) -> Tensor:
    """torch.det: :func:`tp.linalg.det` under PyTorch's top-level argument name."""
    return _linalg_det(input)


def slogdet(input) -> _results.slogdet:
    """``(sign, logabsdet)`` of each square matrix's determinant (torch.slogdet)."""
    sign, logabsdet = _linalg_slogdet(input)
    return _results.slogdet(sign, logabsdet)


def inverse(input, *, out=None) -> Tensor:
    """torch.inverse: :func:`tp.linalg.inv`."""
    if out is not None:
        rehearse_out(inverse, locals())
    return inv(input, out=out)


def pinverse(input, rcond=1e-15) -> Tensor:
    """torch.pinverse: :func:`tp.linalg.pinv` with relative cutoff ``rcond``."""
    return pinv(input, rtol=rcond)


def svd(input, some=True, compute_uv=True, *, out=None) -> _results.svd:
    """torch.svd: ``(U, S, V)`` with ``input = U diag(S) V^T`` (V, not Vh); ``some=False`` gives
    square U and V; without ``compute_uv``, U and V are zero-filled (m, m) and (n, n) matrices."""
    if out is not None:
        rehearse_out(svd, locals())
    check_tensor("svd", input, "input")
    check_matrix("linalg.svd", input)
    check_float("linalg.svd", input)
    if compute_uv:
        U, S, Vh = _svd(input, not some)
        V = Vh.mT
    else:
        S = svdvals(input)
        m, n = input._shape[-2:]
        batch = input._shape[:-2]
        U = zeros(batch + (m, m), dtype=input._dtype, device=input._device)
        V = zeros(batch + (n, n), dtype=input._dtype, device=input._device)
    if out is not None:
        U, S, V = (write_out("svd", o, r) for o, r in zip(out, (U, S, V)))
    return _results.svd(U, S, V)


def _cholesky_solve_backward(grads, inputs, outputs, needs):
    # PyTorch's derivative: X = (L L^T)^-1 B with L a full matrix (not masked to its triangle).
    (g,), (_, L, upper), (X,) = grads, inputs, outputs
    grad_b = _cholesky_solve(g, L, upper)
    grad_l = None
    if needs[1]:
        common = grad_b @ X.mT
        common = common + common.mT
        grad_l = -(L @ common) if upper else -(common @ L)
    return grad_b if needs[0] else None, grad_l


@linalg_op("cholesky_solve", derivative=_cholesky_solve_backward, differentiable=(0, 1))
def _cholesky_solve(B, L, upper):
    """Two triangular solves with the factor (B and L with the same batch dims)."""
    if upper:
        return _solve_triangular(L, _solve_triangular(L.mT, B, False, False), True, False)
    return _solve_triangular(L.mT, _solve_triangular(L, B, False, False), True, False)


@autocast_function("linalg")
def cholesky_solve(B, L, upper=False, *, out=None) -> Tensor:
    """The solution X of ``A X = B`` for ``A = L L^T`` (``U^T U`` with ``upper``), given the
    Cholesky factor (torch.cholesky_solve); batch dims broadcast."""
    if out is not None:
        rehearse_out(cholesky_solve, locals())
    op = "cholesky_solve"
    check_tensor(op, B, "input")
    check_tensor(op, L, "input2")
    check_same_device(op, B, L)
    check_square(op, L, "input2")
    check_matrix(op, B, "input")
    check_float(op, L)
    check_same_dtype(op, B, L, ("input", "input2"))
    if B._shape[-2] != L._shape[-1]:
        raise RuntimeError(f"{op}: Incompatible matrix sizes for cholesky_solve: each A matrix is "
                           f"{L._shape[-1]} by {L._shape[-1]} but each b matrix is {B._shape[-2]} by {B._shape[-1]}")
    L_, B_ = _broadcast_pair(op, L, B)
    return write_out(op, out, _cholesky_solve(B_, L_, bool(upper)))


def cholesky_inverse(L, upper=False, *, out=None) -> Tensor:
    """The inverse of ``A = L L^T`` (``U^T U`` with ``upper``) from its Cholesky factor."""
    if out is not None:
        rehearse_out(cholesky_inverse, locals())
    check_tensor("cholesky_inverse", L, "input")
    check_matrix("cholesky_inverse", L, "input")
    identity = eye(L._shape[-1], dtype=L._dtype, device=L._device).expand(L._shape)
    return write_out("cholesky_inverse", out, cholesky_solve(identity, L, upper))


def top_level_matrix_power(input, n, *, out=None) -> Tensor:
    """torch.matrix_power (and Tensor.matrix_power): :func:`tp.linalg.matrix_power` under
    PyTorch's top-level argument name."""
    if out is not None:
        rehearse_out(top_level_matrix_power, locals())
    return matrix_power(input, n, out=out)


def matrix_power(A, n, *, out=None) -> Tensor:
    """``A`` multiplied by itself ``n`` times (the inverse's powers for negative ``n``; the
    identity for 0), by repeated squaring."""
    if out is not None:
        rehearse_out(matrix_power, locals())
    check_tensor("linalg.matrix_power", A)
    check_square("linalg.matrix_power", A)
    if not isinstance(n, int) or isinstance(n, bool):
        raise TypeError(f"linalg_matrix_power(): argument 'n' must be int, not {type(n).__name__}")
    if n == 0:
        result = eye(A._shape[-1], dtype=A._dtype, device=A._device).expand(A._shape).clone()
        return write_out("linalg.matrix_power", out, result)
    base = inv(A) if n < 0 else A
    n = abs(n)
    result = None
    while n:
        if n & 1:
            result = base if result is None else result @ base
        n >>= 1
        if n:
            base = base @ base
    return write_out("linalg.matrix_power", out, result if result is not A else A.clone())

def orgqr(input, tau) -> Tensor:
    """torch.orgqr: :func:`tp.linalg.householder_product` (Q's first n columns from geqrf's result)."""
    return householder_product(input, tau)


def _cholesky_solve_method(self, input2, upper=False) -> Tensor:
    """``Tensor.cholesky_solve``: PyTorch's method calls the Cholesky factor ``input2``."""
    return cholesky_solve(self, input2, upper)


TENSOR_METHODS = {
    "det": det, "logdet": logdet, "slogdet": slogdet, "inverse": inverse, "pinverse": pinverse, "svd": svd,
    "cholesky_solve": _cholesky_solve_method, "cholesky_inverse": cholesky_inverse, "matrix_power": matrix_power,
    "matrix_exp": matrix_exp, "geqrf": geqrf, "orgqr": orgqr, "ormqr": ormqr,
}
