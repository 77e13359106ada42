"""F.grid_sample and F.affine_grid (issue 13): values and gradients in input, grid and theta, on every backend."""
import numpy as np
import pytest

import tensorplug as tp
import tensorplug.nn.functional as F

try:
    import torch
    import torch.nn.functional as TF
except ImportError:  # CI has no torch
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed (the reference for grid_sample)")


def _close(actual, expected, tol=2e-5):
    np.testing.assert_allclose(actual.detach().cpu().numpy(), np.asarray(expected), rtol=tol, atol=tol)


@needs_torch
@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample_matches_pytorch(device, mode, padding_mode, align_corners):
    """Values and the gradients in input and grid agree with PyTorch, points outside the image included."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((2, 3, 5, 6)).astype(np.float32)
    g = rng.uniform(-1.4, 1.4, (2, 4, 7, 2)).astype(np.float32)
    x_ref, g_ref = torch.tensor(a, requires_grad=True), torch.tensor(g, requires_grad=True)
    ref = TF.grid_sample(x_ref, g_ref, mode=mode, padding_mode=padding_mode, align_corners=align_corners)
    weight = rng.standard_normal(tuple(ref.shape)).astype(np.float32)
    (ref * torch.tensor(weight)).sum().backward()
    x, grid = tp.tensor(a, device=device, requires_grad=True), tp.tensor(g, device=device, requires_grad=True)
    out = F.grid_sample(x, grid, mode=mode, padding_mode=padding_mode, align_corners=align_corners)
    (out * tp.tensor(weight, device=device)).sum().backward()
    _close(out, ref.detach().numpy())
    _close(x.grad, x_ref.grad.numpy())
    _close(grid.grad, g_ref.grad.numpy(), tol=1e-4)


@needs_torch
@pytest.mark.parametrize("align_corners", [False, True])
def test_affine_grid_matches_pytorch(device, align_corners):
    """affine_grid's grid and its gradient in theta agree with PyTorch."""
    theta = np.random.default_rng(1).standard_normal((2, 2, 3)).astype(np.float32)
    t_ref = torch.tensor(theta, requires_grad=True)
    ref = TF.affine_grid(t_ref, (2, 3, 4, 5), align_corners=align_corners)
    ref.pow(2).sum().backward()
    t = tp.tensor(theta, device=device, requires_grad=True)
    grid = F.affine_grid(t, (2, 3, 4, 5), align_corners=align_corners)
    grid.pow(2).sum().backward()
    _close(grid, ref.detach().numpy())
    _close(t.grad, t_ref.grad.numpy(), tol=1e-4)


@needs_torch
@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
def test_volumetric_matches_pytorch(device, mode, padding_mode):
    """5-D input with a 3-D affine grid: values and gradients in input and theta agree with PyTorch."""
    rng = np.random.default_rng(4)
    a = rng.standard_normal((2, 3, 4, 5, 6)).astype(np.float32)
    theta = (np.eye(3, 4) + 0.3 * rng.standard_normal((2, 3, 4))).astype(np.float32)
    x_ref, t_ref = torch.tensor(a, requires_grad=True), torch.tensor(theta, requires_grad=True)
    grid_ref = TF.affine_grid(t_ref, (2, 3, 3, 4, 2), align_corners=False)
    ref = TF.grid_sample(x_ref, grid_ref, mode=mode, padding_mode=padding_mode, align_corners=False)
    weight = rng.standard_normal(tuple(ref.shape)).astype(np.float32)
    (ref * torch.tensor(weight)).sum().backward()
    x, t = tp.tensor(a, device=device, requires_grad=True), tp.tensor(theta, device=device, requires_grad=True)
    out = F.grid_sample(x, F.affine_grid(t, (2, 3, 3, 4, 2), align_corners=False), mode=mode,
                        padding_mode=padding_mode, align_corners=False)
    (out * tp.tensor(weight, device=device)).sum().backward()
    _close(out, ref.detach().numpy())
    _close(x.grad, x_ref.grad.numpy())
    _close(t.grad, t_ref.grad.numpy(), tol=1e-4)


