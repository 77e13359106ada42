"""ContinuousBernoulli against its density integrated numerically in float64 (scipy.integrate.quad
for the normalizer, mean, variance, entropy and cdf), PyTorch 2.13 where installed, and sample
moments, on both sides of p = 1/2 and inside the Taylor region around it (issue 13)."""
import numpy as np
import pytest

import tensorplug as tp
from tensorplug.distributions import ContinuousBernoulli
from distribution_helpers import DEVICES, usable_device as _device, to_numpy as _np, assert_close as _close

integrate = pytest.importorskip("scipy.integrate")

PROBS = np.array([0.05, 0.3, 0.4995, 0.5, 0.5008, 0.8])


def _moments(p):
    """(log normalizer, mean, variance, entropy) of p^x (1 - p)^(1 - x) on [0, 1], by quadrature."""
    def unnormalized(x):
        return p ** x * (1 - p) ** (1 - x)

    total = integrate.quad(unnormalized, 0, 1, epsabs=1e-14, epsrel=1e-14)[0]
    mean = integrate.quad(lambda x: x * unnormalized(x), 0, 1, epsabs=1e-14, epsrel=1e-14)[0] / total
    second = integrate.quad(lambda x: x * x * unnormalized(x), 0, 1, epsabs=1e-14, epsrel=1e-14)[0] / total
    log_density = (lambda x: np.log(unnormalized(x) / total))
    entropy = -integrate.quad(lambda x: unnormalized(x) / total * log_density(x), 0, 1, epsabs=1e-14, epsrel=1e-14)[0]
    return -np.log(total), mean, second - mean ** 2, entropy


@pytest.mark.parametrize("device", DEVICES)
def test_matches_quadrature(device):
    d = ContinuousBernoulli(probs=tp.tensor(PROBS, device=_device(device)))
    reference = np.array([_moments(p) for p in PROBS])
    value = np.full(len(PROBS), 0.3)
    expected_log_prob = value * np.log(PROBS) + (1 - value) * np.log1p(-PROBS) + reference[:, 0]
    _close(d.log_prob(tp.tensor(value, device=device)), expected_log_prob, rtol=1e-10)
    _close(d.mean, reference[:, 1], rtol=1e-10)
    _close(d.variance, reference[:, 2], rtol=1e-10)
    _close(d.entropy(), reference[:, 3], rtol=1e-8)
    log_normalizer = reference[:, 0]
    expected_cdf = [integrate.quad(lambda x: p ** x * (1 - p) ** (1 - x), 0, 0.3, epsabs=1e-14)[0] * np.exp(c)
                    for p, c in zip(PROBS, log_normalizer)]
    cdf = d.cdf(tp.tensor(value, device=device))
    # Inside the Taylor region the cdf is the uniform's, as in PyTorch (off by O(p - 1/2) there).
    outside = (PROBS <= 0.499) | (PROBS > 0.501)
    _close(tp.tensor(_np(cdf)[outside]), np.asarray(expected_cdf)[outside], rtol=1e-10)
    _close(d.icdf(cdf), value, rtol=1e-9)
    samples = _np(d.sample((4000,)))
    assert np.all((samples >= 0) & (samples <= 1))
    np.testing.assert_allclose(samples.mean(0), reference[:, 1], atol=0.03)


def test_edges_and_gradients():
    """probs of 0 and 1 are kept off the ends (finite values); cdf is 0 / 1 outside [0, 1] without
    validation; rsample differentiates in the logits."""
    d = ContinuousBernoulli(probs=tp.tensor([0.0, 1.0], dtype=tp.float64))
    assert np.all(np.isfinite(_np(d.mean))) and np.all(np.isfinite(_np(d.entropy())))
    unchecked = ContinuousBernoulli(probs=tp.tensor([0.3, 0.3], dtype=tp.float64), validate_args=False)
    assert _np(unchecked.cdf(tp.tensor([-1.0, 2.0], dtype=tp.float64))).tolist() == [0.0, 1.0]
    with pytest.raises(ValueError, match=r"within the support \(Interval\(lower_bound=0.0, upper_bound=1.0\)\)"):
        ContinuousBernoulli(probs=tp.tensor(0.3)).log_prob(tp.tensor(1.5))
    logits = tp.tensor([0.5, -2.0], dtype=tp.float64, requires_grad=True)
    ContinuousBernoulli(logits=logits).rsample((3,)).sum().backward()
    assert np.all(_np(logits.grad) > 0)
    assert ContinuousBernoulli(probs=tp.tensor([0.3])).expand((4, 1)).batch_shape == (4, 1)


def test_matches_torch():
    torch = pytest.importorskip("torch")
    ours = ContinuousBernoulli(probs=tp.tensor(PROBS))
    theirs = torch.distributions.ContinuousBernoulli(probs=torch.tensor(PROBS))
    value = np.linspace(0.05, 0.95, len(PROBS))
    for name in ("log_prob", "cdf", "icdf"):
        _close(getattr(ours, name)(tp.tensor(value)), getattr(theirs, name)(torch.tensor(value)).numpy(), rtol=1e-9)
    _close(ours.entropy(), theirs.entropy().numpy(), rtol=1e-9)
    _close(ours.mean, theirs.mean.numpy(), rtol=1e-9)
    # PyTorch's Taylor variance has +128 x^4 / 945 where the series has -128 x^4 / 945: 1e-13 apart here.
    _close(ours.variance, theirs.variance.numpy(), rtol=1e-11)
    assert repr(ours.support) == repr(theirs.support) and ours.has_rsample == theirs.has_rsample
    from tensorplug.distributions import kl_divergence

    other = PROBS[::-1].copy()
    _close(kl_divergence(ours, ContinuousBernoulli(probs=tp.tensor(other))),
           torch.distributions.kl_divergence(theirs, torch.distributions.ContinuousBernoulli(
               probs=torch.tensor(other))).numpy(), rtol=1e-9)
