"""VonMises against scipy.stats.vonmises in float64, PyTorch 2.13 where installed, and the
circular moments of its rejection-sampled draws (issue 13)."""
import numpy as np
import pytest

import tensorplug as tp
from tensorplug.distributions import VonMises
from distribution_helpers import DEVICES, usable_device as _device, to_numpy as _np, assert_close as _close

stats = pytest.importorskip("scipy.stats")
special = pytest.importorskip("scipy.special")

LOC = np.array([0.5, -2.5, 1.0, 3.0])
CONCENTRATION = np.array([2.0, 30.0, 1e-6, 800.0])


@pytest.mark.parametrize("device", DEVICES)
def test_matches_scipy(device):
    """log_prob (a large concentration included, where I0 overflows) and the circular variance;
    draws lie in [-pi, pi) with scipy's circular mean and variance."""
    d = VonMises(tp.tensor(LOC, device=_device(device)), tp.tensor(CONCENTRATION, device=device))
    value = np.array([0.3, -2.4, 6.0, 3.01])
    _close(d.log_prob(tp.tensor(value, device=device)),
           [stats.vonmises(k, loc=m).logpdf(v) for m, k, v in zip(LOC, CONCENTRATION, value)], rtol=1e-10)
    _close(d.variance, 1 - special.i1e(CONCENTRATION) / special.i0e(CONCENTRATION), rtol=1e-10)
    _close(d.mean, LOC)
    draws = _np(d.sample((20000,)))
    assert draws.shape == (20000, 4) and draws.min() >= -np.pi and draws.max() < np.pi
    resultant = np.exp(1j * draws).mean(0)
    concentrated = CONCENTRATION > 1
    np.testing.assert_allclose(np.angle(resultant)[concentrated], LOC[concentrated], atol=0.05)
    np.testing.assert_allclose(1 - np.abs(resultant), 1 - special.i1e(CONCENTRATION) / special.i0e(CONCENTRATION),
                               atol=0.02)


def test_shapes_and_checks():
    d = VonMises(0.0, tp.tensor([1.0, 2.0]))
    assert d.sample((3,)).shape == (3, 2) and d.expand((4, 2)).batch_shape == (4, 2)
    assert not d.has_rsample
    with pytest.raises(NotImplementedError, match="rsample"):
        d.rsample()
    with pytest.raises(ValueError, match=r"Expected parameter concentration .* GreaterThan\(lower_bound=0.0\)"):
        VonMises(0.0, -1.0)


def test_matches_torch():
    torch = pytest.importorskip("torch")
    ours = VonMises(tp.tensor(LOC), tp.tensor(CONCENTRATION))
    theirs = torch.distributions.VonMises(torch.tensor(LOC), torch.tensor(CONCENTRATION))
    value = np.array([0.3, -2.4, 6.0, 3.01])
    # PyTorch evaluates log I0 and I1 / I0 with polynomial fits good to ~1e-7 absolute, so its
    # 1 - I1 / I0 is 4e-4 off relatively at kappa = 800 (scipy, above, is matched to 1e-10).
    _close(ours.log_prob(tp.tensor(value)), theirs.log_prob(torch.tensor(value)).numpy(), rtol=1e-7)
    np.testing.assert_allclose(_np(ours.variance), theirs.variance.numpy(), atol=1e-6)
    assert repr(ours.support) == repr(theirs.support)
    assert {k: repr(v) for k, v in ours.arg_constraints.items()} == {k: repr(v) for k, v in theirs.arg_constraints.items()}
