"""LKJCholesky and CorrCholeskyTransform: the density against its closed form for d = 2 (scipy's
Beta) and PyTorch 2.13, the marginal moments of the draws against the LKJ marginal Beta, and the
transform against a NumPy float64 version with finite-difference Jacobians (issue 13)."""
import numpy as np
import pytest

import tensorplug as tp
from tensorplug import distributions as D
from tensorplug.distributions import constraints as C
from distribution_helpers import DEVICES, usable_device as _device, to_numpy as _np, assert_close as _close

stats = pytest.importorskip("scipy.stats")


def test_two_by_two_density_is_the_beta():
    """For d = 2 the one free entry r of L is the correlation, with (r + 1) / 2 ~ Beta(eta, eta)."""
    eta = np.array([0.5, 1.0, 3.0])
    r = np.array([0.3, -0.8, 0.1])
    factors = np.zeros((3, 2, 2))
    factors[:, 0, 0], factors[:, 1, 0], factors[:, 1, 1] = 1.0, r, np.sqrt(1 - r ** 2)
    d = D.LKJCholesky(2, tp.tensor(eta))
    _close(d.log_prob(tp.tensor(factors)), stats.beta(eta, eta).logpdf((r + 1) / 2) - np.log(2))


@pytest.mark.parametrize("device", DEVICES)
def test_draws_have_the_lkj_marginals(device):
    """Every off-diagonal correlation has (r + 1) / 2 ~ Beta(b, b), b = eta - 1 + d / 2: mean 0 and
    variance 1 / (2 b + 1); draws are correlation Cholesky factors."""
    dim, eta = 4, np.array([1.0, 2.5])
    d = D.LKJCholesky(dim, tp.tensor(eta, device=_device(device)))
    draws = d.sample((10000,))
    assert draws.shape == (10000, 2, dim, dim) and bool(C.corr_cholesky.check(draws).all())
    factors = _np(draws)
    corr = factors @ np.swapaxes(factors, -1, -2)
    rows, cols = np.tril_indices(dim, -1)
    off = corr[..., rows, cols]  # (n, 2, 6)
    b = eta - 1 + dim / 2
    np.testing.assert_allclose(off.mean(0), 0.0, atol=0.03)
    np.testing.assert_allclose(off.var(0), np.broadcast_to((1 / (2 * b + 1))[:, None], (2, 6)), rtol=0.08)


def test_checks_and_torch():
    with pytest.raises(ValueError, match="Expected dim to be an integer greater than or equal to 2. Found dim=1."):
        D.LKJCholesky(1)
    with pytest.raises(ValueError, match=r"Expected parameter concentration .* GreaterThan"):
        D.LKJCholesky(3, -1.0)
    assert D.LKJCholesky(3, tp.tensor([1.0, 2.0])).expand((4, 2)).batch_shape == (4, 2)
    torch = pytest.importorskip("torch")
    x = np.array([0.3, -0.5, 1.0, 0.2, -0.1, 0.7])
    factor = D.CorrCholeskyTransform()(tp.tensor(x))
    ours = D.LKJCholesky(4, tp.tensor([0.7, 2.0], dtype=tp.float64)).log_prob(factor)
    theirs = torch.distributions.LKJCholesky(4, torch.tensor([0.7, 2.0], dtype=torch.float64)).log_prob(
        torch.tensor(_np(factor)))
    _close(ours, theirs.numpy())


def _corr_cholesky_numpy(x, size):
    z = np.zeros((size, size))
    z[np.tril_indices(size, -1)] = np.tanh(x)
    factor = np.zeros((size, size))
    for i in range(size):
        left = 1.0
        for j in range(i):
            factor[i, j] = z[i, j] * np.sqrt(left)
            left -= factor[i, j] ** 2
        factor[i, i] = np.sqrt(left)
    return factor


def test_corr_cholesky_transform():
    """The NumPy construction's values; an exact inverse; log |det J| against the determinant of
    the finite-difference Jacobian of the entries below the diagonal; PyTorch's values."""
    x = np.array([0.3, -0.5, 1.0, 0.2, -0.1, 0.7])
    t = D.biject_to(C.corr_cholesky)
    assert isinstance(t, D.CorrCholeskyTransform)
    y = t(tp.tensor(x))
    _close(y, _corr_cholesky_numpy(x, 4))
    _close(t.inv(y), x, rtol=1e-9)
    rows, cols = np.tril_indices(4, -1)
    h = 1e-6
    jacobian = np.stack([(_corr_cholesky_numpy(x + h * e, 4)[rows, cols] - _corr_cholesky_numpy(x - h * e, 4)[rows, cols])
                         / (2 * h) for e in np.eye(6)], 1)
    _close(t.log_abs_det_jacobian(tp.tensor(x), y), np.linalg.slogdet(jacobian)[1], rtol=1e-7)
    assert t.forward_shape((5, 6)) == (5, 4, 4) and t.inverse_shape((5, 4, 4)) == (5, 6)
    with pytest.raises(ValueError, match="is not d \\(d - 1\\) / 2"):
        t(tp.zeros(5, dtype=tp.float64))
    xs = tp.tensor(x, requires_grad=True)
    t(xs).sum().backward()
    assert np.all(np.isfinite(_np(xs.grad)))
    torch = pytest.importorskip("torch")
    theirs = torch.distributions.transforms.CorrCholeskyTransform()
    _close(y, theirs(torch.tensor(x)).numpy())
    _close(t.log_abs_det_jacobian(tp.tensor(x), y), theirs.log_abs_det_jacobian(torch.tensor(x), theirs(torch.tensor(x))).numpy())
