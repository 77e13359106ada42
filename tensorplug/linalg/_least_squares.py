"""Least squares and the pseudo-inverse: lstsq, pinv, matrix_rank.

``pinv`` is a composite over ``svd`` (``eigh`` when hermitian), so it runs wherever those run,
with an explicit derivative (the pseudo-inverse's, Golub & Pereyra): differentiating through the
SVD instead would divide by zero wherever singular values repeat, as for the identity.
``lstsq`` runs LAPACK's SVD-based solver (gelsd) through NumPy on the host and differentiates its
solution through the pseudo-inverse.
"""
from __future__ import annotations

import numpy as np

from ..frontend import dtypes as _dt
from ..frontend.factories import empty, eye, zeros
from ..frontend.ops._common import check_same_device, write_out
from ..frontend.ops.elementwise import where
from ..frontend.tensor import Tensor
from . import _results
from ._checks import check_float, check_matrix, check_tensor, scalar_type_name
from ._decompositions import _eigh, _eigvalsh, _svd, _svdvals
from ._host import to_device, to_host
from ._op import linalg_op
from ._solvers import _broadcast_pair
from ..frontend.autocast_hook import autocast_function
from ..frontend.ops.out_rehearsal import rehearse_out

__all__ = ["lstsq", "pinv", "matrix_rank"]


def _pinv_grad(g: Tensor, P: Tensor, A: Tensor) -> Tensor:
    """The gradient for A of a loss whose gradient for P = pinv(A) is ``g``:
    -P^H g P^H + (I - A P) g^H P P^H + P^H P g^H (I - P A) (^H the conjugate transpose)."""
    m, n = A._shape[-2:]
    identity_m = eye(m, dtype=A._dtype, device=A._device)
    identity_n = eye(n, dtype=A._dtype, device=A._device)
    gT = g.mH
    return (-(P.mH @ g @ P.mH) + (identity_m - A @ P) @ gT @ (P @ P.mH)
            + (P.mH @ P) @ gT @ (identity_n - P @ A))


# -- pinv -------------------------------------------------------------------------------------

def _tolerance(largest: Tensor, atol, rtol, shape_mn: tuple) -> Tensor:
    """PyTorch's cutoff max(atol, rtol * largest), with rtol defaulting to eps * max(m, n), or
    to zero when a positive atol is given. ``atol`` and ``rtol`` may be numbers or tensors
    broadcasting against the batch dims."""
    if rtol is None:
        given = atol is not None and (isinstance(atol, Tensor) or atol > 0)
        rtol = 0.0 if given else float(np.finfo(_dt.numpy_dtype(largest._dtype)).eps) * max(shape_mn)
    atol = 0.0 if atol is None else atol
    scaled = largest * (rtol.unsqueeze(-1) if isinstance(rtol, Tensor) else rtol)
    atol = atol.unsqueeze(-1) if isinstance(atol, Tensor) else atol
    return where(scaled > atol, scaled, atol)


def _pinv_backward(grads, inputs, outputs, needs):
    (g,), (A, _, _, _), (P,) = grads, inputs, outputs
    return (_pinv_grad(g, P, A),)


@linalg_op("linalg_pinv", derivative=_pinv_backward)
def _pinv(A, atol, rtol, hermitian):
    if hermitian:
        w, V = _eigh(A, "L")
        magnitude = w.abs()
        cutoff = _tolerance(magnitude.amax(-1, keepdim=True), atol, rtol, A._shape[-2:])
        inverse = where(magnitude > cutoff, w.reciprocal(), 0.0)
        return (V * inverse.unsqueeze(-2)) @ V.mH
    U, S, Vh = _svd(A, False)
    if S._shape[-1] == 0:
        return (Vh.mH @ U.mH).contiguous()
    cutoff = _tolerance(S[..., :1], atol, rtol, A._shape[-2:])
    inverse = where(S > cutoff, S.reciprocal(), 0.0)
    return (Vh.mH * inverse.unsqueeze(-2)) @ U.mH


@autocast_function("linalg")
def pinv(A, rcond=None, hermitian=False, *, atol=None, rtol=None, out=None) -> Tensor:
    """The Moore-Penrose pseudo-inverse of each matrix: singular values (absolute eigenvalues
    when ``hermitian``) at most ``max(atol, rtol * largest)`` count as zero (``rcond`` is
    PyTorch's older name for ``rtol``)."""
    if out is not None:
        rehearse_out(pinv, locals())
    op = "linalg.pinv"
    check_tensor(op, A)
    if A.ndim < 2 or A._dtype not in (_dt.float32, _dt.float64, _dt.complex64, _dt.complex128):
        raise RuntimeError(f"{op}({scalar_type_name(A._dtype)}{{{list(A._shape)}}}): expected a tensor with 2 or "
                           f"more dimensions of float, double, cfloat or cdouble types")
    if rcond is not None:
        if rtol is not None:
            raise RuntimeError(f"{op}: rcond and rtol cannot both be given (rcond is the older name of rtol)")
        rtol = rcond
    return write_out(op, out, _pinv(A, atol, rtol, bool(hermitian)))


