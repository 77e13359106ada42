"""Kernels added for issue 14's OpenCL rows, against PyTorch 2.13 in float64 and NumPy: nn.Linear
as one matmul with the bias in its accumulators, cross_entropy's fused gradient, the contiguous
elementwise kernels' group-uniform guard (sizes around the work-group size, in place, and one
element expanded), sums of
contiguous runs in 8 accumulators (lengths and offsets that are not multiples of 8), and the
convolutions' 6 x 16 register block (channel and position counts that are not multiples)."""
import numpy as np
import pytest

import tensorplug as tp
from tensorplug.backends.api import backend_storage
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


def _host(t) -> np.ndarray:
    t = t.detach().cpu()
    if t.dtype in (tp.float16, tp.bfloat16):
        t = t.float()
    return t.numpy().astype(np.float64)


def _close(got, want, tol):
    want = np.asarray(want, dtype=np.float64)
    peak = float(np.nanmax(np.abs(want))) if want.size and not np.isnan(want).all() else 1.0
    np.testing.assert_allclose(_host(got), want, rtol=tol, atol=tol * max(1.0, peak))


# --- linear ----------------------------------------------------------------------------------------

@needs_torch
@pytest.mark.parametrize("dtype,tol", [("float32", 2e-5), ("float64", 1e-12)])
@pytest.mark.parametrize("shape,outputs,bias", [((128, 784), 512, True), ((7, 13), 17, True), ((9, 13), 17, False),
                                                ((2, 3, 5), 10, True), ((6,), 4, True), ((4, 0, 3), 2, True),
                                                ((3, 0), 5, True), ((200, 9), 1, True)])
def test_linear_matches_torch(shape, outputs, bias, dtype, tol):
    """Values and the gradients of input, weight and bias, with and without a bias, for 1-D, 2-D
    and batched inputs, an empty batch and no input features, partial row blocks and strips."""
    rng = np.random.default_rng(sum(shape) + outputs)
    x = rng.standard_normal(shape)
    w = rng.standard_normal((outputs, shape[-1]))
    b = rng.standard_normal(outputs)
    d = getattr(tp, dtype)
    xt = tp.tensor(x, dtype=d, device=DEV, requires_grad=True)
    wt = tp.tensor(w, dtype=d, device=DEV, requires_grad=True)
    bt = tp.tensor(b, dtype=d, device=DEV, requires_grad=True) if bias else None
    got = F.linear(xt, wt, bt)
    xr, wr = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
    br = torch.tensor(b, requires_grad=True) if bias else None
    want = torch.nn.functional.linear(xr, wr, br)
    assert got.dtype is d and tuple(got.shape) == tuple(want.shape)
    scale = tol * np.sqrt(max(1, shape[-1]))
    _close(got, want.detach().numpy(), scale)
    g = rng.standard_normal(tuple(want.shape))
    got.backward(tp.tensor(g, dtype=d, device=DEV))
    want.backward(torch.tensor(g))
    _close(xt.grad, xr.grad.numpy(), scale * 4)
    _close(wt.grad, wr.grad.numpy(), scale * 4)
    if bias:
        _close(bt.grad, br.grad.numpy(), scale * 4)


@needs_torch
def test_linear_strided_operands_and_other_dtypes():
    """A transposed input, a sliced weight and a strided bias; 16-bit floats and a bias of
    another dtype take the decomposition and agree too."""
    rng = np.random.default_rng(2)
    x = rng.standard_normal((11, 30))
    w = rng.standard_normal((40, 22))
    b = rng.standard_normal(20)
    xt = tp.tensor(x, dtype=tp.float32, device=DEV).t()  # (30, 11), column stride 30
    wt = tp.tensor(w, dtype=tp.float32, device=DEV)[::2, :11]  # (20, 11), row stride 44
    bt = tp.tensor(b.repeat(2), dtype=tp.float32, device=DEV)[::2]
    want = x.T @ w[::2, :11].T + b.repeat(2)[::2]
    _close(F.linear(xt, wt, bt), want, 2e-5)
    for dtype in ("float16", "bfloat16"):
        d = getattr(tp, dtype)
        got = F.linear(xt.to(d), wt.to(d), bt.to(d))
        assert got.dtype is d
        _close(got, want, 3e-2 if dtype == "bfloat16" else 4e-3)
    with pytest.raises(RuntimeError):
        F.linear(xt, wt.t(), bt)


