"""The OpenCL backend's fused kernels for composite ops (relu, softmax, cross_entropy, nll_loss,
layer_norm, max pooling, conv2d and its gradients, adam_step_, sgd_step_, linear, smooth_l1_loss
and its gradient) give what PyTorch gives in float64
(values and gradients) and what the ops' decompositions give on the same device, NaN and inf
included."""
import collections

import numpy as np
import pytest

import tensorplug as tp
from tensorplug.backends.opencl import OpenCLBackend
from tensorplug.dispatcher import get_operator

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
FUSED = ["relu", "relu_backward", "softmax", "log_softmax", "log_softmax_backward", "cross_entropy", "nll_loss",
         "layer_norm", "max_pool2d", "max_pool2d_with_indices", "max_pool2d_backward",
         "max_pool2d_with_indices_backward", "conv2d", "conv2d_input_backward", "conv2d_weight_backward", "adam_step_",
         "sgd_step_", "linear", "smooth_l1_loss", "smooth_l1_loss_backward", "avg_pool2d", "avg_pool2d_backward",
         "index_extremes"]
# The whole-sequence recurrent ops, whose kernels are in recurrent.py (tested in test_opencl_recurrent.py).
RECURRENT = ["lstm_sequence_forward", "lstm_sequence_backward", "gru_sequence_forward", "gru_sequence_backward",
             "rnn_sequence_forward", "rnn_sequence_backward"]


def _host(t) -> np.ndarray:
    return t.detach().cpu().float().numpy().astype(np.float64) if t.dtype in (tp.float16, tp.bfloat16) else \
        t.detach().cpu().numpy()


def _ref(t) -> np.ndarray:
    return t.detach().double().numpy()


def _close(got, want, tol=1e-5):
    np.testing.assert_allclose(_host(got).astype(np.float64), np.asarray(want, dtype=np.float64), rtol=tol, atol=tol,
                               equal_nan=True)


def _edge_values(shape, rng):
    """Normal values with NaN, +-inf and -0.0 sprinkled in."""
    x = rng.standard_normal(shape).astype(np.float32)
    flat = x.reshape(-1)
    for value, at in ((np.nan, 3), (np.inf, 7), (-np.inf, 11), (-0.0, 13)):
        flat[at % flat.size] = value
    return x


def test_the_fused_kernels_are_registered():
    """Every fused op runs the OpenCL kernel from fused.py (recurrent.py for the recurrent sequence
    ops), not its decomposition."""
    tp.ones(1, device=DEV)
    from tensorplug.backends import _registry

    key = _registry.backend_key(DEV)
    for module, names in (("fused", FUSED), ("recurrent", RECURRENT)):
        for name in names:
            kernel = get_operator(name).kernels[key]
            kernel = getattr(kernel, "__wrapped__", kernel)  # check mode wraps it
            assert kernel.__module__ == f"tensorplug.backends.opencl.{module}", name


# --- relu --------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int64", "int8", "uint8"])
def test_relu_values_and_dtypes(dtype):
    """relu keeps the dtype, zeroes negatives, passes NaN and -0.0 through (as the decomposition and
    PyTorch), on contiguous, transposed and expanded inputs."""
    rng = np.random.default_rng(0)
    if dtype.startswith(("float", "bfloat")):
        x = tp.tensor(_edge_values((6, 9), rng), device=DEV).to(getattr(tp, dtype))
    else:
        x = tp.tensor(rng.integers(-50, 50, (6, 9)), device=DEV).to(getattr(tp, dtype))
    for view in (x, x.t(), x[:, :1].expand(6, 9), x[::2, 1::3]):
        got = F.relu(view)
        assert got.dtype == view.dtype and got.shape == view.shape
        want = get_operator("relu").decomposition(view)
        np.testing.assert_array_equal(_host(got), _host(want))
        np.testing.assert_array_equal(np.signbit(_host(got)), np.signbit(_host(want)))


def test_relu_backward_matches_torch():
    """relu's gradient is 0 where the output is <= 0 and the gradient elsewhere (NaN outputs pass
    it), also for an expanded incoming gradient."""
    rng = np.random.default_rng(1)
    x = _edge_values((5, 7), rng)
    g = rng.standard_normal((5, 1)).astype(np.float32)
    xt = tp.tensor(x, device=DEV, requires_grad=True)
    F.relu(xt).backward(tp.tensor(g, device=DEV).expand(5, 7))
    xr = torch.tensor(x, requires_grad=True)
    torch.relu(xr).backward(torch.tensor(g).expand(5, 7))
    _close(xt.grad, _ref(xr.grad), 0)


# --- softmax -----------------------------------------------------------------------------------

