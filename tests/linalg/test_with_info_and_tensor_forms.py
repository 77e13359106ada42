"""linalg's _ex variants (cholesky_ex, inv_ex, solve_ex: LAPACK's info per matrix, NaN results
where one fails), tensorinv, tensorsolve and vander (issue 13): against NumPy float64 on every
device, PyTorch 2.13 for info and errors."""
import numpy as np
import pytest

import tensorplug as tp

R = np.random.default_rng(13)
NOT_PD = [[1.0, 2.0], [2.0, 1.0]]  # leading minor of order 2 negative
SINGULAR = [[1.0, 2.0], [2.0, 4.0]]  # second pivot zero
GOOD = [[2.0, 0.0], [0.0, 3.0]]


def test_info_per_matrix_and_results_where_they_succeed(device, torch):
    A = tp.tensor([NOT_PD, GOOD], device=device)
    L, info = tp.linalg.cholesky_ex(A)
    assert info.dtype == tp.int32 and info.cpu().tolist() == [2, 0]
    np.testing.assert_allclose(L[1].cpu().numpy(), np.linalg.cholesky(GOOD), atol=1e-6)
    assert np.isnan(L[0].cpu().numpy()).all()
    S = tp.tensor([SINGULAR, GOOD], device=device)
    inverse, info = tp.linalg.inv_ex(S)
    assert info.cpu().tolist() == [2, 0] and np.isnan(inverse[0].cpu().numpy()).all()
    np.testing.assert_allclose(inverse[1].cpu().numpy(), np.linalg.inv(GOOD), atol=1e-6)
    X, info = tp.linalg.solve_ex(S, tp.ones(2, 2, 1, device=device))
    assert info.cpu().tolist() == [2, 0]
    np.testing.assert_allclose(X[1].cpu().numpy(), np.linalg.solve(GOOD, np.ones((2, 1))), atol=1e-6)
    # PyTorch reports the same info.
    assert torch.linalg.cholesky_ex(torch.tensor([NOT_PD, GOOD])).info.tolist() == [2, 0]
    assert torch.linalg.inv_ex(torch.tensor([SINGULAR, GOOD])).info.tolist() == [2, 0]


def test_ex_variants_raise_with_check_errors_and_succeed_quietly():
    with pytest.raises(tp.linalg.LinAlgError, match="not positive-definite"):
        tp.linalg.cholesky_ex(tp.tensor(NOT_PD), check_errors=True)
    with pytest.raises(tp.linalg.LinAlgError):
        tp.linalg.inv_ex(tp.tensor(SINGULAR), check_errors=True)
    L, info = tp.linalg.cholesky_ex(tp.tensor(GOOD, dtype=tp.float64), upper=True)
    assert info.shape == () and info.item() == 0
    np.testing.assert_allclose(L.numpy(), np.linalg.cholesky(GOOD).T, atol=1e-15)


def test_tensorinv_and_tensorsolve_match_numpy(device):
    A = R.standard_normal((4, 6, 8, 3))
    np.testing.assert_allclose(tp.linalg.tensorinv(tp.tensor(A, device=device), ind=2).cpu().numpy(),
                               np.linalg.tensorinv(A, ind=2), atol=1e-10)
    M, B = R.standard_normal((2, 3, 6)), R.standard_normal((2, 3))
    np.testing.assert_allclose(tp.linalg.tensorsolve(tp.tensor(M, device=device), tp.tensor(B, device=device)).cpu().numpy(),
                               np.linalg.tensorsolve(M, B), atol=1e-10)
    M2 = R.standard_normal((6, 2, 3))
    np.testing.assert_allclose(tp.linalg.tensorsolve(tp.tensor(M2), tp.tensor(B), dims=(0,)).numpy(),
                               np.linalg.tensorsolve(M2, B, axes=(0,)), atol=1e-10)
    with pytest.raises(RuntimeError, match="prod"):
        tp.linalg.tensorinv(tp.ones(2, 3), ind=1)


def test_vander_matches_numpy(device):
    x = R.standard_normal((2, 4))
    want = np.stack([np.vander(row, 5, increasing=True) for row in x])
    np.testing.assert_allclose(tp.linalg.vander(tp.tensor(x, device=device), N=5).cpu().numpy(), want, rtol=1e-12)
    assert tp.linalg.vander(tp.tensor([1, 2])).tolist() == [[1, 1], [1, 2]]
