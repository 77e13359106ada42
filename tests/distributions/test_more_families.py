"""LogNormal, HalfNormal, Cauchy, HalfCauchy, StudentT, Gumbel, Weibull, Pareto, Geometric,
Binomial and NegativeBinomial against scipy.stats in float64, PyTorch 2.13 where installed
(values, moments, KL divergences), and the moments of their samples (issue 13)."""
import math

import numpy as np
import pytest

import tensorplug as tp
from tensorplug import distributions as D
from distribution_helpers import DEVICES, usable_device as _device, to_numpy as _np, assert_close as _close

stats = pytest.importorskip("scipy.stats")


def _t(values, device):
    return tp.tensor(np.asarray(values, dtype=np.float64), device=device)


# name -> (tensorplug factory over (args, device), scipy frozen distribution, the args, values inside the support,
#          methods that scipy answers, sample tolerance on the mean (None: no finite mean to check))
CASES = {
    "LogNormal": (lambda a, d: D.LogNormal(_t(a[0], d), _t(a[1], d)),
                  lambda a: stats.lognorm(s=a[1], scale=np.exp(a[0])), ([0.0, 0.5], [0.5, 1.0]), [0.3, 2.5],
                  ("log_prob", "cdf", "icdf", "mean", "variance", "entropy"), 0.1),
    "HalfNormal": (lambda a, d: D.HalfNormal(_t(a[0], d)), lambda a: stats.halfnorm(scale=a[0]),
                   ([0.5, 2.0],), [0.3, 2.5], ("log_prob", "cdf", "icdf", "mean", "variance", "entropy"), 0.05),
    "Cauchy": (lambda a, d: D.Cauchy(_t(a[0], d), _t(a[1], d)), lambda a: stats.cauchy(a[0], a[1]),
               ([0.0, 1.0], [1.0, 0.5]), [-0.7, 3.0], ("log_prob", "cdf", "icdf", "entropy"), None),
    "HalfCauchy": (lambda a, d: D.HalfCauchy(_t(a[0], d)), lambda a: stats.halfcauchy(scale=a[0]),
                   ([1.0, 0.5],), [0.7, 3.0], ("log_prob", "cdf", "icdf", "entropy"), None),
    "StudentT": (lambda a, d: D.StudentT(_t(a[0], d), _t(a[1], d), _t(a[2], d)),
                 lambda a: stats.t(a[0], a[1], a[2]), ([3.0, 10.0], [0.0, 1.0], [1.0, 2.0]), [-0.7, 3.0],
                 ("log_prob", "mean", "variance", "entropy"), 0.1),
    "Gumbel": (lambda a, d: D.Gumbel(_t(a[0], d), _t(a[1], d)), lambda a: stats.gumbel_r(a[0], a[1]),
               ([0.0, 1.0], [1.0, 0.5]), [-0.7, 3.0], ("log_prob", "cdf", "icdf", "mean", "variance", "entropy"), 0.1),
    "Weibull": (lambda a, d: D.Weibull(_t(a[0], d), _t(a[1], d)), lambda a: stats.weibull_min(a[1], scale=a[0]),
                ([1.0, 2.0], [0.7, 3.0]), [0.4, 2.5], ("log_prob", "cdf", "icdf", "mean", "variance", "entropy"), 0.1),
    "Pareto": (lambda a, d: D.Pareto(_t(a[0], d), _t(a[1], d)), lambda a: stats.pareto(a[1], scale=a[0]),
               ([1.0, 2.0], [3.0, 4.5]), [1.5, 2.5], ("log_prob", "cdf", "icdf", "mean", "variance", "entropy"), 0.1),
    "Geometric": (lambda a, d: D.Geometric(probs=_t(a[0], d)), lambda a: stats.geom(a[0], loc=-1),
                  ([0.3, 0.8],), [0.0, 3.0], ("log_prob", "mean", "variance", "entropy"), 0.1),
    "Binomial": (lambda a, d: D.Binomial(_t(a[0], d), probs=_t(a[1], d)), lambda a: stats.binom(a[0], a[1]),
                 ([10.0, 10.0], [0.3, 0.9]), [2.0, 10.0], ("log_prob", "mean", "variance", "entropy"), 0.05),
    "NegativeBinomial": (lambda a, d: D.NegativeBinomial(_t(a[0], d), probs=_t(a[1], d)),
                         lambda a: stats.nbinom(a[0], 1 - np.asarray(a[1])), ([2.5, 10.0], [0.3, 0.6]), [0.0, 7.0],
                         ("log_prob", "mean", "variance"), 0.1),
}
_SCIPY_NAME = {"log_prob": "logpdf", "cdf": "cdf", "icdf": "ppf", "mean": "mean", "variance": "var", "entropy": "entropy"}


