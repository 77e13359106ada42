"""The CPU's float32 gelu, x Phi(x) with Phi from normal_cdf8's piecewise polynomials (AVX2) or
libm's erf (elsewhere), against float64: units in the last place over [-12, 12] by range (the
negative tail too, where 1 + erf cancels), the intervals' edges, signed zeros, infinities, NaN,
subnormals and huge inputs, and the gradient's CDF term."""
import math

import numpy as np
import pytest

import tensorplug as tp

F = tp.nn.functional


def _gelu64(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    return x * 0.5 * np.vectorize(math.erfc, otypes=[np.float64])(-x / math.sqrt(2))


def _ulps(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    spacing = np.spacing(np.abs(want.astype(np.float32))).astype(np.float64)
    spacing[spacing == 0] = np.finfo(np.float32).smallest_subnormal
    return np.abs(got.astype(np.float64) - want) / spacing


@pytest.mark.parametrize("low,high,max_ulps", [
    (0.0, 12.0, 3), (-1.0, 0.0, 4), (-2.0, -1.0, 8), (-3.0, -2.0, 12), (-4.0, -3.0, 100),
])
def test_within_ulps_of_float64(low, high, max_ulps):
    """Bounds are a little above what the kernel reaches (2.1, 2.6, 5.6, 8, 71 ulp); PyTorch's
    float32 gelu is 7, 9, 49, 547 and 9,868 ulp off over the same ranges."""
    x = np.linspace(low, high, 200_003, dtype=np.float32)
    got = F.gelu(tp.tensor(x)).numpy()
    assert _ulps(got, _gelu64(x)).max() <= max_ulps


def test_far_tail_is_small_in_absolute_terms():
    x = np.linspace(-12.0, -4.0, 100_001, dtype=np.float32)
    got = F.gelu(tp.tensor(x)).numpy().astype(np.float64)
    assert np.abs(got - _gelu64(x)).max() < 1e-9
    assert np.all(got <= 0)


def test_interval_edges():
    """Each interval's first and last float (width 0.8 in |x|) on both sides of zero."""
    edges = np.arange(0, 9) * np.float32(0.8)
    x = np.concatenate([np.nextafter(edges, np.float32(-1)), edges, np.nextafter(edges, np.float32(10))])
    x = np.concatenate([x, -x]).astype(np.float32)
    got = F.gelu(tp.tensor(x)).numpy()
    want = _gelu64(x)
    inside = np.abs(x) < 4
    assert _ulps(got[inside], want[inside]).max() <= 100
    assert np.abs(got - want).max() < 1e-8 + 4e-7 * np.abs(want).max()


def test_special_values():
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40, -1e-40, 1e-45, 3e38, -3e38, 6.4, -6.4, 100.0, -100.0],
                 np.float32)
    got = F.gelu(tp.tensor(x)).numpy()
    assert got[0] == 0 and got[1] == 0
    assert got[2] == np.inf
    assert np.isnan(got[3]) and np.isnan(got[4])  # -inf * 0, as PyTorch
    np.testing.assert_array_equal(got[5:8], (x[5:8].astype(np.float64) * 0.5).astype(np.float32))
    assert got[8] == np.float32(3e38) and got[9] == 0
    assert got[10] == np.float32(6.4) and got[12] == 100 and got[13] == 0
    assert -3e-10 < got[11] <= 0


def test_every_position_and_tail_length():
    """A tail shorter than eight lanes is padded, not computed another way."""
    x = np.random.default_rng(7).standard_normal(37).astype(np.float32) * 3
    whole = F.gelu(tp.tensor(x)).numpy()
    for n in range(1, 37):
        np.testing.assert_array_equal(F.gelu(tp.tensor(x[:n])).numpy(), whole[:n])


def test_gradient_cdf_term():
    x = np.linspace(-7, 7, 50_001, dtype=np.float32)
    t = tp.tensor(x, requires_grad=True)
    F.gelu(t).backward(tp.ones(x.shape))
    x64 = x.astype(np.float64)
    want = 0.5 * np.vectorize(math.erfc, otypes=[np.float64])(-x64 / math.sqrt(2)) + x64 * np.exp(-0.5 * x64 * x64) / math.sqrt(2 * math.pi)
    np.testing.assert_allclose(t.grad.numpy(), want, rtol=1e-6, atol=2e-7)
