"""Matrix decompositions: qr, svd, svdvals, eigh, eigvalsh, eig, eigvals.

Each is an op whose kernel runs LAPACK through NumPy on the host (_host.py) and whose derivative
sits beside it. The derivatives are the standard ones (PyTorch's, for real inputs):

* qr (reduced, or complete with m <= n): gA = (gQ + Q copyltu(M)) R^-T, M = R gR^T - gQ^T Q,
  with the wide case split into A = [X | Y];
* svd: from the skew parts of U^T gU and V^T gV divided by s_j^2 - s_i^2, plus the parts of gU
  and gV outside the span of U and V (full_matrices=True differentiates the reduced factors);
* eigh: V (diag(gw) + skew(V^T gV) / (w_j - w_i)) V^T;
* eig (complex eigenvalues and eigenvectors, also of real input): V^-H (diag(gL) + (V^H gV -
  V^H V Re(diag(V^H gV))) / conj(L_j - L_i)) V^H, the middle term removing the part of gV that
  only rescales the unit-norm eigenvectors; the real part for real input.

Gradients through singular vectors or eigenvectors are undefined where singular values or
eigenvalues repeat (the division above is by zero), as in PyTorch; the values alone (svdvals,
eigvalsh, gS or gw only) differentiate everywhere.
"""
from __future__ import annotations

import numpy as np

from ..frontend.factories import empty, eye, zeros
from ..frontend.ops._common import write_out
from ..frontend.ops.joining import cat
from ..frontend.meta_device import has_values
from ..frontend.tensor import Tensor
from . import _results
from ._checks import check_float, check_matrix, check_square, check_tensor
from ._host import to_device, to_host
from ._op import linalg_op
from ._solvers import _solve_triangular
from ..frontend.autocast_hook import autocast_function
from ..frontend.ops.out_rehearsal import rehearse_out

__all__ = ["qr", "svd", "svdvals", "eigh", "eigvalsh", "eig", "eigvals"]


def _diag_embed(values: Tensor) -> Tensor:
    n = values._shape[-1]
    return values.unsqueeze(-1) * eye(n, dtype=values._dtype, device=values._device)


def _zeros_for(grad, like: Tensor) -> Tensor:
    return grad if grad is not None else zeros(like._shape, dtype=like._dtype, device=like._device)


# -- qr ---------------------------------------------------------------------------------------

def _qr_tall_backward(gQ: Tensor, gR: Tensor, Q: Tensor, R: Tensor) -> Tensor:
    """gA for A = QR with Q (m, n) and R (n, n) square: (gQ + Q S) R^-H, where S is M = R gR^H -
    gQ^H Q with its lower triangle mirrored (conjugated) into the upper one. For complex A the
    diagonal of S is M's real part: R's diagonal is real, so the imaginary parts of Q^H dQ's
    diagonal are what moves Q there, and differentiating through that constraint leaves Re."""
    M = R @ gR.mH - gQ.mH @ Q
    if M._dtype.is_complex:
        lower = M.tril(-1)
        symmetric = lower + lower.mH + _diag_embed(M.diagonal(0, -2, -1).real)
    else:
        symmetric = M.tril() + M.tril(-1).mH  # copy the lower triangle to the upper one
    right = gQ + Q @ symmetric
    # right @ R^-T, as the solution of R X^T = right^T.
    return _solve_triangular(R, right.mH, True, False).mH


def _qr_backward(grads, inputs, outputs, needs):
    (gQ, gR), (A, mode), (Q, R) = grads, inputs, outputs
    m, n = A._shape[-2:]
    if mode == "r":
        raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed when mode='r'. Please use "
                           "linalg.qr(A, mode='reduced') if you are going to differentiate through linalg.qr.")
    if mode == "complete" and m > n:
        raise RuntimeError("The QR decomposition is not differentiable when mode='complete' and nrows > ncols.")
    gQ, gR = _zeros_for(gQ, Q), _zeros_for(gR, R)
    if m >= n:
        return (_qr_tall_backward(gQ, gR, Q, R),)
    # A = [X | Y] with X = Q U square; Y = Q V adds gY = Q gV and feeds Y gV^T back into gQ.
    Y, gV = A[..., m:], gR[..., m:]
    gX = _qr_tall_backward(gQ + Y @ gV.mH, gR[..., :m], Q, R[..., :m])
    return (cat([gX, Q @ gV], -1),)


