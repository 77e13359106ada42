"""tp.distributions Gamma, Beta and Dirichlet against scipy.stats float64, PyTorch 2.13 where
installed, and sample moments of tensorplug's Marsaglia-Tsang draws (issue 13)."""
import numpy as np
import pytest

import tensorplug as tp
from tensorplug.distributions import Beta, Dirichlet, Gamma
from distribution_helpers import DEVICES, usable_device as _device, to_numpy as _np, assert_close as _close

stats = pytest.importorskip("scipy.stats")


@pytest.mark.parametrize("device", DEVICES)
def test_gamma_matches_scipy(device):
    """log_prob, entropy, moments equal scipy's gamma; samples (concentrations below and above 1)
    have its mean and variance; rsample differentiates in the rate as x / rate."""
    alpha, rate = np.array([0.3, 1.0, 4.0]), np.array([2.0, 0.5, 1.0])
    d = Gamma(tp.tensor(alpha, device=_device(device)), tp.tensor(rate, device=device))
    ref = stats.gamma(alpha, scale=1 / rate)
    value = np.array([0.1, 2.0, 3.5])
    _close(d.log_prob(tp.tensor(value, device=device)), ref.logpdf(value))
    _close(d.entropy(), ref.entropy())
    _close(d.mean, ref.mean())
    _close(d.variance, ref.var())
    _close(d.mode, np.maximum((alpha - 1) / rate, 0))
    samples = _np(d.sample((4000,)))
    assert samples.shape == (4000, 3) and samples.min() > 0
    np.testing.assert_allclose(samples.mean(0), ref.mean(), rtol=0.1)
    np.testing.assert_allclose(samples.var(0), ref.var(), rtol=0.25)
    r = tp.tensor(rate, requires_grad=True, device=device)
    x = Gamma(tp.tensor(alpha, device=device), r).rsample()
    x.sum().backward()
    np.testing.assert_allclose(_np(r.grad), -_np(x) / rate, rtol=1e-7)


@pytest.mark.parametrize("device", DEVICES)
def test_beta_matches_scipy(device):
    """log_prob, entropy and moments equal scipy's beta; sample means fit."""
    a, b = np.array([0.5, 2.0, 5.0]), np.array([0.5, 3.0, 1.0])
    d = Beta(tp.tensor(a, device=_device(device)), tp.tensor(b, device=device))
    ref = stats.beta(a, b)
    value = np.array([0.2, 0.4, 0.9])
    _close(d.log_prob(tp.tensor(value, device=device)), ref.logpdf(value))
    _close(d.entropy(), ref.entropy())
    _close(d.mean, ref.mean())
    _close(d.variance, ref.var())
    samples = _np(d.sample((4000,)))
    assert np.all((samples > 0) & (samples < 1))
    np.testing.assert_allclose(samples.mean(0), ref.mean(), atol=0.03)


@pytest.mark.parametrize("device", DEVICES)
def test_dirichlet_matches_scipy(device):
    """log_prob, entropy, mean and variance equal scipy's dirichlet; samples lie on the simplex
    with the right means; shapes are sample + batch + (K,)."""
    conc = np.array([[0.5, 1.0, 2.0], [3.0, 3.0, 3.0]])
    d = Dirichlet(tp.tensor(conc, device=_device(device)))
    assert d.batch_shape == (2,) and d.event_shape == (3,)
    value = np.array([[0.2, 0.3, 0.5], [0.1, 0.6, 0.3]])
    _close(d.log_prob(tp.tensor(value, device=device)), [stats.dirichlet(c).logpdf(v) for c, v in zip(conc, value)])
    _close(d.entropy(), [stats.dirichlet(c).entropy() for c in conc])
    _close(d.mean, [stats.dirichlet(c).mean() for c in conc])
    _close(d.variance, [stats.dirichlet(c).var() for c in conc])
    samples = _np(d.sample((3000,)))
    assert samples.shape == (3000, 2, 3)
    np.testing.assert_allclose(samples.sum(-1), 1, rtol=1e-12)
    np.testing.assert_allclose(samples.mean(0), conc / conc.sum(-1, keepdims=True), atol=0.03)
    assert d.expand((4, 2)).batch_shape == (4, 2)


