"""LowRankMultivariateNormal against scipy.stats.multivariate_normal with the dense covariance
W W^T + diag(D) in float64, PyTorch 2.13 where installed, and sample moments (issue 13)."""
import numpy as np
import pytest

import tensorplug as tp
from tensorplug.distributions import LowRankMultivariateNormal, MultivariateNormal, kl_divergence
from distribution_helpers import DEVICES, usable_device as _device, to_numpy as _np, assert_close as _close

stats = pytest.importorskip("scipy.stats")


def _parameters(batch=(2,), n=4, rank=2, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(batch + (n,)), rng.standard_normal(batch + (n, rank)),
            rng.uniform(0.5, 2.0, batch + (n,)))


@pytest.mark.parametrize("device", DEVICES)
def test_matches_scipy(device):
    """log_prob, entropy, covariance, precision, scale_tril, variance; sample mean and covariance."""
    loc, W, D = _parameters()
    d = LowRankMultivariateNormal(tp.tensor(loc, device=_device(device)), tp.tensor(W, device=device),
                                  tp.tensor(D, device=device))
    assert d.batch_shape == (2,) and d.event_shape == (4,)
    covariance = W @ W.transpose(0, 2, 1) + np.stack([np.diag(row) for row in D])
    refs = [stats.multivariate_normal(loc[i], covariance[i]) for i in range(2)]
    value = np.random.default_rng(1).standard_normal((3, 2, 4))
    _close(d.log_prob(tp.tensor(value, device=device)), np.stack([refs[i].logpdf(value[:, i]) for i in range(2)], 1))
    _close(d.entropy(), [ref.entropy() for ref in refs])
    _close(d.covariance_matrix, covariance)
    _close(d.precision_matrix, np.linalg.inv(covariance), rtol=1e-8)
    _close(d.scale_tril, np.linalg.cholesky(covariance))
    _close(d.variance, np.diagonal(covariance, axis1=1, axis2=2))
    samples = _np(d.sample((20000,)))
    assert samples.shape == (20000, 2, 4)
    np.testing.assert_allclose(samples.mean(0), loc, atol=0.1)
    np.testing.assert_allclose(np.cov(samples[:, 0].T), covariance[0], atol=0.25)


def test_broadcast_batches_and_errors():
    """A shared cov_factor broadcasts against a batch of locs; PyTorch's shape errors."""
    loc, W, D = _parameters(batch=(), n=3, rank=1)
    d = LowRankMultivariateNormal(tp.tensor(np.stack([loc, loc + 1])), tp.tensor(W), tp.tensor(D))
    assert d.batch_shape == (2,) and d.cov_factor.shape == (2, 3, 1)
    assert d.expand((5, 2)).batch_shape == (5, 2)
    with pytest.raises(ValueError, match="cov_factor must be at least two-dimensional"):
        LowRankMultivariateNormal(tp.zeros(3), tp.ones(3), tp.ones(3))
    with pytest.raises(ValueError, match="cov_factor must be a batch of matrices with shape 3 x m"):
        LowRankMultivariateNormal(tp.zeros(3), tp.ones(2, 1), tp.ones(3))
    with pytest.raises(ValueError, match=r"cov_diag must be a batch of vectors with shape \(3,\)"):
        LowRankMultivariateNormal(tp.zeros(3), tp.ones(3, 1), tp.ones(2))
    with pytest.raises(ValueError, match=r"Expected parameter cov_diag .* IndependentConstraint\(GreaterThan"):
        LowRankMultivariateNormal(tp.zeros(3), tp.ones(3, 1), -tp.ones(3))


def test_rsample_differentiates():
    loc, W, D = (tp.tensor(a, requires_grad=True) for a in _parameters(batch=(), n=3))
    LowRankMultivariateNormal(loc, W, D).rsample((4,)).sum().backward()
    np.testing.assert_allclose(_np(loc.grad), np.full(3, 4.0))
    assert W.grad is not None and D.grad is not None


def test_kl_against_numpy_and_torch():
    """KL with MultivariateNormal on either side and between two low-rank ones: the Gaussian closed
    form in NumPy float64, and PyTorch's values where installed."""
    (lp, Wp, Dp), (lq, Wq, Dq) = _parameters(batch=(), n=3, seed=2), _parameters(batch=(), n=3, seed=3)
    Sp, Sq = Wp @ Wp.T + np.diag(Dp), Wq @ Wq.T + np.diag(Dq)
    expected = 0.5 * (np.trace(np.linalg.solve(Sq, Sp)) + (lq - lp) @ np.linalg.solve(Sq, lq - lp) - 3
                      + np.linalg.slogdet(Sq)[1] - np.linalg.slogdet(Sp)[1])
    p = LowRankMultivariateNormal(tp.tensor(lp), tp.tensor(Wp), tp.tensor(Dp))
    q = LowRankMultivariateNormal(tp.tensor(lq), tp.tensor(Wq), tp.tensor(Dq))
    q_dense = MultivariateNormal(tp.tensor(lq), covariance_matrix=tp.tensor(Sq))
    p_dense = MultivariateNormal(tp.tensor(lp), covariance_matrix=tp.tensor(Sp))
    for pair in ((p, q), (p, q_dense), (p_dense, q)):
        _close(kl_divergence(*pair), expected, rtol=1e-9)
    torch = pytest.importorskip("torch")
    T = torch.distributions
    theirs = T.kl_divergence(T.LowRankMultivariateNormal(*(torch.tensor(a) for a in (lp, Wp, Dp))),
                             T.LowRankMultivariateNormal(*(torch.tensor(a) for a in (lq, Wq, Dq))))
    _close(kl_divergence(p, q), theirs.numpy(), rtol=1e-9)
    ours_lp = p.log_prob(tp.tensor(lq))
    theirs_lp = T.LowRankMultivariateNormal(*(torch.tensor(a) for a in (lp, Wp, Dp))).log_prob(torch.tensor(lq))
    _close(ours_lp, theirs_lp.numpy())
