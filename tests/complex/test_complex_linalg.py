"""tp.linalg on complex matrices, on every device: values against NumPy's complex LAPACK results,
gradients against central differences and PyTorch 2.13. The complex operands go down to the
ops' host LAPACK kernels unchanged; the derivatives use conjugate transposes (PyTorch's)."""
import numpy as np
import pytest

import tensorplug as tp
from complex_gradients import numeric_gradient

DTYPES = [(tp.complex64, 1e-4), (tp.complex128, 1e-10)]


def _values(shape, seed):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def _hermitian_positive(n, seed):
    a = _values((n, n), seed)
    return a @ a.conj().T + n * np.eye(n)


def _close(ours, expected, rtol):
    got = ours.cpu().numpy()
    assert got.shape == np.shape(expected)
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=rtol)


@pytest.mark.parametrize("dtype,rtol", DTYPES, ids=["complex64", "complex128"])
def test_solvers_and_determinants(device, dtype, rtol):
    """inv, solve (matrix and vector right-hand sides, left=False), solve_triangular, det,
    slogdet, logdet, cholesky: values and dtypes as NumPy's (and PyTorch's: real logabsdet)."""
    a = _values((2, 3, 3), 1) + 3 * np.eye(3)
    b = _values((2, 3, 2), 2)
    A, B = tp.tensor(a, dtype=dtype, device=device), tp.tensor(b, dtype=dtype, device=device)
    a, b = A.cpu().numpy().astype(np.complex128), B.cpu().numpy().astype(np.complex128)
    _close(tp.linalg.inv(A), np.linalg.inv(a), rtol)
    _close(tp.linalg.solve(A, B), np.linalg.solve(a, b), rtol)
    _close(tp.linalg.solve(A, B[..., 0]), np.linalg.solve(a, b[..., :1])[..., 0], rtol)
    _close(tp.linalg.solve(A, B.mT, left=False), np.swapaxes(np.linalg.solve(np.swapaxes(a, -1, -2), b), -1, -2), rtol)
    upper = np.triu(a)
    _close(tp.linalg.solve_triangular(A, B, upper=True), np.linalg.solve(upper, b), rtol)
    _close(tp.linalg.det(A), np.linalg.det(a), rtol)
    sign, logabsdet = tp.linalg.slogdet(A)
    expected_sign, expected_log = np.linalg.slogdet(a)
    assert sign.dtype is dtype and logabsdet.dtype is dtype.to_real()
    _close(sign, expected_sign, rtol)
    _close(logabsdet, expected_log, rtol)
    _close(tp.logdet(A), np.log(np.linalg.det(a)), rtol)
    h = _hermitian_positive(3, 3)
    H = tp.tensor(h, dtype=dtype, device=device)
    _close(tp.linalg.cholesky(H), np.linalg.cholesky(H.cpu().numpy().astype(np.complex128)), rtol)