@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("shape", [(5, 13), (3, 8), (2, 1000), (4, 6, 3, 2), (7,), (33, 17)])
def test_softmax_every_dim(log, shape):
    """softmax/log_softmax over every dim (rows, and lines with neighbours after the dim, whole
    vectors of them and a partial one) against PyTorch in float64, with NaN and inf in the input."""
    rng = np.random.default_rng(2)
    x = _edge_values(shape, rng) if len(shape) > 1 else rng.standard_normal(shape).astype(np.float32)
    for dim in range(len(shape)):
        got = (F.log_softmax if log else F.softmax)(tp.tensor(x, device=DEV), dim)
        ref = (torch.log_softmax if log else torch.softmax)(torch.tensor(x).double(), dim)
        _close(got, _ref(ref), 2e-5)


@pytest.mark.parametrize("log", [False, True])
def test_softmax_edge_rows(log):
    """A row of -inf only, a row holding +inf, a NaN and a row of equal values give what the
    decomposition gives (NaN, NaN, NaN, uniform)."""
    x = np.array([[-np.inf] * 9, [0, 1, np.inf, 2, 0, 0, 0, 0, 0], [0, np.nan, 1, 2, 3, 4, 5, 6, 7], [3.0] * 9],
                 dtype=np.float32)
    t = tp.tensor(x, device=DEV)
    name = "log_softmax" if log else "softmax"
    got = (F.log_softmax if log else F.softmax)(t, 1)
    _close(got, _host(get_operator(name).decomposition(t, 1)), 1e-6)
    _close(got, _ref((torch.log_softmax if log else torch.softmax)(torch.tensor(x).double(), 1)), 1e-6)


@pytest.mark.parametrize("log", [False, True])
def test_softmax_masked_long_rows(log):
    """Rows long enough for the kernels' blocks of exps, masked with -inf and holding values far
    below their row's maximum (exps under float32's smallest normal), over the last dim and dim 0:
    PyTorch's values in float64, and a masked element's result is exactly 0 (-inf for log)."""
    rng = np.random.default_rng(8)
    x = rng.standard_normal((16, 300)).astype(np.float32) * 30  # dim 0: 16 lines, two vectors of them
    x[:, ::7] = -np.inf
    x[1, 5], x[2, 6], x[3, 8] = -1e30, -95.0, -87.0
    x[4, 200], x[5, 260] = np.nan, np.inf
    fn, ref_fn = (F.log_softmax, torch.log_softmax) if log else (F.softmax, torch.softmax)
    for dim in (1, 0):
        xs = np.ascontiguousarray(x if dim == 1 else x.T)
        got = fn(tp.tensor(xs, device=DEV), dim)
        _close(got, _ref(ref_fn(torch.tensor(xs).double(), dim)), 2e-5)
        masked = _host(got)[np.isneginf(xs) & ~np.isnan(_host(got))]
        assert masked.size and np.all(masked == (-np.inf if log else 0.0))


@pytest.mark.parametrize("dtype", ["float64", "float16", "bfloat16"])
def test_softmax_other_dtypes(dtype):
    """float64 and the 16-bit floats (computed in float32, stored once) keep their dtype."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((6, 21)).astype(np.float32)
    t = tp.tensor(x, device=DEV).to(getattr(tp, dtype))
    tol = {"float64": 1e-12, "float16": 2e-3, "bfloat16": 2e-2}[dtype]
    for dim in (0, 1):
        got = F.softmax(t, dim)
        assert got.dtype == t.dtype
        _close(got, _ref(torch.softmax(torch.tensor(_host(t)), dim)), tol)
        _close(F.log_softmax(t, dim), _ref(torch.log_softmax(torch.tensor(_host(t)), dim)), tol * 4)


def test_softmax_gradient_and_noncontiguous_input():
    """A transposed input and the gradient through the explicit derivative match PyTorch."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((11, 6)).astype(np.float32)
    g = rng.standard_normal((6, 11)).astype(np.float32)
    xt = tp.tensor(x, device=DEV, requires_grad=True)
    F.log_softmax(xt.t(), 1).backward(tp.tensor(g, device=DEV))
    xr = torch.tensor(x, requires_grad=True)
    torch.log_softmax(xr.t(), 1).backward(torch.tensor(g))
    _close(xt.grad, _ref(xr.grad), 1e-5)


