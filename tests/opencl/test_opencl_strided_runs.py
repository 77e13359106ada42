"""The strided elementwise kernels' runs (issue 14): each work-item takes up to TP_RUN elements of
one innermost row, so rows shorter than, equal to and longer than a run, runs that end mid-row,
stride-0 (expanded) and negative-free transposed operands, 16-bit storage and more dims than the
kernels take (split on the host) are checked against NumPy float64."""
import numpy as np
import pytest

import tensorplug as tp
from tensorplug.backends.opencl import OpenCLBackend
from tensorplug.backends.opencl._source import STRIDED_RUN
from tensorplug.backends.opencl.fused import table

AVAILABLE, REASON = OpenCLBackend().is_available()
pytestmark = pytest.mark.skipif(not AVAILABLE, reason=f"OpenCL backend unavailable: {REASON}")

F = tp.nn.functional
DEV = "opencl"
relu_backward = table()["relu_backward"]  # the OpenCL adapter itself
# innermost lengths around the run: one element, shorter, exactly one run, a run and a tail, several
INNER = (1, 5, STRIDED_RUN, STRIDED_RUN + 3, 3 * STRIDED_RUN - 1)


def _host(t) -> np.ndarray:
    t = t.detach().cpu()
    if t.dtype in (tp.float16, tp.bfloat16):
        t = t.float()
    return t.numpy().astype(np.float64)


def _values(shape, seed=0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("inner", INNER)
def test_copy_of_a_transposed_view(inner):
    a = _values((3, inner, 7))
    got = tp.tensor(a, device=DEV).transpose(1, 2).contiguous()
    np.testing.assert_array_equal(_host(got), a.transpose(0, 2, 1).astype(np.float64))


@pytest.mark.parametrize("inner", INNER)
def test_copy_of_an_expanded_row_gradient(inner):
    # mean's backward: one value per (N, C) plane expanded over the plane
    g = _values((4, 6, 1, 1))
    got = tp.tensor(g, device=DEV).expand(4, 6, 3, inner).contiguous()
    np.testing.assert_array_equal(_host(got), np.broadcast_to(g, (4, 6, 3, inner)).astype(np.float64))


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "int64"])
def test_unary_binary_and_where_on_strided_operands(dtype):
    a = _values((5, 2 * STRIDED_RUN + 9)) * 4
    b = _values((2 * STRIDED_RUN + 9, 5), 1) * 4
    ta = tp.tensor(a, device=DEV).to(getattr(tp, dtype))
    tb = tp.tensor(b, device=DEV).to(getattr(tp, dtype)).t()
    ha, hb = _host(ta), _host(tb)
    np.testing.assert_array_equal(_host(ta[:, ::2].abs()), np.abs(ha[:, ::2]))
    np.testing.assert_array_equal(_host(ta[:, ::2].neg()), -ha[:, ::2])
    total = _host(ta * tb)
    want = ha * hb
    if dtype != "int64":  # exact in float64, then rounded once to the storage type
        want = _host(tp.tensor(want.astype(np.float32)).to(getattr(tp, dtype)))
    np.testing.assert_array_equal(total, want)
    np.testing.assert_array_equal(_host(tp.where(ta > tb, ta, tb)), np.where(ha > hb, ha, hb))


def test_fill_of_a_strided_view():
    t = tp.zeros((3, 4 * STRIDED_RUN + 1), device=DEV)
    t[:, 1::3].fill_(2.5)
    want = np.zeros((3, 4 * STRIDED_RUN + 1))
    want[:, 1::3] = 2.5
    np.testing.assert_array_equal(_host(t), want)


def test_more_dims_than_the_kernels_take():
    a = _values((2,) * 10 + (STRIDED_RUN + 1,))
    view = tp.tensor(a, device=DEV).transpose(0, 9)
    np.testing.assert_array_equal(_host(view.contiguous()), a.transpose((9,) + tuple(range(1, 9)) + (0, 10)))
    np.testing.assert_array_equal(_host(view * 3), a.transpose((9,) + tuple(range(1, 9)) + (0, 10)) * 3.0)


@pytest.mark.parametrize("inner", INNER)
def test_relu_backward_with_an_expanded_gradient_keeps_nan(inner):
    y = _values((2, 3, 4, inner), 2)
    y[0, 0, 0, 0] = np.nan
    y[1, 2, 3, -1] = -0.0
    g = _values((2, 3, 1, 1), 3)
    g[1, 1] = np.inf
    ty = tp.tensor(y, device=DEV)
    tg = tp.tensor(g, device=DEV).expand(2, 3, 4, inner)
    got = relu_backward(tg, ty)
    gx = np.broadcast_to(g, y.shape).astype(np.float64)
    want = np.where(y.astype(np.float64) <= 0, 0.0, gx)  # NaN is not <= 0: its gradient passes
    np.testing.assert_array_equal(_host(got), want)


def test_relu_of_a_transposed_view():
    x = _values((STRIDED_RUN + 2, 9), 4)
    x[3, 4] = np.nan
    got = F.relu(tp.tensor(x, device=DEV).t())
    want = x.T.astype(np.float64)
    want = np.where(want < 0, 0.0, want)
    np.testing.assert_array_equal(_host(got), want)


def test_mean_relu_backward_as_in_a_global_average_pool():
    # Listing 1's pattern: relu, a mean over the plane, and the gradient through both
    x = _values((4, 8, 9, 9), 5)
    t = tp.tensor(x, device=DEV, requires_grad=True)
    F.relu(t).mean(dim=(2, 3)).sum().backward()
    np.testing.assert_allclose(_host(t.grad), np.where(x > 0, 1.0 / 81, 0.0), rtol=1e-6, atol=0)
