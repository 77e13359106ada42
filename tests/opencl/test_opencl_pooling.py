"""The OpenCL backend's pooling kernels (issue 14): max_pool2d_rows and avg_pool2d (a row of
windows per work-item, in vectors), max_pool2d_scatter (both forms of max pooling's gradient) and
avg_pool2d_backward (a plane per work-item), against PyTorch in float64: odd sizes, overlapping
windows and gaps between them, padding, ceil_mode, count_include_pad, divisor_override,
strided inputs and gradients, float16/bfloat16/float64; and the scalar max_pool2d that CUDA runs."""
import numpy as np
import pytest

import tensorplug as tp
from tensorplug.backends.opencl import OpenCLBackend, fused
from tensorplug.dispatcher import get_operator
from tensorplug.nn import _pooling

try:
    import torch
except ImportError:  # the reference; tensorplug itself does not need it
    torch = None

AVAILABLE, REASON = OpenCLBackend().is_available()
pytestmark = [
    pytest.mark.skipif(not AVAILABLE, reason=f"OpenCL backend unavailable: {REASON}"),
    pytest.mark.skipif(torch is None, reason="PyTorch (the reference) is not installed: pip install torch==2.13.0"),
]

F = tp.nn.functional
DEV = "opencl"
TOL = {"float32": 1e-5, "float64": 1e-12, "float16": 2e-3, "bfloat16": 1.6e-2}

AVG = [
    dict(kernel_size=2),
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=3, stride=2, padding=1, count_include_pad=False),
    dict(kernel_size=(3, 2), stride=(1, 3), padding=(1, 1), ceil_mode=True),
    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
    dict(kernel_size=(2, 4), stride=1, padding=(1, 2), divisor_override=5),
    dict(kernel_size=3, stride=1),
]

MAX = [
    dict(kernel_size=2),
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=(3, 2), stride=(1, 3), padding=(1, 1), ceil_mode=True),
    dict(kernel_size=3, stride=1, padding=1, dilation=2),
    dict(kernel_size=(2, 3), stride=(2, 1), dilation=(1, 3), ceil_mode=True),
]


def _ids(geometry) -> str:
    return ",".join(f"{k}={v}" for k, v in geometry.items())


def _host(t) -> np.ndarray:
    return t.detach().cpu().to(tp.float64).numpy()


def _input(dtype: str, shape=(2, 3, 11, 19), seed=0):
    """(tensorplug input on the device, its values in float64): rounded to ``dtype`` first, so
    that PyTorch's float64 reference sees what the kernel sees."""
    x = np.random.default_rng(seed).standard_normal(shape)
    t = tp.tensor(x, device=DEV).to(getattr(tp, dtype))
    return t, _host(t)


def _reference(fn, x: np.ndarray, g: np.ndarray):
    """(output, input gradient) of ``fn`` in PyTorch float64 with ``g`` as the output's gradient."""
    leaf = torch.tensor(x, requires_grad=True)
    out = fn(torch.nn.functional, leaf)
    out.backward(torch.tensor(g))
    return out.detach().numpy(), leaf.grad.numpy()


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("geometry", AVG, ids=_ids)
def test_avg_pool2d_and_gradient(geometry, dtype):
    """avg_pool2d and its fused gradient against PyTorch (float64) on an odd-sized input."""
    t, x = _input(dtype)
    leaf = t.detach().requires_grad_()
    out = F.avg_pool2d(leaf, **geometry)
    g = np.random.default_rng(1).standard_normal(tuple(out.shape))
    grad = tp.tensor(g, device=DEV).to(t.dtype)
    out.backward(grad)
    want, want_grad = _reference(lambda M, a: M.avg_pool2d(a, **geometry), x, _host(grad))
    np.testing.assert_allclose(_host(out), want, rtol=TOL[dtype], atol=TOL[dtype])
    np.testing.assert_allclose(_host(leaf.grad), want_grad, rtol=TOL[dtype], atol=TOL[dtype])