@pytest.mark.parametrize("align_corners", [False, True])
def test_identity_transform_reproduces_the_input(device, align_corners):
    """The identity affine grid samples every pixel at its own centre: the input comes back."""
    a = np.random.default_rng(2).standard_normal((2, 3, 4, 5))
    x = tp.tensor(a, dtype=tp.float32, device=device)
    theta = tp.tensor([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]] * 2, device=device)
    grid = F.affine_grid(theta, (2, 3, 4, 5), align_corners=align_corners)
    _close(F.grid_sample(x, grid, align_corners=align_corners), a)
    _close(F.grid_sample(x, grid, mode="nearest", align_corners=align_corners), a)


def test_shift_by_one_pixel_against_numpy(device):
    """A one-pixel shift (align_corners=True) moves the image and fills the edge per padding_mode."""
    a = np.arange(12.0).reshape(1, 1, 3, 4)
    x = tp.tensor(a, dtype=tp.float32, device=device)
    step = 2 / 3  # one pixel of a 4-wide image in normalized units
    theta = tp.tensor([[[1.0, 0.0, step], [0.0, 1.0, 0.0]]], device=device)
    grid = F.affine_grid(theta, (1, 1, 3, 4), align_corners=True)
    shifted = np.concatenate([a[..., 1:], np.zeros((1, 1, 3, 1))], axis=-1)
    _close(F.grid_sample(x, grid, align_corners=True), shifted, tol=1e-5)
    bordered = np.concatenate([a[..., 1:], a[..., -1:]], axis=-1)
    _close(F.grid_sample(x, grid, padding_mode="border", align_corners=True), bordered, tol=1e-5)
    reflected = np.concatenate([a[..., 1:], a[..., -2:-1]], axis=-1)
    _close(F.grid_sample(x, grid, padding_mode="reflection", align_corners=True), reflected, tol=1e-5)


def test_spatial_transformer_trains(device):
    """A spatial transformer (localisation net -> affine_grid -> grid_sample) gets gradients in every weight."""
    loc = tp.nn.Linear(16, 6).to(device)
    x = tp.tensor(np.random.default_rng(3).standard_normal((2, 1, 4, 4)), dtype=tp.float32, device=device)
    theta = loc(x.reshape(2, 16)).reshape(2, 2, 3)
    out = F.grid_sample(x, F.affine_grid(theta, x.shape, align_corners=False), align_corners=False)
    out.sum().backward()
    assert loc.weight.grad is not None and np.isfinite(loc.weight.grad.cpu().numpy()).all()


def test_errors_and_default_warning():
    """PyTorch's errors for bad modes and shapes, and its warning when align_corners is left out."""
    x, grid = tp.zeros(1, 1, 3, 3), tp.zeros(1, 2, 2, 2)
    with pytest.warns(UserWarning, match="align_corners=False"):
        F.grid_sample(x, grid)
    with pytest.warns(UserWarning, match="align_corners=False"):
        F.affine_grid(tp.zeros(1, 2, 3), (1, 1, 3, 3))
    with pytest.raises(ValueError, match="expected mode"):
        F.grid_sample(x, grid, mode="foo", align_corners=False)
    with pytest.raises(ValueError, match="expected padding_mode"):
        F.grid_sample(x, grid, padding_mode="foo", align_corners=False)
    with pytest.raises(RuntimeError, match="same batch size"):
        F.grid_sample(x, tp.zeros(2, 2, 2, 2), align_corners=False)
    with pytest.raises(RuntimeError, match="size 2 in last dimension"):
        F.grid_sample(x, tp.zeros(1, 2, 2, 3), align_corners=False)
    with pytest.raises(ValueError, match="Nx2x3"):
        F.affine_grid(tp.zeros(1, 3, 3), (1, 1, 3, 3), align_corners=False)
    with pytest.raises(RuntimeError, match="bicubic interpolation only supports 4D"):
        F.grid_sample(tp.zeros(1, 1, 2, 2, 2), tp.zeros(1, 1, 1, 1, 3), mode="bicubic", align_corners=False)
    with pytest.warns(UserWarning, match="unit-size grids"):
        F.affine_grid(tp.zeros(1, 2, 3), (1, 1, 1, 3), align_corners=True)
    with pytest.raises(ValueError, match="floating point"):
        F.affine_grid(tp.zeros(1, 2, 3, dtype=tp.int64), (1, 1, 3, 3), align_corners=False)
