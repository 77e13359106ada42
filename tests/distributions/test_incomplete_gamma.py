"""tp.special.gammainc/gammaincc against scipy.special in float64 (and PyTorch 2.13 where
installed), and the distributions built on them: Gamma.cdf and Chi2 against scipy.stats (issue 13)."""
import math

import numpy as np
import pytest

import tensorplug as tp
from tensorplug.distributions import Chi2, Gamma, kl_divergence
from distribution_helpers import DEVICES, usable_device as _device, to_numpy as _np, assert_close as _close

special = pytest.importorskip("scipy.special")
stats = pytest.importorskip("scipy.stats")


def _grid():
    rng = np.random.default_rng(0)
    a = np.concatenate([rng.uniform(0.01, 5, 300), rng.uniform(5, 300, 100), [1e3, 1e4, 1e4, 0.5, 1.0]])
    x = np.concatenate([rng.uniform(0, 10, 300), rng.uniform(0, 400, 100), [1e3, 1e4, 1.02e4, 1e-5, 40.0]])
    return a, x


@pytest.mark.parametrize("device", DEVICES)
def test_gammainc_matches_scipy(device):
    """P and Q over small and large shapes, on both sides of x = a, to ~1e-10 relative."""
    a, x = _grid()
    ta, tx = tp.tensor(a, device=_device(device)), tp.tensor(x, device=device)
    np.testing.assert_allclose(_np(tp.special.gammainc(ta, tx)), special.gammainc(a, x), rtol=1e-10, atol=1e-300)
    np.testing.assert_allclose(_np(tp.special.gammaincc(ta, tx)), special.gammaincc(a, x), rtol=1e-10, atol=1e-300)


def test_gammainc_limits_and_nans():
    """The edges scipy and PyTorch agree on: 0 and inf arguments, negatives and NaN."""
    a = np.array([0.0, 0.0, 1.0, 1.0, -1.0, 1.0, np.inf, np.inf, 2.0, np.nan, 1.0])
    x = np.array([0.0, 1.0, 0.0, -1.0, 1.0, np.inf, 1.0, np.inf, np.inf, 1.0, np.nan])
    np.testing.assert_array_equal(_np(tp.special.gammainc(tp.tensor(a), tp.tensor(x))), special.gammainc(a, x))
    np.testing.assert_array_equal(_np(tp.special.gammaincc(tp.tensor(a), tp.tensor(x))), special.gammaincc(a, x))


def test_gammainc_dtypes_and_errors():
    """float32 in, float32 out (computed in float64); an int with a float is float32; two ints refused."""
    out = tp.special.gammainc(tp.tensor([2.0, 0.5]), tp.tensor([1.0, 3.0]))
    assert out.dtype == tp.float32
    np.testing.assert_allclose(_np(out), special.gammainc([2.0, 0.5], [1.0, 3.0]), rtol=1e-6)
    assert tp.special.gammainc(tp.tensor([2]), tp.tensor([1.0])).dtype == tp.float32
    with pytest.raises(NotImplementedError, match=r"gammainc\(\): not implemented for integer operands"):
        tp.special.gammainc(tp.tensor([2]), tp.tensor([1]))


def test_gammainc_gradient():
    """d/dx is the Gamma(a, 1) density (scipy's gamma.pdf); PyTorch has no gradient in a, nor has this."""
    a, x = np.array([0.5, 2.0, 7.0]), np.array([0.3, 2.5, 4.0])
    tx = tp.tensor(x, requires_grad=True)
    tp.special.gammainc(tp.tensor(a), tx).sum().backward()
    _close(tx.grad, stats.gamma(a).pdf(x), rtol=1e-12)
    tx.grad = None
    tp.special.gammaincc(tp.tensor(a), tx).sum().backward()
    _close(tx.grad, -stats.gamma(a).pdf(x), rtol=1e-12)
    ta = tp.tensor(a, requires_grad=True)
    with pytest.raises(NotImplementedError, match="the derivative for 'igamma: input' is not implemented"):
        tp.special.gammainc(ta, tp.tensor(x)).sum().backward()


def test_gammainc_matches_torch():
    """Within PyTorch's own accuracy (it is 1e-9 from scipy on small values of P)."""
    torch = pytest.importorskip("torch")
    a, x = _grid()
    np.testing.assert_allclose(_np(tp.special.gammainc(tp.tensor(a), tp.tensor(x))),
                               torch.special.gammainc(torch.tensor(a), torch.tensor(x)).numpy(), rtol=1e-8, atol=1e-300)


@pytest.mark.parametrize("device", DEVICES)
def test_gamma_cdf_matches_scipy(device):
    alpha, rate = np.array([0.3, 1.0, 4.0]), np.array([2.0, 0.5, 1.0])
    value = np.array([0.1, 2.0, 3.5])
    d = Gamma(tp.tensor(alpha, device=_device(device)), tp.tensor(rate, device=device))
    _close(d.cdf(tp.tensor(value, device=device)), stats.gamma(alpha, scale=1 / rate).cdf(value), rtol=1e-10)
    with pytest.raises(ValueError, match=r"within the support \(GreaterThanEq\(lower_bound=0.0\)\)"):
        d.cdf(tp.tensor([-1.0, 1.0, 1.0], dtype=tp.float64, device=device))


@pytest.mark.parametrize("device", DEVICES)
def test_chi2_matches_scipy(device):
    """log_prob, cdf, entropy, mean, variance equal scipy's chi2; samples have its moments;
    df is a parameter of its own (repr, expand, validation)."""
    df = np.array([0.5, 3.0, 10.0])
    d = Chi2(tp.tensor(df, device=_device(device)))
    ref = stats.chi2(df)
    value = np.array([0.2, 2.0, 12.0])
    _close(d.log_prob(tp.tensor(value, device=device)), ref.logpdf(value))
    _close(d.cdf(tp.tensor(value, device=device)), ref.cdf(value), rtol=1e-10)
    _close(d.entropy(), ref.entropy())
    _close(d.mean, ref.mean())
    _close(d.variance, ref.var())
    _close(d.df, df)
    samples = _np(d.sample((4000,)))
    np.testing.assert_allclose(samples.mean(0), ref.mean(), rtol=0.1)
    assert d.expand((2, 3)).batch_shape == (2, 3) and isinstance(d.expand((2, 3)), Chi2)
    assert repr(Chi2(2.0)) == "Chi2(df: 2.0)"
    with pytest.raises(ValueError, match=r"Expected parameter df .* GreaterThan\(lower_bound=0.0\)"):
        Chi2(tp.tensor([-1.0]))


def test_chi2_against_torch():
    """KL between Chi2s (Gamma's formula) and the cdf equal PyTorch's."""
    torch = pytest.importorskip("torch")
    p, q = Chi2(tp.tensor([1.0, 4.0], dtype=tp.float64)), Chi2(tp.tensor([2.0, 3.0], dtype=tp.float64))
    tp_, tq = torch.distributions.Chi2(torch.tensor([1.0, 4.0], dtype=torch.float64)), \
        torch.distributions.Chi2(torch.tensor([2.0, 3.0], dtype=torch.float64))
    _close(kl_divergence(p, q), torch.distributions.kl_divergence(tp_, tq).numpy())
    value = torch.tensor([0.5, 5.0], dtype=torch.float64)
    _close(p.cdf(tp.tensor(value.numpy())), tp_.cdf(value).numpy(), rtol=1e-10)
    assert math.isclose(Chi2(2.0).cdf(tp.tensor(2.0)).item(), 1 - math.exp(-1), rel_tol=1e-6)
