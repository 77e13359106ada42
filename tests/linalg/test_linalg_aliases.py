"""PyTorch's top-level names and Tensor methods for linear algebra (tp.det, tp.svd, Tensor.inverse,
...) against PyTorch 2.13."""
import numpy as np
import pytest

import tensorplug as tp
from linalg_inputs import general, spd


def _close(ours, theirs, rtol=1e-9):
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_allclose(ours.detach().cpu().numpy(), theirs.detach().numpy(), rtol=rtol, atol=1e-10)


@pytest.mark.parametrize("name", ["det", "logdet", "inverse", "pinverse", "matrix_power"])
def test_functions_and_methods(device, torch, name):
    """The function and the Tensor method equal PyTorch's."""
    array = general((2, 3, 3))
    ours, theirs = tp.tensor(array, device=device), torch.tensor(array)
    args = (3,) if name == "matrix_power" else ()
    _close(getattr(tp, name)(ours, *args), getattr(torch, name)(theirs, *args))
    _close(getattr(ours, name)(*args), getattr(theirs, name)(*args))


def test_slogdet_and_logdet_signs(torch):
    """slogdet's named result; logdet is nan for a negative determinant and -inf for zero."""
    array = np.array([[[0.0, 1.0], [1.0, 0.0]], [[1.0, 2.0], [2.0, 4.0]], [[2.0, 0.0], [0.0, 3.0]]])
    ours, theirs = tp.tensor(array), torch.tensor(array)
    result, expected = tp.slogdet(ours), torch.slogdet(theirs)
    _close(result.sign, expected.sign)
    _close(result.logabsdet, expected.logabsdet)
    _close(ours.logdet(), theirs.logdet())


@pytest.mark.parametrize("some", [True, False])
@pytest.mark.parametrize("compute_uv", [True, False])
def test_svd_returns_v(torch, some, compute_uv):
    """torch.svd's (U, S, V): V rather than Vh, square factors without ``some``, zeros without
    ``compute_uv``."""
    array = np.random.default_rng(0).standard_normal((5, 3))
    U, S, V = tp.svd(tp.tensor(array), some=some, compute_uv=compute_uv)
    tU, tS, tV = torch.svd(torch.tensor(array), some=some, compute_uv=compute_uv)
    _close(S, tS)
    assert tuple(U.shape) == tuple(tU.shape) and tuple(V.shape) == tuple(tV.shape)
    if compute_uv:
        rebuilt = (U.numpy()[:, :3] * S.numpy()) @ V.numpy()[:, :3].T
        np.testing.assert_allclose(rebuilt, array, atol=1e-12)
    else:
        assert not U.numpy().any() and not V.numpy().any()


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_solve_and_inverse(device, torch, upper):
    """Solving with a Cholesky factor and inverting through it, with gradients."""
    A = spd((2, 3, 3))
    B = np.random.default_rng(1).standard_normal((2, 3, 2))
    tL = torch.linalg.cholesky(torch.tensor(A), upper=upper).requires_grad_()
    L = tp.tensor(tL.detach().numpy(), device=device, requires_grad=True)
    ours, theirs = tp.cholesky_solve(tp.tensor(B, device=device), L, upper), torch.cholesky_solve(torch.tensor(B), tL, upper)
    _close(ours, theirs)
    (ours ** 2).sum().backward()
    (theirs ** 2).sum().backward()
    _close(L.grad, tL.grad, rtol=1e-7)
    _close(tp.cholesky_inverse(L, upper), torch.cholesky_inverse(tL, upper))
    _close(L.cholesky_inverse(upper), tL.cholesky_inverse(upper))