def matrix_rank(A, *, atol=None, rtol=None, hermitian=False, out=None) -> Tensor:
    """How many singular values (absolute eigenvalues when ``hermitian``) of each matrix exceed
    ``max(atol, rtol * largest)``, as int64."""
    if out is not None:
        rehearse_out(matrix_rank, locals())
    op = "linalg.matrix_rank"
    check_tensor(op, A)
    check_matrix(op, A)
    check_float(op, A)
    values = _eigvalsh(A, "L").abs() if hermitian else _svdvals(A)
    if values._shape[-1] == 0:
        rank = zeros(values._shape[:-1], dtype=_dt.int64, device=A._device)
    else:
        cutoff = _tolerance(values.amax(-1, keepdim=True), atol, rtol, A._shape[-2:])
        rank = (values > cutoff).sum(-1)
    return write_out(op, out, rank)


# -- lstsq ------------------------------------------------------------------------------------

_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


def _lstsq_backward(grads, inputs, outputs, needs):
    (g, _, _, _), (A, B, _, _) = grads, inputs
    P = _pinv(A, None, None, False)
    grad_a = _pinv_grad(g @ B.mH, P, A) if needs[0] else None
    grad_b = P.mH @ g if needs[1] else None
    return grad_a, grad_b


@linalg_op("linalg_lstsq", derivative=_lstsq_backward, differentiable=(0, 1), differentiable_outputs=(0,))
def _lstsq(A, B, rcond, driver):
    """min ||A X - B|| for A (*, m, n), B (*, m, k) with the same batch dims: LAPACK gelsd per
    matrix (NumPy's lstsq takes one matrix at a time)."""
    a, b = to_host(A), to_host(B)
    batch_shape, (m, n), k = a.shape[:-2], a.shape[-2:], b.shape[-1]
    flat_a, flat_b = a.reshape((-1, m, n)), b.reshape((-1, m, k))
    count = flat_a.shape[0]
    solution = np.zeros((count, n, k), dtype=a.dtype)
    residuals = np.zeros((count, k), dtype=a.dtype)
    ranks = np.zeros(count, dtype=np.int64)
    values = np.zeros((count, min(m, n)), dtype=a.dtype)
    for i in range(count):
        solution[i], found, ranks[i], values[i] = np.linalg.lstsq(flat_a[i], flat_b[i], rcond=rcond)
        if found.size:
            residuals[i] = found
    # PyTorch returns residuals for tall matrices of full rank (which gels assumes), never with gelsy.
    full = m > n and driver != "gelsy" and (driver == "gels" or bool(np.all(ranks == n)))
    res = to_device(residuals.reshape(batch_shape + (k,)), A) if full else empty((0,), dtype=A._dtype, device=A._device)
    rank = (to_device(ranks.reshape(batch_shape), A, _dt.int64) if driver != "gels"
            else empty((0,), dtype=_dt.int64, device=A._device))
    svals = (to_device(values.reshape(batch_shape + (min(m, n),)), A) if driver in ("gelsd", "gelss")
             else empty((0,), dtype=A._dtype, device=A._device))
    return to_device(solution.reshape(batch_shape + (n, k)), A), res, rank, svals


@autocast_function("linalg")
def lstsq(A, B, rcond=None, *, driver=None) -> _results.linalg_lstsq:
    """A least-squares solution of ``A X = B`` for each matrix pair (batch dims broadcast):
    ``(solution, residuals, rank, singular_values)`` with PyTorch's rules for which of the last
    three are filled (residuals when m > n and every A has full rank, except with the default
    'gelsy'; rank unless ``driver='gels'``; singular values for 'gelsd' and 'gelss'). Every driver computes the
    minimum-norm solution with the SVD (gelsd), which is what each gives for full-rank A."""
    op = "torch.linalg.lstsq"
    check_tensor(op, A, "input")
    check_tensor(op, B, "other")
    check_same_device(op, A, B)
    if A._dtype is not B._dtype:
        raise RuntimeError(f"{op}: Expected input and other to have the same dtype, but got input's dtype "
                           f"{scalar_type_name(A._dtype)} and other's dtype {scalar_type_name(B._dtype)}")
    if A.ndim < 2:
        raise RuntimeError(f"{op}: input must have at least 2 dimensions.")
    check_float(op, A)
    driver = "gelsy" if driver is None else driver
    if driver not in _DRIVERS:
        raise RuntimeError(f"{op}: parameter `driver` should be one of (gels, gelsy, gelsd, gelss)")
    vector = B.ndim == A.ndim - 1
    B_ = B.unsqueeze(-1) if vector else B
    if B_.ndim < 2 or B_._shape[-2] != A._shape[-2]:
        raise RuntimeError(f"{op}: input.size(-2) should match other.size(-2)")
    A_, B_ = _broadcast_pair(op, A, B_)
    if rcond is None:
        rcond = float(np.finfo(_dt.numpy_dtype(A._dtype)).eps) * max(A._shape[-2:])
    solution, residuals, rank, svals = _lstsq(A_, B_, float(rcond), driver)
    if vector:
        solution = solution.squeeze(-1)  # the residuals keep their column dim, as in PyTorch
    return _results.linalg_lstsq(solution, residuals, rank, svals)