@pytest.mark.parametrize("dtype, tol", [(tp.float32, 1e-5), (tp.float64, 1e-12)])
@pytest.mark.parametrize("shape, dim", [((7, 19), 1), ((3, 5, 20), 2), ((4, 9), 0), ((6,), 0)])
def test_log_softmax_backward_matches_numpy(dtype, tol, shape, dim):
    """The gradient op against its formula in float64 NumPy: one kernel along the last dim
    (rows of several vectors and a tail), the decomposition along another; an expanded
    (stride-0) gradient, as a sum's backward gives, is made contiguous first."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal(shape)
    y = x - np.log(np.exp(x - x.max(dim, keepdims=True)).sum(dim, keepdims=True)) - x.max(dim, keepdims=True)
    g = rng.standard_normal(shape)
    from tensorplug.nn._activations import _log_softmax_grad as op
    yt = tp.tensor(y, dtype=dtype, device=DEV)
    y_read = _host(yt).astype(np.float64)
    g_read = _host(tp.tensor(g, dtype=dtype)).astype(np.float64)
    want = g_read - np.exp(y_read) * g_read.sum(dim, keepdims=True)
    _close(op(tp.tensor(g, dtype=dtype, device=DEV), yt, dim), want, tol)
    ones = tp.ones((), dtype=dtype, device=DEV).expand(shape)
    _close(op(ones, yt, dim), 1.0 - np.exp(y_read) * shape[dim], tol)


# --- cross_entropy and nll_loss ----------------------------------------------------------------

@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("smoothing", [0.0, 0.25])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("shape", [(9, 10), (3, 5, 4, 2)])
def test_cross_entropy_matches_torch(reduction, smoothing, weighted, shape):
    """Values and input gradients for class targets with an ignored one, class weights, label
    smoothing and every reduction, for (N, C) and (N, C, d1, d2) inputs."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal(shape).astype(np.float32) * 3
    target = rng.integers(0, shape[1], (shape[0],) + shape[2:])
    target.reshape(-1)[1] = -100
    w = rng.random(shape[1]).astype(np.float32) + 0.5 if weighted else None
    xt = tp.tensor(x, device=DEV, requires_grad=True)
    got = F.cross_entropy(xt, tp.tensor(target, device=DEV), weight=None if w is None else tp.tensor(w, device=DEV),
                          reduction=reduction, label_smoothing=smoothing)
    xr = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    ref = torch.nn.functional.cross_entropy(xr, torch.tensor(target), weight=None if w is None else torch.tensor(w).double(),
                                            reduction=reduction, label_smoothing=smoothing)
    _close(got, _ref(ref), 1e-5)
    g = rng.standard_normal(tuple(ref.shape)).astype(np.float32)
    got.backward(tp.tensor(g, device=DEV))
    ref.backward(torch.tensor(g).double())
    _close(xt.grad, _ref(xr.grad), 1e-5)


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("weighted", [False, True])
def test_nll_loss_matches_torch(reduction, weighted):
    """nll_loss of log-probabilities, with an ignored target and class weights."""
    rng = np.random.default_rng(6)
    x = rng.standard_normal((12, 7)).astype(np.float32)
    target = rng.integers(0, 7, 12)
    target[4] = 3
    w = rng.random(7).astype(np.float32) if weighted else None
    got = F.nll_loss(tp.tensor(x, device=DEV), tp.tensor(target, device=DEV), ignore_index=3,
                     weight=None if w is None else tp.tensor(w, device=DEV), reduction=reduction)
    ref = torch.nn.functional.nll_loss(torch.tensor(x).double(), torch.tensor(target), ignore_index=3,
                                       weight=None if w is None else torch.tensor(w).double(), reduction=reduction)
    _close(got, _ref(ref), 1e-6)


def test_losses_edge_values():
    """Every target ignored makes the mean NaN (0 / 0), a NaN logit makes its sample NaN, and an
    infinite logit gives what the decomposition gives."""
    x = np.zeros((3, 4), dtype=np.float32)
    x[1, 2] = np.nan
    x[2, 0] = np.inf
    target = np.array([1, 2, 3])
    t, tt = tp.tensor(x, device=DEV), tp.tensor(target, device=DEV)
    ignored = F.cross_entropy(t, tp.tensor(np.full(3, -100), device=DEV))
    assert np.isnan(_host(ignored))
    decomposition = get_operator("cross_entropy").decomposition
    for reduction in ("none", "sum"):
        got = F.cross_entropy(t, tt, reduction=reduction)
        want = decomposition(t.reshape(3, 4, 1), tt.reshape(3, 1), None, reduction, -100, 0.0)
        _close(got, _host(want).reshape(_host(got).shape), 0)
        ref = torch.nn.functional.cross_entropy(torch.tensor(x).double(), torch.tensor(target), reduction=reduction)
        _close(got, _ref(ref), 1e-6)


def test_index_extremes_match_numpy():
    """The range check's [min, max] in one kernel: ignored values count as 0, a strided index and
    other dtypes take the decomposition; NumPy's extremes."""
    from tensorplug.frontend.ops._index_extremes import index_extremes

    values = np.array([[5, -100, 2], [9, -3, 7]])
    cases = [(values, -100, [-3, 9]), (values, None, [-100, 9]), (np.array([-100, -100]), -100, [0, 0]),
             (np.array([4]), 7, [4, 4])]
    for array, ignore, want in cases:
        got = index_extremes(tp.tensor(array, device=DEV), ignore)
        assert got.dtype == tp.int64 and _host(got).tolist() == want
    masked = np.where(values == -100, 0, values)
    strided = index_extremes(tp.tensor(values, device=DEV).t(), -100)
    assert _host(strided).tolist() == [masked.min(), masked.max()]
    small = index_extremes(tp.tensor(values.astype(np.int32), device=DEV), -100)
    assert small.dtype == tp.int32 and _host(small).tolist() == [masked.min(), masked.max()]