@pytest.mark.parametrize("dtype,rtol", DTYPES, ids=["complex64", "complex128"])
def test_decompositions_and_norms(device, dtype, rtol):
    """qr, svd, svdvals, eigh, eigvalsh reconstruct their input (and agree with NumPy where the
    result is unique); singular values and eigenvalues are real; the norms are real."""
    a = _values((4, 3), 4)
    A = tp.tensor(a, dtype=dtype, device=device)
    a = A.cpu().numpy().astype(np.complex128)
    Q, R = tp.linalg.qr(A)
    _close(Q @ R, a, rtol * 10)
    _close(Q.mH @ Q, np.eye(3), rtol * 10)
    U, S, Vh = tp.linalg.svd(A, full_matrices=False)
    assert S.dtype is dtype.to_real()
    _close(S, np.linalg.svd(a, compute_uv=False), rtol)
    _close((U * S.to(dtype).unsqueeze(-2)) @ Vh, a, rtol * 10)
    _close(tp.linalg.svdvals(A), np.linalg.svd(a, compute_uv=False), rtol)
    h = _hermitian_positive(3, 5) - 4 * np.eye(3)
    H = tp.tensor(h, dtype=dtype, device=device)
    w, V = tp.linalg.eigh(H)
    assert w.dtype is dtype.to_real()
    _close(w, np.linalg.eigvalsh(h), rtol * 10)
    _close((V * w.to(dtype).unsqueeze(-2)) @ V.mH, h, rtol * 10)
    _close(tp.linalg.eigvalsh(H), np.linalg.eigvalsh(h), rtol * 10)
    for ord in (2, 1, np.inf, 0.5):
        result = tp.linalg.vector_norm(A, ord)
        assert result.dtype is dtype.to_real()
        _close(result, np.linalg.norm(a.reshape(-1), ord), rtol)
    _close(tp.linalg.vector_norm(A, dim=1), np.linalg.norm(a, axis=1), rtol)
    for ord in ("fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf):
        _close(tp.linalg.matrix_norm(A, ord), np.linalg.norm(a, ord), rtol)
    _close(tp.linalg.norm(A), np.linalg.norm(a), rtol)
    _close(tp.linalg.pinv(A), np.linalg.pinv(a), rtol * 10)
    b = _values((4, 2), 6)
    _close(tp.linalg.lstsq(A, tp.tensor(b, dtype=dtype, device=device)).solution,
           np.linalg.lstsq(a, b.astype(np.complex128), rcond=None)[0], rtol * 10)


# --- gradients ------------------------------------------------------------------------------


W = np.array([[0.3 - 0.7j, 1.1 + 0.2j, -0.4j], [0.9, -0.5 + 0.5j, 0.25 + 1j], [-1.2 + 0.3j, 0.6j, 0.8 - 0.1j]])


def _w(L, z):
    return L.tensor(W, dtype=z.dtype, device=z.device)


def _projector(v):
    # v v^H: independent of the eigenvector's phase (one eigh call, so PyTorch can tell)
    return v @ v.conj().T if isinstance(v, np.ndarray) else v @ v.mH


def _spd(z):
    return z @ z.conj().T + 3 * np.eye(3)


# name -> (tensorplug/torch expression of a real loss of a 3 x 3 complex z, the NumPy expression).
# Losses of eigenvectors and singular vectors are invariant under their phases, as they must be.
CASES = {
    "inv": (lambda L, z: (L.linalg.inv(z) * _w(L, z)).real.sum(), lambda z: (np.linalg.inv(z) * W).real.sum()),
    "solve": (lambda L, z: (L.linalg.solve(z, _w(L, z)) ** 2).imag.sum(), lambda z: (np.linalg.solve(z, W) ** 2).imag.sum()),
    "solve_rhs": (lambda L, z: L.linalg.solve(_w(L, z), z).real.sum(), lambda z: np.linalg.solve(W, z).real.sum()),
    "solve_triangular": (lambda L, z: (L.linalg.solve_triangular(z + 3 * L.eye(3, device=z.device), _w(L, z), upper=True)
                                       * 1j).real.sum(),
                         lambda z: (np.linalg.solve(np.triu(z + 3 * np.eye(3)), W) * 1j).real.sum()),
    "det": (lambda L, z: (L.linalg.det(z) * (1 - 2j)).real, lambda z: (np.linalg.det(z) * (1 - 2j)).real),
    "slogdet": (lambda L, z: L.linalg.slogdet(z)[1] + (L.linalg.slogdet(z)[0] * (2 + 1j)).real,
                lambda z: np.linalg.slogdet(z)[1] + (np.linalg.slogdet(z)[0] * (2 + 1j)).real),
    "logdet": (lambda L, z: L.logdet(z).imag, lambda z: np.log(np.linalg.det(z)).imag),
    "cholesky": (lambda L, z: (L.linalg.cholesky(z @ z.mH + 3 * L.eye(3, device=z.device)) * _w(L, z)).real.sum(),
                 lambda z: (np.linalg.cholesky(_spd(z)) * W).real.sum()),
    "vector_norm": (lambda L, z: L.linalg.vector_norm(z, 3), lambda z: np.linalg.norm(z.reshape(-1), 3)),
    "matrix_norm_fro": (lambda L, z: L.linalg.matrix_norm(z), lambda z: np.linalg.norm(z)),
    "matrix_norm_nuc": (lambda L, z: L.linalg.matrix_norm(z, "nuc"), lambda z: np.linalg.norm(z, "nuc")),
    "svdvals": (lambda L, z: (L.linalg.svdvals(z) * L.tensor([1.0, 2.0, 3.0], dtype=z.real.dtype, device=z.device)).sum(),
                lambda z: (np.linalg.svd(z, compute_uv=False) * [1, 2, 3]).sum()),
    "eigvalsh": (lambda L, z: (L.linalg.eigvalsh(z + z.mH) ** 2).sum(), lambda z: (np.linalg.eigvalsh(z + z.conj().T) ** 2).sum()),
    "eigh_projector": (lambda L, z: (_projector(L.linalg.eigh(z + z.mH)[1][:, :1]) * _w(L, z)).real.sum(),
                       lambda z: (_projector(np.linalg.eigh(z + z.conj().T)[1][:, :1]) * W).real.sum()),
    "pinv": (lambda L, z: (L.linalg.pinv(z[:, :2]) * _w(L, z)[:2]).real.sum(), lambda z: (np.linalg.pinv(z[:, :2]) * W[:2]).real.sum()),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradient_matches_finite_differences(device, name):
    expression, reference = CASES[name]
    z = _values((3, 3), 7) + 1.5 * np.eye(3)
    t = tp.tensor(z, dtype=tp.complex128, device=device, requires_grad=True)
    expression(tp, t).backward()
    assert t.grad.dtype is tp.complex128
    np.testing.assert_allclose(t.grad.cpu().numpy(), numeric_gradient(reference, z), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradient_matches_pytorch(name):
    torch = pytest.importorskip("torch", reason="PyTorch 2.13 is a reference here (pip install torch==2.13.0)")
    expression, _ = CASES[name]
    z = _values((3, 3), 8) + 1.5 * np.eye(3)
    ours = tp.tensor(z, dtype=tp.complex128, requires_grad=True)
    theirs = torch.tensor(z, dtype=torch.complex128, requires_grad=True)
    expression(tp, ours).backward()
    expression(torch, theirs).backward()
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.resolve_conj().numpy(), rtol=1e-8, atol=1e-10)


def test_det_gradient_of_singular_matrix():
    """det's gradient at a singular complex matrix comes from the cofactors (no inverse)."""
    a = np.array([[1 + 1j, 2 - 1j, 0.5j], [2 + 2j, 4 - 2j, 1j], [0.3, -1j, 2.0]])  # row 2 = 2 * row 1
    t = tp.tensor(a, dtype=tp.complex128, requires_grad=True)
    (tp.linalg.det(t) * (1 + 1j)).real.backward()
    np.testing.assert_allclose(t.grad.numpy(), numeric_gradient(lambda z: (np.linalg.det(z) * (1 + 1j)).real, a),
                               rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5)], ids=["square", "tall", "wide"])
