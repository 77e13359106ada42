"""Float32 (and narrower) ``lgamma``/``digamma`` are accurate to a few units in the last place,
as PyTorch's libm-based kernels are: the shifted series lost digits near the zeros (lgamma(1.5)
was 1.9e-5 relative off, digamma(1.4616) 1.6e-3), which the Beta log-density of the RealNVP/SimCLR
batch's probes showed (program batch (e)). References: Python's ``math.lgamma`` in float64 and
digamma's closed forms at half-integers."""
import math

import numpy as np
import pytest

import tensorplug as tp
from device_params import every_device

EULER_GAMMA = 0.5772156649015329
# digamma at integers and half-integers: -gamma + sum 1/k, and -gamma - 2 ln 2 + sum 2/(2k - 1).
DIGAMMA_CLOSED_FORMS = {
    0.5: -EULER_GAMMA - 2 * math.log(2),
    1.0: -EULER_GAMMA,
    1.5: -EULER_GAMMA - 2 * math.log(2) + 2,
    2.0: 1 - EULER_GAMMA,
    2.5: -EULER_GAMMA - 2 * math.log(2) + 2 + 2 / 3,
    3.0: 1.5 - EULER_GAMMA,
    10.5: -EULER_GAMMA - 2 * math.log(2) + sum(2 / (2 * k - 1) for k in range(1, 11)),
}
LGAMMA_POINTS = [0.05, 0.4, 0.8, 0.999, 1.001, 1.2, 1.5, 1.9, 1.999, 2.003, 2.5, 3.0, 4.5, 6.0, 9.9, 10.5, 25.0,
                 -0.5, -1.5, -2.3]


@pytest.mark.parametrize("device", every_device())
def test_float32_lgamma_is_within_a_few_ulp(device):
    x = np.array(LGAMMA_POINTS, dtype=np.float32)
    got = tp.lgamma(tp.tensor(x, device=device))
    assert got.dtype is tp.float32
    expected = np.array([math.lgamma(float(v)) for v in x])
    # Four float32 units of the result, or of 1e-7 absolute where the result is 0's neighbour.
    np.testing.assert_allclose(got.cpu().numpy().astype(np.float64), expected, rtol=4 * 2.0 ** -24, atol=1e-9)


@pytest.mark.parametrize("device", every_device())
def test_float32_digamma_matches_its_closed_forms(device):
    points = sorted(DIGAMMA_CLOSED_FORMS)
    got = tp.digamma(tp.tensor(points, dtype=tp.float32, device=device)).cpu().numpy().astype(np.float64)
    np.testing.assert_allclose(got, [DIGAMMA_CLOSED_FORMS[p] for p in points], rtol=4 * 2.0 ** -24, atol=1e-9)


@pytest.mark.parametrize("device", every_device())
def test_float32_digamma_near_its_positive_root(device):
    """Near x0 = 1.46163..., digamma is ~ trigamma(x0) (x - x0): the float32 result must keep
    its relative digits (it was 1.5% off)."""
    x = np.float32(1.4616)
    h = 1e-6  # central difference of math.lgamma: truncation ~1e-13, rounding ~1e-11
    expected = (math.lgamma(float(x) + h) - math.lgamma(float(x) - h)) / (2 * h)
    got = tp.digamma(tp.tensor([x], device=device)).item()
    assert abs(got - expected) <= 1e-5 * abs(expected), (got, expected)


@pytest.mark.parametrize("device", every_device())
def test_float16_lgamma_and_gradient_dtype(device):
    x = tp.tensor([1.5, 2.5], dtype=tp.float16, device=device)
    assert tp.lgamma(x).dtype is tp.float16
    np.testing.assert_allclose(tp.lgamma(x).float().cpu().numpy(), [math.lgamma(1.5), math.lgamma(2.5)], rtol=1e-3)
    leaf = tp.tensor([1.5, 3.0], device=device, requires_grad=True)
    tp.lgamma(leaf).sum().backward()
    assert leaf.grad.dtype is tp.float32
    np.testing.assert_allclose(leaf.grad.cpu().numpy(), [DIGAMMA_CLOSED_FORMS[1.5], DIGAMMA_CLOSED_FORMS[3.0]],
                               rtol=4 * 2.0 ** -24)


def test_beta_log_prob_in_float32_matches_float64():
    """The distribution that showed it: Beta(0.4, 0.4).log_prob(0.3) in float32 against the
    float64 formula with math.lgamma."""
    a = b = float(np.float32(0.4))
    x = float(np.float32(0.3))
    expected = (a - 1) * math.log(x) + (b - 1) * math.log1p(-x) - (math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b))
    got = tp.distributions.Beta(tp.tensor([0.4]), tp.tensor([0.4])).log_prob(tp.tensor([0.3])).item()
    assert abs(got - expected) <= 1e-6 * abs(expected), (got, expected)
