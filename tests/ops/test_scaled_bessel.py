"""tp.special.i0e, i1 and i1e against scipy.special in float64 (no PyTorch needed), across the
switch from the power series to the asymptotic series, with their derivatives (issue 13)."""
import numpy as np
import pytest

import tensorplug as tp

special = pytest.importorskip("scipy.special")

X = np.concatenate([np.linspace(-60, 60, 241), [0.0, 1e-8, -1e-8, 29.999, 30.001, 700.0, 1e5, -1e5]])


@pytest.mark.parametrize("name", ["i0e", "i1", "i1e"])
def test_values_match_scipy(name, device):
    got = getattr(tp.special, name)(tp.tensor(X, device=device)).cpu().numpy()
    np.testing.assert_allclose(got, getattr(special, name)(X), rtol=1e-13, atol=1e-300)


def test_overflow_and_dtype():
    """i1 overflows to +-inf as scipy's does; the scaled ones stay finite; float32 stays float32."""
    assert tp.special.i1(tp.tensor([800.0, -800.0], dtype=tp.float64)).tolist() == [np.inf, -np.inf]
    assert tp.special.i0e(tp.tensor([1e6])).dtype == tp.float32
    np.testing.assert_allclose(tp.special.i1e(tp.tensor([2.0, 50.0])).numpy(), special.i1e([2.0, 50.0]), rtol=1e-6)


def test_derivatives():
    """i0e' = i1e - sign(x) i0e, i1' = i0 - i1 / x (1/2 at 0), i1e' = i1' e^-|x| - sign(x) i1e."""
    x = np.array([0.0, 0.7, -2.5, 12.0, 45.0])
    with np.errstate(divide="ignore", invalid="ignore"):
        i1_slope = np.where(x == 0, 0.5, special.i0(x) - special.i1(x) / np.where(x == 0, 1, x))
    expected = {
        "i0e": special.i1e(x) - np.sign(x) * special.i0e(x),
        "i1": i1_slope,
        "i1e": i1_slope * np.exp(-np.abs(x)) - np.sign(x) * special.i1e(x),
    }
    for name, slope in expected.items():
        t = tp.tensor(x, requires_grad=True)
        getattr(tp.special, name)(t).sum().backward()
        np.testing.assert_allclose(t.grad.numpy(), slope, rtol=1e-12, atol=1e-15, err_msg=name)
