"""tp.distributions.TransformedDistribution and tp.distributions.transforms against NumPy float64
change-of-variables formulas and PyTorch 2.13 (issue 13: SAC's tanh-squashed Gaussian)."""
import numpy as np
import pytest

import tensorplug as tp
from tensorplug.distributions import Independent, Normal, TransformedDistribution
from tensorplug.distributions.transforms import (AffineTransform, ComposeTransform, ExpTransform, SigmoidTransform,
                                                 TanhTransform)
from distribution_helpers import DEVICES, usable_device as _device, to_numpy as _np

stats = pytest.importorskip("scipy.stats")


@pytest.mark.parametrize("device", DEVICES)
def test_exp_of_normal_is_lognormal(device):
    """Normal pushed through exp has scipy's lognorm log-density, cdf and icdf; samples are positive."""
    loc, scale = np.array([0.0, 0.5]), np.array([1.0, 0.3])
    d = TransformedDistribution(Normal(tp.tensor(loc, device=_device(device)), tp.tensor(scale, device=device)),
                                ExpTransform())
    ref = stats.lognorm(s=scale, scale=np.exp(loc))
    value = np.array([0.7, 2.0])
    np.testing.assert_allclose(_np(d.log_prob(tp.tensor(value, device=device))), ref.logpdf(value), rtol=1e-10)
    np.testing.assert_allclose(_np(d.cdf(tp.tensor(value, device=device))), ref.cdf(value), rtol=1e-7)
    np.testing.assert_allclose(_np(d.icdf(tp.tensor([0.3, 0.8], dtype=tp.float64, device=device))),
                               ref.ppf([0.3, 0.8]), rtol=1e-6)
    assert d.batch_shape == (2,) and d.event_shape == () and d.has_rsample
    assert np.all(_np(d.sample((100,))) > 0)


@pytest.mark.parametrize("device", DEVICES)
def test_squashed_gaussian_log_prob_is_stable(device):
    """SAC's policy: Independent(Normal) -> tanh (cached). log_prob of its own rsample equals the
    float64 formula and stays finite where tanh rounds to +-1 (the cache returns the pre-tanh value);
    gradients flow. (An uncached AffineTransform after the tanh gives NaN there, in PyTorch too.)"""
    loc = tp.tensor([0.3, 25.0], dtype=tp.float64, device=_device(device), requires_grad=True)
    scale = tp.tensor([0.5, 1.0], dtype=tp.float64, device=device, requires_grad=True)
    d = TransformedDistribution(Independent(Normal(loc, scale), 1),
                                [TanhTransform(cache_size=1)])
    assert d.batch_shape == () and d.event_shape == (2,)
    action = d.rsample()
    log_prob = d.log_prob(action)
    assert np.isfinite(log_prob.item())
    # The pre-tanh value, recovered from the sample's noise: u = loc + scale * eps.
    u = _np(d.transforms[0]._cached[0])
    expected = (stats.norm(_np(loc), _np(scale)).logpdf(u)
                - 2 * (np.log(2) - u - np.logaddexp(0, -2 * u))).sum()
    np.testing.assert_allclose(log_prob.item(), expected, rtol=1e-10)
    log_prob.backward()
    assert np.all(np.isfinite(_np(loc.grad))) and np.all(np.isfinite(_np(scale.grad)))


def test_transforms_match_numpy():
    """Forward, inverse and log |det J| of each transform against NumPy float64."""
    x = np.array([-3.0, -0.2, 0.0, 1.5])
    t = tp.tensor(x)
    sig = 1 / (1 + np.exp(-x))
    cases = [(ExpTransform(), np.exp(x), x),
             (AffineTransform(1.0, -3.0), 1 - 3 * x, np.full(4, np.log(3.0))),
             (SigmoidTransform(), sig, np.log(sig * (1 - sig))),
             (TanhTransform(), np.tanh(x), np.log(1 - np.tanh(x) ** 2))]
    for transform, y, ladj in cases:
        out = transform(t)
        np.testing.assert_allclose(_np(out), y, rtol=1e-12)
        np.testing.assert_allclose(_np(transform.inv(out)), x, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(_np(transform.log_abs_det_jacobian(t, out)), ladj, rtol=1e-9)
    chain = ComposeTransform([TanhTransform(), AffineTransform(0.5, 2.0)])
    np.testing.assert_allclose(_np(chain(t)), 0.5 + 2 * np.tanh(x), rtol=1e-12)
    np.testing.assert_allclose(_np(chain.inv(chain(t))), x, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(_np(chain.log_abs_det_jacobian(t, chain(t))),
                               np.log(1 - np.tanh(x) ** 2) + np.log(2), rtol=1e-9)
    assert AffineTransform(0.0, -2.0).sign == -1 and ComposeTransform([ExpTransform(), AffineTransform(0, -1.0)]).sign == -1


def test_matches_torch():
    """log_prob, cdf and shapes of transformed distributions equal PyTorch's, including a
    decreasing chain and an event-level AffineTransform."""
    torch = pytest.importorskip("torch")
    TD, TT = torch.distributions, torch.distributions.transforms
    loc, scale = np.array([[0.1, -0.4], [1.0, 0.2]]), np.array([[1.0, 0.5], [2.0, 0.7]])
    value = np.array([[0.3, -0.5], [0.9, 0.1]])

    def build(lib_dist, lib_tr, tensor, which):
        base = lib_dist.Normal(tensor(loc), tensor(scale))
        if which == "sigmoid-neg":
            return lib_dist.TransformedDistribution(base, [lib_tr.SigmoidTransform(), lib_tr.AffineTransform(0.0, -1.0)])
        return lib_dist.TransformedDistribution(base, [lib_tr.TanhTransform(), lib_tr.AffineTransform(tensor(loc), 2.0,
                                                                                                    event_dim=1)])

    for which in ("sigmoid-neg", "tanh-event"):
        import tensorplug.distributions as TPD
        ours = build(TPD, TPD.transforms, tp.tensor, which)
        theirs = build(TD, TT, torch.tensor, which)
        assert ours.batch_shape == tuple(theirs.batch_shape) and ours.event_shape == tuple(theirs.event_shape)
        v = -value if which == "sigmoid-neg" else value
        np.testing.assert_allclose(_np(ours.log_prob(tp.tensor(v))), theirs.log_prob(torch.tensor(v)).numpy(), rtol=1e-10)
        if which == "sigmoid-neg":
            np.testing.assert_allclose(_np(ours.cdf(tp.tensor(v))), theirs.cdf(torch.tensor(v)).numpy(), rtol=1e-10)
        wider = (3,) + ours.batch_shape
        assert ours.expand(wider).batch_shape == tuple(theirs.expand(wider).batch_shape)


def test_bad_transforms_raise():
    """A non-transform in the list is refused by name; mean has no general formula."""
    with pytest.raises(ValueError, match="transforms must be a Transform"):
        TransformedDistribution(Normal(0.0, 1.0), [lambda x: x])
    with pytest.raises(NotImplementedError, match="mean"):
        TransformedDistribution(Normal(0.0, 1.0), [ExpTransform()]).mean