def _scipy_value(ref, method, values):
    if method == "log_prob":
        return ref.logpmf(values) if hasattr(ref.dist, "pmf") else ref.logpdf(values)
    if method in ("cdf", "icdf"):
        return getattr(ref, _SCIPY_NAME[method])(values)
    return getattr(ref, _SCIPY_NAME[method])()


def _ours_value(d, method, values, device):
    if method in ("log_prob", "cdf", "icdf"):
        return getattr(d, method)(_t(values, device))
    return d.entropy() if method == "entropy" else getattr(d, method)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_scipy(name, device):
    make, reference, args, values, methods, tolerance = CASES[name]
    d, ref = make(args, _device(device)), reference(args)
    for method in methods:
        inputs = [0.2, 0.9] if method == "icdf" else values
        _close(_ours_value(d, method, inputs, device), _scipy_value(ref, method, inputs), rtol=1e-9)
    samples = _np(d.sample((4000,)))
    assert samples.shape == (4000, 2)
    assert bool(d.support.check(_t(samples, device)).all())
    if tolerance is not None:
        np.testing.assert_allclose(samples.mean(0), ref.mean(), rtol=tolerance, atol=tolerance)
    else:  # no mean: the sample median estimates scipy's
        np.testing.assert_allclose(np.median(samples, 0), ref.median(), rtol=0.1, atol=0.1)
    assert d.expand((3, 2)).batch_shape == (3, 2) and type(d.expand((3, 2))) is type(d)


@pytest.mark.parametrize("name", ["LogNormal", "HalfNormal", "Cauchy", "HalfCauchy", "StudentT", "Gumbel", "Weibull",
                                  "Pareto"])
def test_rsample_differentiates(name):
    """Reparameterized draws carry gradients to every parameter; for the scale families the draw
    is proportional to the scale, so d draw / d scale = draw / scale."""
    make, _, args, _, _, _ = CASES[name]
    d = make(args, "cpu")
    leaves = [value for value in d._parameters().values()]
    for leaf in leaves:
        leaf.requires_grad_(True)
    draws = d.rsample((3,))
    draws.sum().backward()
    assert all(leaf.grad is not None and np.all(np.isfinite(_np(leaf.grad))) for leaf in leaves)
    if name in ("HalfNormal", "HalfCauchy"):
        np.testing.assert_allclose(_np(leaves[0].grad), (_np(draws) / _np(leaves[0])).sum(0), rtol=1e-9)


def test_moments_without_a_finite_value():
    """PyTorch's NaN and inf: Cauchy's mean is NaN and variance inf; HalfCauchy's are inf; StudentT
    has no mean for df <= 1 and an infinite variance for 1 < df <= 2; Pareto's are inf at small alpha."""
    assert math.isnan(D.Cauchy(0.0, 1.0).mean.item()) and D.Cauchy(0.0, 1.0).variance.item() == math.inf
    assert D.HalfCauchy(1.0).mean.item() == math.inf
    t = D.StudentT(tp.tensor([0.5, 1.5, 3.0]))
    assert np.isnan(_np(t.mean)[0]) and _np(t.mean)[1:].tolist() == [0.0, 0.0]
    assert np.isnan(_np(t.variance)[0]) and _np(t.variance)[1] == math.inf
    p = D.Pareto(1.0, tp.tensor([0.5, 1.5, 3.0]))
    assert _np(p.mean).tolist()[:1] == [math.inf] and _np(p.variance).tolist()[:2] == [math.inf, math.inf]


