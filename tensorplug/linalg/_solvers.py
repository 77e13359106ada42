"""Inverses, linear solves and determinants: inv, solve, solve_triangular, det, slogdet, cholesky.

Each is an op (``linalg_op``) whose kernel runs LAPACK through NumPy on the host (_host.py) and
whose derivative sits beside it, written with tensorplug ops (so double backward works). The
public functions check arguments with PyTorch's messages, bring operands to the op's canonical
form (square matrices, batch dims broadcast, vectors as one-column matrices) with views that
autograd records, and handle ``out=``.
"""
from __future__ import annotations

import numpy as np

from ..frontend import dtypes as _dt
from ..frontend.factories import eye
from ..frontend.ops._common import check_same_device, write_out
from ..frontend.ops.elementwise import where
from ..frontend.ops.reductions import prod
from ..frontend.shapes import broadcast_shapes
from ..frontend.meta_device import has_values
from ..frontend.tensor import Tensor
from . import _results
from ._checks import (LinAlgError, batch_prefix, check_float, check_same_dtype, check_square, check_tensor,
                      check_matrix)
from ._host import first_non_positive_minor, first_zero_pivot, to_device, to_host
from ._op import linalg_op
from ..frontend.autocast_hook import autocast_function
from ..frontend.ops.out_rehearsal import rehearse_out

__all__ = ["inv", "solve", "solve_triangular", "det", "slogdet", "logdet", "cholesky"]


def _raise_singular(op: str, a: np.ndarray, message: str) -> None:
    """Name the first batch element whose LU has a zero pivot, as PyTorch does."""
    batch_shape = a.shape[:-2]
    for index, matrix in enumerate(a.reshape((-1,) + a.shape[-2:])):
        pivot = first_zero_pivot(matrix)
        if pivot is not None:
            raise LinAlgError(f"{op}: {batch_prefix(batch_shape, index)}{message.format(pivot=pivot)}")
    raise LinAlgError(f"{op}: {message.format(pivot='?')}")


# -- inv --------------------------------------------------------------------------------------

def _inv_backward(grads, inputs, outputs, needs):
    (g,), (inverse,) = grads, outputs
    return (-(inverse.mH @ g @ inverse.mH),)  # conjugate transposes: PyTorch's convention for complex A


@linalg_op("linalg_inv", derivative=_inv_backward)
def _inv(A):
    a = to_host(A)
    try:
        result = np.linalg.inv(a)
    except np.linalg.LinAlgError:
        _raise_singular("linalg.inv", a, "The diagonal element {pivot} is zero, the inversion could not be "
                                         "completed because the input matrix is singular.")
    return to_device(result, A)


@autocast_function("linalg")
def inv(A, *, out=None) -> Tensor:
    """The inverse of each square matrix in ``A`` (``*, n, n``); raises :class:`LinAlgError`
    naming the batch element when one is singular.

    >>> import tensorplug as tp
    >>> tp.linalg.inv(tp.tensor([[2.0, 0.0], [0.0, 4.0]])).tolist()
    [[0.5, 0.0], [0.0, 0.25]]
    """
    if out is not None:
        rehearse_out(inv, locals())
    check_tensor("linalg.inv", A)
    check_square("linalg.inv", A)
    check_float("linalg.inv", A)
    return write_out("linalg.inv", out, _inv(A))


# -- solve ------------------------------------------------------------------------------------

def _solve_backward(grads, inputs, outputs, needs):
    (g,), (A, _), (X,) = grads, inputs, outputs
    grad_b = _solve(A.mH, g)
    grad_a = -(grad_b @ X.mH) if needs[0] else None
    return grad_a, grad_b if needs[1] else None


@linalg_op("linalg_solve", derivative=_solve_backward, differentiable=(0, 1))
def _solve(A, B):
    """A X = B for A (*, n, n) and B (*, n, k) with the same batch dims."""
    a = to_host(A)
    try:
        result = np.linalg.solve(a, to_host(B))
    except np.linalg.LinAlgError:
        _raise_singular("torch.linalg.solve", a, "The solver failed because the input matrix is singular.")
    return to_device(result, A)


def _is_vector_rhs(A: Tensor, B: Tensor) -> bool:
    # PyTorch's rule: B is a (batch of) vector(s) when it is 1-D, or has A's batch dims and n.
    return B.ndim == 1 or (B.ndim == A.ndim - 1 and B._shape == A._shape[:-1])


