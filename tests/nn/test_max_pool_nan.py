"""Max pooling of windows holding NaN, ties and -inf against PyTorch 2.13 on every backend: its
kernels replace the running maximum when ``val > max || isnan(val)``, so an index (and the
gradient) goes to the last NaN of a window in row-major tap order, and to the first of equal
maxima otherwise."""
import numpy as np
import pytest

import tensorplug as tp
import tensorplug.nn.functional as F
from tensorplug.dispatcher import get_operator

torch = pytest.importorskip("torch")
TF = torch.nn.functional

GEOMETRIES_2D = [
    dict(kernel_size=3),
    dict(kernel_size=3, stride=1, padding=1),
    dict(kernel_size=(3, 2), stride=(1, 2), dilation=(2, 1), padding=(1, 1)),
    dict(kernel_size=3, stride=2, ceil_mode=True),
    dict(kernel_size=2, stride=3, padding=1, ceil_mode=True),
]

GEOMETRIES_3D = [
    dict(kernel_size=2),
    dict(kernel_size=(3, 2, 3), stride=(2, 1, 2), padding=(1, 1, 1), dilation=(1, 2, 1), ceil_mode=True),
    dict(kernel_size=3, stride=1, padding=1),
]


def _nan_ties(shape, seed):
    """Small integers (ties), about a third NaN, and a first channel that is -inf with a few NaN."""
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 3, shape).astype(np.float32)
    x[rng.random(shape) < 0.35] = np.nan
    x[0, 0] = -np.inf
    x[0, 0].flat[::7] = np.nan
    return x


def _run(lib, fn, x, g, device=None):
    """(values, indices, gradient) of ``fn`` over ``x`` with ``g`` as the values' gradient, as NumPy."""
    if lib is tp:
        leaf = tp.tensor(x, device=device, requires_grad=True)
        values, indices = fn(leaf)
        values.backward(tp.tensor(g, device=device))
        host = lambda t: t.detach().cpu().numpy()  # noqa: E731
    else:
        leaf = torch.tensor(x, requires_grad=True)
        values, indices = fn(leaf)
        values.backward(torch.tensor(g))
        host = lambda t: t.detach().numpy()  # noqa: E731
    return host(values), host(indices), host(leaf.grad)


def _compare(device, fn, x):
    """``fn(F, tensor) -> (values, indices)`` gives PyTorch's values, indices and gradient."""
    values, _ = fn(TF, torch.tensor(x))
    g = np.linspace(-1.0, 2.0, values.numel()).reshape(tuple(values.shape)).astype(x.dtype)
    expected = _run(torch, lambda t: fn(TF, t), x, g)
    got = _run(tp, lambda t: fn(F, t), x, g, device)
    np.testing.assert_array_equal(got[0], expected[0])  # NaN in the same places
    np.testing.assert_array_equal(got[1], expected[1])
    np.testing.assert_array_equal(got[2], expected[2])


def test_torch_takes_the_last_nan_and_the_first_maximum():
    """The reference itself: PyTorch 2.13's index of several NaN is the last, of equal maxima the first."""
    x = torch.tensor([[[np.nan, 3.0, np.nan, 1.0], [3.0, 1.0, 3.0, 0.0]]])
    assert TF.max_pool1d(x, 4, return_indices=True)[1].flatten().tolist() == [2, 0]


@pytest.mark.parametrize("kwargs", GEOMETRIES_2D, ids=str)
def test_max_pool2d_nan_windows(device, kwargs):
    """max_pool2d: values, indices and gradient with padding, dilation and ceil_mode."""
    _compare(device, lambda M, t: M.max_pool2d(t, return_indices=True, **kwargs), _nan_ties((2, 3, 9, 10), 1))


def test_max_pool2d_nan_strided_input(device):
    """A non-contiguous input (every other column of a wider one) pools as its contiguous copy."""
    x = _nan_ties((2, 3, 8, 14), 2)
    values, indices = F.max_pool2d(tp.tensor(x, device=device)[..., ::2], 3, 1, 1, return_indices=True)
    expected_values, expected_indices = TF.max_pool2d(torch.tensor(x)[..., ::2], 3, 1, 1, return_indices=True)
    np.testing.assert_array_equal(values.cpu().numpy(), expected_values.numpy())
    np.testing.assert_array_equal(indices.cpu().numpy(), expected_indices.numpy())


def test_max_pool2d_nan_float64_and_training_without_indices(device):
    """float64, and the gradient of plain max_pool2d (no return_indices), which training may route
    through the forward's indices or through a second search."""
    x = _nan_ties((2, 2, 7, 7), 3).astype(np.float64)
    _compare(device, lambda M, t: (M.max_pool2d(t, 3, 2, 1), M.max_pool2d(t.detach(), 3, 2, 1, return_indices=True)[1]), x)


def test_max_pool1d_nan_windows(device):
    """max_pool1d (a 2-D pool over one row) with padding, dilation and ceil_mode."""
    x = _nan_ties((2, 3, 17), 4)
    _compare(device, lambda M, t: M.max_pool1d(t, 4, 2, 1, 2, True, return_indices=True), x)


@pytest.mark.parametrize("kwargs", GEOMETRIES_3D, ids=str)
def test_max_pool3d_nan_windows(device, kwargs):
    """max_pool3d: the last NaN in (depth, height, width) order, across depth slices too."""
    _compare(device, lambda M, t: M.max_pool3d(t, return_indices=True, **kwargs), _nan_ties((2, 2, 6, 5, 7), 5))


@pytest.mark.parametrize("name, shape, size", [
    ("adaptive_max_pool1d", (2, 3, 11), 4),
    ("adaptive_max_pool2d", (2, 3, 7, 9), (3, 4)),
    ("adaptive_max_pool3d", (2, 2, 5, 6, 7), (2, 3, 4)),
])
def test_adaptive_max_pool_nan_windows(device, name, shape, size):
    """The adaptive max poolings (overlapping windows of unequal sizes) follow the same rule."""
    _compare(device, lambda M, t: getattr(M, name)(t, size, return_indices=True), _nan_ties(shape, 6))


@pytest.mark.parametrize("kwargs", GEOMETRIES_2D, ids=str)
def test_decomposition_takes_the_last_nan(device, kwargs):
    """max_pool2d_with_indices' decomposition itself (what a backend without a fused kernel runs)."""
    from tensorplug.nn._pooling import _pool_geometry

    x = _nan_ties((2, 3, 9, 10), 7)
    xt, kernel, stride, padding, dilation, _, _ = _pool_geometry(
        "max_pool2d", tp.tensor(x, device=device), kwargs["kernel_size"], kwargs.get("stride"),
        kwargs.get("padding", 0), kwargs.get("dilation", 1), kwargs.get("ceil_mode", False))
    values, indices = get_operator("max_pool2d_with_indices").decomposition(
        xt, kernel, stride, padding, dilation, kwargs.get("ceil_mode", False))
    expected_values, expected_indices = TF.max_pool2d(torch.tensor(x), return_indices=True, **kwargs)
    np.testing.assert_array_equal(values.cpu().numpy(), expected_values.numpy())
    np.testing.assert_array_equal(indices.cpu().numpy(), expected_indices.numpy())