def test_discrete_edges():
    """Certain outcomes: Geometric(1) at 0, Binomial at p = 0 and 1, NegativeBinomial with no failures."""
    assert D.Geometric(probs=tp.tensor(1.0, dtype=tp.float64)).log_prob(tp.tensor(0.0, dtype=tp.float64)).item() == 0.0
    b = D.Binomial(tp.tensor([3.0, 5.0], dtype=tp.float64), probs=tp.tensor([0.0, 1.0], dtype=tp.float64))
    np.testing.assert_allclose(_np(b.log_prob(tp.tensor([0.0, 5.0], dtype=tp.float64))), [0.0, 0.0], atol=1e-12)
    assert _np(b.mode).tolist() == [0.0, 5.0]
    nb = D.NegativeBinomial(tp.tensor([0.0], dtype=tp.float64), probs=tp.tensor([0.3], dtype=tp.float64))
    assert nb.log_prob(tp.tensor([0.0], dtype=tp.float64)).item() == 0.0
    support = D.Binomial(4, probs=tp.tensor([0.3, 0.5])).enumerate_support()
    assert support.shape == (5, 2) and _np(support)[:, 0].tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    with pytest.raises(NotImplementedError, match="Inhomogeneous total count"):
        D.Binomial(tp.tensor([4.0, 5.0]), probs=tp.tensor([0.3, 0.5])).enumerate_support()
    with pytest.raises(ValueError, match=r"within the support \(IntegerInterval\(lower_bound=0, upper_bound="):
        D.Binomial(4, probs=tp.tensor(0.3)).log_prob(tp.tensor(5.0))
    with pytest.raises(ValueError, match=r"Expected parameter total_count .* IntegerGreaterThan"):
        D.Binomial(tp.tensor(2.5), probs=tp.tensor(0.3))
    with pytest.raises(ValueError, match=r"Expected parameter probs .* HalfOpenInterval"):
        D.NegativeBinomial(2.0, probs=tp.tensor(1.0))