def _broadcast_pair(op: str, A: Tensor, B: Tensor) -> tuple:
    batch = broadcast_shapes(A._shape[:-2], B._shape[:-2], op=op)
    A = A if A._shape[:-2] == batch else A.expand(batch + A._shape[-2:])
    B = B if B._shape[:-2] == batch else B.expand(batch + B._shape[-2:])
    return A, B


@autocast_function("linalg")
def solve(A, B, *, left=True, out=None) -> Tensor:
    """The solution X of ``A X = B`` (``X A = B`` with ``left=False``), with batch dims broadcast;
    ``B`` may be a (batch of) vector(s), as in PyTorch. Raises :class:`LinAlgError` for a
    singular ``A``.

    >>> import tensorplug as tp
    >>> tp.linalg.solve(tp.tensor([[2.0, 0.0], [0.0, 4.0]]), tp.tensor([2.0, 2.0])).tolist()
    [1.0, 0.5]
    """
    if out is not None:
        rehearse_out(solve, locals())
    op = "linalg.solve"
    check_tensor(op, A)
    check_tensor(op, B, "B")
    check_same_device(op, A, B)
    check_square(op, A)
    check_float(op, A)
    check_same_dtype(op, A, B)
    vector = _is_vector_rhs(A, B)
    B_ = B.unsqueeze(-1) if vector else B  # also for left=False, where PyTorch then refuses it
    if B_.ndim < 2:
        raise RuntimeError(f"{op}: The input tensor B must have at least 2 dimensions.")
    n = A._shape[-1]
    if (B_._shape[-2] if left else B_._shape[-1]) != n:
        equation = "AX = B" if left else "XA = B"
        raise RuntimeError(f"{op}: Incompatible shapes of A and B for the equation {equation} "
                           f"({n}x{n} and {B_._shape[-2]}x{B_._shape[-1]})")
    A_, B_ = (A, B_) if left else (A.mT, B_.mT)
    A_, B_ = _broadcast_pair(op, A_, B_)
    X = _solve(A_, B_)
    if not left:
        X = X.mT
    return write_out(op, out, X.squeeze(-1) if vector else X)


# -- solve_triangular -------------------------------------------------------------------------

def _triangle(A: Tensor, upper: bool, unitriangular: bool) -> Tensor:
    """The triangle of ``A`` a triangular solve reads (ones on the diagonal when unitriangular)."""
    part = A.triu(1 if unitriangular else 0) if upper else A.tril(-1 if unitriangular else 0)
    if unitriangular:
        part = part + eye(A._shape[-1], dtype=A._dtype, device=A._device)
    return part


def _solve_triangular_backward(grads, inputs, outputs, needs):
    (g,), (A, _, upper, unitriangular), (X,) = grads, inputs, outputs
    grad_b = _solve_triangular(A.mH, g, not upper, unitriangular)
    grad_a = None
    if needs[0]:
        full = -(grad_b @ X.mH)
        grad_a = full.triu(1 if unitriangular else 0) if upper else full.tril(-1 if unitriangular else 0)
    return grad_a, grad_b if needs[1] else None


@linalg_op("linalg_solve_triangular", derivative=_solve_triangular_backward, differentiable=(0, 1))
def _solve_triangular(A, B, upper, unitriangular):
    """A X = B reading only one triangle of A (*, n, n); B (*, n, k) with the same batch dims."""
    a = to_host(A)
    n = a.shape[-1]
    a = np.triu(a, 1 if unitriangular else 0) if upper else np.tril(a, -1 if unitriangular else 0)
    if unitriangular:
        a = a + np.eye(n, dtype=a.dtype)
    # NumPy has no triangular solver (trtrs); LU of a triangular matrix pivots nothing unless a
    # sub-diagonal entry is larger, and gives the same solution. A zero on the diagonal makes
    # the system singular; PyTorch's trsm divides by it and returns inf/nan, which we mirror.
    with np.errstate(divide="ignore", invalid="ignore"):
        try:
            result = np.linalg.solve(a, to_host(B))
        except np.linalg.LinAlgError:
            result = _substitute(a, np.asarray(to_host(B), dtype=a.dtype), upper)
    return to_device(result, A)