# --- cross_entropy's gradient ----------------------------------------------------------------------

@needs_torch
@pytest.mark.parametrize("dtype,tol", [("float32", 2e-6), ("float64", 1e-12), ("float16", 4e-3)])
@pytest.mark.parametrize("classes", [10, 1003])
def test_cross_entropy_gradient_dtypes_and_layouts(dtype, tol, classes):
    """The fused gradient for rows whose length is and is not a multiple of the 8-wide vectors, a
    non-contiguous (transposed) input, float64 and float16, every reduction, against float64."""
    rng = np.random.default_rng(classes)
    x = rng.standard_normal((classes, 6)) * 3  # used transposed: (6, classes) with column stride 6
    target = rng.integers(0, classes, 6)
    target[2] = -100
    d = getattr(tp, dtype)
    for reduction in ("none", "mean", "sum"):
        xt = tp.tensor(x, dtype=d, device=DEV).t().detach().requires_grad_(True)
        ref_x = _host(xt).copy()  # the logits as rounded to the dtype
        xr = torch.tensor(ref_x, requires_grad=True)
        got = F.cross_entropy(xt, tp.tensor(target, device=DEV), reduction=reduction)
        want = torch.nn.functional.cross_entropy(xr, torch.tensor(target), reduction=reduction)
        g = rng.standard_normal(tuple(want.shape))
        got.backward(tp.tensor(g, dtype=d, device=DEV))
        want.backward(torch.tensor(g))
        assert xt.grad.dtype is d
        _close(xt.grad, xr.grad.numpy(), tol)


@needs_torch
@pytest.mark.parametrize("smoothing", [0.0, 0.1])
def test_cross_entropy_gradient_contiguous_rows_in_vectors(smoothing):
    """Contiguous rows without class weights take the vector update (the target's element written
    after it): rows of 1003 classes (a tail past the vectors), an ignored target, label smoothing."""
    rng = np.random.default_rng(11)
    x = rng.standard_normal((5, 1003)) * 3
    target = rng.integers(0, 1003, 5)
    target[1] = -100
    xt = tp.tensor(x, dtype=tp.float32, device=DEV, requires_grad=True)
    xr = torch.tensor(_host(xt), requires_grad=True)
    F.cross_entropy(xt, tp.tensor(target, device=DEV), label_smoothing=smoothing).backward()
    torch.nn.functional.cross_entropy(xr, torch.tensor(target), label_smoothing=smoothing).backward()
    _close(xt.grad, xr.grad.numpy(), 2e-6)


@needs_torch
def test_cross_entropy_gradient_all_ignored_and_double_backward():
    """Every target ignored: the mean's gradient is NaN (0 / 0) as PyTorch's; the gradient's own
    derivative (through the composite's formula) matches PyTorch's double backward."""
    x = np.random.default_rng(3).standard_normal((4, 5))
    xt = tp.tensor(x, dtype=tp.float32, device=DEV, requires_grad=True)
    F.cross_entropy(xt, tp.tensor(np.full(4, -100), device=DEV)).backward()
    xr = torch.tensor(x, requires_grad=True)
    torch.nn.functional.cross_entropy(xr, torch.full((4,), -100)).backward()
    np.testing.assert_array_equal(np.isnan(_host(xt.grad)), np.isnan(xr.grad.numpy()))
    target = np.array([1, 0, 4, 2])
    xt = tp.tensor(x, dtype=tp.float64, device=DEV, requires_grad=True)
    (grad,) = tp.autograd.grad(F.cross_entropy(xt, tp.tensor(target, device=DEV), label_smoothing=0.1), xt,
                               create_graph=True)
    (grad * grad).sum().backward()
    xr = torch.tensor(x, requires_grad=True)
    (gr,) = torch.autograd.grad(torch.nn.functional.cross_entropy(xr, torch.tensor(target), label_smoothing=0.1), xr,
                                create_graph=True)
    (gr * gr).sum().backward()
    _close(grad, gr.detach().numpy(), 1e-12)
    _close(xt.grad, xr.grad.numpy(), 1e-10)


