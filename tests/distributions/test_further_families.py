"""InverseGamma, FisherSnedecor, Kumaraswamy and LogisticNormal against scipy.stats (or their
densities written in NumPy float64 and integrated by quadrature), PyTorch 2.13 where installed,
and the moments of their samples (issue 13)."""
import numpy as np
import pytest

import tensorplug as tp
from tensorplug import distributions as D
from distribution_helpers import DEVICES, usable_device as _device, to_numpy as _np, assert_close as _close

stats = pytest.importorskip("scipy.stats")
integrate = pytest.importorskip("scipy.integrate")


@pytest.mark.parametrize("device", DEVICES)
def test_inverse_gamma_matches_scipy(device):
    alpha, rate = np.array([2.5, 3.5]), np.array([1.0, 2.0])
    d = D.InverseGamma(tp.tensor(alpha, device=_device(device)), tp.tensor(rate, device=device))
    ref = stats.invgamma(alpha, scale=rate)
    value = np.array([0.3, 1.7])
    _close(d.log_prob(tp.tensor(value, device=device)), ref.logpdf(value))
    _close(d.entropy(), ref.entropy())
    _close(d.mean, ref.mean())
    _close(d.variance, ref.var())
    _close(d.mode, rate / (alpha + 1))
    draws = _np(d.sample((6000,)))
    np.testing.assert_allclose(np.median(draws, 0), ref.median(), rtol=0.05)
    assert _np(D.InverseGamma(tp.tensor([0.5, 1.5]), 1.0).variance).tolist() == [np.inf, np.inf]


@pytest.mark.parametrize("device", DEVICES)
def test_fisher_snedecor_matches_scipy(device):
    df1, df2 = np.array([3.0, 7.0]), np.array([9.0, 12.0])
    d = D.FisherSnedecor(tp.tensor(df1, device=_device(device)), tp.tensor(df2, device=device))
    ref = stats.f(df1, df2)
    value = np.array([0.4, 2.2])
    _close(d.log_prob(tp.tensor(value, device=device)), ref.logpdf(value))
    _close(d.mean, ref.mean())
    _close(d.variance, ref.var())
    draws = _np(d.sample((6000,)))
    np.testing.assert_allclose(np.median(draws, 0), ref.median(), rtol=0.05)
    small = D.FisherSnedecor(tp.tensor([1.0]), tp.tensor([2.0]))
    assert np.isnan(_np(small.mean)).all() and np.isnan(_np(small.variance)).all() and np.isnan(_np(small.mode)).all()


def _kumaraswamy_pdf(x, a, b):
    return a * b * x ** (a - 1) * (1 - x ** a) ** (b - 1)


@pytest.mark.parametrize("device", DEVICES)
def test_kumaraswamy_matches_quadrature(device):
    """log_prob is log(a b x^(a-1) (1 - x^a)^(b-1)); mean, variance and entropy integrate it."""
    a, b = np.array([0.5, 2.0, 3.0]), np.array([0.7, 3.0, 1.5])
    d = D.Kumaraswamy(tp.tensor(a, device=_device(device)), tp.tensor(b, device=device))
    value = np.array([0.3, 0.6, 0.9])
    _close(d.log_prob(tp.tensor(value, device=device)), np.log(_kumaraswamy_pdf(value, a, b)), rtol=1e-9)

    def moment(f, i):
        return integrate.quad(lambda x: f(x) * _kumaraswamy_pdf(x, a[i], b[i]), 0, 1, limit=200)[0]

    means = np.array([moment(lambda x: x, i) for i in range(3)])
    _close(d.mean, means, rtol=1e-7)
    _close(d.variance, [moment(lambda x: x * x, i) for i in range(3)] - means ** 2, rtol=1e-6)
    _close(d.entropy(), [-moment(lambda x, i=i: np.log(_kumaraswamy_pdf(x, a[i], b[i])), i) for i in range(3)],
           rtol=1e-6)
    _close(d.mode[1:], ((a[1:] - 1) / (a[1:] * b[1:] - 1)) ** (1 / a[1:]))
    assert np.isnan(_np(d.mode)[0])
    draws = _np(d.sample((6000,)))
    assert np.all((draws > 0) & (draws < 1))
    np.testing.assert_allclose(draws.mean(0), means, atol=0.02)


def test_logistic_normal():
    """Draws lie on the simplex and their stick-breaking logits are the Normal's; shapes as PyTorch."""
    loc, scale = np.array([0.5, -1.0]), np.array([1.0, 0.5])
    d = D.LogisticNormal(tp.tensor(loc), tp.tensor(scale))
    assert d.event_shape == (3,) and d.batch_shape == ()
    assert D.LogisticNormal(tp.tensor(0.0), tp.tensor(1.0)).event_shape == (2,)
    draws = d.sample((6000,))
    np.testing.assert_allclose(_np(draws).sum(-1), 1.0, atol=1e-6)
    logits = _np(D.StickBreakingTransform().inv(draws))
    np.testing.assert_allclose(logits.mean(0), loc, atol=0.05)
    np.testing.assert_allclose(logits.std(0), scale, rtol=0.05)