@pytest.mark.parametrize("geometry", AVG, ids=_ids)
def test_avg_pool2d_gradient_adds_in_pytorchs_order(geometry):
    """float32: each element's gradient is the sum PyTorch's CPU kernel forms, bit for bit (the
    outputs' shares added in output order)."""
    t, x = _input("float32", (3, 2, 9, 14), seed=2)
    g = np.random.default_rng(3).standard_normal(tuple(F.avg_pool2d(t, **geometry).shape)).astype(np.float32)
    leaf = t.detach().requires_grad_()
    F.avg_pool2d(leaf, **geometry).backward(tp.tensor(g, device=DEV))
    reference = torch.tensor(x.astype(np.float32), requires_grad=True)
    torch.nn.functional.avg_pool2d(reference, **geometry).backward(torch.tensor(g))
    np.testing.assert_array_equal(leaf.grad.cpu().numpy(), reference.grad.numpy())


def test_avg_pool2d_strided_input_and_gradient():
    """A permuted input and an expanded gradient (sum's) read at their strides."""
    x = np.random.default_rng(4).standard_normal((2, 13, 10, 3))
    leaf = tp.tensor(x, device=DEV, requires_grad=True)
    F.avg_pool2d(leaf.permute(0, 3, 1, 2), 3, 2, 1, count_include_pad=False).sum().backward()
    reference = torch.tensor(x, requires_grad=True)
    torch.nn.functional.avg_pool2d(reference.permute(0, 3, 1, 2), 3, 2, 1, count_include_pad=False).sum().backward()
    np.testing.assert_allclose(leaf.grad.cpu().numpy(), reference.grad.numpy(), rtol=1e-12, atol=1e-12)
    values = F.avg_pool2d(leaf.detach()[:, ::2].permute(0, 3, 1, 2), 2, ceil_mode=True)
    expected = torch.nn.functional.avg_pool2d(torch.tensor(x)[:, ::2].permute(0, 3, 1, 2), 2, ceil_mode=True)
    np.testing.assert_allclose(values.cpu().numpy(), expected.numpy(), rtol=1e-12, atol=1e-12)


def test_avg_pool2d_double_backward():
    """The gradient's own derivative is avg_pool2d (the op is linear in its gradient)."""
    x = np.random.default_rng(5).standard_normal((2, 2, 7, 9))
    results = []
    for lib, device in ((tp, DEV), (torch, "cpu")):
        leaf = lib.tensor(x, device=device, requires_grad=True)
        out = lib.nn.functional.avg_pool2d(leaf * leaf, 3, 2, 1, ceil_mode=True, count_include_pad=False)
        (grad,) = lib.autograd.grad(out.sum(), [leaf], create_graph=True)
        (second,) = lib.autograd.grad((grad * grad).sum(), [leaf])
        results.append(second.cpu().numpy() if lib is tp else second.numpy())
    np.testing.assert_allclose(*results, rtol=1e-12, atol=1e-12)


