"""tp.linalg's solvers and decompositions against PyTorch 2.13 on every device: batched and
unbatched, an empty batch, non-contiguous inputs, float32 and float64."""
import numpy as np
import pytest

import tensorplug as tp
from linalg_inputs import general, spd, tolerance

SHAPES = [(4, 4), (2, 3, 4, 4), (0, 3, 3)]
DTYPES = ["float32", "float64"]


def _pair(torch, array, dtype, device):
    return tp.tensor(array, dtype=getattr(tp, dtype), device=device), torch.tensor(array, dtype=getattr(torch, dtype))


def _close(ours, theirs, dtype, scale=1.0):
    tol = tolerance(dtype)
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert ours.device.type in ("cpu", "opencl", "npdev")
    np.testing.assert_allclose(ours.cpu().numpy(), theirs.numpy(), rtol=tol["rtol"] * scale, atol=tol["atol"] * scale)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_inv_det_slogdet(device, torch, shape, dtype):
    """inv, det and slogdet equal PyTorch's, keep the input's dtype and device."""
    ours, theirs = _pair(torch, general(shape), dtype, device)
    result = tp.linalg.inv(ours)
    assert result.dtype == getattr(tp, dtype) and result.device.type == device
    _close(result, torch.linalg.inv(theirs), dtype)
    _close(tp.linalg.det(ours), torch.linalg.det(theirs), dtype, scale=10)
    sign, logabsdet = tp.linalg.slogdet(ours)
    expected = torch.linalg.slogdet(theirs)
    _close(sign, expected.sign, dtype)
    _close(logabsdet, expected.logabsdet, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_non_contiguous_input(device, torch, dtype):
    """A transposed (non-contiguous) batch is read through its strides."""
    array = general((3, 4, 4))
    ours, theirs = _pair(torch, array, dtype, device)
    assert not ours.mT.is_contiguous()
    _close(tp.linalg.inv(ours.mT), torch.linalg.inv(theirs.mT), dtype)
    _close(tp.linalg.solve(ours.mT, ours[:, :, :2]), torch.linalg.solve(theirs.mT, theirs[:, :, :2]), dtype)
    _close(tp.linalg.det(ours[::2]), torch.linalg.det(theirs[::2]), dtype, scale=10)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("left", [True, False])
def test_solve(device, torch, dtype, left):
    """Matrix and vector right-hand sides, broadcast batch dims, left and right solves."""
    A, tA = _pair(torch, general((2, 1, 3, 3)), dtype, device)
    B, tB = _pair(torch, np.random.default_rng(2).standard_normal((4, 3, 3)), dtype, device)
    _close(tp.linalg.solve(A, B, left=left), torch.linalg.solve(tA, tB, left=left), dtype)
    if left:  # PyTorch takes vectors only on the left (XA = B with a vector B is refused)
        v, tv = _pair(torch, np.arange(3.0), dtype, device)
        _close(tp.linalg.solve(A[0, 0], v), torch.linalg.solve(tA[0, 0], tv), dtype)
        batched_v, tbatched_v = _pair(torch, np.ones((2, 1, 3)), dtype, device)
        _close(tp.linalg.solve(A, batched_v), torch.linalg.solve(tA, tbatched_v), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("shape", SHAPES)
def test_cholesky(device, torch, shape, dtype, upper):
    """The factor equals PyTorch's; only one triangle of the input is read."""
    array = spd(shape)
    array_one_triangle = np.triu(array) if upper else np.tril(array)  # the other triangle is never read
    ours, theirs = _pair(torch, array_one_triangle, dtype, device)
    _, reference = _pair(torch, array, dtype, device)
    _close(tp.linalg.cholesky(ours, upper=upper), torch.linalg.cholesky(reference, upper=upper), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 4), (0, 4, 2)])
