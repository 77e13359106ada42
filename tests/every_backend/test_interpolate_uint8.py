"""F.interpolate of uint8 images on every backend (probe batch (c), issue 13): bilinear and
bicubic stay uint8, computed in fixed point as PyTorch's uint8 kernels (after Pillow's) do, equal
to the bit; nearest stays a selection; other integer and bool inputs are refused as in PyTorch;
the older UpsamplingNearest2d/UpsamplingBilinear2d modules."""
import numpy as np
import pytest

import tensorplug as tp
import tensorplug.nn.functional as F

try:
    import torch
except ImportError:  # the reference; tensorplug itself does not need it
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch (the reference) is not installed: pip install torch==2.13.0")


def _image(shape, seed=0):
    return np.random.default_rng(seed).integers(0, 256, shape, dtype=np.uint8)


def _bilinear_fixed_point_reference(image: np.ndarray, out_h: int, out_w: int) -> np.ndarray:
    """Bilinear resize (align_corners=False) of an (N, C, H, W) uint8 array, written out: the
    width pass then the height pass, each with 16-bit weights (scaled by the largest power of 2
    that keeps twice the largest weight below 2**15), rounded half up, clamped back to 0..255."""

    def one_axis(x, out):
        size = x.shape[-1]
        taps = []
        for i in range(out):
            src = max((i + 0.5) * size / out - 0.5, 0.0)
            low = min(int(np.floor(src)), size - 1)
            high = min(low + 1, size - 1)
            frac = src - low
            taps.append((low, high, 1.0 - frac, frac) if high != low else (low, high, 1.0, 0.0))
        largest = max(max(t[2], t[3]) for t in taps)
        bits = 0
        while bits < 22 and largest * 2 ** (bits + 1) < 2 ** 15:
            bits += 1
        result = np.empty(x.shape[:-1] + (out,), dtype=np.int64)
        for i, (low, high, w_low, w_high) in enumerate(taps):
            w_low, w_high = (int(np.floor(w * 2 ** bits + 0.5)) for w in (w_low, w_high))
            total = x[..., low] * w_low + x[..., high] * w_high + 2 ** (bits - 1)
            result[..., i] = np.clip(total >> bits, 0, 255)
        return result

    x = one_axis(image.astype(np.int64), out_w)
    x = np.swapaxes(one_axis(np.swapaxes(x, -1, -2), out_h), -1, -2)
    return x.astype(np.uint8)


@pytest.mark.parametrize("size", [(4, 3), (13, 11), (7, 7), (8, 6)])
def test_bilinear_uint8_matches_a_fixed_point_reference(device, size):
    image = _image((2, 3, 8, 6))
    out = F.interpolate(tp.tensor(image, device=device), size=size, mode="bilinear", align_corners=False)
    assert out.dtype is tp.uint8 and out.shape == (2, 3) + size
    np.testing.assert_array_equal(out.cpu().numpy(), _bilinear_fixed_point_reference(image, *size))


def test_known_values_round_half_up(device):
    row = tp.tensor([[[[0, 255]]]], dtype=tp.uint8, device=device)
    out = F.interpolate(row, size=(1, 4), mode="bilinear", align_corners=False)
    # source positions 0, 0.25, 0.75, 1: 63.75 and 191.25 round to 64 and 191
    assert out.cpu().numpy().reshape(-1).tolist() == [0, 64, 191, 255]
    nearest = F.interpolate(row, scale_factor=2, mode="nearest")
    assert nearest.dtype is tp.uint8 and nearest.cpu().numpy().tolist() == [[[[0, 0, 255, 255]] * 2]]


@needs_torch
@pytest.mark.parametrize("mode, antialias, align_corners", [
    ("bilinear", False, False), ("bilinear", False, True), ("bilinear", True, False),
    ("bicubic", False, False), ("bicubic", False, True), ("bicubic", True, False),
])
@pytest.mark.parametrize("size", [(4, 3), (13, 11), (3, 6), (16, 12)])
def test_uint8_resize_equals_torch_to_the_bit(device, mode, antialias, align_corners, size):
    image = _image((2, 3, 8, 6), seed=sum(size))
    expected = torch.nn.functional.interpolate(torch.from_numpy(image), size=size, mode=mode, antialias=antialias,
                                               align_corners=align_corners).numpy()
    out = F.interpolate(tp.tensor(image, device=device), size=size, mode=mode, antialias=antialias,
                        align_corners=align_corners)
    assert out.dtype is tp.uint8
    np.testing.assert_array_equal(out.cpu().numpy(), expected)


@pytest.mark.parametrize("dtype, shape, mode", [
    ("int64", (1, 3, 4, 4), "nearest"), ("bool", (1, 3, 4, 4), "nearest"), ("int32", (1, 3, 4, 4), "bilinear"),
    ("uint8", (1, 3, 4), "linear"), ("uint8", (1, 3, 4, 4), "area"), ("uint8", (1, 1, 3, 4, 4), "trilinear"),
])
def test_integer_inputs_without_a_kernel_are_refused(dtype, shape, mode):
    x = tp.ones(*shape, dtype=getattr(tp, dtype))
    with pytest.raises(NotImplementedError, match=f"not implemented for tensorplug.{dtype}"):
        F.interpolate(x, size=(2,) * (len(shape) - 2), mode=mode)
    if torch is not None:
        with pytest.raises(NotImplementedError):
            torch.nn.functional.interpolate(torch.ones(*shape, dtype=getattr(torch, dtype)), size=(2,) * (len(shape) - 2),
                                            mode=mode)


def test_older_upsampling_modules():
    x = tp.tensor([[[[1.0, 2.0]]]])
    assert tp.nn.UpsamplingNearest2d(scale_factor=2)(x).tolist() == [[[[1.0, 1.0, 2.0, 2.0], [1.0, 1.0, 2.0, 2.0]]]]
    # align_corners=True: the corners stay, the inside is evenly spaced
    assert tp.nn.UpsamplingBilinear2d(size=(1, 3))(x).tolist() == [[[[1.0, 1.5, 2.0]]]]
    module = tp.nn.UpsamplingBilinear2d(scale_factor=2)
    assert (module.mode, module.align_corners, module.scale_factor) == ("bilinear", True, 2.0)
