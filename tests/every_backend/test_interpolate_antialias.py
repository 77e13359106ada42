"""F.interpolate(antialias=True) (bilinear and bicubic, 4-D input) on every backend: values and
gradients against PyTorch 2.13 in float64 across downscale and upscale factors, both
align_corners, sizes and scale factors; float32 on every device; PyTorch's refusals."""
import numpy as np
import pytest

import tensorplug as tp
import tensorplug.nn.functional as F
from torch_reference import compare, torch_or_skip

# (input height, width), resize arguments: downscaling by integer and fractional factors, mixed
# down/up, upscaling, same size, a single output pixel, scale factors used as given and recomputed.
RESIZES = [
    ((12, 16), dict(size=(4, 5))),
    ((13, 17), dict(size=(3, 7))),
    ((9, 10), dict(size=(4, 23))),
    ((5, 6), dict(size=(11, 13))),
    ((5, 6), dict(size=(5, 6))),
    ((7, 8), dict(size=(1, 1))),
    ((14, 15), dict(scale_factor=0.37)),
    ((10, 12), dict(scale_factor=(0.5, 1.75))),
    ((11, 9), dict(scale_factor=0.3, recompute_scale_factor=True)),
]


def _float64_on(device):
    try:
        tp.zeros(1, dtype=tp.float64, device=device)
    except TypeError as error:
        pytest.skip(str(error))


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("shape, resize", RESIZES, ids=[str(r) for _, r in RESIZES])
def test_values_and_gradients_match_torch(device, mode, align_corners, shape, resize):
    """float64 values and the input gradient, to 1e-10."""
    torch = torch_or_skip()
    _float64_on(device)
    x = np.random.default_rng(sum(shape)).standard_normal((2, 3) + shape)

    def resized(lib, t):
        functional = F if lib is tp else torch.nn.functional
        out = functional.interpolate(t, mode=mode, align_corners=align_corners, antialias=True, **resize)
        if lib is tp:
            assert out.device.type == device
        return out

    compare(torch, resized, [x], device=device, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_float32_matches_torch(device, mode):
    """float32 (every device has it) downscaling an image-sized input by 4.3."""
    torch = torch_or_skip()
    x = np.random.default_rng(1).standard_normal((1, 3, 64, 48)).astype(np.float32)
    expected = torch.nn.functional.interpolate(torch.tensor(x), size=(15, 11), mode=mode, antialias=True)
    got = F.interpolate(tp.tensor(x, device=device), size=(15, 11), mode=mode, antialias=True)
    assert got.dtype is tp.float32
    np.testing.assert_allclose(got.cpu().numpy(), expected.numpy(), rtol=1e-5, atol=1e-5)


def test_refusals_match_torch():
    """Other modes and other ranks raise ValueError, as PyTorch's."""
    torch = torch_or_skip()
    for mode, shape in [("nearest", (1, 1, 5, 5)), ("area", (1, 1, 5, 5)), ("linear", (1, 1, 5)),
                        ("bilinear", (1, 1, 5)), ("trilinear", (1, 1, 5, 5, 5))]:
        with pytest.raises(ValueError, match="Anti-alias option is restricted to bilinear"):
            torch.nn.functional.interpolate(torch.zeros(shape), size=3 if len(shape) == 3 else None,
                                            scale_factor=None if len(shape) == 3 else 0.5, mode=mode,
                                            antialias=True)
        with pytest.raises(ValueError, match="Anti-alias option is restricted to bilinear"):
            F.interpolate(tp.zeros(shape), size=3 if len(shape) == 3 else None,
                          scale_factor=None if len(shape) == 3 else 0.5, mode=mode, antialias=True)
