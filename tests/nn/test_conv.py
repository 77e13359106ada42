"""Convolutions against PyTorch: conv1d, conv2d, conv_transpose1d/2d."""
import numpy as np
import pytest

import tensorplug as tp
import tensorplug.nn.functional as F
from nn_reference import check

torch = pytest.importorskip("torch")
TF = torch.nn.functional
# PyTorch (the reference) warns about padding='same' with an even kernel; we do not.
pytestmark = pytest.mark.filterwarnings("ignore:Using padding='same':UserWarning")

CONV2D_CASES = [
    dict(),
    dict(padding=1),
    dict(stride=2, padding=(1, 2)),
    dict(dilation=(2, 1), padding=2),
    dict(groups=2, stride=(1, 2)),
    dict(padding="same"),
    dict(padding="same", dilation=2),
    dict(padding="valid"),
]


@pytest.mark.parametrize("kwargs", CONV2D_CASES, ids=str)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_conv2d_matches_torch(kwargs, dtype):
    """Values and gradients (input, weight, bias) on a non-contiguous input."""
    groups = kwargs.get("groups", 1)
    x = np.random.randn(2, 4, 7, 6)
    w = np.random.randn(6, 4 // groups, 3, 2)
    b = np.random.randn(6)
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == "float32" else None
    check(torch, lambda *a: F.conv2d(*a, **kwargs), lambda *a: TF.conv2d(*a, **kwargs), [x, w, b], dtype, True, tol=tol)


def test_conv2d_unbatched_and_no_bias():
    x, w = np.random.randn(3, 5, 5), np.random.randn(2, 3, 3, 3)
    check(torch, lambda a, b: F.conv2d(a, b, padding=1), lambda a, b: TF.conv2d(a, b, padding=1), [x, w])


@pytest.mark.parametrize("kwargs", [dict(), dict(stride=2, padding=1), dict(padding="same", dilation=3), dict(groups=3)], ids=str)
def test_conv1d_matches_torch(kwargs):
    x, w, b = np.random.randn(2, 3, 11), np.random.randn(6, 3 // kwargs.get("groups", 1), 4), np.random.randn(6)
    check(torch, lambda *a: F.conv1d(*a, **kwargs), lambda *a: TF.conv1d(*a, **kwargs), [x, w, b], noncontiguous=True)


@pytest.mark.parametrize(
    "kwargs",
    [dict(), dict(stride=2), dict(stride=2, padding=1, output_padding=1), dict(groups=2, dilation=2), dict(stride=(2, 1), padding=(0, 1))],
    ids=str,
)
def test_conv_transpose2d_matches_torch(kwargs):
    x = np.random.randn(2, 4, 5, 4)
    w = np.random.randn(4, 3, 3, 2)
    b = np.random.randn(3 * kwargs.get("groups", 1))
    check(torch, lambda *a: F.conv_transpose2d(*a, **kwargs), lambda *a: TF.conv_transpose2d(*a, **kwargs), [x, w, b], noncontiguous=True)


def test_conv_transpose1d_matches_torch():
    x, w = np.random.randn(2, 3, 6), np.random.randn(3, 2, 3)
    check(torch, lambda a, b: F.conv_transpose1d(a, b, stride=2), lambda a, b: TF.conv_transpose1d(a, b, stride=2), [x, w])


def test_conv2d_explicit_derivative_matches_decomposition_and_gradcheck():
    """The registered derivative equals the decomposition's own gradient; gradcheck in float64."""
    op = F._conv._conv2d
    args = ((2, 1), (1, 1), (1, 2), 2)
    x, w, b = np.random.randn(2, 4, 6, 5), np.random.randn(4, 2, 3, 2), np.random.randn(4)
    leaves = [[tp.tensor(v, requires_grad=True) for v in (x, w, b)] for _ in range(2)]
    g = tp.tensor(np.random.randn(*op(*leaves[0], *args).shape))
    (op(*leaves[0], *args) * g).sum().backward()
    (op.op.decomposition(*leaves[1], *args) * g).sum().backward()
    for a, c in zip(*leaves):
        np.testing.assert_allclose(a.grad.numpy(), c.grad.numpy(), rtol=1e-10, atol=1e-12)
    small = [tp.tensor(np.random.randn(*s), requires_grad=True) for s in ((1, 2, 4, 4), (2, 2, 2, 2), (2,))]
    assert tp.autograd.gradcheck(lambda *a: F.conv2d(*a, stride=2, padding=1), small)


def test_conv2d_errors():
    """Shape checks before computing, with PyTorch's messages."""
    x = tp.randn(1, 3, 5, 5)
    with pytest.raises(RuntimeError, match=r"expected 4-dimensional weight .* \[4, 3, 3\]"):
        F.conv2d(x, tp.randn(4, 3, 3))
    with pytest.raises(RuntimeError, match=r"Given groups=1, weight of size \[4, 2, 3, 3\], expected input\[1, 3, 5, 5\] to have 2 channels, but got 3 channels instead"):
        F.conv2d(x, tp.randn(4, 2, 3, 3))
    with pytest.raises(RuntimeError, match=r"Calculated padded input size per channel: \(2 x 2\). Kernel size: \(3 x 3\)"):
        F.conv2d(tp.randn(1, 3, 2, 2), tp.randn(4, 3, 3, 3))
    with pytest.raises(RuntimeError, match=r"Expected 3D \(unbatched\) or 4D \(batched\) input to conv2d, but got input of size: \[3, 5\]"):
        F.conv2d(tp.randn(3, 5), tp.randn(4, 3, 3, 3))
    with pytest.raises(RuntimeError, match="expected weight to be divisible by 3 at dimension 0"):
        F.conv2d(tp.randn(1, 6, 5, 5), tp.randn(4, 2, 3, 3), groups=3)
    with pytest.raises(RuntimeError, match=r"expected bias to be 1-dimensional with 4 elements, but got bias of size \[3\]"):
        F.conv2d(x, tp.randn(4, 3, 3, 3), bias=tp.randn(3))
    with pytest.raises(RuntimeError, match="padding='same' is not supported for strided convolutions"):
        F.conv2d(x, tp.randn(4, 3, 3, 3), stride=2, padding="same")
    with pytest.raises(RuntimeError, match="Invalid padding string: 'foo'"):
        F.conv2d(x, tp.randn(4, 3, 3, 3), padding="foo")
    with pytest.raises(RuntimeError, match="should be the same"):
        F.conv2d(x, tp.randn(4, 3, 3, 3, dtype=tp.float64))
    with pytest.raises(RuntimeError, match="Given transposed=1"):
        F.conv_transpose2d(x, tp.randn(4, 3, 3, 3))
    with pytest.raises(RuntimeError, match="output padding must be smaller than either stride or dilation"):
        F.conv_transpose2d(x, tp.randn(3, 3, 3, 3), output_padding=1)


GRADIENT_GEOMETRIES = [
    ((1, 1), (0, 0), (1, 1), 1),
    ((2, 1), (1, 2), (1, 1), 1),
    ((1, 2), (2, 1), (2, 1), 2),
    ((3, 2), (0, 1), (1, 2), 4),
]


@pytest.mark.parametrize("geometry", GRADIENT_GEOMETRIES, ids=str)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_conv2d_gradient_ops_match_torch(geometry, dtype):
    """conv2d_input_backward and conv2d_weight_backward (fused on the CPU) equal PyTorch's
    convolution_backward, with stride, padding, dilation and groups, on strided inputs."""
    stride, padding, dilation, groups = geometry
    # A batch large enough that the fused kernels put several images in one gemm.
    x = np.random.randn(9, 8, 11, 10).astype(dtype)
    w = np.random.randn(8, 8 // groups, 3, 2).astype(dtype)
    tx, tw = torch.tensor(x), torch.tensor(w)
    out = TF.conv2d(tx, tw, None, stride, padding, dilation, groups)
    g = np.random.randn(*out.shape).astype(dtype)
    expected_input, expected_weight, _ = torch.ops.aten.convolution_backward(
        torch.tensor(g), tx, tw, None, list(stride), list(padding), list(dilation), False, [0, 0], groups, [True, True, False]
    )
    x_strided = tp.tensor(np.stack([x, x], -1))[..., 0]
    grad_input = F._conv._conv2d_input_backward(tp.tensor(g), tp.tensor(w), x.shape, *geometry)
    grad_weight = F._conv._conv2d_weight_backward(tp.tensor(g), x_strided, w.shape, *geometry)
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == "float32" else dict(rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(grad_input.numpy(), expected_input.numpy(), **tol)
    np.testing.assert_allclose(grad_weight.numpy(), expected_weight.numpy(), **tol)


@pytest.mark.parametrize("name", ["_conv2d_input_backward", "_conv2d_weight_backward"])
def test_conv2d_gradient_ops_match_their_decompositions(name):
    """The fused gradient ops equal their decompositions, and their own derivatives pass gradcheck."""
    op = getattr(F._conv, name)
    geometry = ((2, 1), (1, 0), (1, 2), 2)
    x, w = np.random.randn(3, 4, 7, 8), np.random.randn(6, 2, 3, 2)
    g = np.random.randn(3, 6, 4, 6)
    second, shape = (w, x.shape) if name == "_conv2d_input_backward" else (x, w.shape)
    fused = op(tp.tensor(g), tp.tensor(second), shape, *geometry)
    reference = op.op.decomposition(tp.tensor(g), tp.tensor(second), shape, *geometry)
    np.testing.assert_allclose(fused.numpy(), reference.numpy(), rtol=1e-10, atol=1e-12)
    small_g, small_second = np.random.randn(1, 4, 3, 3), (np.random.randn(4, 1, 2, 2) if name == "_conv2d_input_backward" else np.random.randn(1, 2, 4, 5))
    small_shape = (1, 2, 4, 5) if name == "_conv2d_input_backward" else (4, 1, 2, 2)
    leaves = (tp.tensor(small_g, requires_grad=True), tp.tensor(small_second, requires_grad=True))
    assert tp.autograd.gradcheck(lambda a, b: op(a, b, small_shape, (2, 1), (1, 0), (1, 2), 2), leaves)


def test_conv2d_double_backward_matches_torch():
    """Second derivatives of conv2d (through the gradient ops' own derivatives) equal PyTorch's."""
    x, w, b = np.random.randn(2, 4, 6, 5), np.random.randn(6, 2, 3, 2), np.random.randn(6)
    kwargs = dict(stride=(2, 1), padding=1, dilation=(1, 2), groups=2)
    results = []
    for lib, fn in ((tp, F.conv2d), (torch, TF.conv2d)):
        leaves = [lib.tensor(v, requires_grad=True) for v in (x, w, b)]
        out = fn(*leaves, **kwargs)
        gx, gw = (lib.autograd.grad((out * out).sum(), leaves[:2], create_graph=True))
        total = (gx * gx).sum() + (gw * gw).sum()
        results.append([r.detach().numpy() for r in lib.autograd.grad(total, leaves)])
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, rtol=1e-9, atol=1e-9)