@pytest.mark.parametrize("bad", [5, -1])
def test_class_losses_refuse_targets_out_of_range(bad):
    """A target outside [0, C) that is not ignore_index raises before any loss kernel runs,
    naming the op and the class dim, as PyTorch's IndexError does."""
    x = tp.tensor(np.zeros((3, 5), dtype=np.float32), device=DEV)
    target = tp.tensor(np.array([0, bad, -100]), device=DEV)
    for fn in (F.cross_entropy, F.nll_loss):
        with pytest.raises(IndexError, match=rf"{fn.__name__}\(\): index {bad} is out of bounds for dimension 1 with size 5"):
            fn(x, target)


@pytest.mark.parametrize("dtype", ["float64", "float16", "bfloat16"])
def test_cross_entropy_other_dtypes(dtype):
    """float64 and the 16-bit floats keep their dtype; values within their precision."""
    rng = np.random.default_rng(7)
    x = tp.tensor(rng.standard_normal((8, 5)).astype(np.float32), device=DEV).to(getattr(tp, dtype))
    target = rng.integers(0, 5, 8)
    for reduction in ("none", "mean"):
        got = F.cross_entropy(x, tp.tensor(target, device=DEV), reduction=reduction, label_smoothing=0.1)
        assert got.dtype == x.dtype
        ref = torch.nn.functional.cross_entropy(torch.tensor(_host(x)), torch.tensor(target), reduction=reduction,
                                                label_smoothing=0.1)
        _close(got, _ref(ref), {"float64": 1e-12, "float16": 3e-3, "bfloat16": 3e-2}[dtype])


# --- layer_norm --------------------------------------------------------------------------------

@pytest.mark.parametrize("affine", [False, True])
@pytest.mark.parametrize("shape,normalized", [((4, 37), (37,)), ((2, 3, 16), (3, 16)), ((5, 8), (8,)), ((3, 1), (1,))])
def test_layer_norm_matches_torch(affine, shape, normalized):
    """Values and the gradients of input, weight and bias against PyTorch in float64."""
    rng = np.random.default_rng(8)
    x = rng.standard_normal(shape).astype(np.float32) * 2 + 1
    w = rng.standard_normal(normalized).astype(np.float32) if affine else None
    b = rng.standard_normal(normalized).astype(np.float32) if affine else None
    xt = tp.tensor(x, device=DEV, requires_grad=True)
    wt = tp.tensor(w, device=DEV, requires_grad=True) if affine else None
    bt = tp.tensor(b, device=DEV, requires_grad=True) if affine else None
    got = F.layer_norm(xt, normalized, wt, bt)
    xr = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    wr = torch.tensor(w, dtype=torch.float64, requires_grad=True) if affine else None
    br = torch.tensor(b, dtype=torch.float64, requires_grad=True) if affine else None
    ref = torch.nn.functional.layer_norm(xr, normalized, wr, br)
    _close(got, _ref(ref), 2e-5)
    g = rng.standard_normal(shape).astype(np.float32)
    got.backward(tp.tensor(g, device=DEV))
    ref.backward(torch.tensor(g).double())
    _close(xt.grad, _ref(xr.grad), 1e-4)
    if affine:
        _close(wt.grad, _ref(wr.grad), 1e-4)
        _close(bt.grad, _ref(br.grad), 1e-4)


def test_layer_norm_nan_and_16_bit():
    """A NaN poisons its row only; float16 keeps its dtype."""
    x = np.arange(24, dtype=np.float32).reshape(3, 8)
    x[1, 3] = np.nan
    got = _host(F.layer_norm(tp.tensor(x, device=DEV), (8,)))
    assert np.isnan(got[1]).all() and not np.isnan(got[[0, 2]]).any()
    half = F.layer_norm(tp.tensor(x[[0, 2]], device=DEV).half(), (8,))
    assert half.dtype == tp.float16
    _close(half, _ref(torch.nn.functional.layer_norm(torch.tensor(x[[0, 2]]).double(), (8,))), 2e-3)


# --- max pooling -------------------------------------------------------------------------------

_POOLS = [
    dict(kernel_size=2),
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=(3, 2), stride=(2, 1), padding=(1, 0), dilation=(2, 1)),
    dict(kernel_size=2, stride=2, ceil_mode=True),
    dict(kernel_size=3, stride=1, padding=1),
    dict(kernel_size=(1, 5), stride=(1, 3), padding=(0, 2), ceil_mode=True),
]


