"""tp.distributions Exponential, Laplace, Poisson, Independent and OneHotCategorical against
scipy.stats / NumPy float64 formulas, PyTorch 2.13 where installed, and sample moments (issue 13)."""
import math

import numpy as np
import pytest

import tensorplug as tp
from tensorplug.distributions import Exponential, Independent, Laplace, Normal, OneHotCategorical, Poisson
from distribution_helpers import DEVICES, usable_device as _device, to_numpy as _np, assert_close as _close

stats = pytest.importorskip("scipy.stats")


@pytest.mark.parametrize("device", DEVICES)
def test_exponential_matches_scipy(device):
    """log_prob, cdf, icdf, entropy and moments equal scipy's expon; rsample moments and gradient."""
    rate = np.array([0.5, 2.0])
    value = np.array([0.3, 1.7])
    d = Exponential(tp.tensor(rate, device=_device(device)))
    ref = stats.expon(scale=1 / rate)
    _close(d.log_prob(tp.tensor(value, device=device)), ref.logpdf(value))
    _close(d.cdf(tp.tensor(value, device=device)), ref.cdf(value))
    _close(d.icdf(tp.tensor([0.2, 0.9], dtype=tp.float64, device=device)), ref.ppf([0.2, 0.9]))
    _close(d.entropy(), ref.entropy())
    _close(d.mean, ref.mean())
    _close(d.variance, ref.var())
    samples = _np(d.sample((4000,)))
    assert samples.shape == (4000, 2) and samples.min() >= 0
    np.testing.assert_allclose(samples.mean(0), 1 / rate, rtol=0.1)
    r = tp.tensor(rate, requires_grad=True, device=device)
    x = Exponential(r).rsample()
    x.sum().backward()
    np.testing.assert_allclose(_np(r.grad), -_np(x) / rate, rtol=1e-7)  # x = E / rate


@pytest.mark.parametrize("device", DEVICES)
def test_laplace_matches_scipy(device):
    """log_prob, cdf, icdf, entropy and moments equal scipy's laplace; sample moments."""
    loc, scale = np.array([0.0, 1.0]), np.array([1.0, 0.5])
    value = np.array([-0.7, 1.2])
    d = Laplace(tp.tensor(loc, device=_device(device)), tp.tensor(scale, device=device))
    ref = stats.laplace(loc, scale)
    _close(d.log_prob(tp.tensor(value, device=device)), ref.logpdf(value))
    _close(d.cdf(tp.tensor(value, device=device)), ref.cdf(value))
    _close(d.icdf(tp.tensor([0.2, 0.9], dtype=tp.float64, device=device)), ref.ppf([0.2, 0.9]))
    _close(d.entropy(), ref.entropy())
    _close(d.variance, ref.var())
    _close(d.stddev, ref.std())
    samples = _np(d.rsample((4000,)))
    np.testing.assert_allclose(samples.mean(0), loc, atol=0.1)
    np.testing.assert_allclose(samples.std(0), ref.std(), rtol=0.1)


@pytest.mark.parametrize("device", DEVICES)
def test_poisson_matches_scipy(device):
    """log_prob (a rate of 0 included) equals scipy's poisson; samples are whole and their mean fits."""
    rate = np.array([0.0, 3.0, 25.0])
    value = np.array([0.0, 2.0, 30.0])
    d = Poisson(tp.tensor(rate, device=_device(device)))
    _close(d.log_prob(tp.tensor(value, device=device)), stats.poisson(rate).logpmf(value))
    _close(d.mode, np.floor(rate))
    samples = _np(d.sample((2000,)))
    assert samples.shape == (2000, 3) and np.all(samples == np.floor(samples))
    np.testing.assert_allclose(samples.mean(0), rate, atol=0.5)
    with pytest.raises(ValueError, match=r"IntegerGreaterThan\(lower_bound=0\)"):
        d.log_prob(tp.tensor([0.5, 1.0, 1.0], dtype=tp.float64, device=device))


@pytest.mark.parametrize("device", DEVICES)
def test_independent_sums_over_reinterpreted_dims(device):
    """Independent(Normal, 1): shapes move from batch to event; log_prob and entropy sum scipy's."""
    loc = np.random.default_rng(0).standard_normal((2, 3))
    scale = np.full((2, 3), 1.5)
    value = np.random.default_rng(1).standard_normal((4, 2, 3))
    d = Independent(Normal(tp.tensor(loc, device=_device(device)), tp.tensor(scale, device=device)), 1)
    assert d.batch_shape == (2,) and d.event_shape == (3,) and d.has_rsample
    ref = stats.norm(loc, scale)
    _close(d.log_prob(tp.tensor(value, device=device)), ref.logpdf(value).sum(-1))
    _close(d.entropy(), ref.entropy().sum(-1))
    assert d.rsample((5,)).shape == (5, 2, 3)
    e = d.expand((4, 2))
    assert e.batch_shape == (4, 2) and e.event_shape == (3,)
    with pytest.raises(ValueError, match="reinterpreted_batch_ndims <= len"):
        Independent(Normal(0.0, 1.0), 1)