def _substitute(a: np.ndarray, b: np.ndarray, upper: bool) -> np.ndarray:
    """Forward or back substitution, row by row (the singular case only, where inf/nan result)."""
    x = np.zeros_like(b)
    n = a.shape[-1]
    for i in (reversed(range(n)) if upper else range(n)):
        done = np.einsum("...j,...jk->...k", a[..., i, :], x)
        x[..., i, :] = (b[..., i, :] - done) / a[..., i, i][..., None]
    return x


@autocast_function("linalg")
def solve_triangular(A, B, *, upper, left=True, unitriangular=False, out=None) -> Tensor:
    """The solution X of ``A X = B`` (``X A = B`` with ``left=False``) for triangular ``A``: only
    the ``upper`` (or lower) triangle is read; ``unitriangular`` takes the diagonal as ones."""
    if out is not None:
        rehearse_out(solve_triangular, locals())
    op = "linalg.solve_triangular"
    check_tensor(op, A)
    check_tensor(op, B, "B")
    check_same_device(op, A, B)
    check_square(op, A)
    check_matrix(op, B, "B")
    check_float(op, A)
    check_same_dtype(op, A, B)
    n = A._shape[-1]
    if (B._shape[-2] if left else B._shape[-1]) != n:
        raise RuntimeError(f"{op}: Incompatible shapes of A and B for the equation {'AX = B' if left else 'XA = B'} "
                           f"({n}x{n} and {B._shape[-2]}x{B._shape[-1]})")
    A_, B_ = (A, B) if left else (A.mT, B.mT)
    A_, B_ = _broadcast_pair(op, A_, B_)
    X = _solve_triangular(A_, B_, bool(upper) == bool(left), bool(unitriangular))
    return write_out(op, out, X if left else X.mT)


# -- det, slogdet -----------------------------------------------------------------------------

def _cofactors(A: Tensor) -> Tensor:
    """The matrix of cofactors (d det / dA) from the SVD, defined for singular A as well:
    A = U diag(s) Vh gives det(U) det(Vh) U diag(prod of the other s) Vh."""
    from ._decompositions import _svd

    U, S, Vh = _svd(A, False)
    n = A._shape[-1]
    others = where(eye(n, dtype=_dt.bool, device=A._device), 1.0, S.unsqueeze(-2).expand(S._shape[:-1] + (n, n)))
    rotation = (_det(U.detach()) * _det(Vh.detach())).unsqueeze(-1).unsqueeze(-1)
    # For complex A the cofactors are rotation * conj(U D Vh) (adj(A)^T, not adj(A)^H).
    return rotation * ((U * prod(others, -1).unsqueeze(-2)) @ Vh).conj()


def _det_backward(grads, inputs, outputs, needs):
    (g,), (A,), (d,) = grads, inputs, outputs
    if A.numel() == 0:
        return (A * 0,)
    # d det = tr(cofactors^T dA), holomorphic in A: the gradient is g times the conjugate cofactors.
    if has_values(d) and bool((d == 0).any()):  # (a meta det has no zeros to find: either branch has A's shape)
        return (g.unsqueeze(-1).unsqueeze(-1) * _cofactors(A).conj(),)
    return ((g * d.conj()).unsqueeze(-1).unsqueeze(-1) * _inv(A).mH,)


@linalg_op("linalg_det", derivative=_det_backward)
def _det(A):
    return to_device(np.linalg.det(to_host(A)), A)


@autocast_function("linalg")
def det(A, *, out=None) -> Tensor:
    """The determinant of each square matrix in ``A``; differentiable also where ``A`` is
    singular (through the SVD).

    >>> import tensorplug as tp
    >>> tp.linalg.det(tp.tensor([[2.0, 1.0], [1.0, 3.0]])).item()
    5.0
    """
    if out is not None:
        rehearse_out(det, locals())
    check_tensor("linalg.det", A)
    check_square("linalg.det", A)
    check_float("linalg.det", A)
    return write_out("linalg.det", out, _det(A))


def _slogdet_backward(grads, inputs, outputs, needs):
    # log det A = logabsdet + i arg(sign) is holomorphic in A with gradient A^-H. A loss reaches
    # it through logabsdet (gl) and, for complex A, through sign = exp(i arg) (gs), which
    # contributes i Im(gs conj(sign)) (0 for real A, whose sign is not differentiable).
    (gs, g), (A,), (sign, _) = grads, inputs, outputs
    if g is None and gs is None:
        return (None,)
    if gs is not None and A._dtype.is_complex:
        from ..frontend.complex import from_parts

        phase = (gs * sign.conj()).imag
        g = from_parts(g if g is not None else phase * 0, phase)
    return (g.unsqueeze(-1).unsqueeze(-1) * _inv(A).mH,)