@linalg_op("linalg_qr", derivative=_qr_backward)
def _qr(A, mode):
    a = to_host(A)
    if mode == "r":
        return empty((0,), dtype=A._dtype, device=A._device), to_device(np.linalg.qr(a, mode="r"), A)
    q, r = np.linalg.qr(a, mode=mode)
    return to_device(q, A), to_device(r, A)


@autocast_function("linalg")
def qr(A, mode="reduced", *, out=None) -> _results.linalg_qr:
    """``(Q, R)`` with ``A = Q R``, Q orthonormal columns and R upper triangular; ``mode`` is
    'reduced' (Q is m x k, k = min(m, n)), 'complete' (Q is m x m) or 'r' (R only; Q empty).

    >>> import tensorplug as tp
    >>> Q, R = tp.linalg.qr(tp.tensor([[3.0, 1.0], [4.0, 2.0]]))
    >>> tp.allclose(Q @ R, tp.tensor([[3.0, 1.0], [4.0, 2.0]]))
    True
    """
    if out is not None:
        rehearse_out(qr, locals())
    check_tensor("linalg.qr", A)
    check_matrix("linalg.qr", A)
    check_float("linalg.qr", A)
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), 'r', "
                           f"or 'complete'")
    Q, R = _qr(A, mode)
    if out is not None:
        Q, R = (write_out("linalg.qr", o, r) for o, r in zip(out, (Q, R)))
    return _results.linalg_qr(Q, R)


# -- svd --------------------------------------------------------------------------------------

def _svd_phase_term(UtgU, VtgV, S):
    """Complex SVD: each pair of singular vectors is defined up to a common phase e^(i phi)
    (u -> u e^(i phi), v -> v e^(i phi)). Fixing that gauge, the imaginary part of diag(U^H dU)
    is Im(diag(U^H dA V)) / S, which adds i Im(diag(U^H gU)) / S to the gradient's diagonal; a
    loss that depends on the phase (Im diag(U^H gU) + Im diag(V^H gV) != 0) has no gradient, and
    is refused as PyTorch refuses it."""
    zeros_like_s = S * 0
    im_u = UtgU.diagonal(0, -2, -1).imag if UtgU is not None else zeros_like_s
    im_v = VtgV.diagonal(0, -2, -1).imag if VtgV is not None else zeros_like_s
    drift = (im_u + im_v).abs().max().item() if S.numel() else 0.0
    scale = max(im_u.abs().max().item(), im_v.abs().max().item(), 1.0) if S.numel() else 1.0
    if drift > 1e-4 * scale:
        raise RuntimeError("linalg.svd: the singular vectors of a complex matrix are defined up to a phase e^(i phi) "
                           "each, and the loss depends on that phase (Im diag(U^H gU) + Im diag(V^H gV) is not 0): "
                           "its gradient is not defined; make the loss invariant to the phase (e.g. use |U|, or U @ Vh)")
    return _diag_embed(im_u / S) * 1j


def _svd_backward(grads, inputs, outputs, needs):
    (gU, gS, gVh), (A, full_matrices), (U, S, Vh) = grads, inputs, outputs
    m, n = A._shape[-2:]
    k = S._shape[-1]
    if full_matrices:  # only the reduced factors depend on A smoothly (PyTorch narrows too)
        U, Vh = U[..., :k], Vh[..., :k, :]
        gU = gU[..., :k] if gU is not None else None
        gVh = gVh[..., :k, :] if gVh is not None else None
    if gU is None and gVh is None:
        return (U @ (gS.unsqueeze(-1) * Vh),)
    V = Vh.mH
    gV = gVh.mH if gVh is not None else None
    squares = S * S
    gap = squares.unsqueeze(-2) - squares.unsqueeze(-1)  # s_j^2 - s_i^2 at (i, j)
    gap = gap + eye(k, dtype=gap._dtype, device=gap._device)  # the diagonal is zeroed by skew below
    inner = 0
    UtgU = U.mH @ gU if gU is not None else None
    VtgV = V.mH @ gV if gV is not None else None
    if UtgU is not None:
        inner = inner + ((UtgU - UtgU.mH) / gap) * S.unsqueeze(-2)
    if VtgV is not None:
        inner = inner + S.unsqueeze(-1) * ((VtgV - VtgV.mH) / gap)
    if A._dtype.is_complex:
        inner = inner + _svd_phase_term(UtgU, VtgV, S)
    if gS is not None:
        inner = inner + _diag_embed(gS)
    if m > n and gU is not None:
        scaled = gU / S.unsqueeze(-2)
        return ((U @ inner + scaled - U @ (U.mH @ scaled)) @ Vh,)
    if m < n and gV is not None:
        scaled = gV / S.unsqueeze(-2)
        return (U @ (inner @ Vh + scaled.mH - (scaled.mH @ V) @ Vh),)
    return (U @ inner @ Vh,)


