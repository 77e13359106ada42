"""conv2d and its weight gradient for few taps per output channel on OpenCL (conv_rows and
conv_weight_rows, issue 14): positions in vector lanes, the gradient read at its own strides.
Checked against a NumPy float64 sum over the padded input's windows and against PyTorch 2.13: row
lengths that leave a partial vector, output channels and taps that do not fill a block, groups,
height stride, dilation, padding, a bias or none, a weight or gradient that is not contiguous,
float64, and NaN/inf propagation."""
import numpy as np
import pytest

import tensorplug as tp
from tensorplug.backends.opencl import OpenCLBackend

try:
    import torch
except ImportError:  # the reference; tensorplug itself does not need it
    torch = None

AVAILABLE, REASON = OpenCLBackend().is_available()
pytestmark = pytest.mark.skipif(not AVAILABLE, reason=f"OpenCL backend unavailable: {REASON}")
needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch (the reference) is not installed: pip install torch==2.13.0")

F = tp.nn.functional
DEV = "opencl"

# (input shape, weight shape, stride, padding, dilation, groups); every one has unit width stride
# and at most 32 taps per output channel, the cases conv_weight_rows takes
CASES = [
    ((4, 1, 28, 28), (128, 1, 3, 3), (1, 1), (0, 0), (1, 1), 1),  # Listing 1's first layer, smaller batch
    ((3, 2, 11, 13), (10, 2, 3, 3), (1, 1), (1, 1), (1, 1), 1),  # 18 taps, 10 channels: partial blocks
    ((2, 3, 9, 20), (6, 1, 3, 5), (2, 1), (1, 2), (1, 2), 3),  # groups, height stride, dilation
    ((2, 1, 5, 5), (5, 1, 2, 2), (1, 1), (0, 0), (1, 1), 1),  # rows shorter than a vector
    ((1, 1, 12, 30), (7, 1, 5, 5), (1, 1), (2, 2), (1, 1), 1),  # 25 taps
]


def _reference(x, g, weight_shape, stride, padding, dilation, groups) -> np.ndarray:
    """dW in float64: each tap's window of the padded input against the gradient."""
    x, g = x.astype(np.float64), g.astype(np.float64)
    o, cg, kh, kw = weight_shape
    oh, ow = g.shape[2:]
    xp = np.pad(x, ((0, 0), (0, 0), (padding[0],) * 2, (padding[1],) * 2))
    og = o // groups
    dw = np.zeros(weight_shape)
    for ki in range(kh):
        for kj in range(kw):
            h0, w0 = ki * dilation[0], kj * dilation[1]
            window = xp[:, :, h0:h0 + (oh - 1) * stride[0] + 1:stride[0], w0:w0 + (ow - 1) * stride[1] + 1:stride[1]]
            for grp in range(groups):
                gg = g[:, grp * og:(grp + 1) * og]
                xx = window[:, grp * cg:(grp + 1) * cg]
                dw[grp * og:(grp + 1) * og, :, ki, kj] = np.einsum("nohw,nchw->oc", gg, xx)
    return dw


