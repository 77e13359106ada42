"""F.interpolate(mode="bicubic") on every backend (ViT code resizes its positional embedding this
way), against a direct NumPy loop over PyTorch's cubic-convolution taps (issue 13)."""
import numpy as np
import pytest

import tensorplug as tp
import tensorplug.nn.functional as F

A = -0.75  # PyTorch's cubic-convolution parameter


def _cubic(x):
    x = abs(x)
    if x <= 1:
        return ((A + 2) * x - (A + 3)) * x * x + 1
    if x < 2:
        return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A
    return 0.0


def _source(dst, size, out, align_corners, scale):
    if align_corners:
        return dst * (size - 1) / (out - 1) if out > 1 else 0.0
    return (dst + 0.5) * ((1.0 / scale) if scale else size / out) - 0.5


def _reference(x, out_h, out_w, align_corners, scales=(None, None)):
    """One output pixel at a time: 4 x 4 taps around the source point, indices clamped to the edge."""
    n, c, h, w = x.shape
    result = np.zeros((n, c, out_h, out_w))
    for i in range(out_h):
        sy = _source(i, h, out_h, align_corners, scales[0])
        y0 = int(np.floor(sy))
        for j in range(out_w):
            sx = _source(j, w, out_w, align_corners, scales[1])
            x0 = int(np.floor(sx))
            for a in range(-1, 3):
                for b in range(-1, 3):
                    weight = _cubic(sy - (y0 + a)) * _cubic(sx - (x0 + b))
                    result[:, :, i, j] += weight * x[:, :, min(max(y0 + a, 0), h - 1), min(max(x0 + b, 0), w - 1)]
    return result


@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("out", [(7, 9), (2, 3), (5, 6)])
def test_bicubic_values(device, out, align_corners):
    """Upsampling, downsampling and same-size resizing match the loop (the cubic overshoot kept)."""
    x = np.random.default_rng(0).standard_normal((2, 3, 5, 6))
    got = F.interpolate(tp.tensor(x, dtype=tp.float32, device=device), size=out, mode="bicubic",
                        align_corners=align_corners)
    np.testing.assert_allclose(got.cpu().numpy(), _reference(x, *out, align_corners), rtol=1e-5, atol=1e-5)


def test_bicubic_scale_factor_and_gradient(device):
    """A scale factor sets the source spacing (1 / scale); the input's gradient is the transposed
    resampling, as finite differences in float64 give it."""
    x = np.random.default_rng(1).standard_normal((1, 2, 4, 5))
    t = tp.tensor(x, dtype=tp.float32, device=device,
                  requires_grad=True)
    y = F.interpolate(t, scale_factor=1.5, mode="bicubic")
    assert y.shape == (1, 2, 6, 7)
    np.testing.assert_allclose(y.detach().cpu().numpy(), _reference(x, 6, 7, False, (1.5, 1.5)), rtol=1e-5, atol=1e-5)
    g = np.random.default_rng(2).standard_normal((1, 2, 6, 7))
    (y * tp.tensor(g, dtype=tp.float32, device=device)).sum().backward()
    # The resampling is linear in x, so its gradient is exact from unit perturbations.
    expected = np.zeros_like(x)
    base = (_reference(x, 6, 7, False, (1.5, 1.5)) * g).sum()
    for index in np.ndindex(*x.shape):
        bumped = x.copy()
        bumped[index] += 1.0
        expected[index] = (_reference(bumped, 6, 7, False, (1.5, 1.5)) * g).sum() - base
    np.testing.assert_allclose(t.grad.cpu().numpy(), expected, rtol=1e-4, atol=1e-5)


def test_bicubic_needs_4d_input(device):
    """Bicubic resizes two spatial dims only, as PyTorch's."""
    with pytest.raises(NotImplementedError, match="bicubic mode needs 4D input"):
        F.interpolate(tp.ones(1, 1, 4, device=device), size=6, mode="bicubic")
