"""quantile and nanquantile: NumPy float64 references on every backend, PyTorch 2.13 for shapes,
NaN handling, gradients and errors (issue 13)."""
import numpy as np
import pytest

import tensorplug as tp
from device_params import every_device, torch_or_skip

MODES = ["linear", "lower", "higher", "midpoint", "nearest"]


@pytest.mark.parametrize("device", every_device())
@pytest.mark.parametrize("interpolation", MODES)
def test_quantile_matches_numpy(device, interpolation, rng):
    """Scalar and 1-D q, over everything and along each dim, with keepdim, as np.quantile
    (q chosen so that no rank lies exactly half-way, where 'nearest' rounding conventions
    differ)."""
    a = rng.normal(size=(4, 5, 6))
    x = tp.tensor(a, device=device)
    qs = np.array([0.0, 0.13, 0.71, 1.0])
    for dim in (None, 0, 1, -1):
        for keepdim in (False, True):
            got = tp.quantile(x, tp.tensor(qs, device=device), dim, keepdim, interpolation=interpolation)
            expected = np.quantile(a, qs, axis=dim, keepdims=keepdim, method=interpolation)
            np.testing.assert_allclose(got.cpu().numpy(), expected, rtol=1e-12, atol=1e-12)
            got = x.quantile(0.37, dim, keepdim, interpolation=interpolation)
            expected = np.quantile(a, 0.37, axis=dim, keepdims=keepdim, method=interpolation)
            assert got.shape == np.shape(expected)
            np.testing.assert_allclose(got.cpu().numpy(), expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("device", every_device())
def test_nan_lines_quantile_and_nanquantile(device, rng):
    """A line with NaN has quantile NaN; nanquantile ignores NaN (np.nanquantile) and gives NaN
    only for an all-NaN line."""
    a = rng.normal(size=(3, 7)).astype(np.float32)
    a[0, [1, 4]] = np.nan
    a[2, :] = np.nan
    x = tp.tensor(a, device=device)
    q = tp.tensor([0.25, 0.5], device=device)
    got = tp.quantile(x, q, dim=1).cpu().numpy()
    assert np.isnan(got[:, 0]).all() and np.isnan(got[:, 2]).all()
    np.testing.assert_allclose(got[:, 1], np.quantile(a[1], [0.25, 0.5]), rtol=1e-6)
    with np.errstate(all="ignore"), pytest.warns(RuntimeWarning):  # NumPy warns about the all-NaN row
        expected = np.nanquantile(a, [0.25, 0.5], axis=1)
    np.testing.assert_allclose(tp.nanquantile(x, q, dim=1).cpu().numpy(), expected, rtol=1e-6, equal_nan=True)
    assert np.isnan(tp.quantile(x, 0.5).item())
    assert abs(tp.nanquantile(x, 0.5).item() - np.nanquantile(a, 0.5)) < 1e-6


def test_quantile_matches_torch_values_shapes_and_gradients(rng):
    """Values, shapes (q along a new first dim) and gradients to the input equal PyTorch's, for
    every interpolation mode, including half-way ranks for 'nearest' and 'midpoint'."""
    torch = torch_or_skip()
    a = rng.normal(size=(3, 4, 5))
    qs = [0.0, 0.25, 0.5, 0.875, 1.0]
    for interpolation in MODES:
        for dim, keepdim in ((None, False), (None, True), (1, False), (2, True)):
            ours = tp.tensor(a, requires_grad=True)
            theirs = torch.tensor(a, requires_grad=True)
            out_a = tp.nanquantile(ours, tp.tensor(qs, dtype=tp.float64), dim, keepdim, interpolation=interpolation)
            out_b = torch.nanquantile(theirs, torch.tensor(qs, dtype=torch.float64), dim, keepdim, interpolation=interpolation)
            assert out_a.shape == tuple(out_b.shape)
            np.testing.assert_allclose(out_a.detach().numpy(), out_b.detach().numpy(), rtol=1e-12)
            weights = rng.normal(size=tuple(out_b.shape))
            (out_a * tp.tensor(weights)).sum().backward()
            (out_b * torch.tensor(weights)).sum().backward()
            np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-12, atol=1e-12)
    scalar = tp.quantile(tp.tensor(3.0), 0.3, dim=0)
    assert scalar.shape == () and scalar.item() == 3.0


@pytest.mark.parametrize("device", every_device())
def test_quantile_gradient_on_every_device(device, rng):
    """The gradient flows through sort and gather on every backend: linear interpolation
    splits it between the two neighbouring order statistics."""
    a = np.array([4.0, 1.0, 3.0, 2.0])
    x = tp.tensor(a, device=device, requires_grad=True)
    tp.quantile(x, 0.5).backward()  # rank 1.5: half to the 2nd and half to the 3rd smallest
    np.testing.assert_allclose(x.grad.cpu().numpy(), [0.0, 0.0, 0.5, 0.5])


def test_quantile_out_and_errors():
    """out= receives the result; PyTorch's checks and messages."""
    out = tp.empty(2)
    assert tp.quantile(tp.tensor([[1.0, 2.0], [3.0, 4.0]]), 0.5, dim=0, out=out) is out and out.tolist() == [2.0, 3.0]
    x = tp.tensor([1.0, 2.0, 3.0])
    for call, exc, message in [
        (lambda: tp.quantile(tp.tensor([1, 2, 3]), 0.5), RuntimeError, "must be either float or double dtype"),
        (lambda: tp.quantile(x.half(), 0.5), RuntimeError, "must be either float or double dtype"),
        (lambda: tp.quantile(x, tp.tensor(0.5, dtype=tp.float64)), RuntimeError, "q tensor must be same dtype"),
        (lambda: tp.quantile(x, tp.tensor([[0.5]])), RuntimeError, "q must be a scalar or 1D tensor"),
        (lambda: tp.quantile(x, 1.5), RuntimeError, r"q must be in the range \[0, 1\] but got 1.5"),
        (lambda: tp.nanquantile(x, tp.tensor([1.5])), RuntimeError, r"q values must be in the range \[0, 1\]"),
        (lambda: tp.quantile(tp.tensor([]), 0.5), RuntimeError, "input tensor must be non-empty"),
        (lambda: tp.quantile(x, 0.5, interpolation="foo"), RuntimeError, "interpolation must be one of"),
        (lambda: tp.quantile(x, 0.5, dim=2), IndexError, "quantile"),
        (lambda: tp.quantile(x, "half"), TypeError, "argument 'q'"),
    ]:
        with pytest.raises(exc, match=message):
            call()
