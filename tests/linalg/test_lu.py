"""linalg.lu_factor, lu_factor_ex, lu and lu_solve (issue 13): the factors checked against
NumPy float64 (P L U rebuilds A, the solves match numpy.linalg.solve, the gradients finite
differences) on every device; PyTorch 2.13 for pivots, gradients and errors."""
import numpy as np
import pytest

import tensorplug as tp

R = np.random.default_rng(5)


def _rebuilt(P, L, U):
    return (P @ L @ U).cpu().numpy()


@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 3), (3, 5), (5, 3)])
def test_lu_rebuilds_a_with_partial_pivoting(device, shape):
    A = R.normal(size=shape)
    P, L, U = tp.linalg.lu(tp.tensor(A, device=device))
    np.testing.assert_allclose(_rebuilt(P, L, U), A, atol=1e-13)
    k = min(shape[-2:])
    lower, upper = L.cpu().numpy(), U.cpu().numpy()
    assert lower.shape[-2:] == (shape[-2], k) and upper.shape[-2:] == (k, shape[-1])
    np.testing.assert_array_equal(np.triu(lower, 1), 0)
    np.testing.assert_array_equal(np.diagonal(lower, axis1=-2, axis2=-1), 1)
    np.testing.assert_array_equal(np.tril(upper, -1), 0)
    assert np.abs(lower).max() <= 1  # partial pivoting: no multiplier above 1 in magnitude
    LU, pivots, info = tp.linalg.lu_factor_ex(tp.tensor(A, device=device))
    assert pivots.dtype == tp.int32 and info.dtype == tp.int32 and not info.cpu().numpy().any()


def test_pivots_and_factors_agree_with_pytorch():
    torch = pytest.importorskip("torch")
    for A in (R.normal(size=(3, 6, 6)), R.normal(size=(4, 4)) + 1j * R.normal(size=(4, 4)), np.ones((2, 3))):
        ours = tp.linalg.lu_factor_ex(tp.tensor(A))
        theirs = torch.linalg.lu_factor_ex(torch.tensor(A))
        np.testing.assert_array_equal(ours.pivots.numpy(), theirs.pivots.numpy())
        np.testing.assert_array_equal(ours.info.numpy(), theirs.info.numpy())
        np.testing.assert_allclose(ours.LU.numpy(), theirs.LU.numpy(), atol=1e-12)


@pytest.mark.parametrize("left,adjoint", [(True, False), (True, True), (False, False), (False, True)])
def test_lu_solve_matches_numpy(device, left, adjoint):
    A = R.normal(size=(2, 4, 4)) + 4 * np.eye(4)
    B = R.normal(size=(4, 3)) if left else R.normal(size=(3, 4))
    LU, pivots = tp.linalg.lu_factor(tp.tensor(A, device=device))
    X = tp.linalg.lu_solve(LU, pivots, tp.tensor(B, device=device), left=left, adjoint=adjoint).cpu().numpy()
    system = np.swapaxes(A, -1, -2) if adjoint else A
    expected = np.linalg.solve(system, B) if left else np.swapaxes(np.linalg.solve(np.swapaxes(system, -1, -2), B.T), -1, -2)
    np.testing.assert_allclose(X, expected, rtol=1e-10, atol=1e-12)


def _numeric_gradient(f, A, step=1e-6):
    out = np.zeros_like(A)
    for index in np.ndindex(A.shape):
        plus, minus = A.copy(), A.copy()
        plus[index] += step
        minus[index] -= step
        out[index] = (f(plus) - f(minus)) / (2 * step)
    return out


def _numpy_lu(A):
    """Doolittle with partial pivoting in float64, for the finite differences (no pivot change
    within one step for these well-separated inputs)."""
    a, m, n = A.copy(), *A.shape
    for j in range(min(m, n)):
        best = j + np.argmax(np.abs(a[j:, j]))
        a[[j, best]] = a[[best, j]]
        a[j + 1:, j] /= a[j, j]
        a[j + 1:, j + 1:] -= np.outer(a[j + 1:, j], a[j, j + 1:])
    return a


@pytest.mark.parametrize("shape", [(3, 3), (2, 4), (4, 2)])
def test_lu_factor_gradient_matches_finite_differences(device, shape):
    A = R.normal(size=shape)
    W = R.normal(size=shape)
    t = tp.tensor(A, device=device, requires_grad=True)
    (tp.linalg.lu_factor_ex(t).LU * tp.tensor(W, device=device)).sum().backward()
    expected = _numeric_gradient(lambda a: (_numpy_lu(a) * W).sum(), A)
    np.testing.assert_allclose(t.grad.cpu().numpy(), expected, rtol=1e-5, atol=1e-6)


def test_lu_solve_gradients_match_pytorch():
    torch = pytest.importorskip("torch")
    A, B = R.normal(size=(3, 3)) + 3 * np.eye(3), R.normal(size=(3, 2))
    grads = []
    for lib in (tp, torch):
        a, b = lib.tensor(A, requires_grad=True), lib.tensor(B, requires_grad=True)
        LU, pivots = lib.linalg.lu_factor(a)
        (lib.linalg.lu_solve(LU, pivots, b, adjoint=True) ** 2).sum().backward()
        grads.append((a.grad.numpy(), b.grad.numpy()))
    for ours, theirs in zip(*grads):
        np.testing.assert_allclose(ours, theirs, rtol=1e-10)


def test_singular_input():
    singular = tp.tensor([[[1.0, 0.0], [0.0, 1.0]], [[1.0, 2.0], [2.0, 4.0]]])
    LU, pivots, info = tp.linalg.lu_factor_ex(singular)
    assert info.tolist() == [0, 2]
    with pytest.raises(tp.linalg.LinAlgError, match=r"\(Batch element 1\): U\[2,2\] is zero"):
        tp.linalg.lu_factor(singular)
    with pytest.raises(tp.linalg.LinAlgError, match="lu_factor_ex"):
        tp.linalg.lu_factor_ex(singular, check_errors=True)
    P, L, U = tp.linalg.lu(singular)  # lu never raises
    np.testing.assert_allclose((P @ L @ U).numpy(), singular.numpy())


BAD = [
    lambda L: L.linalg.lu_factor(L.ones(3)),
    lambda L: L.linalg.lu_factor(L.ones(2, 2, dtype=L.int64)),
    lambda L: L.linalg.lu_factor(L.eye(2), pivot=False),
    lambda L: L.linalg.lu_solve(*L.linalg.lu_factor(L.eye(2)), L.ones(3, 1)),
    lambda L: L.linalg.lu_solve(*L.linalg.lu_factor(L.eye(2)), L.ones(2)),
    lambda L: L.linalg.lu_solve(L.eye(2), L.tensor([1, 2]), L.ones(2, 1)),
    lambda L: L.linalg.lu_solve(L.eye(2), L.tensor([1, 2], dtype=L.int32), L.ones(2, 1, dtype=L.float64)),
    lambda L: L.linalg.lu_solve(L.eye(2), L.tensor([1, 2], dtype=L.int32), L.ones(2, 1), left=False),
]


@pytest.mark.parametrize("case", range(len(BAD)))
def test_errors_as_pytorch(case):
    with pytest.raises((RuntimeError, NotImplementedError)) as ours:
        BAD[case](tp)
    torch = pytest.importorskip("torch")
    with pytest.raises((RuntimeError, NotImplementedError)):
        BAD[case](torch)
    assert "lu" in str(ours.value)