def _torch_pair(name, torch):
    """The same distribution in both libraries, float64, for the comparisons against PyTorch."""
    T = torch.distributions

    def t(v):
        return torch.tensor(v, dtype=torch.float64)

    def o(v):
        return tp.tensor(v, dtype=tp.float64)

    pairs = {
        "LogNormal": (D.LogNormal(o([0.0, 0.5]), o([0.5, 1.0])), T.LogNormal(t([0.0, 0.5]), t([0.5, 1.0]))),
        "HalfNormal": (D.HalfNormal(o([0.5, 2.0])), T.HalfNormal(t([0.5, 2.0]))),
        "Cauchy": (D.Cauchy(o([0.0, 1.0]), o([1.0, 0.5])), T.Cauchy(t([0.0, 1.0]), t([1.0, 0.5]))),
        "HalfCauchy": (D.HalfCauchy(o([1.0, 0.5])), T.HalfCauchy(t([1.0, 0.5]))),
        "StudentT": (D.StudentT(o([3.0, 1.5]), o([0.0, 1.0]), o([1.0, 2.0])),
                     T.StudentT(t([3.0, 1.5]), t([0.0, 1.0]), t([1.0, 2.0]))),
        "Gumbel": (D.Gumbel(o([0.0, 1.0]), o([1.0, 0.5])), T.Gumbel(t([0.0, 1.0]), t([1.0, 0.5]))),
        "Weibull": (D.Weibull(o([1.0, 2.0]), o([0.7, 3.0])), T.Weibull(t([1.0, 2.0]), t([0.7, 3.0]))),
        "Pareto": (D.Pareto(o([1.0, 2.0]), o([3.0, 1.5])), T.Pareto(t([1.0, 2.0]), t([3.0, 1.5]))),
        "Geometric": (D.Geometric(logits=o([-1.0, 2.0])), T.Geometric(logits=t([-1.0, 2.0]))),
        "Binomial": (D.Binomial(o([10.0, 10.0]), logits=o([-1.0, 2.0])), T.Binomial(t([10.0, 10.0]), logits=t([-1.0, 2.0]))),
        "NegativeBinomial": (D.NegativeBinomial(o([2.5, 10.0]), logits=o([-1.0, 0.5])),
                             T.NegativeBinomial(t([2.5, 10.0]), logits=t([-1.0, 0.5]))),
    }
    return pairs[name]


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_torch(name):
    """Every method PyTorch has, with the same constraints, on in-support values."""
    torch = pytest.importorskip("torch")
    ours, theirs = _torch_pair(name, torch)
    values = {"Pareto": [2.5, 3.0]}.get(name, [1.0, 3.0])
    for method in ("log_prob", "cdf", "icdf", "entropy", "mean", "mode", "variance", "stddev"):
        try:
            expected = getattr(theirs, method)
            expected = expected(torch.tensor([0.2, 0.9] if method == "icdf" else values, dtype=torch.float64)) \
                if method in ("log_prob", "cdf", "icdf") else expected() if method == "entropy" else expected
        except NotImplementedError:
            continue
        argument = [0.2, 0.9] if method == "icdf" else values
        got = _ours_value(ours, method, argument, "cpu") if method != "stddev" else ours.stddev
        np.testing.assert_allclose(_np(got), expected.numpy(), rtol=1e-9, atol=1e-12, err_msg=method)
    # Bounds that are tensors print their library's dtype name: compare the constraint kinds.
    assert repr(ours.support).split("(")[0] == repr(theirs.support).split("(")[0]
    assert {k: repr(v).split("(")[0] for k, v in ours.arg_constraints.items()} == \
        {k: repr(v).split("(")[0] for k, v in theirs.arg_constraints.items()}
    assert (ours.has_rsample, ours.has_enumerate_support) == (theirs.has_rsample, theirs.has_enumerate_support)


@pytest.mark.parametrize("name", ["LogNormal", "HalfNormal", "Cauchy", "Gumbel", "Pareto", "Geometric", "Binomial"])
def test_kl_matches_torch(name):
    torch = pytest.importorskip("torch")
    p, tp_ = _torch_pair(name, torch)
    q, tq = p.expand(p.batch_shape), tp_.expand(tp_.batch_shape)
    # q: the same family with other parameters (the second member's parameters swapped in first).
    params = {key: value.flip(0) for key, value in p._parameters().items()}
    q = type(p)(**params)
    tq = type(tp_)(**{key: torch.tensor(_np(value)) for key, value in params.items()})
    np.testing.assert_allclose(_np(D.kl_divergence(p, q)), torch.distributions.kl_divergence(tp_, tq).numpy(),
                               rtol=1e-9, atol=1e-12)


def test_kl_multivariate_normal_matches_numpy():
    """The closed form against NumPy float64 linear algebra, and against PyTorch where installed."""
    rng = np.random.default_rng(0)
    A, B = rng.standard_normal((3, 3)), rng.standard_normal((3, 3))
    Sp, Sq = A @ A.T + np.eye(3), B @ B.T + np.eye(3)
    mp, mq = rng.standard_normal(3), rng.standard_normal(3)
    expected = 0.5 * (np.trace(np.linalg.solve(Sq, Sp)) + (mq - mp) @ np.linalg.solve(Sq, mq - mp) - 3
                      + np.linalg.slogdet(Sq)[1] - np.linalg.slogdet(Sp)[1])
    p = D.MultivariateNormal(tp.tensor(mp), covariance_matrix=tp.tensor(Sp))
    q = D.MultivariateNormal(tp.tensor(mq), precision_matrix=tp.tensor(np.linalg.inv(Sq)))
    _close(D.kl_divergence(p, q), expected, rtol=1e-9)
    with pytest.raises(ValueError, match="different event shapes"):
        D.kl_divergence(p, D.MultivariateNormal(tp.zeros(2, dtype=tp.float64), tp.eye(2, dtype=tp.float64)))