# --- the contiguous elementwise kernels' guard ----------------------------------------------------

@pytest.mark.parametrize("n", [1, 255, 256, 257, 511, 4097])
def test_elementwise_sizes_around_the_group(n):
    """Sizes just below, at and above whole work-groups: every element written once, none past
    the end (the tensors are views into a bigger buffer whose tail must keep its values), in place
    too, against NumPy."""
    rng = np.random.default_rng(n)
    a = rng.standard_normal(n + 7).astype(np.float32)
    b = rng.standard_normal(n + 7).astype(np.float32)
    at, bt = tp.tensor(a, device=DEV), tp.tensor(b, device=DEV)
    head_a, head_b = at[:n], bt[:n]
    np.testing.assert_array_equal(_host(head_a + head_b), (a[:n] + b[:n]).astype(np.float64))
    np.testing.assert_array_equal(_host(head_a * 2.5), (a[:n] * np.float32(2.5)).astype(np.float64))
    np.testing.assert_array_equal(_host(F.relu(head_a)), np.maximum(a[:n], 0).astype(np.float64))
    head_a.mul_(0.5).add_(head_b)  # in place: each element read and written by its own work-item
    want = a.copy()
    want[:n] = a[:n] * np.float32(0.5) + b[:n]
    np.testing.assert_array_equal(_host(at), want.astype(np.float64))
    head_b.fill_(3.0)
    want_b = b.copy()
    want_b[:n] = 3.0
    np.testing.assert_array_equal(_host(bt), want_b.astype(np.float64))
    half = head_a.to(tp.float16)
    np.testing.assert_array_equal(_host(half), want[:n].astype(np.float16).astype(np.float64))
    one = at[n + 3:n + 4]  # one element expanded into a copy (its own kernel), converted too
    np.testing.assert_array_equal(_host(one.expand(n).contiguous()), np.full(n, want[n + 3], np.float64))
    np.testing.assert_array_equal(_host(one.expand(2, n).to(tp.float64)), np.full((2, n), want[n + 3], np.float64))
    np.testing.assert_array_equal(_host(at), want.astype(np.float64))  # the source kept its values


# --- sums ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype,tol", [("float32", 1e-6), ("float64", 1e-13), ("float16", 1e-3), ("int32", 0)])
@pytest.mark.parametrize("shape,dim", [((10_003,), None), ((1_000_001,), None), ((37, 1029), 1), ((5, 200_003), 1),
                                       ((300, 70), 0), ((3, 4, 9), (0, 2))])
def test_sums_match_numpy(shape, dim, dtype, tol):
    """Full sums (the two-pass split) and sums over contiguous and strided dims, of a view that
    starts at an odd offset, against float64 NumPy of the same (rounded) values."""
    rng = np.random.default_rng(sum(shape))
    size = int(np.prod(shape))
    # a mean of 0.25 (no cancellation to hide errors) but not for float16, whose sums would pass 65504
    x = rng.integers(-50, 50, size + 3) if dtype == "int32" else rng.standard_normal(size + 3) + (dtype != "float16") / 4
    x = x.astype(dtype)
    t = tp.tensor(x, device=DEV)[3:].reshape(shape)
    ref = x[3:].astype(np.float64).reshape(shape)
    got = t.sum() if dim is None else t.sum(dim)
    want = ref.sum() if dim is None else ref.sum(axis=dim)
    scale = np.sqrt(ref.size) * (np.abs(ref).max() if ref.size else 1)
    # the result is also rounded to the dtype (up to an ulp of it)
    rounding = {"float32": 2.4e-7, "float64": 4.5e-16, "float16": 1e-3, "int32": 0}[dtype]
    np.testing.assert_allclose(_host(got), want, rtol=rounding, atol=tol * scale)


