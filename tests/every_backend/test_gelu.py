"""gelu and its gradient (one fused pass each on the CPU, eight lanes at a time on AVX2, and on
OpenCL; the decomposition elsewhere) against float64 references on every backend: exact gelu x Phi(x) and PyTorch's tanh approximation, values and gradients,
special values, non-contiguous inputs (the decomposition), and double backward (gelu_backward's
own derivative) against finite differences."""
import math

import numpy as np
import pytest

import tensorplug as tp

F = tp.nn.functional


def _reference(x: np.ndarray, approximate: str):
    """(gelu(x), gelu'(x)) in float64."""
    if approximate == "tanh":
        k, c = math.sqrt(2 / math.pi), 0.044715
        t = np.tanh(k * (x + c * x ** 3))
        return 0.5 * x * (1 + t), 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * k * (1 + 3 * c * x * x)
    cdf = 0.5 * (1 + np.vectorize(math.erf, otypes=[np.float64])(x / math.sqrt(2)))
    return x * cdf, cdf + x * np.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("dtype,tol", [("float32", 2e-6), ("float64", 1e-13)])
def test_values_and_gradients(approximate, dtype, tol, device):
    rng = np.random.default_rng(3)
    x = (rng.standard_normal(10_007) * 4).astype(dtype)  # a tail that is not a multiple of 8 (or 256)
    grad = rng.standard_normal(x.shape).astype(dtype)
    t = tp.tensor(x, device=device, requires_grad=True)
    y = F.gelu(t, approximate=approximate)
    y.backward(tp.tensor(grad, device=device))
    value, slope = _reference(x.astype(np.float64), approximate)
    np.testing.assert_allclose(y.detach().cpu().numpy(), value, rtol=tol, atol=tol)
    np.testing.assert_allclose(t.grad.cpu().numpy(), grad * slope, rtol=tol, atol=tol * 4)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_special_values_and_layouts(approximate, device):
    x = np.array([0.0, -0.0, np.inf, np.nan, 30.0, -30.0, 1e-30], np.float32)
    got = F.gelu(tp.tensor(x, device=device), approximate=approximate).cpu().numpy()
    np.testing.assert_array_equal(got[[0, 2, 4]], [0.0, np.inf, 30.0])
    assert np.isnan(got[3]) and got[5] == 0.0 and abs(got[6] - 5e-31) < 1e-36
    wide = np.random.default_rng(4).standard_normal((6, 10)).astype(np.float32)
    strided = tp.tensor(wide, device=device)[:, ::3]  # not contiguous: the decomposition (CPU) or a copy
    np.testing.assert_allclose(F.gelu(strided, approximate=approximate).cpu().numpy(),
                               _reference(wide[:, ::3].astype(np.float64), approximate)[0], rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_double_backward(approximate):
    x = tp.tensor(np.random.default_rng(5).standard_normal(9) * 2, requires_grad=True)
    assert tp.autograd.gradgradcheck(lambda v: F.gelu(v, approximate=approximate), (x,))


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gradient_of_a_sum(approximate, device):
    """sum's backward hands gelu_backward one value expanded (stride 0): read in place by the
    fused kernels; a mean's scaled value too."""
    x = np.random.default_rng(6).standard_normal((3, 700)).astype(np.float32)
    t = tp.tensor(x, device=device, requires_grad=True)
    F.gelu(t, approximate=approximate).sum().backward()
    slope = _reference(x.astype(np.float64), approximate)[1]
    np.testing.assert_allclose(t.grad.cpu().numpy(), slope, rtol=2e-6, atol=2e-6)
    t.grad = None
    F.gelu(t, approximate=approximate).mean().backward()
    np.testing.assert_allclose(t.grad.cpu().numpy(), slope / x.size, rtol=2e-6, atol=2e-9)