@pytest.mark.parametrize("device", DEVICES)
def test_rsample_gradients_are_implicit_reparameterization(device):
    """A Gamma draw's d(draw)/d(concentration) holds the cdf fixed: -dF/da / f, with dF/da by
    central differences of scipy's regularized incomplete gamma function (float64). Beta and
    Dirichlet gradients average to the derivatives of their means."""
    special = pytest.importorskip("scipy.special")
    h = 1e-6
    alpha, rate = np.array([0.3, 1.0, 4.0, 60.0]), np.array([1.0, 2.0, 0.5, 1.0])
    a = tp.tensor(alpha, requires_grad=True, device=_device(device))
    x = Gamma(a, tp.tensor(rate, device=device)).rsample()
    x.sum().backward()
    unit = _np(x) * rate
    expected = -(special.gammainc(alpha + h, unit) - special.gammainc(alpha - h, unit)) / (2 * h)
    expected = expected / stats.gamma(alpha).pdf(unit) / rate
    np.testing.assert_allclose(_np(a.grad), expected, rtol=1e-5)

    # Beta and Dirichlet differentiate through their Gammas: per draw this is not the derivative
    # of their own cdf, but its expectation is the derivative of the mean a / (a + b).
    c1, c0 = np.array([0.5, 2.0, 5.0]), np.array([1.5, 3.0, 0.7])
    p1 = tp.tensor(c1, requires_grad=True, device=device)
    p0 = tp.tensor(c0, requires_grad=True, device=device)
    Beta(p1, p0).rsample((4000,)).mean(0).sum().backward()
    total = c1 + c0
    np.testing.assert_allclose(_np(p1.grad), c0 / total ** 2, rtol=0.1)
    np.testing.assert_allclose(_np(p0.grad), -c1 / total ** 2, rtol=0.1)
    c = tp.tensor([2.0, 3.0, 1.0], requires_grad=True, device=device)
    Dirichlet(c).rsample((4000,))[:, 0].mean().backward()
    np.testing.assert_allclose(_np(c.grad), [4.0 / 36, -2.0 / 36, -2.0 / 36], rtol=0.15)


def test_matches_torch():
    """log_prob, entropy and their gradients in every parameter equal PyTorch's."""
    torch = pytest.importorskip("torch")
    TD = torch.distributions
    a, b = np.array([0.5, 2.0]), np.array([1.5, 3.0])
    value = np.array([0.3, 0.6])
    for ours_cls, theirs_cls in ((Gamma, TD.Gamma), (Beta, TD.Beta)):
        pa, pb = tp.tensor(a, requires_grad=True), tp.tensor(b, requires_grad=True)
        ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
        out = ours_cls(pa, pb).log_prob(tp.tensor(value)).sum() + ours_cls(pa, pb).entropy().sum()
        ref = theirs_cls(ta, tb).log_prob(torch.tensor(value)).sum() + theirs_cls(ta, tb).entropy().sum()
        np.testing.assert_allclose(out.item(), ref.item(), rtol=1e-10)
        out.backward()
        ref.backward()
        np.testing.assert_allclose(_np(pa.grad), ta.grad.numpy(), rtol=1e-9)
        np.testing.assert_allclose(_np(pb.grad), tb.grad.numpy(), rtol=1e-9)
    c = tp.tensor([0.5, 2.0, 1.0], requires_grad=True)
    tc = torch.tensor([0.5, 2.0, 1.0], requires_grad=True, dtype=torch.float64)
    out = Dirichlet(c).log_prob(tp.tensor([0.2, 0.5, 0.3])) + Dirichlet(c).entropy()
    ref = TD.Dirichlet(tc).log_prob(torch.tensor([0.2, 0.5, 0.3], dtype=torch.float64)) + TD.Dirichlet(tc).entropy()
    np.testing.assert_allclose(out.item(), ref.item(), rtol=1e-6)
    out.backward()
    ref.backward()
    np.testing.assert_allclose(_np(c.grad), tc.grad.numpy(), rtol=1e-5)


def test_bad_parameters_raise():
    """Non-positive concentrations and values outside the support are refused, as PyTorch's."""
    with pytest.raises(ValueError, match=r"Expected parameter concentration .* GreaterThan"):
        Gamma(tp.tensor([0.0]), tp.tensor([1.0]))
    with pytest.raises(ValueError, match=r"Expected parameter concentration0"):
        Beta(tp.tensor([1.0]), tp.tensor([-1.0]))
    with pytest.raises(ValueError, match=r"Simplex\(\)"):
        Dirichlet(tp.ones(3)).log_prob(tp.tensor([0.5, 0.6, 0.2]))
    with pytest.raises(ValueError, match="at least one-dimensional"):
        Dirichlet(tp.tensor(1.0))
