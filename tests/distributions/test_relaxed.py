"""RelaxedBernoulli and RelaxedOneHotCategorical (the Concrete distributions) against their
densities written in NumPy float64 (Maddison et al. 2017), PyTorch 2.13 where installed, and the
behaviour of their draws (issue 13)."""
import math

import numpy as np
import pytest

import tensorplug as tp
from tensorplug.distributions import RelaxedBernoulli, RelaxedOneHotCategorical
from distribution_helpers import DEVICES, usable_device as _device, to_numpy as _np, assert_close as _close


def _binary_concrete_log_density(x, probs, temperature):
    odds = probs / (1 - probs)
    numerator = math.log(temperature) + np.log(odds) - (temperature + 1) * (np.log(x) + np.log1p(-x))
    return numerator - 2 * np.log(odds * x ** -temperature + (1 - x) ** -temperature)


def _concrete_log_density(x, probs, temperature):
    k = x.shape[-1]
    alpha = probs / probs.sum(-1, keepdims=True)
    return (math.lgamma(k) + (k - 1) * math.log(temperature) + (np.log(alpha) - (temperature + 1) * np.log(x)).sum(-1)
            - k * np.log((alpha * x ** -temperature).sum(-1)))


@pytest.mark.parametrize("device", DEVICES)
def test_relaxed_bernoulli(device):
    """log_prob is the binary Concrete density; draws lie in (0, 1), and at a low temperature
    they sit near 0 or 1 with P(near 1) = probs."""
    probs = np.array([0.2, 0.7])
    d = RelaxedBernoulli(tp.tensor(0.5, dtype=tp.float64, device=_device(device)),
                         probs=tp.tensor(probs, device=device))
    value = np.array([0.3, 0.9])
    _close(d.log_prob(tp.tensor(value, device=device)), _binary_concrete_log_density(value, probs, 0.5))
    assert d.batch_shape == (2,) and d.event_shape == () and d.has_rsample
    cold = RelaxedBernoulli(tp.tensor(0.05, dtype=tp.float64, device=device), probs=tp.tensor(probs, device=device))
    draws = _np(cold.sample((4000,)))
    assert np.all((draws > 0) & (draws < 1))
    np.testing.assert_allclose((draws > 0.5).mean(0), probs, atol=0.04)
    assert cold.expand((3, 2)).batch_shape == (3, 2)


@pytest.mark.parametrize("device", DEVICES)
def test_relaxed_one_hot_categorical(device):
    """log_prob is the Concrete density; draws are on the simplex, and at a low temperature their
    argmax is Categorical(probs)."""
    probs = np.array([[0.2, 0.3, 0.5], [0.6, 0.2, 0.2]])
    d = RelaxedOneHotCategorical(tp.tensor(0.7, dtype=tp.float64, device=_device(device)),
                                 probs=tp.tensor(probs, device=device))
    assert d.batch_shape == (2,) and d.event_shape == (3,)
    value = np.array([[0.1, 0.3, 0.6], [0.5, 0.25, 0.25]])
    _close(d.log_prob(tp.tensor(value, device=device)), _concrete_log_density(value, probs, 0.7))
    cold = RelaxedOneHotCategorical(tp.tensor(0.05, dtype=tp.float64, device=device),
                                    probs=tp.tensor(probs, device=device))
    draws = _np(cold.sample((4000,)))
    np.testing.assert_allclose(draws.sum(-1), 1.0, atol=1e-9)
    counts = np.stack([np.bincount(draws[:, row].argmax(-1), minlength=3) for row in range(2)]) / 4000
    np.testing.assert_allclose(counts, probs, atol=0.04)
    assert cold.expand((4, 2)).batch_shape == (4, 2)


def test_rsample_differentiates_in_the_logits():
    logits = tp.tensor([0.5, -1.0, 0.2], dtype=tp.float64, requires_grad=True)
    RelaxedOneHotCategorical(tp.tensor(0.5, dtype=tp.float64), logits=logits).rsample((5,))[..., 0].sum().backward()
    assert logits.grad is not None and np.all(np.isfinite(_np(logits.grad)))
    b_logits = tp.tensor([0.5, -1.0], dtype=tp.float64, requires_grad=True)
    RelaxedBernoulli(tp.tensor(0.5, dtype=tp.float64), logits=b_logits).rsample((5,)).sum().backward()
    assert np.all(_np(b_logits.grad) > 0)  # a larger logit moves every draw up


def test_matches_torch():
    torch = pytest.importorskip("torch")
    T = torch.distributions
    temperature, logits = 0.4, np.array([[0.3, -0.2, 1.0]])
    ours = RelaxedOneHotCategorical(tp.tensor(temperature, dtype=tp.float64), logits=tp.tensor(logits))
    theirs = T.RelaxedOneHotCategorical(torch.tensor(temperature, dtype=torch.float64), logits=torch.tensor(logits))
    value = np.array([[0.2, 0.1, 0.7]])
    _close(ours.log_prob(tp.tensor(value)), theirs.log_prob(torch.tensor(value)).numpy())
    ours_b = RelaxedBernoulli(tp.tensor(temperature, dtype=tp.float64), logits=tp.tensor(logits[0]))
    theirs_b = T.RelaxedBernoulli(torch.tensor(temperature, dtype=torch.float64), logits=torch.tensor(logits[0]))
    _close(ours_b.log_prob(tp.tensor([0.2, 0.5, 0.9])), theirs_b.log_prob(torch.tensor([0.2, 0.5, 0.9])).numpy())
    for a, b in ((ours, theirs), (ours_b, theirs_b)):
        assert repr(a.support) == repr(b.support) and a.has_rsample == b.has_rsample
        _close(a.probs, b.probs.numpy())