@linalg_op("linalg_svd", derivative=_svd_backward)
def _svd(A, full_matrices):
    u, s, vh = np.linalg.svd(to_host(A), full_matrices=full_matrices)
    return to_device(u, A), to_device(s, A, A._dtype.to_real()), to_device(vh, A)


def _check_driver(op: str, driver) -> None:
    if driver is not None:
        raise RuntimeError(f"{op}: keyword argument `driver=` is only supported on CUDA inputs with cuSOLVER backend.")


@autocast_function("linalg")
def svd(A, full_matrices=True, *, driver=None, out=None) -> _results.linalg_svd:
    """``(U, S, Vh)`` with ``A = U diag(S) Vh``, singular values descending. Gradients need
    ``full_matrices=False`` unless only S is used (the extra columns are not unique)."""
    if out is not None:
        rehearse_out(svd, locals())
    check_tensor("linalg.svd", A)
    check_matrix("linalg.svd", A)
    check_float("linalg.svd", A)
    _check_driver("linalg.svd", driver)
    U, S, Vh = _svd(A, bool(full_matrices))
    if out is not None:
        U, S, Vh = (write_out("linalg.svd", o, r) for o, r in zip(out, (U, S, Vh)))
    return _results.linalg_svd(U, S, Vh)


def _svdvals_backward(grads, inputs, outputs, needs):
    (g,), (A,) = grads, inputs
    U, _, Vh = _svd(A, False)
    return (U @ (g.unsqueeze(-1) * Vh),)


@linalg_op("linalg_svdvals", derivative=_svdvals_backward)
def _svdvals(A):
    return to_device(np.linalg.svd(to_host(A), compute_uv=False), A, A._dtype.to_real())


@autocast_function("linalg")
def svdvals(A, *, driver=None, out=None) -> Tensor:
    """The singular values of each matrix, descending (no singular vectors are computed unless
    a gradient needs them)."""
    if out is not None:
        rehearse_out(svdvals, locals())
    check_tensor("linalg.svdvals", A)
    check_matrix("linalg.svdvals", A)
    check_float("linalg.svdvals", A)
    _check_driver("linalg.svdvals", driver)
    return write_out("linalg.svdvals", out, _svdvals(A))


# -- eigh -------------------------------------------------------------------------------------

def _eigh_backward(grads, inputs, outputs, needs):
    (gw, gV), (w, V) = grads, outputs
    if gV is None:
        return (V @ (gw.unsqueeze(-1) * V.mH),)
    VtgV = V.mH @ gV
    n = w._shape[-1]
    gap = w.unsqueeze(-2) - w.unsqueeze(-1) + eye(n, dtype=w._dtype, device=w._device)  # w_j - w_i
    inner = 0.5 * (VtgV - VtgV.mH) / gap
    if gw is not None:
        inner = inner + _diag_embed(gw)
    return (V @ inner @ V.mH,)


@linalg_op("linalg_eigh", derivative=_eigh_backward)
def _eigh(A, UPLO):
    w, v = np.linalg.eigh(to_host(A), UPLO=UPLO)
    return to_device(w, A, A._dtype.to_real()), to_device(v, A)