def test_qr_factor_gradients(shape):
    """Q and R of a complex matrix (R's diagonal real, as LAPACK's) are differentiable: a loss of
    both factors against central differences (NumPy's QR has the same conventions)."""
    a = _values(shape, 11)
    k = min(shape)
    wq, wr = _values((shape[0], k), 12), _values((k, shape[1]), 13)

    def loss_np(z):
        q, r = np.linalg.qr(z)
        return (q * wq).sum().real + np.abs((r * wr).sum())

    t = tp.tensor(a, dtype=tp.complex128, requires_grad=True)
    Q, R = tp.linalg.qr(t)
    ((Q * tp.tensor(wq)).sum().real + (R * tp.tensor(wr)).sum().abs()).backward()
    np.testing.assert_allclose(t.grad.numpy(), numeric_gradient(loss_np, a), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5)], ids=["square", "tall", "wide"])
def test_svd_vector_gradients_of_phase_invariant_losses(shape):
    """U and Vh of a complex matrix are differentiable for losses that do not depend on each
    vector pair's phase (U @ Vh, |U|^2, S): against central differences."""
    a = _values(shape, 21)
    k = min(shape)
    w, wu = _values(shape, 22), np.abs(_values((shape[0], k), 23))

    def loss_np(z):
        u, sv, vh = np.linalg.svd(z, full_matrices=False)
        return ((u @ vh) * w).sum().real + sv.sum() + (np.abs(u) ** 2 * wu).sum()

    t = tp.tensor(a, dtype=tp.complex128, requires_grad=True)
    U, S, Vh = tp.linalg.svd(t, full_matrices=False)
    (((U @ Vh) * tp.tensor(w)).sum().real + S.sum() + (U.abs() ** 2 * tp.tensor(wu)).sum()).backward()
    np.testing.assert_allclose(t.grad.numpy(), numeric_gradient(loss_np, a), rtol=1e-6, atol=1e-7)


def test_svd_loss_that_depends_on_the_phase_is_refused():
    """Re(U) changes when a singular vector pair turns by e^(i phi): no gradient, as in PyTorch."""
    t = tp.tensor(_values((3, 3), 9), dtype=tp.complex128, requires_grad=True)
    loss = tp.linalg.svd(t)[0].real.sum()
    with pytest.raises(RuntimeError, match="linalg.svd: the singular vectors of a complex matrix are defined up to a "
                                           "phase"):
        loss.backward()


def test_factor_gradients_match_torch():
    torch = pytest.importorskip("torch", reason="PyTorch is not installed: compared with central differences only")
    a = _values((4, 3), 31)
    w = _values((4, 3), 32)
    grads = []
    for lib in (tp, torch):
        t = lib.tensor(a, dtype=lib.complex128, requires_grad=True)
        Q, R = lib.linalg.qr(t)
        U, S, Vh = lib.linalg.svd(t, full_matrices=False)
        ((Q * lib.tensor(w)).sum().real + R.abs().sum() + ((U @ Vh) * lib.tensor(w)).sum().imag).backward()
        grads.append(t.grad.detach().numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-10, atol=1e-12)