@pytest.mark.parametrize("mode", ["reduced", "complete", "r"])
def test_qr(device, torch, shape, dtype, mode):
    """Q and R equal PyTorch's (both are LAPACK's Householder QR, so the signs agree)."""
    array = np.random.default_rng(3).standard_normal(shape)
    ours, theirs = _pair(torch, array, dtype, device)
    Q, R = tp.linalg.qr(ours, mode=mode)
    expected = torch.linalg.qr(theirs, mode=mode)
    _close(Q, expected.Q, dtype)
    _close(R, expected.R, dtype)


def _svd_invariants(U, S, Vh, A, dtype, full):
    k = S.shape[-1]
    u, s, vh = U.cpu().numpy(), S.cpu().numpy(), Vh.cpu().numpy()
    tol = tolerance(dtype)
    rebuilt = (u[..., :k] * s[..., None, :]) @ vh[..., :k, :]
    np.testing.assert_allclose(rebuilt, A, rtol=tol["rtol"] * 10, atol=tol["atol"] * 10)
    m, n = A.shape[-2:]
    assert u.shape[-2:] == ((m, m) if full else (m, k)) and vh.shape[-2:] == ((n, n) if full else (k, n))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 4), (0, 3, 2)])
@pytest.mark.parametrize("full_matrices", [True, False])
def test_svd(device, torch, shape, dtype, full_matrices):
    """Singular values equal PyTorch's; U diag(S) Vh rebuilds A (the vectors' signs are free)."""
    array = np.random.default_rng(4).standard_normal(shape)
    ours, theirs = _pair(torch, array, dtype, device)
    U, S, Vh = tp.linalg.svd(ours, full_matrices=full_matrices)
    _close(S, torch.linalg.svd(theirs, full_matrices=full_matrices).S, dtype)
    _svd_invariants(U, S, Vh, array, dtype, full_matrices)
    _close(tp.linalg.svdvals(ours), torch.linalg.svdvals(theirs), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigh(device, torch, shape, dtype, uplo):
    """Eigenvalues equal PyTorch's; eigenvectors equal up to sign and diagonalise A."""
    array = spd(shape)
    array[..., 0, -1] += 1.0 if shape[-1] > 1 else 0.0  # asymmetric: UPLO decides which triangle counts
    ours, theirs = _pair(torch, array, dtype, device)
    w, V = tp.linalg.eigh(ours, UPLO=uplo)
    expected = torch.linalg.eigh(theirs, UPLO=uplo)
    _close(w, expected.eigenvalues, dtype, scale=10)
    signs = np.sign(np.sum(V.cpu().numpy() * expected.eigenvectors.numpy(), axis=-2, keepdims=True))
    np.testing.assert_allclose(V.cpu().numpy() * signs, expected.eigenvectors.numpy(), **tolerance(dtype))
    _close(tp.linalg.eigvalsh(ours, UPLO=uplo), torch.linalg.eigvalsh(theirs, UPLO=uplo), dtype, scale=10)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("driver", [None, "gels", "gelsd", "gelss"])
def test_lstsq(device, torch, dtype, driver):
    """Solution, residuals, rank and singular values as PyTorch fills them for each driver."""
    rng = np.random.default_rng(5)
    A, tA = _pair(torch, rng.standard_normal((2, 6, 3)), dtype, device)
    B, tB = _pair(torch, rng.standard_normal((2, 6, 2)), dtype, device)
    ours, theirs = tp.linalg.lstsq(A, B, driver=driver), torch.linalg.lstsq(tA, tB, driver=driver)
    for field in ("solution", "residuals", "singular_values"):
        _close(getattr(ours, field), getattr(theirs, field), dtype, scale=10)
    assert ours.rank.dtype == tp.int64 and ours.rank.tolist() == theirs.rank.tolist()


def test_lstsq_vector_and_wide(device, torch):
    """A vector right-hand side, and a wide (minimum-norm) system."""
    rng = np.random.default_rng(6)
    A, tA = _pair(torch, rng.standard_normal((5, 3)), "float64", device)
    b, tb = _pair(torch, rng.standard_normal(5), "float64", device)
    ours, theirs = tp.linalg.lstsq(A, b, driver="gelsd"), torch.linalg.lstsq(tA, tb, driver="gelsd")
    _close(ours.solution, theirs.solution, "float64")
    _close(ours.residuals, theirs.residuals, "float64")
    W, tW = _pair(torch, rng.standard_normal((3, 5)), "float64", device)
    c, tc = _pair(torch, rng.standard_normal((3, 2)), "float64", device)
    _close(tp.linalg.lstsq(W, c, driver="gelsd").solution, torch.linalg.lstsq(tW, tc, driver="gelsd").solution, "float64")
    empty, tempty = _pair(torch, np.zeros((0, 6, 3)), "float64", device)
    rhs, trhs = _pair(torch, np.zeros((0, 6, 2)), "float64", device)
    for ours, theirs in zip(tp.linalg.lstsq(empty, rhs, driver="gelsd"), torch.linalg.lstsq(tempty, trhs, driver="gelsd")):
        assert tuple(ours.shape) == tuple(theirs.shape)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 4)])
