"""F.pixel_shuffle / F.pixel_unshuffle and nn.PixelShuffle / nn.PixelUnshuffle (issue 13: the
super-resolution example's upscaling layer)."""
import numpy as np
import pytest

import tensorplug as tp
import tensorplug.nn as nn
import tensorplug.nn.functional as F


def _shuffle_reference(x, r):
    """out[..., c, h*r + i, w*r + j] = x[..., c*r*r + i*r + j, h, w], element by element."""
    *batch, channels, height, width = x.shape
    out = np.empty((*batch, channels // (r * r), height * r, width * r), x.dtype)
    for c in range(channels // (r * r)):
        for i in range(r):
            for j in range(r):
                out[..., c, i::r, j::r] = x[..., c * r * r + i * r + j, :, :]
    return out


def _unshuffle(y, r):
    """The inverse of _shuffle_reference, element by element."""
    *batch, channels, height, width = y.shape
    x = np.empty((*batch, channels * r * r, height // r, width // r), y.dtype)
    for c in range(channels):
        for i in range(r):
            for j in range(r):
                x[..., c * r * r + i * r + j, :, :] = y[..., c, i::r, j::r]
    return x


@pytest.mark.parametrize("shape, r", [((2, 8, 3, 5), 2), ((9, 2, 2), 3), ((2, 1, 4, 2, 3), 2), ((0, 4, 1, 1), 2)], ids=str)
def test_pixel_shuffle_places_each_channel_block(shape, r):
    """Channel c*r*r + i*r + j lands at row offset i, column offset j; unshuffle undoes it."""
    x = np.random.randn(*shape)
    out = F.pixel_shuffle(tp.tensor(x), r)
    np.testing.assert_array_equal(out.numpy(), _shuffle_reference(x, r))
    np.testing.assert_array_equal(F.pixel_unshuffle(out, r).numpy(), x)
    assert nn.PixelShuffle(r)(tp.tensor(x)).shape == out.shape


def test_pixel_shuffle_gradient_is_the_inverse_rearrangement():
    """The gradient of sum(out * g) with respect to the input is pixel_unshuffle(g)."""
    x = tp.randn(2, 8, 3, 3, requires_grad=True)
    g = np.random.randn(2, 2, 6, 6)
    (F.pixel_shuffle(x, 2) * tp.tensor(g, dtype=tp.float32)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), _unshuffle(g, 2), rtol=1e-6)


def test_pixel_shuffle_matches_torch():
    """Values and gradients equal PyTorch's, for shuffle and unshuffle."""
    torch = pytest.importorskip("torch", reason="PyTorch 2.13 is the reference here (pip install torch==2.13.0)")
    x = np.random.randn(3, 18, 2, 4)
    for ours, theirs, factor in ((F.pixel_shuffle, torch.nn.functional.pixel_shuffle, 3),
                                 (F.pixel_unshuffle, torch.nn.functional.pixel_unshuffle, 2)):
        a, b = tp.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        out_a, out_b = ours(a, factor), theirs(b, factor)
        np.testing.assert_array_equal(out_a.detach().numpy(), out_b.detach().numpy())
        (out_a * out_a).sum().backward()
        (out_b * out_b).sum().backward()
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-12)


def test_pixel_shuffle_errors_name_the_op_and_sizes():
    """PyTorch's messages for a bad channel count, rank, factor and spatial size."""
    with pytest.raises(RuntimeError, match=r"pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of upscale_factor, but input.size\(-3\)=7 is not divisible by 4"):
        F.pixel_shuffle(tp.ones(2, 7, 3, 3), 2)
    with pytest.raises(RuntimeError, match=r"pixel_shuffle expects input to have at least 3 dimensions, but got input with 2 dimension\(s\)"):
        F.pixel_shuffle(tp.ones(7, 3), 2)
    with pytest.raises(RuntimeError, match="pixel_shuffle expects a positive upscale_factor, but got 0"):
        F.pixel_shuffle(tp.ones(1, 4, 3, 3), 0)
    with pytest.raises(TypeError, match="'upscale_factor' must be int, not float"):
        F.pixel_shuffle(tp.ones(1, 4, 3, 3), 2.0)
    with pytest.raises(RuntimeError, match=r"pixel_unshuffle expects height to be divisible by downscale_factor, but input.size\(-2\)=5 is not divisible by 2"):
        F.pixel_unshuffle(tp.ones(1, 1, 5, 4), 2)
    with pytest.raises(RuntimeError, match=r"pixel_unshuffle expects width to be divisible by downscale_factor, but input.size\(-1\)=5 is not divisible by 2"):
        F.pixel_unshuffle(tp.ones(1, 1, 4, 5), 2)


def test_pixel_shuffle_modules_repr():
    """The modules print their factor as PyTorch's do."""
    assert repr(nn.PixelShuffle(3)) == "PixelShuffle(upscale_factor=3)"
    assert repr(nn.PixelUnshuffle(2)) == "PixelUnshuffle(downscale_factor=2)"
