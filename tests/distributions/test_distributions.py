"""tp.distributions against PyTorch 2.13 (densities, entropies, moments, gradients, KL) and against
sample statistics (issue 13: the REINFORCE and VAE examples' distributions)."""
import math

import numpy as np
import pytest

import tensorplug as tp
from tensorplug.distributions import Bernoulli, Categorical, Normal, Uniform, kl_divergence
from distribution_helpers import DEVICES, usable_device as _device


def _torch():
    return pytest.importorskip("torch", reason="PyTorch 2.13 is the reference here (pip install torch==2.13.0)")


def _pair(torch, array, requires_grad=True):
    return (tp.tensor(array, requires_grad=requires_grad),
            torch.tensor(array, requires_grad=requires_grad))


def _close(ours, theirs, rtol=1e-10):
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=rtol, atol=1e-12)


@pytest.mark.parametrize("given", ["probs", "logits"])
def test_categorical_matches_torch(given):
    """log_prob, entropy, probs, logits and their gradients equal PyTorch's, from probs or logits."""
    torch = _torch()
    array = np.random.uniform(0.05, 1.0, (4, 5)) if given == "probs" else np.random.randn(4, 5)
    a, b = _pair(torch, array)
    ours, theirs = Categorical(**{given: a}), torch.distributions.Categorical(**{given: b})
    value = np.array([0, 4, 2, 1])
    out_a = ours.log_prob(tp.tensor(value)).sum() + ours.entropy().sum()
    out_b = theirs.log_prob(torch.tensor(value)).sum() + theirs.entropy().sum()
    _close(out_a, out_b)
    _close(ours.probs, theirs.probs)
    _close(ours.logits, theirs.logits)
    assert ours.batch_shape == tuple(theirs.batch_shape) and ours.event_shape == ()
    np.testing.assert_array_equal(ours.mode.numpy(), theirs.mode.numpy())
    out_a.backward()
    out_b.backward()
    _close(a.grad, b.grad)


def test_categorical_log_prob_broadcasts_values_against_the_batch():
    """A (3, 1) value against a batch of 2 gives (3, 2) log-probabilities, as PyTorch's."""
    torch = _torch()
    array = np.random.uniform(0.1, 1, (2, 3))
    value = np.array([[0], [1], [2]])
    ours = Categorical(probs=tp.tensor(array)).log_prob(tp.tensor(value))
    theirs = torch.distributions.Categorical(probs=torch.tensor(array)).log_prob(torch.tensor(value))
    _close(ours, theirs)


@pytest.mark.parametrize("device", DEVICES)
def test_categorical_samples_follow_the_probabilities(device):
    """Sample frequencies are within 4 standard errors of the probabilities; a category of
    probability 0 is never drawn; shapes are sample_shape + batch_shape."""
    probs = tp.tensor([[0.1, 0.0, 0.6, 0.3], [0.25, 0.25, 0.25, 0.25]], device=_device(device))
    samples = Categorical(probs=probs).sample((4000,))
    assert samples.shape == (4000, 2) and samples.dtype == tp.int64 and samples.device == probs.device
    counts = np.stack([np.bincount(samples.cpu().numpy()[:, row], minlength=4) for row in range(2)]) / 4000
    expected = probs.cpu().numpy()
    assert np.all(np.abs(counts - expected) <= 4 * np.sqrt(expected * (1 - expected) / 4000) + 1e-12)
    assert counts[0, 1] == 0


@pytest.mark.parametrize("device", DEVICES)
def test_normal_matches_torch_and_rsample_differentiates(device):
    """log_prob, entropy, cdf and icdf equal PyTorch's; rsample is loc + eps * scale, so its
    gradient to loc is 1 and to scale is eps."""
    torch = _torch()
    loc, scale = np.random.randn(3), np.random.uniform(0.5, 2, 3)
    value = np.random.randn(3)
    ours = Normal(tp.tensor(loc, device=_device(device)), tp.tensor(scale, device=device))
    theirs = torch.distributions.Normal(torch.tensor(loc), torch.tensor(scale))
    for name in ("log_prob", "cdf"):
        _close(getattr(ours, name)(tp.tensor(value, device=device)).cpu(), getattr(theirs, name)(torch.tensor(value)), 1e-7)
    _close(ours.icdf(tp.tensor([0.2, 0.5, 0.9], dtype=tp.float64, device=device)).cpu(),
           theirs.icdf(torch.tensor([0.2, 0.5, 0.9], dtype=torch.float64)), 1e-6)
    _close(ours.entropy().cpu(), theirs.entropy())
    a_loc = tp.tensor(loc, requires_grad=True, device=device)
    a_scale = tp.tensor(scale, requires_grad=True, device=device)
    sample = Normal(a_loc, a_scale).rsample()
    sample.sum().backward()
    eps = (sample.detach().cpu().numpy() - loc) / scale
    np.testing.assert_allclose(a_loc.grad.cpu().numpy(), np.ones(3))
    np.testing.assert_allclose(a_scale.grad.cpu().numpy(), eps, rtol=1e-7)
    assert not Normal(a_loc, a_scale).sample((2,)).requires_grad


@pytest.mark.parametrize("given", ["probs", "logits"])
def test_bernoulli_matches_torch(given):
    """log_prob, entropy, mean, variance, mode and gradients equal PyTorch's."""
    torch = _torch()
    array = np.array([0.1, 0.5, 0.8]) if given == "probs" else np.array([-2.0, 0.0, 1.5])
    a, b = _pair(torch, array)
    ours, theirs = Bernoulli(**{given: a}), torch.distributions.Bernoulli(**{given: b})
    value = np.array([1.0, 0.0, 1.0])
    out_a = ours.log_prob(tp.tensor(value)).sum() + ours.entropy().sum()
    out_b = theirs.log_prob(torch.tensor(value)).sum() + theirs.entropy().sum()
    _close(out_a, out_b)
    for name in ("mean", "variance", "mode"):
        _close(getattr(ours, name), getattr(theirs, name))
    out_a.backward()
    out_b.backward()
    _close(a.grad, b.grad)
    assert ours.sample((5,)).shape == (5, 3)


