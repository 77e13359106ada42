"""KL divergences between different families (tensorplug/distributions/kl_between_families.py)
against PyTorch 2.13, pair by pair, with parameters that make the divergence finite and
parameters that make it infinite; and a few against NumPy float64 quadrature without PyTorch
(issue 13)."""
import math

import numpy as np
import pytest

import tensorplug as tp
from tensorplug import distributions as D
from distribution_helpers import to_numpy as _np, assert_close as _close

# family -> parameter sets (keyword arguments, float64 lists), the first inside [0.1, 0.9] where
# the family allows it, the second reaching outside it.
PARAMETERS = {
    "Bernoulli": [{"probs": [0.3, 0.8]}],
    "Binomial": [{"total_count": [3.0, 3.0], "probs": [0.3, 0.8]}],
    "Poisson": [{"rate": [0.5, 2.0]}],
    "Beta": [{"concentration1": [2.0, 0.7], "concentration0": [3.0, 1.5]}],
    "ContinuousBernoulli": [{"probs": [0.3, 0.8]}],
    "Exponential": [{"rate": [0.5, 2.0]}],
    "Gamma": [{"concentration": [2.0, 0.7], "rate": [1.5, 3.0]}],
    "Gumbel": [{"loc": [0.5, -1.0], "scale": [1.0, 2.0]}],
    "Laplace": [{"loc": [0.5, -1.0], "scale": [1.0, 2.0]}],
    "Normal": [{"loc": [0.5, -1.0], "scale": [1.0, 2.0]}],
    "Pareto": [{"scale": [0.2, 1.0], "alpha": [3.0, 2.5]}, {"scale": [0.2, 1.0], "alpha": [0.8, 1.5]}],
    "Uniform": [{"low": [0.1, 0.3], "high": [0.6, 0.9]}, {"low": [-0.5, 0.3], "high": [0.6, 2.0]},
                {"low": [1.5, 2.0], "high": [2.5, 4.0]}],
}


def _cross_pairs():
    torch = pytest.importorskip("torch")
    registry = torch.distributions.kl._KL_REGISTRY
    return sorted((p.__name__, q.__name__) for p, q in registry
                  if p is not q and p.__name__ in PARAMETERS and q.__name__ in PARAMETERS)


def test_the_same_pairs_as_pytorch():
    """Every pair PyTorch registers between two distributions tensorplug has is registered."""
    torch = pytest.importorskip("torch")
    ours = {(p.__name__, q.__name__) for p, q in D.kl._KL_REGISTRY}
    names = set(D.__all__)
    missing = [(p.__name__, q.__name__) for p, q in torch.distributions.kl._KL_REGISTRY
               if p.__name__ in names and q.__name__ in names and (p.__name__, q.__name__) not in ours]
    assert not missing


def test_matches_torch():
    """Every cross-family pair PyTorch registers, with every combination of the parameter sets."""
    torch = pytest.importorskip("torch")
    for p_name, q_name in _cross_pairs():
        _compare_pair(torch, p_name, q_name)


def _compare_pair(torch, p_name, q_name):
    pair = f"{p_name}-{q_name}"
    for p_args in PARAMETERS[p_name]:
        for q_args in PARAMETERS[q_name]:
            ours = D.kl_divergence(
                getattr(D, p_name)(**{k: tp.tensor(v, dtype=tp.float64) for k, v in p_args.items()}),
                getattr(D, q_name)(**{k: tp.tensor(v, dtype=tp.float64) for k, v in q_args.items()}))
            theirs = torch.distributions.kl_divergence(
                getattr(torch.distributions, p_name)(**{k: torch.tensor(v, dtype=torch.float64)
                                                        for k, v in p_args.items()}),
                getattr(torch.distributions, q_name)(**{k: torch.tensor(v, dtype=torch.float64)
                                                        for k, v in q_args.items()}))
            np.testing.assert_allclose(_np(ours), theirs.numpy(), rtol=1e-9, atol=1e-12,
                                       err_msg=f"{pair} {p_args} {q_args}")


def _quadrature_kl(p_logpdf, q_logpdf, low, high):
    integrate = pytest.importorskip("scipy.integrate")
    return integrate.quad(lambda x: np.exp(p_logpdf(x)) * (p_logpdf(x) - q_logpdf(x)), low, high,
                          epsabs=1e-13, epsrel=1e-12, limit=200)[0]


def test_against_quadrature():
    """KL(Gamma || Normal), KL(Uniform || Gumbel), KL(Normal || Laplace), KL(Beta || Exponential)
    by numerical integration of p log(p / q) in float64."""
    stats = pytest.importorskip("scipy.stats")
    f64 = tp.float64
    cases = [
        (D.Gamma(tp.tensor(2.0, dtype=f64), tp.tensor(1.5, dtype=f64)), D.Normal(tp.tensor(0.5, dtype=f64), tp.tensor(2.0, dtype=f64)),
         stats.gamma(2.0, scale=1 / 1.5), stats.norm(0.5, 2.0), 0, 60),
        (D.Uniform(tp.tensor(-1.0, dtype=f64), tp.tensor(2.0, dtype=f64)), D.Gumbel(tp.tensor(0.3, dtype=f64), tp.tensor(1.2, dtype=f64)),
         stats.uniform(-1.0, 3.0), stats.gumbel_r(0.3, 1.2), -1, 2),
        (D.Normal(tp.tensor(0.7, dtype=f64), tp.tensor(1.3, dtype=f64)), D.Laplace(tp.tensor(-0.2, dtype=f64), tp.tensor(0.8, dtype=f64)),
         stats.norm(0.7, 1.3), stats.laplace(-0.2, 0.8), -30, 30),
        (D.Beta(tp.tensor(2.0, dtype=f64), tp.tensor(3.0, dtype=f64)), D.Exponential(tp.tensor(1.7, dtype=f64)),
         stats.beta(2.0, 3.0), stats.expon(scale=1 / 1.7), 0, 1),
    ]
    for p, q, ref_p, ref_q, low, high in cases:
        _close(D.kl_divergence(p, q), _quadrature_kl(ref_p.logpdf, ref_q.logpdf, low, high), rtol=1e-8)
    inf = D.kl_divergence(D.Normal(0.0, 1.0), D.Exponential(tp.tensor([1.0, 2.0])))
    assert inf.shape == (2,) and _np(inf).tolist() == [math.inf, math.inf]