# --- convolutions -------------------------------------------------------------------------------

@needs_torch
@pytest.mark.parametrize("dtype,tol", [("float32", 2e-5), ("float64", 1e-12)])
@pytest.mark.parametrize("case", [
    # (N, C, H, W, O, k, stride, padding, dilation, groups): output positions and channels that
    # are not multiples of the 6 x 16 block
    (2, 3, 7, 9, 5, 3, 1, 1, 1, 1), (1, 4, 11, 5, 17, 2, 2, 0, 1, 1), (3, 6, 8, 8, 18, 3, 1, 2, 2, 3),
    (2, 1, 28, 28, 32, 3, 1, 0, 1, 1)])
def test_conv2d_blocks_match_torch(case, dtype, tol):
    """conv2d with a bias, and its input and weight gradients, against PyTorch in float64."""
    n, c, h, w, o, k, stride, padding, dilation, groups = case
    rng = np.random.default_rng(h * w + o)
    x = rng.standard_normal((n, c, h, w))
    wt_np = rng.standard_normal((o, c // groups, k, k))
    b = rng.standard_normal(o)
    d = getattr(tp, dtype)
    xt = tp.tensor(x, dtype=d, device=DEV, requires_grad=True)
    wt = tp.tensor(wt_np, dtype=d, device=DEV, requires_grad=True)
    bt = tp.tensor(b, dtype=d, device=DEV, requires_grad=True)
    got = F.conv2d(xt, wt, bt, stride=stride, padding=padding, dilation=dilation, groups=groups)
    xr, wr, br = (torch.tensor(v, requires_grad=True) for v in (x, wt_np, b))
    want = torch.nn.functional.conv2d(xr, wr, br, stride=stride, padding=padding, dilation=dilation, groups=groups)
    scale = tol * np.sqrt(c * k * k)
    _close(got, want.detach().numpy(), scale)
    g = rng.standard_normal(tuple(want.shape))
    got.backward(tp.tensor(g, dtype=d, device=DEV))
    want.backward(torch.tensor(g))
    _close(xt.grad, xr.grad.numpy(), scale * 4)
    _close(wt.grad, wr.grad.numpy(), scale * 8)
    _close(bt.grad, br.grad.numpy(), scale * 8)


@needs_torch
@pytest.mark.parametrize("part_bytes", [1, 40_000])
def test_conv2d_weight_gradient_in_parts(monkeypatch, part_bytes):
    """The weight gradient split into parts of the images (one image per part, and a few images
    per part with an uneven last part), the partial sums added after, against PyTorch."""
    from tensorplug.backends.opencl import fused

    monkeypatch.setattr(fused, "_WEIGHT_GRAD_PART_BYTES", part_bytes)
    rng = np.random.default_rng(9)
    x = rng.standard_normal((7, 5, 12, 13))
    w = rng.standard_normal((19, 5, 3, 3))
    xt = tp.tensor(x, dtype=tp.float32, device=DEV)
    wt = tp.tensor(w, dtype=tp.float32, device=DEV, requires_grad=True)
    out = F.conv2d(xt, wt, padding=1)
    g = rng.standard_normal(tuple(out.shape))
    out.backward(tp.tensor(g, dtype=tp.float32, device=DEV))
    want = torch.nn.grad.conv2d_weight(torch.tensor(x), w.shape, torch.tensor(g), padding=1).numpy()
    _close(wt.grad, want, 2e-5 * np.sqrt(7 * 12 * 13))


# --- one-element operands, whole reductions, the C launch -----------------------------------------

@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int16", "uint8", "bool", "float16", "bfloat16"])
def test_binary_with_one_broadcast_element(dtype):
    """A 0-d or one-element tensor expanded over a contiguous one (the _tv and _vt kernels), on
    either side, for arithmetic, comparisons and a flagging integer op, against NumPy."""
    rng = np.random.default_rng(3)
    host = (rng.standard_normal(37) * 8).astype(np.float32)
    scalar = np.float32(2.5)
    if dtype in ("int64", "int16", "uint8", "bool"):
        host, scalar = np.abs(host).astype(dtype), np.array(3 if dtype != "bool" else True, dtype)
    x = tp.tensor(host, dtype=getattr(tp, dtype), device=DEV)
    one = tp.tensor(scalar, dtype=getattr(tp, dtype), device=DEV)
    ref_x, ref_one = _host(x), _host(one)
    ops = [("mul", np.multiply), ("gt", np.greater)] + ([("sub", np.subtract)] if dtype != "bool" else [])
    exact = dtype in ("int64", "int16", "uint8", "bool")
    for name, ref in ops:
        op = getattr(tp, name)
        for got, want in ((op(x, one.expand(37)), ref(ref_x, ref_one)), (op(one.expand(37), x), ref(ref_one, ref_x)),
                          (op(x.view(37, 1), one.view(1, 1).expand(37, 1)), ref(ref_x, ref_one)[:, None])):
            if exact:  # integers wrap in their dtype
                np.testing.assert_array_equal(_host(got), np.asarray(want).astype(got.dtype.name).astype(np.float64))
            else:
                _close(got, want, 1e-2 if dtype in ("float16", "bfloat16") else 1e-6)
    if dtype == "int64":
        with pytest.raises(ZeroDivisionError):
            (x // tp.zeros((), dtype=tp.int64, device=DEV).expand(37)).cpu()


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "uint8", "bool", "bfloat16"])
@pytest.mark.parametrize("n", [1, 7, 256, 1001])
def test_whole_reductions_match_numpy(dtype, n):
    """sum, prod, amax, amin, all and any of a whole contiguous tensor (the rw_ kernels), with a NaN
    for the floating dtypes (it propagates through sum, amax and amin), against NumPy."""
    rng = np.random.default_rng(n)
    host = rng.uniform(0.5, 1.5, n).astype(np.float32)
    if dtype in ("int32", "uint8", "bool"):
        host = (rng.integers(0, 3, n)).astype(dtype)
    x = tp.tensor(host, dtype=getattr(tp, dtype), device=DEV)
    ref = _host(x)
    tol = 1e-2 if dtype == "bfloat16" else 1e-5
    for got, want in ((x.sum(), ref.sum()), (x.amax(), ref.max()), (x.amin(), ref.min()),
                      (x.all(), ref.all()), (x.any(), ref.any())):
        _close(got, want, tol)
    if dtype != "bool":
        _close(x[:5].prod(), ref[:5].prod(), tol)
    if dtype in ("float32", "float64") and n > 1:
        host[n // 2] = np.nan
        nan = tp.tensor(host, device=DEV, dtype=getattr(tp, dtype))
        for got in (nan.sum(), nan.amax(), nan.amin()):
            assert np.isnan(got.item())
    assert x.sum().dtype == (tp.int64 if dtype in ("int32", "uint8", "bool") else x.dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_row_extremes_with_nan_and_inf_match_numpy(dtype):
    """amax/amin over rows long enough for the kernels' two vectors of lanes: a NaN in the first,
    a middle or the last element makes its row NaN; a row of -inf and a row holding +inf keep them."""
    x = np.random.default_rng(9).standard_normal((7, 1000)).astype(dtype)
    x[1, 17], x[2, 999], x[3, 0] = np.nan, np.nan, np.nan
    x[4], x[5, 500] = -np.inf, np.inf
    t = tp.tensor(x, device=DEV)
    for name in ("amax", "amin"):
        np.testing.assert_array_equal(_host(getattr(t, name)(1)), getattr(np, name)(x, 1))


def test_kernels_launch_through_the_c_module_unless_told_not_to():
    """Kernels are _opencl_launch.Kernel objects where the module is built; TENSORPLUG_OPENCL_LAUNCH=pyopencl
    keeps PyOpenCL's call, and both compute the same (subprocess: the choice is made once)."""
    import subprocess
    import sys

    script = ("import tensorplug as tp\nfrom tensorplug.backends.opencl import storage\n"
              "x = tp.arange(10., device='opencl')\nprint((x * 2 + 1).sum().item())\n"
              "print(type(storage.devices()[0].kernels[('elementwise', 'float32', 'mul_ts')]).__module__)")
    results = {}
    for mode in ("", "pyopencl"):
        env = dict(__import__("os").environ, TENSORPLUG_OPENCL_LAUNCH=mode)
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)
        assert done.returncode == 0, done.stderr
        results[mode] = done.stdout.split()
    assert results[""][0] == results["pyopencl"][0] == "100.0"
    assert results["pyopencl"][1].startswith("pyopencl")
    try:
        from tensorplug.backends.opencl import _opencl_launch  # noqa: F401
    except ImportError:
        pytest.skip("tensorplug.backends.opencl._opencl_launch is not built here")
    assert results[""][1] == "tensorplug.backends.opencl._opencl_launch"


def test_c_launch_refuses_bad_calls():
    """Wrong argument counts and types raise TypeError naming the kernel; nothing is launched."""
    try:
        from tensorplug.backends.opencl import _opencl_launch  # noqa: F401
    except ImportError:
        pytest.skip("tensorplug.backends.opencl._opencl_launch is not built here")
    from tensorplug.backends.opencl import kernels, storage

    tp.ones(1, device=DEV)
    state = storage.devices()[0]
    knl = kernels._kernel(state, "elementwise", "float32", "fill_c")
    out = tp.zeros(4, device=DEV)
    buf = backend_storage(out).buffer
    with pytest.raises(TypeError, match="fill_c"):
        knl(state.queue, (256,), (256,), buf, 0, 1.0)  # one argument short
    with pytest.raises(TypeError, match="fill_c"):
        knl(state.queue, (256,), (256,), buf, 0, "one", 4)
    with pytest.raises(TypeError):
        knl(state.queue, 256, (256,), buf, 0, 1.0, 4)
    knl(state.queue, (256,), (256,), buf, 0, 1.5, 4)
    np.testing.assert_array_equal(out.cpu().numpy(), [1.5] * 4)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "uint8", "bfloat16"])
def test_binary_with_a_repeated_row(dtype):
    """A row broadcast down a batch on either side (the _tr and _rt kernels: a bias added to a
    batch, a 3-d batch whose leading dims merge), against NumPy; integer division by a zero in
    the row raises at synchronization."""
    rng = np.random.default_rng(11)
    batch = tp.tensor(rng.uniform(1, 5, (3, 7, 13)), dtype=getattr(tp, dtype), device=DEV)
    row = tp.tensor(rng.uniform(1, 5, 13), dtype=getattr(tp, dtype), device=DEV)
    ref_batch, ref_row = _host(batch), _host(row)
    tol = 1e-2 if dtype == "bfloat16" else 1e-6
    for got, want in ((batch + row, ref_batch + ref_row), (row - batch, ref_row - ref_batch),
                      (batch[1] * row, ref_batch[1] * ref_row), (batch > row, ref_batch > ref_row)):
        if dtype in ("int64", "uint8"):
            want = np.asarray(want).astype(got.dtype.name)
        _close(got, want, tol)
    if dtype == "int64":
        zero_row = tp.zeros(13, dtype=tp.int64, device=DEV)
        with pytest.raises(ZeroDivisionError):
            (batch // zero_row).cpu()
