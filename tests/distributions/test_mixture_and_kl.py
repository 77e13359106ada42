"""tp.distributions.MixtureSameFamily and the KL divergences of the new distribution pairs, against
scipy/NumPy float64 and PyTorch 2.13 (issue 13)."""
import numpy as np
import pytest

import tensorplug as tp
from tensorplug.distributions import (Beta, Categorical, Dirichlet, Exponential, Gamma, Independent, Laplace,
                                      MixtureSameFamily, Normal, OneHotCategorical, Poisson, kl_divergence)
from distribution_helpers import DEVICES, usable_device as _device, to_numpy as _np

stats = pytest.importorskip("scipy.stats")


@pytest.mark.parametrize("device", DEVICES)
def test_gaussian_mixture_matches_numpy(device):
    """A batch of two 1-d Gaussian mixtures: log_prob, cdf, mean and variance against the float64
    mixture formulas; sample moments fit; shapes are sample + batch."""
    probs = np.array([[0.3, 0.7], [0.5, 0.5]])
    loc, scale = np.array([[-2.0, 1.0], [0.0, 3.0]]), np.array([[1.0, 0.5], [2.0, 1.0]])
    mix = MixtureSameFamily(Categorical(probs=tp.tensor(probs, device=_device(device))),
                            Normal(tp.tensor(loc, device=device), tp.tensor(scale, device=device)))
    assert mix.batch_shape == (2,) and mix.event_shape == ()
    value = np.array([0.4, -1.0])
    comp = stats.norm(loc, scale)
    np.testing.assert_allclose(_np(mix.log_prob(tp.tensor(value, device=device))),
                               np.log((probs * comp.pdf(value[:, None])).sum(-1)), rtol=1e-10)
    np.testing.assert_allclose(_np(mix.cdf(tp.tensor(value, device=device))),
                               (probs * comp.cdf(value[:, None])).sum(-1), rtol=1e-10)
    mean = (probs * loc).sum(-1)
    variance = (probs * (scale ** 2 + loc ** 2)).sum(-1) - mean ** 2
    np.testing.assert_allclose(_np(mix.mean), mean, rtol=1e-12)
    np.testing.assert_allclose(_np(mix.variance), variance, rtol=1e-12)
    samples = _np(mix.sample((3000,)))
    assert samples.shape == (3000, 2)
    np.testing.assert_allclose(samples.mean(0), mean, atol=0.15)
    np.testing.assert_allclose(samples.var(0), variance, rtol=0.15)


def test_mixture_of_multivariate_components_matches_torch():
    """Components with events (Independent Normals over 2 dims) and gradients of log_prob agree
    with PyTorch's MixtureSameFamily."""
    torch = pytest.importorskip("torch")
    TD = torch.distributions
    logits, loc = np.array([0.2, -0.3, 1.0]), np.random.default_rng(0).standard_normal((3, 2))
    value = np.random.default_rng(1).standard_normal((4, 2))
    a = tp.tensor(loc, requires_grad=True)
    b = torch.tensor(loc, requires_grad=True)
    ours = MixtureSameFamily(Categorical(logits=tp.tensor(logits)), Independent(Normal(a, 1.0), 1))
    theirs = TD.MixtureSameFamily(TD.Categorical(logits=torch.tensor(logits)), TD.Independent(TD.Normal(b, 1.0), 1))
    assert ours.batch_shape == () and ours.event_shape == (2,)
    out, ref = ours.log_prob(tp.tensor(value)), theirs.log_prob(torch.tensor(value))
    np.testing.assert_allclose(_np(out), ref.detach().numpy(), rtol=1e-10)
    out.sum().backward()
    ref.sum().backward()
    np.testing.assert_allclose(_np(a.grad), b.grad.numpy(), rtol=1e-10)
    np.testing.assert_allclose(_np(ours.variance), theirs.variance.detach().numpy(), rtol=1e-10)
    assert ours.sample((5,)).shape == (5, 2)


def test_mixture_checks_its_arguments():
    """A non-Categorical mixture or a mismatched number of components is refused with the shapes."""
    with pytest.raises(ValueError, match="must be a Categorical"):
        MixtureSameFamily(Normal(0.0, 1.0), Normal(tp.zeros(2), 1.0))
    with pytest.raises(ValueError, match=r"3 categories .* \(2,\)"):
        MixtureSameFamily(Categorical(probs=tp.ones(3)), Normal(tp.zeros(2), 1.0))


