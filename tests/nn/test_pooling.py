"""Pooling and interpolation against PyTorch."""
import numpy as np
import pytest

import tensorplug as tp
import tensorplug.nn.functional as F
from nn_reference import check

torch = pytest.importorskip("torch")
TF = torch.nn.functional

MAX_CASES = [
    dict(kernel_size=2),
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=(3, 2), stride=(2, 1), dilation=(1, 2)),
    dict(kernel_size=3, stride=2, ceil_mode=True),
    dict(kernel_size=2, stride=3, padding=1, ceil_mode=True),
]


@pytest.mark.parametrize("kwargs", MAX_CASES, ids=str)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_max_pool2d_matches_torch(kwargs, dtype):
    """Values, indices and gradients (to the first maximum of each window)."""
    x = np.random.randn(2, 3, 7, 8)
    check(torch, lambda a: F.max_pool2d(a, **kwargs), lambda a: TF.max_pool2d(a, **kwargs), [x], dtype, True)
    values, indices = F.max_pool2d(tp.tensor(x), return_indices=True, **kwargs)
    ref_values, ref_indices = TF.max_pool2d(torch.tensor(x), return_indices=True, **kwargs)
    np.testing.assert_array_equal(indices.numpy(), ref_indices.numpy())
    np.testing.assert_array_equal(values.numpy(), ref_values.numpy())


def test_max_pool2d_ties_go_to_first_maximum():
    """With ties the gradient goes to the first maximum (PyTorch's choice), unbatched input."""
    x = np.ones((1, 4, 4))
    check(torch, lambda a: F.max_pool2d(a, 2), lambda a: TF.max_pool2d(a, 2), [x])


def test_max_pool1d_and_avg_pool1d():
    x = np.random.randn(2, 3, 10)
    check(torch, lambda a: F.max_pool1d(a, 3, 2, 1), lambda a: TF.max_pool1d(a, 3, 2, 1), [x])
    check(torch, lambda a: F.avg_pool1d(a, 3, 2, 1), lambda a: TF.avg_pool1d(a, 3, 2, 1), [x])


AVG_CASES = [
    dict(kernel_size=2),
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=3, stride=2, padding=1, count_include_pad=False),
    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
    dict(kernel_size=(2, 3), divisor_override=5),
]


@pytest.mark.parametrize("kwargs", AVG_CASES, ids=str)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_avg_pool2d_matches_torch(kwargs, dtype):
    x = np.random.randn(2, 3, 7, 8)
    check(torch, lambda a: F.avg_pool2d(a, **kwargs), lambda a: TF.avg_pool2d(a, **kwargs), [x], dtype, True)


@pytest.mark.parametrize("name", ["max_pool2d", "avg_pool2d"])
def test_pool_explicit_derivative_matches_decomposition(name):
    op = getattr(F._pooling, "_" + name)
    args = ((3, 3), (2, 2), (1, 1), (1, 1), True) if name == "max_pool2d" else ((3, 3), (2, 2), (1, 1), True, False, None)
    x = np.random.randn(2, 2, 7, 6)
    a, b = tp.tensor(x, requires_grad=True), tp.tensor(x, requires_grad=True)
    g = tp.tensor(np.random.randn(*op(a, *args).shape))
    (op(a, *args) * g).sum().backward()
    (op.op.decomposition(b, *args) * g).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-10, atol=1e-12)
    assert tp.autograd.gradcheck(lambda t: op(t, *args), (tp.tensor(np.random.randn(1, 1, 5, 4), requires_grad=True),))


@pytest.mark.parametrize("size", [(1, 1), (3, 4), (5, 3), (7, None)], ids=str)
def test_adaptive_avg_pool2d_matches_torch(size):
    x = np.random.randn(2, 3, 7, 9)
    check(torch, lambda a: F.adaptive_avg_pool2d(a, size), lambda a: TF.adaptive_avg_pool2d(a, size), [x], noncontiguous=True)


INTERP_CASES = [
    dict(size=(5, 7), mode="nearest"),
    dict(scale_factor=2, mode="nearest"),
    dict(scale_factor=0.5, mode="nearest"),
    dict(size=(6, 9), mode="nearest-exact"),
    dict(size=(5, 7), mode="bilinear", align_corners=False),
    dict(size=(5, 7), mode="bilinear", align_corners=True),
    dict(scale_factor=(1.5, 2.5), mode="bilinear"),
    dict(size=(2, 3), mode="bilinear", align_corners=False),
    dict(size=(3, 2), mode="area"),
    dict(size=(7, 9), mode="bicubic"),
    dict(size=(3, 11), mode="bicubic", align_corners=True),
    dict(scale_factor=(0.5, 1.7), mode="bicubic"),
    dict(size=(1, 1), mode="bicubic", align_corners=True),
]


@pytest.mark.parametrize("kwargs", INTERP_CASES, ids=str)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_interpolate_matches_torch(kwargs, dtype):
    x = np.random.randn(2, 3, 4, 6)
    check(torch, lambda a: F.interpolate(a, **kwargs), lambda a: TF.interpolate(a, **kwargs), [x], dtype, True)


def test_interpolate_linear_1d():
    x = np.random.randn(2, 3, 5)
    check(torch, lambda a: F.interpolate(a, size=8, mode="linear"), lambda a: TF.interpolate(a, size=8, mode="linear"), [x])