def test_uniform_matches_torch():
    """log_prob (inside the support), entropy, moments, cdf and rsample's gradients."""
    torch = _torch()
    low, high = np.array([0.0, -1.0]), np.array([2.0, 3.0])
    ours = Uniform(tp.tensor(low, requires_grad=True), tp.tensor(high, requires_grad=True))
    theirs = torch.distributions.Uniform(torch.tensor(low), torch.tensor(high))
    value = np.array([0.5, 2.5])
    for name in ("log_prob", "cdf"):
        _close(getattr(ours, name)(tp.tensor(value)), getattr(theirs, name)(torch.tensor(value)))
    for name in ("entropy",):
        _close(getattr(ours, name)(), getattr(theirs, name)())
    for name in ("mean", "variance", "stddev"):
        _close(getattr(ours, name), getattr(theirs, name))
    sample = ours.rsample()
    sample.sum().backward()
    unit = (sample.detach().numpy() - low) / (high - low)
    np.testing.assert_allclose(ours.high.grad.numpy(), unit, rtol=1e-7)
    np.testing.assert_allclose(ours.low.grad.numpy(), 1 - unit, rtol=1e-7)


def test_kl_divergence_matches_torch():
    """KL for Normal, Categorical (with zero probabilities), Bernoulli and Uniform pairs."""
    torch = _torch()
    TD = torch.distributions
    t = torch.tensor
    cases = [
        (Normal(tp.tensor([0.0, 1.0]), tp.tensor([1.0, 2.0])), Normal(tp.tensor([1.0, 1.0]), tp.tensor([0.5, 2.0])),
         TD.Normal(t([0.0, 1.0]), t([1.0, 2.0])), TD.Normal(t([1.0, 1.0]), t([0.5, 2.0]))),
        (Categorical(probs=tp.tensor([0.5, 0.5, 0.0])), Categorical(probs=tp.tensor([0.2, 0.3, 0.5])),
         TD.Categorical(probs=t([0.5, 0.5, 0.0])), TD.Categorical(probs=t([0.2, 0.3, 0.5]))),
        (Categorical(probs=tp.tensor([0.2, 0.3, 0.5])), Categorical(probs=tp.tensor([0.5, 0.5, 0.0])),
         TD.Categorical(probs=t([0.2, 0.3, 0.5])), TD.Categorical(probs=t([0.5, 0.5, 0.0]))),
        (Bernoulli(probs=tp.tensor([0.3, 0.0])), Bernoulli(probs=tp.tensor([0.6, 0.5])),
         TD.Bernoulli(probs=t([0.3, 0.0])), TD.Bernoulli(probs=t([0.6, 0.5]))),
        (Uniform(tp.tensor([0.0, 0.0]), tp.tensor([1.0, 1.0])), Uniform(tp.tensor([-1.0, 0.5]), tp.tensor([2.0, 1.0])),
         TD.Uniform(t([0.0, 0.0]), t([1.0, 1.0])), TD.Uniform(t([-1.0, 0.5]), t([2.0, 1.0]))),
    ]
    for p, q, tp_, tq in cases:
        np.testing.assert_allclose(kl_divergence(p, q).numpy(), TD.kl_divergence(tp_, tq).numpy(), rtol=1e-6)


def test_kl_divergence_without_a_formula_raises():
    """A pair with no registered formula raises NotImplementedError naming both types."""
    with pytest.raises(NotImplementedError, match="Categorical and q type Normal"):
        kl_divergence(Categorical(probs=tp.tensor([0.5, 0.5])), Normal(0.0, 1.0))


def test_invalid_arguments_raise_value_error():
    """PyTorch's argument checks: a bad parameter or a value outside the support is a ValueError."""
    with pytest.raises(ValueError, match=r"Expected parameter scale .* GreaterThan\(lower_bound=0.0\)"):
        Normal(tp.tensor([0.0]), tp.tensor([-1.0]))
    with pytest.raises(ValueError, match="Expected parameter probs .* Simplex"):
        Categorical(probs=tp.tensor([-0.5, 1.5]))
    with pytest.raises(ValueError, match="Either `probs` or `logits` must be specified, but not both"):
        Categorical(probs=tp.tensor([0.5, 0.5]), logits=tp.tensor([0.0, 0.0]))
    with pytest.raises(ValueError, match=r"within the support \(IntegerInterval\(lower_bound=0, upper_bound=1\)\)"):
        Categorical(probs=tp.tensor([0.5, 0.5])).log_prob(tp.tensor(2))
    with pytest.raises(ValueError, match=r"Expected parameter low .* LessThan\(upper_bound=1.0\)"):
        Uniform(1.0, 1.0)  # PyTorch 2.13's message: low must be below high
    with pytest.raises(ValueError, match="Interval"):
        Bernoulli(probs=tp.tensor([1.5]))
    Normal(tp.tensor([0.0]), tp.tensor([-1.0]), validate_args=False)  # unchecked on request


def test_rsample_is_refused_where_there_is_no_reparameterization():
    """Categorical has no rsample: NotImplementedError says to use sample()."""
    with pytest.raises(NotImplementedError, match=r"Categorical does not implement rsample .* use sample\(\)"):
        Categorical(probs=tp.tensor([0.5, 0.5])).rsample()
    assert math.isclose(Categorical(logits=tp.zeros(4)).entropy().item(), math.log(4), rel_tol=1e-6)