def test_avg_pool2d_backward_kernel_matches_its_decomposition():
    """The fused avg_pool2d_backward and the decomposition (col2im) agree."""
    t, _ = _input("float64", (2, 3, 8, 11), seed=6)
    args = ((3, 2), (2, 2), (1, 1), True, False, None)
    g = tp.tensor(np.random.default_rng(7).standard_normal(tuple(_pooling._avg_pool2d(t, *args).shape)), device=DEV)
    fused_grad = _pooling._avg_pool2d_grad(g, t, *args)
    reference = get_operator("avg_pool2d_backward").decomposition(g, t, *args)
    np.testing.assert_allclose(_host(fused_grad), _host(reference), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("geometry", MAX, ids=_ids)
def test_max_pool2d_training_and_both_gradients(geometry, dtype):
    """Training (the forward's indices, then max_pool2d_scatter) and the op max_pool2d_backward
    (indices found again) give PyTorch's values, indices and gradient; rows of 19 outputs span
    three vectors of windows."""
    t, x = _input(dtype, (2, 3, 11, 38), seed=8)
    t = tp.tensor(np.round(x * 2), device=DEV).to(t.dtype)  # ties
    x = _host(t)
    leaf = t.detach().requires_grad_()
    out = F.max_pool2d(leaf, **geometry)
    g = tp.tensor(np.random.default_rng(9).standard_normal(tuple(out.shape)), device=DEV).to(t.dtype)
    out.backward(g)
    want, want_grad = _reference(lambda M, a: M.max_pool2d(a, **geometry), x, _host(g))
    np.testing.assert_array_equal(_host(out), want)
    np.testing.assert_allclose(_host(leaf.grad), want_grad, rtol=TOL[dtype], atol=TOL[dtype])
    values, indices = F.max_pool2d(t, return_indices=True, **geometry)
    expected = torch.nn.functional.max_pool2d(torch.tensor(x), return_indices=True, **geometry)[1]
    np.testing.assert_array_equal(indices.cpu().numpy(), expected.numpy())
    x4, kernel, stride, padding, dilation, _, _ = _pooling._pool_geometry(
        "max_pool2d", t, geometry["kernel_size"], geometry.get("stride"), geometry.get("padding", 0),
        geometry.get("dilation", 1), geometry.get("ceil_mode", False))
    searched = _pooling._max_pool2d_grad(g, x4, kernel, stride, padding, dilation, geometry.get("ceil_mode", False))
    np.testing.assert_allclose(_host(searched), want_grad, rtol=TOL[dtype], atol=TOL[dtype])


def test_max_pool2d_strided_input_and_gradient():
    """A permuted, sliced input; the gradient of sum() (expanded) and the indices read at their
    strides."""
    x = np.random.default_rng(10).standard_normal((2, 12, 21, 3))
    leaf = tp.tensor(x, device=DEV, requires_grad=True)
    F.max_pool2d(leaf[:, ::2].permute(0, 3, 1, 2), 3, 2, 1, ceil_mode=True).sum().backward()
    reference = torch.tensor(x, requires_grad=True)
    torch.nn.functional.max_pool2d(reference[:, ::2].permute(0, 3, 1, 2), 3, 2, 1, ceil_mode=True).sum().backward()
    np.testing.assert_array_equal(leaf.grad.cpu().numpy(), reference.grad.numpy())
    t = tp.tensor(x, device=DEV).permute(0, 3, 1, 2)
    values, indices = F.max_pool2d(t, 2, return_indices=True)
    g = tp.tensor(np.random.default_rng(11).standard_normal((2, 3, 10, 6)), device=DEV)
    strided_indices = indices.transpose(2, 3).contiguous().transpose(2, 3)
    geometry = ((2, 2), (2, 2), (0, 0), (1, 1), False)
    scattered = _pooling._max_pool2d_indices_grad(g.transpose(2, 3), t, strided_indices, *geometry)
    reference = get_operator("max_pool2d_with_indices_backward").decomposition(g.transpose(2, 3), t, indices,
                                                                               *geometry)
    np.testing.assert_array_equal(scattered.cpu().numpy(), reference.cpu().numpy())


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
@pytest.mark.parametrize("geometry", MAX, ids=_ids)
def test_the_scalar_max_pool2d_cuda_runs(geometry, dtype):
    """The adapters CUDA registers (vector=False: the scalar max_pool2d kernel, then the scatter)
    give PyTorch's values, indices and gradient on PoCL too."""
    t, x = _input(dtype, (2, 3, 11, 38), seed=12)
    x4, kernel, stride, padding, dilation, out, _ = _pooling._pool_geometry(
        "max_pool2d", t, geometry["kernel_size"], geometry.get("stride"), geometry.get("padding", 0),
        geometry.get("dilation", 1), geometry.get("ceil_mode", False))
    args = (kernel, stride, padding, dilation, geometry.get("ceil_mode", False))
    scalar = fused.table(vector=False)
    values, indices = scalar["max_pool2d_with_indices"](x4, *args)
    expected_values, expected_indices = torch.nn.functional.max_pool2d(torch.tensor(x), return_indices=True,
                                                                       **geometry)
    np.testing.assert_array_equal(_host(values), expected_values.numpy())
    np.testing.assert_array_equal(indices.cpu().numpy(), expected_indices.numpy())
    g = tp.tensor(np.random.default_rng(13).standard_normal(tuple(values.shape)), device=DEV).to(t.dtype)
    _, want_grad = _reference(lambda M, a: M.max_pool2d(a, **geometry), x, _host(g))
    np.testing.assert_allclose(_host(scalar["max_pool2d_backward"](g, x4, *args)), want_grad, rtol=TOL[dtype],
                               atol=TOL[dtype])