def test_pooling_errors():
    with pytest.raises(RuntimeError, match=r"Given input size: \(1x2x2\). Calculated output size: \(1x0x0\). Output size is too small"):
        F.max_pool2d(tp.randn(1, 1, 2, 2), 3)
    with pytest.raises(RuntimeError, match="pad should be at most half of effective kernel size, but got pad=2, kernel_size=3 and dilation=1"):
        F.max_pool2d(tp.randn(1, 1, 5, 5), 3, padding=2)
    # Dilation widens the window but not max pooling's bound on the padding (PyTorch's second check).
    with pytest.raises(RuntimeError, match="pad should be smaller than or equal to half of kernel size, but got padW = 2, padH = 2, kW = 3, kH = 3"):
        F.max_pool2d(tp.randn(1, 1, 9, 9), 3, stride=1, padding=2, dilation=2)
    with pytest.raises(RuntimeError, match="pad should be smaller than or equal to half of kernel size"):
        F.max_pool1d(tp.randn(1, 1, 9), 3, stride=1, padding=2, dilation=2)
    assert F.avg_pool2d(tp.randn(1, 1, 9, 9), 4, stride=1, padding=2).shape == (1, 1, 10, 10)
    with pytest.raises(RuntimeError, match="Output size is too small"):
        F.avg_pool2d(tp.randn(1, 1, 2, 2), 3)
    with pytest.raises(RuntimeError, match="3D or 4D"):
        F.max_pool2d(tp.randn(5, 5), 2)
    with pytest.raises(NotImplementedError, match="got foo"):
        F.interpolate(tp.randn(1, 1, 4, 4), size=(2, 2), mode="foo")
    with pytest.raises(ValueError, match="either size or scale_factor should be defined"):
        F.interpolate(tp.randn(1, 1, 4, 4))


MAX_POOL_GEOMETRIES = [
    dict(kernel_size=2),
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=(3, 2), stride=(1, 2), dilation=(2, 1), padding=(1, 1)),
    dict(kernel_size=3, stride=2, ceil_mode=True),
]


@pytest.mark.parametrize("kwargs", MAX_POOL_GEOMETRIES, ids=str)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_max_pool2d_indices_and_gradient_match_torch(kwargs, dtype):
    """max_pool2d_with_indices and max_pool2d_backward (fused on the CPU) give PyTorch's indices
    and gradients, ties and -inf windows included, on a strided input."""
    x = np.random.randn(3, 4, 9, 10).astype(dtype)
    x[:, :, :3, :3] = 1.0
    x[0, 1] = -np.inf
    base = tp.tensor(np.stack([x, x], -1), requires_grad=True)
    ours = base[..., 0]
    theirs = torch.tensor(x, requires_grad=True)
    values, indices = F.max_pool2d(ours, return_indices=True, **kwargs)
    expected_values, expected_indices = TF.max_pool2d(theirs, return_indices=True, **kwargs)
    np.testing.assert_array_equal(indices.numpy(), expected_indices.numpy())
    np.testing.assert_array_equal(values.detach().numpy(), expected_values.detach().numpy())
    g = np.random.randn(*values.shape).astype(dtype)
    values.backward(tp.tensor(g))
    expected_values.backward(torch.tensor(g))
    np.testing.assert_allclose(base.grad.numpy()[..., 0], theirs.grad.numpy(), rtol=1e-6, atol=1e-6)


def test_max_pool2d_backward_matches_decomposition_and_double_backward():
    """The fused gradient op equals its decomposition; the gradient of the gradient matches PyTorch."""
    args = ((3, 2), (2, 1), (1, 1), (1, 2), True)
    x = np.random.randn(2, 3, 7, 8)
    x[0, 0, :3, :3] = 0.5
    g = np.random.randn(*F._pooling._max_pool2d(tp.tensor(x), *args).shape)
    fused = F._pooling._max_pool2d_grad(tp.tensor(g), tp.tensor(x), *args)
    reference = F._pooling._max_pool2d_grad.op.decomposition(tp.tensor(g), tp.tensor(x), *args)
    np.testing.assert_array_equal(fused.numpy(), reference.numpy())
    results = []
    for lib, fn in ((tp, F.max_pool2d), (torch, TF.max_pool2d)):
        leaf = lib.tensor(x, requires_grad=True)
        out = fn(leaf, (3, 2), (2, 1), (1, 1), (1, 2), True)
        (grad,) = lib.autograd.grad((out * out).sum(), [leaf], create_graph=True)
        (second,) = lib.autograd.grad((grad * lib.tensor(x)).sum(), [leaf])
        results.append(second.numpy())
    np.testing.assert_allclose(*results, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("kwargs", MAX_POOL_GEOMETRIES, ids=str)
def test_max_pool2d_ties_on_every_device(device, kwargs):
    """Windows full of equal maxima (small integers, -inf): each backend gives PyTorch's indices
    and gradient (the first maximum in the window's row-major order)."""
    x = np.random.default_rng(4).integers(0, 3, (2, 3, 9, 10)).astype(np.float32)
    x[0, 1, :4] = -np.inf
    leaf = tp.tensor(x, device=device, requires_grad=True)
    values, indices = F.max_pool2d(leaf, return_indices=True, **kwargs)
    reference = torch.tensor(x, requires_grad=True)
    expected_values, expected_indices = TF.max_pool2d(reference, return_indices=True, **kwargs)
    np.testing.assert_array_equal(indices.cpu().numpy(), expected_indices.numpy())
    g = np.linspace(-1.0, 2.0, expected_values.numel()).reshape(tuple(expected_values.shape)).astype(np.float32)
    values.backward(tp.tensor(g, device=device))
    expected_values.backward(torch.tensor(g))
    np.testing.assert_array_equal(leaf.grad.cpu().numpy(), reference.grad.numpy())