@pytest.mark.parametrize("geometry", _POOLS, ids=lambda g: ",".join(f"{k}={v}" for k, v in g.items()))
def test_max_pool2d_values_indices_gradient(geometry):
    """Values, first-maximum indices (ties broken toward the first tap) and the input gradient
    against PyTorch, with overlapping windows, padding, dilation, ceil_mode and rows longer than
    one work-item's chunk of outputs."""
    rng = np.random.default_rng(9)
    x = rng.integers(-3, 4, (2, 3, 9, 41)).astype(np.float32)  # many ties
    xt = tp.tensor(x, device=DEV, requires_grad=True)
    values, indices = F.max_pool2d(xt.detach(), return_indices=True, **geometry)
    ref_values, ref_indices = torch.nn.functional.max_pool2d(torch.tensor(x), return_indices=True, **geometry)
    _close(values, _ref(ref_values), 0)
    np.testing.assert_array_equal(_host(indices), ref_indices.numpy())
    g = rng.standard_normal(tuple(ref_values.shape)).astype(np.float32)
    F.max_pool2d(xt, **geometry).backward(tp.tensor(g, device=DEV))
    xr = torch.tensor(x, requires_grad=True)
    torch.nn.functional.max_pool2d(xr, **geometry).backward(torch.tensor(g))
    _close(xt.grad, _ref(xr.grad), 1e-6)


def test_max_pool2d_nan_and_infinities():
    """A NaN wins its windows (the last NaN, as PyTorch's ``val > max || isnan(val)`` and the
    decomposition's ``max_offset``); a window of -inf only takes its first tap inside the input
    (PyTorch's rule)."""
    x = np.full((1, 1, 4, 6), -np.inf, dtype=np.float32)
    x[0, 0, 0, 4] = 5.0
    x[0, 0, 2, 1] = np.nan
    x[0, 0, 3, 0] = np.nan
    x[0, 0, 1, 5] = np.inf
    geometry = dict(kernel_size=3, stride=2, padding=1)
    values, indices = F.max_pool2d(tp.tensor(x, device=DEV), return_indices=True, **geometry)
    ref_values, ref_indices = torch.nn.functional.max_pool2d(torch.tensor(x), return_indices=True, **geometry)
    _close(values, _ref(ref_values), 0)
    # The window at (1, 0) holds two NaN: the later one, (3, 0), wins.
    assert ref_indices.numpy()[0, 0, 1, 0] == 3 * 6 + 0
    np.testing.assert_array_equal(_host(indices), ref_indices.numpy())
    decomposed = get_operator("max_pool2d_with_indices").decomposition(
        tp.tensor(x, device=DEV), (3, 3), (2, 2), (1, 1), (1, 1), False)
    _close(values, _host(decomposed[0]), 0)
    np.testing.assert_array_equal(_host(decomposed[1]), ref_indices.numpy())


@pytest.mark.parametrize("dtype", ["float64", "float16", "bfloat16", "int64", "int32", "uint8"])
def test_max_pool2d_other_dtypes(dtype):
    """Every numeric dtype pools (integers through the same kernel); floats also get gradients."""
    rng = np.random.default_rng(10)
    x = tp.tensor(rng.integers(0, 100, (2, 2, 7, 7)), device=DEV).to(getattr(tp, dtype))
    values, indices = F.max_pool2d(x, 3, 2, 1, return_indices=True)
    assert values.dtype == x.dtype and indices.dtype == tp.int64
    ref_values, ref_indices = torch.nn.functional.max_pool2d(torch.tensor(_host(x)).double(), 3, 2, 1,
                                                             return_indices=True)
    _close(values, _ref(ref_values), 0)
    np.testing.assert_array_equal(_host(indices), ref_indices.numpy())
    if x.dtype.is_floating_point:
        xt = x.detach().requires_grad_()
        F.max_pool2d(xt, 3, 2, 1).sum().backward()
        xr = torch.tensor(_host(x)).double().requires_grad_()
        torch.nn.functional.max_pool2d(xr, 3, 2, 1).sum().backward()
        _close(xt.grad, _ref(xr.grad), 0)


def test_max_pool2d_strided_input():
    """A channels-last (permuted) input pools like a contiguous one."""
    rng = np.random.default_rng(11)
    x = rng.standard_normal((2, 5, 6, 3)).astype(np.float32)
    t = tp.tensor(x, device=DEV).permute(0, 3, 1, 2)
    _close(F.max_pool2d(t, 2), _ref(torch.nn.functional.max_pool2d(torch.tensor(x).permute(0, 3, 1, 2), 2)), 0)


# --- conv2d ------------------------------------------------------------------------------------

_CONVS = [
    dict(stride=1, padding=0, dilation=1, groups=1),
    dict(stride=2, padding=1, dilation=1, groups=1),
    dict(stride=1, padding=2, dilation=2, groups=2),
    dict(stride=(2, 1), padding=(0, 1), dilation=(1, 2), groups=4),
    dict(stride=3, padding=0, dilation=1, groups=1),
    dict(stride=1, padding=(3, 2), dilation=1, groups=1),  # the input gradient crops: padding > kernel - 1
]