def _forward_reference(x, w, b, stride, padding, dilation, groups) -> np.ndarray:
    """conv2d in float64: each tap's window of the padded input times its weights."""
    x, w = x.astype(np.float64), w.astype(np.float64)
    n = x.shape[0]
    o, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (padding[0],) * 2, (padding[1],) * 2))
    oh = (xp.shape[2] - dilation[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (xp.shape[3] - dilation[1] * (kw - 1) - 1) // stride[1] + 1
    og = o // groups
    out = np.zeros((n, o, oh, ow))
    for ki in range(kh):
        for kj in range(kw):
            h0, w0 = ki * dilation[0], kj * dilation[1]
            window = xp[:, :, h0:h0 + (oh - 1) * stride[0] + 1:stride[0], w0:w0 + (ow - 1) * stride[1] + 1:stride[1]]
            for grp in range(groups):
                out[:, grp * og:(grp + 1) * og] += np.einsum(
                    "nchw,oc->nohw", window[:, grp * cg:(grp + 1) * cg], w[grp * og:(grp + 1) * og, :, ki, kj])
    if b is not None:
        out += b.astype(np.float64)[None, :, None, None]
    return out


@pytest.mark.parametrize("case", CASES, ids=lambda c: "x".join(map(str, c[1])))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("with_bias", [True, False])
def test_forward_matches_float64(case, dtype, with_bias):
    xs, ws = case[:2]
    rng = np.random.default_rng(5)
    x, w, b = rng.standard_normal(xs), rng.standard_normal(ws), rng.standard_normal(ws[0])
    want = _forward_reference(x, w, b if with_bias else None, *case[2:])
    bias = tp.tensor(b.astype(dtype), device=DEV) if with_bias else None
    got = F.conv2d(tp.tensor(x.astype(dtype), device=DEV), tp.tensor(w.astype(dtype), device=DEV), bias, *case[2:])
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got.cpu().numpy().astype(np.float64), want, rtol=tol, atol=tol * np.abs(want).max())


@needs_torch
def test_forward_with_a_weight_view_matches_torch():
    """A weight that starts inside its buffer (a slice) and a NaN and inf in the input."""
    rng = np.random.default_rng(6)
    x = rng.standard_normal((2, 1, 7, 19)).astype(np.float32)
    x[0, 0, 2, 3], x[1, 0, 6, 18] = np.nan, np.inf
    w_all = rng.standard_normal((9, 1, 3, 3)).astype(np.float32)
    b = rng.standard_normal(5).astype(np.float32)
    got = F.conv2d(tp.tensor(x, device=DEV), tp.tensor(w_all, device=DEV)[4:], tp.tensor(b, device=DEV), padding=1)
    want = torch.nn.functional.conv2d(torch.tensor(x), torch.tensor(w_all)[4:], torch.tensor(b), padding=1).numpy()
    got = got.cpu().numpy()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(np.isinf(got), np.isinf(want))
    finite = np.isfinite(want)
    np.testing.assert_allclose(got[finite], want[finite], rtol=1e-5, atol=1e-5 * np.abs(want[finite]).max())


def _weight_grad(x, g, weight_shape, stride, padding, dilation, groups, dtype=np.float32):
    w = tp.zeros(weight_shape, device=DEV, dtype=tp.float64 if dtype == np.float64 else tp.float32,
                 requires_grad=True)
    out = F.conv2d(tp.tensor(x.astype(dtype), device=DEV), w, None, stride, padding, dilation, groups)
    out.backward(g if isinstance(g, tp.Tensor) else tp.tensor(g.astype(dtype), device=DEV))
    return w.grad.cpu().numpy().astype(np.float64)


def _inputs(case, seed=0):
    xs, ws, stride, padding, dilation, groups = case
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(xs)
    oh = (xs[2] + 2 * padding[0] - dilation[0] * (ws[2] - 1) - 1) // stride[0] + 1
    ow = (xs[3] + 2 * padding[1] - dilation[1] * (ws[3] - 1) - 1) // stride[1] + 1
    g = rng.standard_normal((xs[0], ws[0], oh, ow))
    return x, g


@pytest.mark.parametrize("case", CASES, ids=lambda c: "x".join(map(str, c[1])))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_weight_gradient_matches_float64(case, dtype):
    x, g = _inputs(case)
    x, g = x.astype(dtype), g.astype(dtype)
    want = _reference(x, g, *case[1:])
    got = _weight_grad(x, g, *case[1:], dtype=dtype)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.abs(want).max())


@needs_torch
@pytest.mark.parametrize("case", CASES[:3], ids=lambda c: "x".join(map(str, c[1])))
def test_weight_gradient_matches_torch(case):
    x, g = (a.astype(np.float32) for a in _inputs(case, 1))
    w = torch.zeros(case[1], requires_grad=True)
    torch.nn.functional.conv2d(torch.tensor(x), w, None, *case[2:]).backward(torch.tensor(g))
    want = w.grad.numpy().astype(np.float64)
    np.testing.assert_allclose(_weight_grad(x, g, *case[1:]), want, rtol=1e-5, atol=1e-5 * np.abs(want).max())


def test_gradient_that_is_not_contiguous():
    case = CASES[1]
    x, g = (a.astype(np.float32) for a in _inputs(case, 2))
    # the same values, stored channels last
    g_view = tp.tensor(np.ascontiguousarray(g.transpose(0, 2, 3, 1)), device=DEV).permute(0, 3, 1, 2)
    want = _reference(x, g, *case[1:])
    got = _weight_grad(x, g_view, *case[1:])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())
    # a gradient transposed in its last two dims: no unit width stride
    sq = ((2, 1, 9, 9), (4, 1, 3, 3), (1, 1), (1, 1), (1, 1), 1)
    x, g = (a.astype(np.float32) for a in _inputs(sq, 3))
    g_t = tp.tensor(np.ascontiguousarray(g.transpose(0, 1, 3, 2)), device=DEV).transpose(2, 3)
    want = _reference(x, g, *sq[1:])
    np.testing.assert_allclose(_weight_grad(x, g_t, *sq[1:]), want, rtol=1e-5, atol=1e-5 * np.abs(want).max())


def test_nan_and_inf_reach_only_their_taps_sums():
    case = ((1, 1, 6, 11), (3, 1, 3, 3), (1, 1), (0, 0), (1, 1), 1)
    x, g = (a.astype(np.float32) for a in _inputs(case, 4))
    x[0, 0, 0, 0] = np.nan  # under tap (0, 0) of position (0, 0) only
    g[0, 1, 3, 8] = np.inf  # channel 1's taps all see it
    want = _reference(x, g, *case[1:])
    got = _weight_grad(x, g, *case[1:])
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(np.isinf(got), np.isinf(want))
    finite = np.isfinite(want)
    np.testing.assert_allclose(got[finite], want[finite], rtol=1e-5, atol=1e-5 * np.abs(want[finite]).max())