def test_pinv_and_matrix_rank(device, torch, shape, dtype):
    """pinv (also of a rank-deficient and a symmetric matrix) and matrix_rank equal PyTorch's."""
    array = np.random.default_rng(7).standard_normal(shape)
    ours, theirs = _pair(torch, array, dtype, device)
    _close(tp.linalg.pinv(ours), torch.linalg.pinv(theirs), dtype, scale=10)
    deficient = array.copy()
    deficient[..., -1] = deficient[..., 0]
    ours, theirs = _pair(torch, deficient, dtype, device)
    _close(tp.linalg.pinv(ours), torch.linalg.pinv(theirs), dtype, scale=10)
    assert tp.linalg.matrix_rank(ours).tolist() == torch.linalg.matrix_rank(theirs).tolist()
    assert tp.linalg.matrix_rank(ours, atol=1.0, rtol=0.0).tolist() == torch.linalg.matrix_rank(theirs, atol=1.0, rtol=0.0).tolist()
    sym, tsym = _pair(torch, spd((4, 4)) - 6 * np.eye(4), dtype, device)
    _close(tp.linalg.pinv(sym, hermitian=True), torch.linalg.pinv(tsym, hermitian=True), dtype, scale=10)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("left", [True, False])
def test_solve_triangular(device, torch, dtype, upper, left):
    """Only the chosen triangle is read; unitriangular takes ones on the diagonal."""
    rng = np.random.default_rng(8)
    A, tA = _pair(torch, general((2, 4, 4), rng), dtype, device)
    B, tB = _pair(torch, rng.standard_normal((2, 4, 4)), dtype, device)
    for unit in (False, True):
        ours = tp.linalg.solve_triangular(A, B, upper=upper, left=left, unitriangular=unit)
        _close(ours, torch.linalg.solve_triangular(tA, tB, upper=upper, left=left, unitriangular=unit), dtype, scale=10)


def test_out_and_named_tuples(device):
    """out= receives the result; named results unpack and expose PyTorch's field names."""
    A = tp.tensor(spd((3, 3)), device=device)
    out = tp.empty(0, device=device)
    assert tp.linalg.inv(A, out=out) is out
    np.testing.assert_allclose(out.cpu().numpy(), np.linalg.inv(spd((3, 3))), rtol=1e-5)
    assert tp.linalg.qr(A)._fields == ("Q", "R")
    assert tp.linalg.svd(A)._fields == ("U", "S", "Vh")
    assert tp.linalg.eigh(A)._fields == ("eigenvalues", "eigenvectors")
    assert tp.linalg.slogdet(A)._fields == ("sign", "logabsdet")
    assert tp.linalg.lstsq(A, A)._fields == ("solution", "residuals", "rank", "singular_values")
    w, V = tp.empty(0, device=device), tp.empty(0, device=device)
    result = tp.linalg.eigh(A, out=(w, V))
    assert result.eigenvalues is w and result.eigenvectors is V