@pytest.mark.parametrize("device", DEVICES)
def test_one_hot_categorical(device):
    """log_prob of one-hot values, entropy, mean, variance against NumPy; samples are one-hot with
    frequencies near the probabilities."""
    probs = np.array([[0.2, 0.3, 0.5], [0.6, 0.4, 0.0]])
    d = OneHotCategorical(probs=tp.tensor(probs, device=_device(device)))
    assert d.batch_shape == (2,) and d.event_shape == (3,)
    value = np.array([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]])
    _close(d.log_prob(tp.tensor(value, device=device)), np.log([0.5, 0.6]))
    with np.errstate(divide="ignore"):
        _close(d.entropy(), -(probs * np.where(probs > 0, np.log(probs), 0)).sum(-1))
    _close(d.mean, probs)
    _close(d.variance, probs * (1 - probs))
    samples = _np(d.sample((3000,)))
    assert samples.shape == (3000, 2, 3) and np.all(samples.sum(-1) == 1)
    assert np.all(np.abs(samples.mean(0) - probs) < 0.05)
    assert tuple(d.enumerate_support().shape) == (3, 2, 3)
    with pytest.raises(ValueError, match=r"OneHot\(\)"):
        d.log_prob(tp.tensor([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]], dtype=tp.float64, device=device))


def test_matches_torch():
    """The same values from PyTorch 2.13 (log_prob, entropy, gradients), including float32."""
    torch = pytest.importorskip("torch")
    TD = torch.distributions
    rate = np.array([0.5, 2.0])
    value = np.array([0.3, 1.7])
    cases = [
        (Exponential(tp.tensor(rate, requires_grad=True)), TD.Exponential(torch.tensor(rate, requires_grad=True))),
        (Laplace(tp.tensor(rate, requires_grad=True), 1.0), TD.Laplace(torch.tensor(rate, requires_grad=True), 1.0)),
        (Poisson(tp.tensor(rate, requires_grad=True)), TD.Poisson(torch.tensor(rate, requires_grad=True))),
    ]
    for ours, theirs in cases:
        a = ours.log_prob(tp.tensor(value.round())).sum()
        b = theirs.log_prob(torch.tensor(value.round())).sum()
        np.testing.assert_allclose(a.item(), b.item(), rtol=1e-10)
        a.backward()
        b.backward()
        param = next(iter(ours._parameters().values()))
        np.testing.assert_allclose(_np(param.grad), param_grad(theirs).numpy(), rtol=1e-10)
        if not isinstance(ours, Poisson):
            np.testing.assert_allclose(_np(ours.entropy()), theirs.entropy().detach().numpy(), rtol=1e-10)
    logits = np.array([0.1, -1.0, 2.0])
    ours = OneHotCategorical(logits=tp.tensor(logits))
    theirs = TD.OneHotCategorical(logits=torch.tensor(logits))
    np.testing.assert_allclose(_np(ours.log_prob(tp.tensor([0.0, 1.0, 0.0], dtype=tp.float64))),
                               theirs.log_prob(torch.tensor([0.0, 1.0, 0.0], dtype=torch.float64)).numpy(), rtol=1e-10)
    assert math.isclose(ours.entropy().item(), theirs.entropy().item(), rel_tol=1e-10)


def param_grad(theirs):
    """The gradient of the first parameter of a torch distribution (rate, or loc for Laplace)."""
    return (theirs.loc if hasattr(theirs, "loc") else theirs.rate).grad


def test_bad_parameters_raise():
    """PyTorch's constraint messages for a non-positive rate or scale."""
    with pytest.raises(ValueError, match=r"Expected parameter rate .* GreaterThan\(lower_bound=0.0\)"):
        Exponential(tp.tensor([0.0]))
    with pytest.raises(ValueError, match=r"Expected parameter scale"):
        Laplace(tp.tensor([0.0]), tp.tensor([-1.0]))
    with pytest.raises(ValueError, match=r"Expected parameter rate .* GreaterThanEq"):
        Poisson(tp.tensor([-1.0]))
    with pytest.raises(ValueError, match=r"GreaterThanEq\(lower_bound=0.0\)"):
        Exponential(1.0).log_prob(tp.tensor(-1.0))