@linalg_op("linalg_slogdet", derivative=_slogdet_backward, differentiable_outputs=(1,))
def _slogdet(A):
    sign, logabsdet = np.linalg.slogdet(to_host(A))
    return to_device(sign, A), to_device(logabsdet, A, A._dtype.to_real())


@autocast_function("linalg")
def slogdet(A, *, out=None) -> _results.linalg_slogdet:
    """``(sign, logabsdet)`` of each square matrix's determinant (sign 0 and -inf when
    singular); only ``logabsdet`` is differentiable."""
    if out is not None:
        rehearse_out(slogdet, locals())
    check_tensor("linalg.slogdet", A)
    check_square("linalg.slogdet", A)
    check_float("linalg.slogdet", A)
    sign, logabsdet = _slogdet(A)
    if out is not None:
        sign, logabsdet = (write_out("linalg.slogdet", o, r) for o, r in zip(out, (sign, logabsdet)))
    return _results.linalg_slogdet(sign, logabsdet)


def logdet(input) -> Tensor:
    """``log(det(input))``: nan where the determinant is negative, -inf where it is zero."""
    check_tensor("logdet", input, "input")
    check_square("logdet", input, "input")
    check_float("logdet", input)
    sign, logabsdet = _slogdet(input)
    if input._dtype.is_complex:  # the principal log: logabsdet + i arg(det)
        return logabsdet + sign.angle() * 1j
    return where(sign < 0, float("nan"), logabsdet)


# -- cholesky ---------------------------------------------------------------------------------

def _cholesky_backward(grads, inputs, outputs, needs):
    # With A = L L^T: gA = L^-T Phi L^-1, Phi the symmetric matrix whose lower triangle is
    # tril(L^T gL) with half its diagonal; symmetric because A is read as symmetric.
    (g,), (L,) = grads, outputs
    lower = (L.mH @ g).tril()
    phi = 0.5 * (lower + lower.tril(-1).mH)
    if phi._dtype.is_complex:  # Hermitian: the diagonal is real (half the real part of lower's)
        from ..frontend.complex import complex_parts

        phi = phi - 1j * _diag_embed_real(complex_parts(phi.diagonal(0, -2, -1))[1])
    left = _solve_triangular(L.mH, phi, True, False)
    return (_solve_triangular(L.mH, left.mH, True, False).mH,)


def _diag_embed_real(values: Tensor) -> Tensor:
    n = values._shape[-1]
    return values.unsqueeze(-1) * eye(n, dtype=values._dtype, device=values._device)


@linalg_op("linalg_cholesky", derivative=_cholesky_backward)
def _cholesky(A):
    """The lower Cholesky factor, reading the lower triangle of A (*, n, n)."""
    a = to_host(A)
    try:
        result = np.linalg.cholesky(a)
    except np.linalg.LinAlgError:
        batch_shape = a.shape[:-2]
        for index, matrix in enumerate(a.reshape((-1,) + a.shape[-2:])):
            try:
                np.linalg.cholesky(matrix)
            except np.linalg.LinAlgError:
                order = first_non_positive_minor(matrix, upper=False)
                raise LinAlgError(
                    f"linalg.cholesky: {batch_prefix(batch_shape, index)}The factorization could not be completed "
                    f"because the input is not positive-definite (the leading minor of order {order} is not "
                    f"positive-definite).") from None
        raise
    return to_device(result, A)


@autocast_function("linalg")
def cholesky(A, *, upper=False, out=None) -> Tensor:
    """The Cholesky factor L (``A = L L^T``; ``U`` with ``A = U^T U`` when ``upper``) of each
    symmetric positive-definite matrix; reads only the lower (upper) triangle. Raises
    :class:`LinAlgError` naming the batch element and the leading minor that is not positive."""
    if out is not None:
        rehearse_out(cholesky, locals())
    check_tensor("linalg.cholesky", A)
    check_square("linalg.cholesky", A)
    check_float("linalg.cholesky", A)
    result = _cholesky(A.mT).mT if upper else _cholesky(A)
    return write_out("linalg.cholesky", out, result)
