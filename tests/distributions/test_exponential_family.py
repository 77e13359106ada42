"""ExponentialFamily: its entropy and Bregman KL, computed from each family's natural parameters
and log normalizer by autograd, against scipy.stats entropies and closed-form or PyTorch 2.13 KL
divergences; which classes belong to it, as in PyTorch (issue 13)."""
import math

import numpy as np
import pytest

import tensorplug as tp
from tensorplug import distributions as D
from tensorplug.distributions.exp_family import bregman_kl
from distribution_helpers import to_numpy as _np, assert_close as _close

stats = pytest.importorskip("scipy.stats")
F64 = tp.float64


def _t(values):
    return tp.tensor(np.asarray(values, dtype=np.float64))


FAMILIES = {  # name -> (tensorplug member, scipy entropies)
    "Normal": (lambda: D.Normal(_t([0.5, -1.0]), _t([1.0, 2.0])), stats.norm([0.5, -1.0], [1.0, 2.0]).entropy()),
    "Bernoulli": (lambda: D.Bernoulli(probs=_t([0.3, 0.8])), stats.bernoulli([0.3, 0.8]).entropy()),
    "Beta": (lambda: D.Beta(_t([2.0, 0.7]), _t([3.0, 1.5])), stats.beta([2.0, 0.7], [3.0, 1.5]).entropy()),
    "Exponential": (lambda: D.Exponential(_t([0.5, 2.0])), stats.expon(scale=[2.0, 0.5]).entropy()),
    "Gamma": (lambda: D.Gamma(_t([2.0, 0.7]), _t([1.5, 3.0])), stats.gamma([2.0, 0.7], scale=[1 / 1.5, 1 / 3.0]).entropy()),
    "Chi2": (lambda: D.Chi2(_t([3.0, 5.0])), stats.chi2([3.0, 5.0]).entropy()),
    "Dirichlet": (lambda: D.Dirichlet(_t([[1.0, 2.0, 3.0], [0.5, 0.5, 2.0]])),
                  [stats.dirichlet([1.0, 2.0, 3.0]).entropy(), stats.dirichlet([0.5, 0.5, 2.0]).entropy()]),
}


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_generic_entropy_matches_scipy(name):
    make, expected = FAMILIES[name]
    d = make()
    assert isinstance(d, D.ExponentialFamily)
    _close(D.ExponentialFamily.entropy(d), expected, rtol=1e-10)


def test_bregman_kl():
    """Normal against its closed form; every family against its registered formula's values
    (checked against PyTorch elsewhere); different families refused."""
    p, q = D.Normal(_t([0.5, -1.0]), _t([1.0, 2.0])), D.Normal(_t([0.0, 1.0]), _t([2.0, 0.5]))
    ratio = (np.array([1.0, 2.0]) / np.array([2.0, 0.5])) ** 2
    expected = 0.5 * (ratio + ((np.array([0.5, -1.0]) - [0.0, 1.0]) / np.array([2.0, 0.5])) ** 2 - 1 - np.log(ratio))
    _close(bregman_kl(p, q), expected, rtol=1e-12)
    with pytest.raises(NotImplementedError, match="different exponential families"):
        bregman_kl(p, D.Gamma(1.0, 1.0))


def test_bregman_kl_matches_torch():
    torch = pytest.importorskip("torch")
    T = torch.distributions
    pairs = [
        (D.Beta(_t([2.0, 0.7]), _t([3.0, 1.5])), D.Beta(_t([1.0, 2.0]), _t([0.5, 4.0])),
         T.Beta(torch.tensor([2.0, 0.7], dtype=torch.float64), torch.tensor([3.0, 1.5], dtype=torch.float64)),
         T.Beta(torch.tensor([1.0, 2.0], dtype=torch.float64), torch.tensor([0.5, 4.0], dtype=torch.float64))),
        (D.ContinuousBernoulli(probs=_t([0.3, 0.8])), D.ContinuousBernoulli(probs=_t([0.6, 0.1])),
         T.ContinuousBernoulli(probs=torch.tensor([0.3, 0.8], dtype=torch.float64)),
         T.ContinuousBernoulli(probs=torch.tensor([0.6, 0.1], dtype=torch.float64))),
        (D.Poisson(_t([1.0, 2.0])), D.Poisson(_t([2.0, 0.5])),
         T.Poisson(torch.tensor([1.0, 2.0], dtype=torch.float64)), T.Poisson(torch.tensor([2.0, 0.5], dtype=torch.float64))),
    ]
    for p, q, tp_, tq in pairs:
        _close(bregman_kl(p, q), T.kl_divergence(tp_, tq).numpy(), rtol=1e-9)
    members = sorted(name for name in T.__all__ if isinstance(getattr(T, name), type)
                     and issubclass(getattr(T, name), T.ExponentialFamily) and hasattr(D, name))
    ours = sorted(name for name in D.__all__ if isinstance(getattr(D, name), type)
                  and issubclass(getattr(D, name), D.ExponentialFamily))
    assert ours == members


def test_a_family_defined_by_a_user():
    """A subclass that gives only eta, A and E[log h] gets its entropy: the Rayleigh distribution
    (t(x) = x^2, eta = -1 / (2 s^2), A = -log(-2 eta), h(x) = x)."""

    class Rayleigh(D.ExponentialFamily):
        def __init__(self, scale):
            self.scale = scale
            super().__init__(tuple(scale.shape))

        @property
        def _natural_params(self):
            return (-0.5 / self.scale.pow(2),)

        def _log_normalizer(self, eta):
            return -(-2 * eta).log()

        @property
        def _mean_carrier_measure(self):
            # E[log x] for a Rayleigh(s): log(s sqrt 2) - gamma / 2.
            return (self.scale * math.sqrt(2)).log() - 0.5772156649015329 / 2

    scale = np.array([0.5, 2.0])
    _close(Rayleigh(_t(scale)).entropy(), stats.rayleigh(scale=scale).entropy(), rtol=1e-10)