@pytest.mark.parametrize("geometry", _CONVS, ids=lambda g: ",".join(f"{k}={v}" for k, v in g.items()))
@pytest.mark.parametrize("bias", [True, False])
def test_conv2d_and_gradients_match_torch(geometry, bias):
    """The output and the gradients of input, weight and bias against PyTorch in float64, with
    stride, padding, dilation and groups (several images: the weight gradient sums them)."""
    rng = np.random.default_rng(12)
    groups = geometry["groups"]
    x = rng.standard_normal((3, 4, 11, 10)).astype(np.float32)
    w = rng.standard_normal((8, 4 // groups, 3, 2)).astype(np.float32)
    b = rng.standard_normal(8).astype(np.float32) if bias else None
    xt = tp.tensor(x, device=DEV, requires_grad=True)
    wt = tp.tensor(w, device=DEV, requires_grad=True)
    bt = tp.tensor(b, device=DEV, requires_grad=True) if bias else None
    got = F.conv2d(xt, wt, bt, **geometry)
    xr = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    wr = torch.tensor(w, dtype=torch.float64, requires_grad=True)
    br = torch.tensor(b, dtype=torch.float64, requires_grad=True) if bias else None
    ref = torch.nn.functional.conv2d(xr, wr, br, **geometry)
    _close(got, _ref(ref), 1e-4)
    g = rng.standard_normal(tuple(ref.shape)).astype(np.float32)
    got.backward(tp.tensor(g, device=DEV))
    ref.backward(torch.tensor(g).double())
    _close(xt.grad, _ref(xr.grad), 1e-4)
    _close(wt.grad, _ref(wr.grad), 1e-4)
    if bias:
        _close(bt.grad, _ref(br.grad), 1e-4)


@pytest.mark.parametrize("dtype", ["float64", "float16", "bfloat16"])
def test_conv2d_other_dtypes(dtype):
    """float64 (blocked matmul) and the 16-bit floats (tiled matmul) keep their dtype."""
    rng = np.random.default_rng(13)
    x = tp.tensor(rng.standard_normal((2, 3, 7, 6)).astype(np.float32), device=DEV).to(getattr(tp, dtype))
    w = tp.tensor(rng.standard_normal((5, 3, 3, 3)).astype(np.float32), device=DEV).to(getattr(tp, dtype))
    got = F.conv2d(x, w, padding=1)
    assert got.dtype == x.dtype
    ref = torch.nn.functional.conv2d(torch.tensor(_host(x)).double(), torch.tensor(_host(w)).double(), padding=1)
    _close(got, _ref(ref), {"float64": 1e-10, "float16": 2e-2, "bfloat16": 1.5e-1}[dtype])


def test_conv2d_noncontiguous_and_nan():
    """A permuted input and weight convolve as contiguous ones; a NaN input spreads to the outputs
    whose windows hold it and no further."""
    rng = np.random.default_rng(14)
    x = rng.standard_normal((2, 6, 7, 3)).astype(np.float32)
    x[0, 2, 3, 1] = np.nan
    w = rng.standard_normal((3, 2, 3, 4)).astype(np.float32)  # (KH, KW, C, O)
    xt = tp.tensor(x, device=DEV).permute(0, 3, 1, 2)
    wt = tp.tensor(w, device=DEV).permute(3, 2, 0, 1)
    ref = torch.nn.functional.conv2d(torch.tensor(x).permute(0, 3, 1, 2).double(),
                                     torch.tensor(w).permute(3, 2, 0, 1).double())
    _close(F.conv2d(xt, wt), _ref(ref), 1e-4)


# --- adam --------------------------------------------------------------------------------------

@pytest.mark.parametrize("options", [
    dict(), dict(amsgrad=True), dict(weight_decay=0.1), dict(maximize=True, amsgrad=True),
    dict(betas=(0.3, 0.9)),  # lerp's other formula (weight >= 0.5)
], ids=str)
@pytest.mark.parametrize("adamw", [False, True])
def test_adam_matches_torch(options, adamw):
    """Three steps of Adam / AdamW on two parameters against torch.optim in float64."""
    rng = np.random.default_rng(15)
    values = [rng.standard_normal((4, 5)).astype(np.float32), rng.standard_normal(7).astype(np.float32)]
    grads = [[rng.standard_normal(v.shape).astype(np.float32) for v in values] for _ in range(3)]
    ours = [tp.tensor(v, device=DEV, requires_grad=True) for v in values]
    theirs = [torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in values]
    opt = (tp.optim.AdamW if adamw else tp.optim.Adam)(ours, lr=0.01, **options)
    ref = (torch.optim.AdamW if adamw else torch.optim.Adam)(theirs, lr=0.01, **options)
    for step in grads:
        for p, q, g in zip(ours, theirs, step):
            p.grad = tp.tensor(g, device=DEV)
            q.grad = torch.tensor(g).double()
        opt.step()
        ref.step()
    for p, q in zip(ours, theirs):
        _close(p, _ref(q), 1e-5)
        for key in ("exp_avg", "exp_avg_sq"):
            _close(opt.state[p][key], _ref(ref.state[q][key]), 1e-5)


@pytest.mark.parametrize("dtype", ["float64", "float16"])
def test_adam_step_other_dtypes_and_nan(dtype):
    """float64 and float16 parameters update like the decomposition; a NaN gradient makes its own
    element NaN only."""
    rng = np.random.default_rng(16)
    shape = (3, 6)
    tensors = [rng.standard_normal(shape).astype(np.float32) for _ in range(5)]
    tensors[3] = np.abs(tensors[3])
    tensors[4] = np.abs(tensors[4])
    tensors[1][0, 2] = np.nan
    args = (1e-2, 0.9, 0.999, 1e-8, 0.01, 3.0, False)

    def run(fn):
        ts = [tp.tensor(t, device=DEV).to(getattr(tp, dtype)) for t in tensors]
        fn(*ts, *args)
        return [_host(t) for t in ts]

    from tensorplug.optim._fused import adam_step_

    got = run(adam_step_)
    want = run(get_operator("adam_step_").decomposition)
    tol = 1e-12 if dtype == "float64" else 2e-3
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol, equal_nan=True)
    assert np.isnan(got[0][0, 2]) and np.isnan(got[0]).sum() == 1


# --- sgd ---------------------------------------------------------------------------------------

_SGD_OPTIONS = [  # (momentum, dampening, weight_decay, nesterov, maximize)
    (0.0, 0.0, 0.0, False, False), (0.0, 0.0, 0.1, False, True), (0.9, 0.0, 0.0, False, False),
    (0.9, 0.3, 0.1, False, True), (0.9, 0.0, 0.1, True, False), (0.5, 0.0, 0.0, True, True),
]


def _sgd_steps(update, dtype, options, steps=3, layout=lambda t: t):
    """``steps`` updates of a (5, 6) parameter through ``update`` (sgd_step_'s signature), the
    gradients with NaN and +-inf in them; the parameter and buffer on the host after each."""
    momentum, dampening, weight_decay, nesterov, maximize = options
    rng = np.random.default_rng(17)
    p = tp.tensor(rng.standard_normal((5, 6)), device=DEV).to(getattr(tp, dtype))
    buf = tp.empty_like(p) if momentum else None
    seen = []
    for step in range(steps):
        g = layout(tp.tensor(_edge_values((5, 6), rng) if step == 1 else rng.standard_normal((5, 6)),
                             device=DEV).to(getattr(tp, dtype)))
        update(p, g, buf, 0.1, momentum, dampening, weight_decay, nesterov, maximize, step == 0)
        seen.append([_host(p)] + ([] if buf is None else [_host(buf)]))
    return seen


@pytest.mark.parametrize("options", _SGD_OPTIONS, ids=str)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_sgd_step_matches_decomposition_exactly(dtype, options):
    """The fused kernel rounds as the decomposition's kernels do, step for step (first step, NaN
    and inf in a gradient included), in float32 and float64."""
    from tensorplug.optim._fused import sgd_step_

    got = _sgd_steps(sgd_step_, dtype, options)
    want = _sgd_steps(get_operator("sgd_step_").decomposition, dtype, options)
    for g, w in zip(got, want):
        for a, b in zip(g, w):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_sgd_step_16_bit(dtype):
    """16-bit parameters: the kernel computes in float32 and rounds once per stored value, so it
    is within the 16-bit rounding of the decomposition (which rounds after every op)."""
    from tensorplug.optim._fused import sgd_step_

    tol = 2e-3 if dtype == "float16" else 1.6e-2
    for options in _SGD_OPTIONS:
        got = _sgd_steps(sgd_step_, dtype, options)
        want = _sgd_steps(get_operator("sgd_step_").decomposition, dtype, options)
        for g, w in zip(got, want):
            for a, b in zip(g, w):
                np.testing.assert_allclose(a, b, rtol=tol, atol=tol, equal_nan=True)


def test_sgd_16_bit_matches_torch():
    """SGD with momentum on a float16 parameter follows torch.optim.SGD in float64 to float16's
    precision."""
    rng = np.random.default_rng(18)
    value = rng.standard_normal((4, 5)).astype(np.float16)
    grads = [rng.standard_normal((4, 5)).astype(np.float16) for _ in range(3)]
    ours = tp.tensor(value, device=DEV, requires_grad=True)
    theirs = torch.tensor(value.astype(np.float64), requires_grad=True)
    opt = tp.optim.SGD([ours], lr=0.1, momentum=0.9, weight_decay=0.01, nesterov=True)
    ref = torch.optim.SGD([theirs], lr=0.1, momentum=0.9, weight_decay=0.01, nesterov=True)
    for g in grads:
        ours.grad = tp.tensor(g, device=DEV)
        theirs.grad = torch.tensor(g.astype(np.float64))
        opt.step()
        ref.step()
    _close(ours, _ref(theirs), 5e-3)


def test_sgd_step_strided_gradient_takes_the_decomposition():
    """A transposed gradient is not contiguous: the decomposition's result, exactly."""
    from tensorplug.optim._fused import sgd_step_

    options = _SGD_OPTIONS[3]
    transposed = lambda t: t.t().contiguous().t()  # noqa: E731
    got = _sgd_steps(sgd_step_, "float32", options, layout=transposed)
    want = _sgd_steps(get_operator("sgd_step_").decomposition, "float32", options)
    for g, w in zip(got, want):
        for a, b in zip(g, w):
            np.testing.assert_array_equal(a, b)


def test_sgd_step_launches_one_kernel_per_parameter(monkeypatch):
    """An SGD step with momentum is one launch per parameter (the decomposition makes 4, counted
    the same way)."""
    from tensorplug.backends.opencl import fused, kernels

    launches = collections.Counter()
    build = kernels._kernel

    def counting(state, family, dtype, name):
        knl = build(state, family, dtype, name)

        def launch(*args):
            launches[name] += 1
            return knl(*args)

        return launch

    for module in (kernels, fused):
        monkeypatch.setattr(module, "_kernel", counting)
    params = [tp.randn(7, 3, device=DEV, requires_grad=True), tp.randn(3, device=DEV, requires_grad=True)]
    opt = tp.optim.SGD(params, lr=0.1, momentum=0.9)
    for p in params:
        p.grad = tp.ones_like(p)
    opt.step()  # the first step (the buffers filled)
    launches.clear()
    opt.step()
    assert launches == {"sgd_step": 2}
    launches.clear()
    decomposition = get_operator("sgd_step_").decomposition
    with tp.no_grad():
        decomposition(params[0], params[0].grad, opt.state[params[0]]["momentum_buffer"], 0.1, 0.9, 0.0, 0.0, False,
                      False, False)
    assert sum(launches.values()) == 4


def test_conv2d_gradients_float64_and_expanded_grad():
    """float64 gradients, with the incoming gradient an expanded scalar (sum().backward()) and
    more images than the weight gradient's work-items need (its partial sums by parts)."""
    rng = np.random.default_rng(17)
    x = rng.standard_normal((9, 2, 8, 7))
    w = rng.standard_normal((3, 2, 3, 3))
    xt = tp.tensor(x, device=DEV, requires_grad=True)
    wt = tp.tensor(w, device=DEV, requires_grad=True)
    F.conv2d(xt, wt, padding=1).sum().backward()
    xr = torch.tensor(x, requires_grad=True)
    wr = torch.tensor(w, requires_grad=True)
    torch.nn.functional.conv2d(xr, wr, padding=1).sum().backward()
    _close(xt.grad, _ref(xr.grad), 1e-10)
    _close(wt.grad, _ref(wr.grad), 1e-10)


@pytest.mark.parametrize("shape", [(5, 33, 17), (128, 784, 512), (3, 9216, 20)])
def test_matmul_with_transposed_weight(shape):
    """x @ w.t() (nn.Linear's product): the transposed weight is made contiguous in tiles before
    the blocked matmul, including partial tiles."""
    m, k, n = shape
    rng = np.random.default_rng(18)
    x = rng.standard_normal((m, k)).astype(np.float32)
    w = rng.standard_normal((n, k)).astype(np.float32)
    got = tp.tensor(x, device=DEV) @ tp.tensor(w, device=DEV).t()
    _close(got, x.astype(np.float64) @ w.astype(np.float64).T, 2e-4 * np.sqrt(k))


@pytest.mark.parametrize("stride", [1, 2])
def test_conv2d_gradients_float16(stride):
    """16-bit gradients (im2col, col2im and the tiled matmul) keep their dtype and values."""
    rng = np.random.default_rng(19)
    x = rng.standard_normal((2, 3, 7, 6)).astype(np.float32)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    xt = tp.tensor(x, device=DEV).half().requires_grad_()
    wt = tp.tensor(w, device=DEV).half().requires_grad_()
    F.conv2d(xt, wt, stride=stride, padding=1).sum().backward()
    assert xt.grad.dtype == tp.float16 and wt.grad.dtype == tp.float16
    xr = torch.tensor(_host(xt)).requires_grad_()
    wr = torch.tensor(_host(wt)).requires_grad_()
    torch.nn.functional.conv2d(xr, wr, stride=stride, padding=1).sum().backward()
    _close(xt.grad, _ref(xr.grad), 2e-2)
    _close(wt.grad, _ref(wr.grad), 5e-2)
