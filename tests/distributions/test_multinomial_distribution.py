"""Multinomial against scipy.stats.multinomial in float64, PyTorch 2.13 where installed, and the
frequencies of its draws; OneHotCategoricalStraightThrough's gradient (issue 13)."""
import math

import numpy as np
import pytest

import tensorplug as tp
from tensorplug.distributions import Multinomial, OneHotCategoricalStraightThrough
from distribution_helpers import DEVICES, usable_device as _device, to_numpy as _np, assert_close as _close

stats = pytest.importorskip("scipy.stats")

PROBS = np.array([[0.2, 0.3, 0.5], [0.1, 0.0, 0.9]])


@pytest.mark.parametrize("device", DEVICES)
def test_matches_scipy(device):
    """log_prob, entropy, mean and variance equal scipy's multinomial (a zero probability included);
    draws sum to total_count and their mean is n p."""
    d = Multinomial(6, probs=tp.tensor(PROBS, device=_device(device)))
    assert d.batch_shape == (2,) and d.event_shape == (3,)
    value = np.array([[1.0, 2.0, 3.0], [2.0, 0.0, 4.0]])
    refs = [stats.multinomial(6, row) for row in PROBS]
    _close(d.log_prob(tp.tensor(value, device=device)), [ref.logpmf(v) for ref, v in zip(refs, value)])
    _close(d.entropy(), [ref.entropy() for ref in refs], rtol=1e-9)
    _close(d.mean, 6 * PROBS)
    _close(d.variance, 6 * PROBS * (1 - PROBS))
    draws = _np(d.sample((3000,)))
    assert draws.shape == (3000, 2, 3) and np.all(draws.sum(-1) == 6) and np.all(draws[:, 1, 1] == 0)
    np.testing.assert_allclose(draws.mean(0), 6 * PROBS, atol=0.1)


def test_checks_and_shapes():
    d = Multinomial(4, logits=tp.tensor([0.0, -math.inf, 1.0], dtype=tp.float64))
    # A count of 0 on a category of probability 0 is possible.
    expected = stats.multinomial(4, [1 / (1 + math.e), 0.0, math.e / (1 + math.e)]).logpmf([1, 0, 3])
    assert math.isclose(d.log_prob(tp.tensor([1.0, 0.0, 3.0], dtype=tp.float64)).item(), expected, rel_tol=1e-12)
    with pytest.raises(NotImplementedError, match="inhomogeneous total_count is not supported"):
        Multinomial(tp.tensor(4), probs=tp.ones(3) / 3)
    with pytest.raises(ValueError, match=r"within the support \(Multinomial\(\)\)"):
        Multinomial(4, probs=tp.ones(3) / 3).log_prob(tp.tensor([2.0, 2.0, 2.0]))
    with pytest.raises(RuntimeError, match="cannot sample n_sample <= 0 samples"):
        Multinomial(0, probs=tp.ones(3) / 3).sample()
    assert Multinomial(4, probs=tp.ones(2, 3) / 3).expand((5, 2)).batch_shape == (5, 2)


def test_straight_through_gradient():
    """The draw is one-hot; its gradient to probs is the identity (straight through)."""
    probs = tp.tensor([0.2, 0.8], dtype=tp.float64, requires_grad=True)
    d = OneHotCategoricalStraightThrough(probs=probs)
    draw = d.rsample()
    assert sorted(_np(draw).tolist()) == [0.0, 1.0] and d.has_rsample
    (draw * tp.tensor([1.0, 3.0], dtype=tp.float64)).sum().backward()
    # probs are normalised inside (p / sum p), whose Jacobian applied to (1, 3) gives (1 - m, 3 - m), m = sum p_i w_i.
    m = 0.2 * 1.0 + 0.8 * 3.0
    _close(probs.grad, [1.0 - m, 3.0 - m])


def test_matches_torch():
    torch = pytest.importorskip("torch")
    ours = Multinomial(6, probs=tp.tensor(PROBS))
    theirs = torch.distributions.Multinomial(6, probs=torch.tensor(PROBS))
    value = np.array([[1.0, 2.0, 3.0], [2.0, 0.0, 4.0]])
    _close(ours.log_prob(tp.tensor(value)), theirs.log_prob(torch.tensor(value)).numpy())
    # PyTorch's entropy is 8e-8 from scipy's (and tensorplug's, matched to 1e-9 above).
    _close(ours.entropy(), theirs.entropy().numpy(), rtol=1e-6)
    assert repr(ours.support) == repr(theirs.support)
    assert (ours.has_rsample, ours.has_enumerate_support) == (theirs.has_rsample, theirs.has_enumerate_support)