@pytest.mark.parametrize("device", DEVICES)
def test_kl_divergences_match_closed_forms(device):
    """KL of each new pair against a float64 formula written here or scipy's numerical integral."""
    _device(device)

    def t(x):
        return tp.tensor(np.asarray(x, dtype=np.float64), device=device)

    r1, r2 = np.array([0.5, 2.0]), np.array([1.5, 1.0])
    np.testing.assert_allclose(_np(kl_divergence(Exponential(t(r1)), Exponential(t(r2)))),
                               np.log(r1 / r2) + r2 / r1 - 1, rtol=1e-10)
    np.testing.assert_allclose(_np(kl_divergence(Poisson(t(r1)), Poisson(t(r2)))),
                               r1 * np.log(r1 / r2) - r1 + r2, rtol=1e-10)
    integrand = [stats.laplace(0.3, 0.7), stats.laplace(-0.5, 1.2)]
    xs = np.linspace(-40, 40, 400001)
    p_pdf, q_pdf = integrand[0].pdf(xs), integrand[1].pdf(xs)
    numeric = np.trapezoid(p_pdf * (np.log(p_pdf) - np.log(q_pdf)), xs)
    np.testing.assert_allclose(kl_divergence(Laplace(t(0.3), t(0.7)), Laplace(t(-0.5), t(1.2))).item(), numeric, rtol=1e-6)
    a1, b1, a2, b2 = 2.0, 3.0, 1.5, 0.5
    xs = np.linspace(1e-9, 60, 600001)
    p_pdf, q_pdf = stats.gamma(a1, scale=1 / b1).pdf(xs), stats.gamma(a2, scale=1 / b2).pdf(xs)
    numeric = np.trapezoid(np.where(p_pdf > 0, p_pdf * (np.log(p_pdf + 1e-300) - np.log(q_pdf)), 0), xs)
    np.testing.assert_allclose(kl_divergence(Gamma(t(a1), t(b1)), Gamma(t(a2), t(b2))).item(), numeric, rtol=1e-5)
    xs = np.linspace(1e-7, 1 - 1e-7, 400001)
    p_pdf, q_pdf = stats.beta(2.0, 3.0).pdf(xs), stats.beta(1.5, 4.0).pdf(xs)
    numeric = np.trapezoid(p_pdf * (np.log(p_pdf) - np.log(q_pdf)), xs)
    np.testing.assert_allclose(kl_divergence(Beta(t(2.0), t(3.0)), Beta(t(1.5), t(4.0))).item(), numeric, rtol=1e-5)
    # A Dirichlet over 2 categories is a Beta over the first coordinate.
    np.testing.assert_allclose(kl_divergence(Dirichlet(t([2.0, 3.0])), Dirichlet(t([1.5, 4.0]))).item(), numeric, rtol=1e-5)
    loc_p, loc_q = np.array([[0.0, 1.0], [2.0, -1.0]]), np.array([[0.5, 0.5], [0.0, 0.0]])
    per_dim = 0.5 * (loc_p - loc_q) ** 2
    np.testing.assert_allclose(_np(kl_divergence(Independent(Normal(t(loc_p), 1.0), 1), Independent(Normal(t(loc_q), 1.0), 1))),
                               per_dim.sum(-1), rtol=1e-10)


def test_kl_divergences_match_torch():
    """The same pairs through PyTorch's kl_divergence, gradients included."""
    torch = pytest.importorskip("torch")
    TD = torch.distributions
    x, y = np.array([0.7, 2.0]), np.array([1.3, 0.4])
    pairs = [(Exponential, TD.Exponential, 1), (Poisson, TD.Poisson, 1), (Laplace, TD.Laplace, 2),
             (Gamma, TD.Gamma, 2), (Beta, TD.Beta, 2)]
    for ours_cls, theirs_cls, n in pairs:
        a, b = tp.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        ours = kl_divergence(ours_cls(*([a, tp.tensor(y)][:n])), ours_cls(*([tp.tensor(y), tp.tensor(x)][:n])))
        theirs = TD.kl_divergence(theirs_cls(*([b, torch.tensor(y)][:n])), theirs_cls(*([torch.tensor(y), torch.tensor(x)][:n])))
        np.testing.assert_allclose(_np(ours), theirs.detach().numpy(), rtol=1e-10)
        ours.sum().backward()
        theirs.sum().backward()
        np.testing.assert_allclose(_np(a.grad), b.grad.numpy(), rtol=1e-9)
    c1, c2 = np.array([[0.5, 2.0, 1.0]]), np.array([[1.0, 1.0, 3.0]])
    np.testing.assert_allclose(_np(kl_divergence(Dirichlet(tp.tensor(c1)), Dirichlet(tp.tensor(c2)))),
                               TD.kl_divergence(TD.Dirichlet(torch.tensor(c1)), TD.Dirichlet(torch.tensor(c2))).numpy(),
                               rtol=1e-10)
    probs = np.array([0.2, 0.3, 0.5])
    np.testing.assert_allclose(
        kl_divergence(OneHotCategorical(probs=tp.tensor(probs)), OneHotCategorical(logits=tp.zeros(3, dtype=tp.float64))).item(),
        TD.kl_divergence(TD.OneHotCategorical(probs=torch.tensor(probs)),
                         TD.OneHotCategorical(logits=torch.zeros(3, dtype=torch.float64))).item(), rtol=1e-10)


def test_kl_of_independents_with_different_ndims_is_refused():
    """PyTorch has no KL between Independents that reinterpret different numbers of dims."""
    base = Normal(tp.zeros(2, 3), 1.0)
    with pytest.raises(NotImplementedError, match="reinterpreted_batch_ndims"):
        kl_divergence(Independent(base, 1), Independent(base, 2))
