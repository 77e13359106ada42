"""tp.special.erfcx: SciPy's float64 erfcx for values and gradients on every backend (large x
included, where exp(x^2) erfc(x) would give inf * 0), PyTorch 2.13 for dtypes (issue 13)."""
import numpy as np
import pytest

import tensorplug as tp
from device_params import every_device, torch_or_skip

special = pytest.importorskip("scipy.special")

X = np.array([-26.0, -5.0, -1.0, -0.1, 0.0, 0.5, 1.0, 2.9, 3.0, 3.1, 5.0, 10.0, 30.0, 1e3, 1e8])


@pytest.mark.parametrize("device", every_device())
@pytest.mark.parametrize("dtype,rtol", [(tp.float64, 1e-13), (tp.float32, 2e-6)])
def test_values_match_scipy(device, dtype, rtol):
    x = X if dtype is tp.float64 else X[X > -9]  # float32's exp(x^2) overflows below -9.4
    got = tp.special.erfcx(tp.tensor(x, dtype=dtype, device=device)).cpu().numpy()
    np.testing.assert_allclose(got, special.erfcx(x), rtol=rtol)


@pytest.mark.parametrize("device", every_device())
def test_edges_and_gradient(device):
    edges = tp.special.erfcx(tp.tensor([np.inf, -np.inf, np.nan], dtype=tp.float64, device=device)).cpu().numpy()
    assert edges[0] == 0 and edges[1] == np.inf and np.isnan(edges[2])
    x = np.array([-2.0, 0.0, 0.7, 2.9, 3.2, 8.0])
    t = tp.tensor(x, dtype=tp.float64, device=device, requires_grad=True)
    tp.special.erfcx(t).sum().backward()
    expected = 2 * x * special.erfcx(x) - 2 / np.sqrt(np.pi)
    np.testing.assert_allclose(t.grad.cpu().numpy(), expected, rtol=1e-10, atol=1e-14)


def test_integers_promote_and_out_as_pytorch():
    got = tp.special.erfcx(tp.tensor([0, 1, 2]))
    assert got.dtype == tp.float32
    np.testing.assert_allclose(got.numpy(), special.erfcx([0.0, 1.0, 2.0]), rtol=1e-6)
    out = tp.empty(3)
    assert tp.special.erfcx(tp.tensor([0.0, 1.0, 2.0]), out=out) is out
    torch = torch_or_skip()
    assert str(torch.special.erfcx(torch.tensor([0, 1, 2])).dtype) == "torch.float32"