def _check_uplo(UPLO) -> str:
    if UPLO not in ("L", "U", "l", "u"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    return UPLO.upper()


@autocast_function("linalg")
def eigh(A, UPLO="L", *, out=None) -> _results.linalg_eigh:
    """``(eigenvalues, eigenvectors)`` of each symmetric matrix, reading its lower (``UPLO='L'``)
    or upper triangle; eigenvalues ascending, eigenvectors in the columns."""
    if out is not None:
        rehearse_out(eigh, locals())
    check_tensor("linalg.eigh", A)
    check_square("linalg.eigh", A)
    check_float("linalg.eigh", A)
    w, V = _eigh(A, _check_uplo(UPLO))
    if out is not None:
        w, V = (write_out("linalg.eigh", o, r) for o, r in zip(out, (w, V)))
    return _results.linalg_eigh(w, V)


def _eigvalsh_backward(grads, inputs, outputs, needs):
    (g,), (A, UPLO) = grads, inputs
    _, V = _eigh(A, UPLO)
    return (V @ (g.unsqueeze(-1) * V.mH),)


@linalg_op("linalg_eigvalsh", derivative=_eigvalsh_backward)
def _eigvalsh(A, UPLO):
    return to_device(np.linalg.eigvalsh(to_host(A), UPLO=UPLO), A, A._dtype.to_real())


@autocast_function("linalg")
def eigvalsh(A, UPLO="L", *, out=None) -> Tensor:
    """The eigenvalues of each symmetric matrix, ascending."""
    if out is not None:
        rehearse_out(eigvalsh, locals())
    check_tensor("linalg.eigvalsh", A)
    check_square("linalg.eigvalsh", A)
    check_float("linalg.eigvalsh", A)
    return write_out("linalg.eigvalsh", out, _eigvalsh(A, _check_uplo(UPLO)))


# -- eig --------------------------------------------------------------------------------------

def _eig_gradient(gL, gV, A: Tensor, L: Tensor, V: Tensor) -> Tensor:
    from ..frontend.complex import real
    from ._solvers import _solve

    n = L._shape[-1]
    identity = eye(n, dtype=L._dtype, device=L._device)
    inner = 0
    if gV is not None:
        VhgV = V.mH @ gV
        diagonal = VhgV.diagonal(0, -2, -1)
        # An eigenvector is defined up to a phase e^{i phi}; a loss that depends on it has no
        # gradient (PyTorch refuses it likewise). The real part of the diagonal rescales the
        # unit-norm eigenvector: project it out.
        phase = diagonal.imag if diagonal._dtype.is_complex else None
        if phase is not None and has_values(phase) and bool((phase.abs() > 1e-2 * (1.0 + diagonal.abs())).any()):
            raise RuntimeError("linalg.eig: the eigenvectors are only defined up to a phase e^{i phi}, and the loss "
                               "depends on it, so its gradient is not defined")
        VhgV = VhgV - V.mH @ (V * real(diagonal).unsqueeze(-2))
        gap = (L.unsqueeze(-2) - L.unsqueeze(-1)).conj() + identity  # conj(L_j - L_i) at (i, j), 1 on the diagonal
        inner = VhgV / gap * (1.0 - identity)
    if gL is not None:
        inner = inner + gL.unsqueeze(-1) * identity
    gA = _solve(V.mH, inner @ V.mH)
    return gA if A._dtype.is_complex else real(gA).contiguous()


def _eig_backward(grads, inputs, outputs, needs):
    (gL, gV), (A,), (L, V) = grads, inputs, outputs
    return (_eig_gradient(gL, gV, A, L, V),)


@linalg_op("linalg_eig", derivative=_eig_backward)
def _eig(A):
    # NumPy gives real arrays when every eigenvalue of a real matrix is real; PyTorch's results
    # are always complex (eigenvalues and eigenvectors of a real matrix may be).
    w, v = np.linalg.eig(to_host(A))
    dtype = A._dtype.to_complex()
    return to_device(w, A, dtype), to_device(v, A, dtype)


@autocast_function("linalg")
def eig(A, *, out=None) -> _results.linalg_eig:
    """``(eigenvalues, eigenvectors)`` of each square matrix: complex (complex64 for float32 and
    complex64 input, complex128 for float64 and complex128), eigenvectors in the columns with
    unit norm, in LAPACK's order (geev, as PyTorch on the CPU). Gradients need a loss that does
    not depend on the eigenvectors' phases."""
    if out is not None:
        rehearse_out(eig, locals())
    check_tensor("linalg.eig", A)
    check_square("linalg.eig", A)
    check_float("linalg.eig", A)
    L, V = _eig(A)
    if out is not None:
        L, V = (write_out("linalg.eig", o, r) for o, r in zip(out, (L, V)))
    return _results.linalg_eig(L, V)


def _eigvals_backward(grads, inputs, outputs, needs):
    (g,), (A,) = grads, inputs
    L, V = _eig(A)
    return (_eig_gradient(g, None, A, L, V),)


@linalg_op("linalg_eigvals", derivative=_eigvals_backward)
def _eigvals(A):
    return to_device(np.linalg.eigvals(to_host(A)), A, A._dtype.to_complex())


@autocast_function("linalg")
def eigvals(A, *, out=None) -> Tensor:
    """The (complex) eigenvalues of each square matrix, as :func:`eig` orders them."""
    if out is not None:
        rehearse_out(eigvals, locals())
    check_tensor("linalg.eigvals", A)
    check_square("linalg.eigvals", A)
    check_float("linalg.eigvals", A)
    return write_out("linalg.eigvals", out, _eigvals(A))