def test_match_torch():
    torch = pytest.importorskip("torch")
    T = torch.distributions

    def both(name, *args):
        return (getattr(D, name)(*(tp.tensor(np.asarray(a, dtype=np.float64)) for a in args)),
                getattr(T, name)(*(torch.tensor(np.asarray(a, dtype=np.float64)) for a in args)))

    cases = [(both("InverseGamma", [2.5, 0.5], [1.0, 2.0]), [0.3, 1.7]),
             (both("FisherSnedecor", [3.0, 1.0], [9.0, 3.0]), [0.4, 2.2]),
             (both("Kumaraswamy", [0.5, 2.0], [0.7, 3.0]), [0.3, 0.6]),
             (both("LogisticNormal", [0.5, -1.0], [1.0, 0.5]), [0.2, 0.3, 0.5])]
    for (ours, theirs), value in cases:
        _close(ours.log_prob(tp.tensor(value, dtype=tp.float64)), theirs.log_prob(torch.tensor(value, dtype=torch.float64)).numpy(),
               rtol=1e-9)
        for name in ("mean", "variance"):
            try:
                expected = getattr(theirs, name).numpy()
            except NotImplementedError:
                continue
            np.testing.assert_allclose(_np(getattr(ours, name)), expected, rtol=1e-9)
        assert repr(ours.support) == repr(theirs.support)
        assert ours.has_rsample == theirs.has_rsample
        assert {k: repr(v) for k, v in ours.arg_constraints.items()} == \
            {k: repr(v) for k, v in theirs.arg_constraints.items()}


@pytest.mark.parametrize("device", DEVICES)
def test_generalized_pareto_matches_scipy(device):
    """A heavy tail, the exponential case (xi = 0) and a bounded support (xi < 0), against
    scipy's genpareto; draws have its median; outside the support (unvalidated) the density is 0."""
    loc, scale, xi = np.array([0.0, 1.0, 0.0]), np.array([1.0, 2.0, 1.0]), np.array([0.3, -0.5, 0.0])
    d = D.GeneralizedPareto(tp.tensor(loc, device=_device(device)), tp.tensor(scale, device=device),
                            tp.tensor(xi, device=device))
    ref = stats.genpareto(xi, loc, scale)
    value = np.array([0.5, 2.0, 1.0])
    _close(d.log_prob(tp.tensor(value, device=device)), ref.logpdf(value))
    _close(d.cdf(tp.tensor(value, device=device)), ref.cdf(value))
    _close(d.icdf(tp.tensor([0.2, 0.5, 0.9], dtype=tp.float64, device=device)), ref.ppf([0.2, 0.5, 0.9]))
    _close(d.mean, ref.mean())
    _close(d.variance, ref.var())
    _close(d.entropy(), ref.entropy())
    draws = _np(d.sample((6000,)))
    np.testing.assert_allclose(np.median(draws, 0), ref.median(), rtol=0.06)
    assert bool(d.support.check(tp.tensor(draws, device=device)).all())
    unchecked = D.GeneralizedPareto(0.0, 1.0, tp.tensor([-0.5, -0.5], dtype=tp.float64), validate_args=False)
    outside = tp.tensor([3.0, -1.0], dtype=tp.float64)
    assert _np(unchecked.log_prob(outside)).tolist() == [-np.inf, -np.inf]
    assert _np(unchecked.cdf(outside)).tolist() == [1.0, 0.0]
    with pytest.raises(ValueError, match="within the support"):
        D.GeneralizedPareto(0.0, 1.0, tp.tensor(-0.5)).log_prob(tp.tensor(3.0))


def test_generalized_pareto_matches_torch():
    torch = pytest.importorskip("torch")
    args = ([0.0, 1.0, 0.0], [1.0, 2.0, 1.0], [0.3, -0.5, 0.0])
    ours = D.GeneralizedPareto(*(tp.tensor(a) for a in args))
    # PyTorch 2.13's log_prob compares with a float32 zero, so it runs in float32 only.
    theirs = torch.distributions.GeneralizedPareto(*(torch.tensor(a) for a in args))
    value = [0.5, 2.0, 1.0]
    for name in ("log_prob", "cdf"):
        np.testing.assert_allclose(_np(getattr(ours, name)(tp.tensor(value))),
                                   getattr(theirs, name)(torch.tensor(value)).numpy(), rtol=1e-5)
    for name in ("mean", "variance", "mode"):
        np.testing.assert_allclose(_np(getattr(ours, name)), getattr(theirs, name).numpy(), rtol=1e-5)
    np.testing.assert_allclose(_np(D.GeneralizedPareto(0.0, 1.0, tp.tensor([1.5])).mean),
                               torch.distributions.GeneralizedPareto(0.0, 1.0, torch.tensor([1.5])).mean.numpy())
    assert repr(ours.support).split("(")[0] == repr(theirs.support).split("(")[0]
    assert ours.has_rsample == theirs.has_rsample
    assert {k: repr(v) for k, v in ours.arg_constraints.items()} == {k: repr(v) for k, v in theirs.arg_constraints.items()}
