"""F.unfold / F.fold and nn.Unfold / nn.Fold (issue 13): sliding blocks out of and back into an
image, against PyTorch 2.13 and against a NumPy loop."""
import numpy as np
import pytest

import tensorplug as tp
import tensorplug.nn as nn
import tensorplug.nn.functional as F

from nn_reference import TOL, make_pair, to_numpy

GEOMETRIES = [
    dict(kernel_size=2),
    dict(kernel_size=(2, 3), dilation=(2, 1), padding=(1, 2), stride=(2, 1)),
    dict(kernel_size=3, padding=1, stride=2),
]


def _unfold_reference(x, kernel, dilation, padding, stride):
    """Column (c * KH + i) * KW + j, block (r, s) holds padded x[c, r * SH + i * DH, s * SW + j * DW]."""
    n, c, h, w = x.shape
    padded = np.pad(x, ((0, 0), (0, 0), (padding[0],) * 2, (padding[1],) * 2))
    oh = (h + 2 * padding[0] - dilation[0] * (kernel[0] - 1) - 1) // stride[0] + 1
    ow = (w + 2 * padding[1] - dilation[1] * (kernel[1] - 1) - 1) // stride[1] + 1
    out = np.zeros((n, c * kernel[0] * kernel[1], oh * ow))
    for ch in range(c):
        for i in range(kernel[0]):
            for j in range(kernel[1]):
                for r in range(oh):
                    for s in range(ow):
                        value = padded[:, ch, r * stride[0] + i * dilation[0], s * stride[1] + j * dilation[1]]
                        out[:, (ch * kernel[0] + i) * kernel[1] + j, r * ow + s] = value
    return out


def test_unfold_matches_numpy_loop_and_fold_is_its_adjoint():
    """unfold equals the loop in float64; <unfold(x), y> == <x, fold(y)> (fold is the adjoint)."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 5, 6))
    kernel, dilation, padding, stride = (2, 3), (2, 1), (1, 2), (2, 1)
    cols = F.unfold(tp.tensor(x), kernel, dilation, padding, stride)
    expected = _unfold_reference(x, kernel, dilation, padding, stride)
    np.testing.assert_allclose(cols.numpy(), expected, rtol=1e-12)
    y = rng.standard_normal(expected.shape)
    back = F.fold(tp.tensor(y), (5, 6), kernel, dilation, padding, stride).numpy()
    np.testing.assert_allclose((expected * y).sum(), (x * back).sum(), rtol=1e-10)


def test_unbatched_shapes_and_modules():
    """3-D input to unfold and 2-D input to fold drop the batch dim; the modules call the functions."""
    x = tp.randn(3, 4, 4)
    assert F.unfold(x, 2).shape == (12, 9)
    assert F.fold(tp.randn(12, 9), (4, 4), 2).shape == (3, 4, 4)
    assert nn.Unfold(2, padding=1)(tp.randn(1, 1, 3, 3)).shape == (1, 4, 16)
    assert nn.Fold((4, 4), 2)(tp.ones(1, 4, 9)).shape == (1, 1, 4, 4)
    assert repr(nn.Fold((4, 4), 2)) == "Fold(output_size=(4, 4), kernel_size=2, dilation=1, padding=0, stride=1)"


@pytest.mark.parametrize("call, message", [
    (lambda: F.unfold(tp.randn(2, 3, 4, 4, 1), 2), "Expected 3D or 4D"),
    (lambda: F.unfold(tp.randn(1, 1, 2, 2), 3), "must be at least one"),
    (lambda: F.unfold(tp.randn(1, 1, 4, 4), 0), "kernel size should be greater than zero"),
    (lambda: F.unfold(tp.randn(1, 1, 4, 4), 2, padding=-1), "padding should be non-negative"),
    (lambda: F.fold(tp.randn(2, 3, 4, 4), (4, 4), 2), "Expected 2D or 3D"),
    (lambda: F.fold(tp.randn(2, 5, 9), (4, 4), 2), "divisible by the product of kernel_size"),
    (lambda: F.fold(tp.randn(2, 8, 8), (4, 4), 2), "calculated number of sliding blocks 3 * 3 = 9"),
])
def test_errors_as_pytorch(call, message):
    """Bad ranks, sizes and geometry raise RuntimeError with PyTorch's wording."""
    with pytest.raises(RuntimeError, match=message.replace("*", r"\*")):
        call()


@pytest.mark.parametrize("geometry", GEOMETRIES, ids=str)
def test_unfold_and_fold_match_torch(geometry):
    """Values and input gradients of unfold and fold equal PyTorch's."""
    torch = pytest.importorskip("torch", reason="PyTorch is the reference; CI has none")
    x = np.random.default_rng(1).standard_normal((2, 3, 7, 6))
    a, b, xa, xb = make_pair(torch, x, requires_grad=True)
    out_a, out_b = F.unfold(xa, **geometry), torch.nn.functional.unfold(xb, **geometry)
    np.testing.assert_allclose(to_numpy(out_a), to_numpy(out_b), **TOL["float64"])
    weight = np.random.default_rng(2).standard_normal(out_b.shape)
    (out_a * tp.tensor(weight)).sum().backward()
    (out_b * torch.tensor(weight)).sum().backward()
    np.testing.assert_allclose(to_numpy(a.grad), to_numpy(b.grad), **TOL["float64"])

    c, d, ca, cb = make_pair(torch, weight, requires_grad=True)
    fa, fb = F.fold(ca, (7, 6), **geometry), torch.nn.functional.fold(cb, (7, 6), **geometry)
    np.testing.assert_allclose(to_numpy(fa), to_numpy(fb), **TOL["float64"])
    (fa * tp.tensor(x)).sum().backward()
    (fb * torch.tensor(x)).sum().backward()
    np.testing.assert_allclose(to_numpy(c.grad), to_numpy(d.grad), **TOL["float64"])


def test_unfold_fold_on_every_device(device):
    """On each backend, unfold then fold counts each pixel's blocks, and gradients reach the input."""
    x = tp.tensor(np.random.default_rng(3).standard_normal((1, 2, 5, 5)), dtype=tp.float32, device=device)
    x.requires_grad_()
    cols = F.unfold(x, 3, padding=1, stride=2)
    back = F.fold(cols, (5, 5), 3, padding=1, stride=2)
    back.sum().backward()
    ones = np.ones((1, 2, 5, 5))
    counts = F.fold(F.unfold(tp.tensor(ones), 3, padding=1, stride=2), (5, 5), 3, padding=1, stride=2).numpy()
    assert back.device.type == device
    np.testing.assert_allclose(back.cpu().detach().numpy(), x.cpu().detach().numpy() * counts, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(x.grad.cpu().numpy(), counts, rtol=1e-6)
