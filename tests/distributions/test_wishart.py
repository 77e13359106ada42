"""Wishart against scipy.stats.wishart in float64 (log_prob, entropy, mean, variance), PyTorch
2.13 where installed, and the moments of its Bartlett draws (issue 13)."""
import warnings

import numpy as np
import pytest

import tensorplug as tp
from tensorplug.distributions import ExponentialFamily, Wishart
from distribution_helpers import DEVICES, usable_device as _device, to_numpy as _np, assert_close as _close

stats = pytest.importorskip("scipy.stats")

DF = np.array([5.0, 7.5])
SCALE = np.array([[2.0, 0.5], [0.5, 1.0]])


@pytest.mark.parametrize("given", ["covariance_matrix", "precision_matrix", "scale_tril"])
@pytest.mark.parametrize("device", DEVICES)
def test_matches_scipy(given, device):
    matrix = {"covariance_matrix": SCALE, "precision_matrix": np.linalg.inv(SCALE),
              "scale_tril": np.linalg.cholesky(SCALE)}[given]
    d = Wishart(tp.tensor(DF, device=_device(device)), **{given: tp.tensor(matrix, device=device)})
    assert d.batch_shape == (2,) and d.event_shape == (2, 2)
    refs = [stats.wishart(df, SCALE) for df in DF]
    value = np.array([[3.0, 1.0], [1.0, 2.0]])
    _close(d.log_prob(tp.tensor(value, device=device)), [ref.logpdf(value) for ref in refs])
    _close(d.entropy(), [ref.entropy() for ref in refs])
    _close(ExponentialFamily.entropy(d), [ref.entropy() for ref in refs], rtol=1e-8)
    _close(d.mean, [ref.mean() for ref in refs])
    _close(d.variance, [ref.var() for ref in refs])
    _close(d.mode, [(df - 3) * SCALE for df in DF])
    draws = _np(d.sample((20000,)))
    np.testing.assert_allclose(draws.mean(0), [ref.mean() for ref in refs], rtol=0.05)
    assert np.all(np.linalg.eigvalsh(draws) > 0)


def test_checks_and_gradients():
    with pytest.raises(ValueError, match="Exactly one of covariance_matrix or precision_matrix or scale_tril"):
        Wishart(tp.tensor(3.0), tp.eye(2), tp.eye(2))
    with pytest.raises(ValueError, match="Value of df=.* expected to be greater than ndim - 1 = 1."):
        Wishart(tp.tensor(0.5), tp.eye(2))
    with pytest.raises(ValueError, match=r"Expected parameter covariance_matrix .* PositiveDefinite"):
        Wishart(tp.tensor(3.0), -tp.eye(2))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        Wishart(tp.tensor(1.5), tp.eye(2))
    assert any("Low df values detected" in str(w.message) for w in caught)
    assert Wishart(tp.tensor([3.0, 4.0]), tp.eye(2)).expand((5, 2)).batch_shape == (5, 2)
    scale = tp.tensor(SCALE, requires_grad=True)
    Wishart(tp.tensor(6.0, dtype=tp.float64), covariance_matrix=scale).rsample((3,)).sum().backward()
    assert np.all(np.isfinite(_np(scale.grad)))


def test_matches_torch():
    torch = pytest.importorskip("torch")
    ours = Wishart(tp.tensor(DF), covariance_matrix=tp.tensor(SCALE))
    theirs = torch.distributions.Wishart(torch.tensor(DF), covariance_matrix=torch.tensor(SCALE))
    value = np.array([[3.0, 1.0], [1.0, 2.0]])
    _close(ours.log_prob(tp.tensor(value)), theirs.log_prob(torch.tensor(value)).numpy())
    _close(ours.entropy(), theirs.entropy().numpy())
    for name in ("mean", "mode", "variance"):
        _close(getattr(ours, name), getattr(theirs, name).numpy())
    assert {k: repr(v) for k, v in ours.arg_constraints.items()} == {k: repr(v) for k, v in theirs.arg_constraints.items()}
    assert repr(ours.support) == repr(theirs.support) and ours.has_rsample == theirs.has_rsample
