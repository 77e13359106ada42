"""The CPU backend's fused nn kernels (softmax, log_softmax, conv2d, max_pool2d, avg_pool2d,
layer_norm, cross_entropy and its gradient) against each op's own decomposition and against
PyTorch, forward and backward."""
import math

import numpy as np
import pytest

import tensorplug as tp
import tensorplug.nn.functional as F
from tensorplug.backends.api import backend_storage
from tensorplug.backends.cpu._load import load_kernels
from tensorplug.dispatcher import get_operator

torch = pytest.importorskip("torch")
tf = torch.nn.functional

FUSED = ("softmax", "log_softmax", "conv2d", "max_pool2d", "avg_pool2d", "layer_norm", "cross_entropy",
         "cross_entropy_backward")
FLOATS = [tp.float32, tp.float64]
TOL = {tp.float32: dict(rtol=2e-5, atol=2e-6), tp.float64: dict(rtol=1e-11, atol=1e-12)}


def _data(rng, shape, dtype, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.dtype(dtype.name))


def _decomposed(name, *args):
    return get_operator(name).decomposition(*args)


def _check(result, decomposed, reference, dtype, scale=1.0):
    """result equals the decomposition and PyTorch's value within dtype tolerance (NaN where they
    are); ``scale`` widens the absolute tolerance for sums of many terms that may cancel."""
    got = result.numpy()
    tol = dict(TOL[dtype], atol=TOL[dtype]["atol"] * scale)
    np.testing.assert_allclose(got, decomposed.numpy(), equal_nan=True, **tol)
    np.testing.assert_allclose(got, reference.detach().numpy(), equal_nan=True, **tol)


def _strided(x: np.ndarray, layout: str) -> tp.Tensor:
    """x as a tensorplug tensor in the given layout: contiguous, transposed-back or sliced."""
    if layout == "contiguous":
        return tp.tensor(x)
    if layout == "transposed":
        return tp.tensor(np.ascontiguousarray(np.swapaxes(x, 0, -1))).transpose(0, -1)
    wide = np.zeros(x.shape[:-1] + (2 * x.shape[-1],), x.dtype)
    wide[..., ::2] = x
    return tp.tensor(wide)[..., ::2]


def test_fused_kernels_are_registered():
    """Each fused op dispatches to the CPU backend's kernel, not to its decomposition."""
    tp.zeros(1)  # loads the CPU backend
    for name in FUSED:
        kernels = [k for k in get_operator(name).kernels.values() if getattr(k, "__module__", "").endswith("cpu.kernels")]
        assert kernels, name


# --- softmax and log_softmax ---------------------------------------------------------------
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced"])
@pytest.mark.parametrize("shape", [(7,), (3, 33), (4, 5, 6, 9), (2, 1, 17)])
@pytest.mark.parametrize("log", [False, True])
def test_softmax_every_dim(dtype, layout, shape, log):
    """softmax/log_softmax along every dim, any layout, equal the decomposition and PyTorch."""
    rng = np.random.default_rng(1)
    x = _data(rng, shape, dtype, 3.0)
    name, fn, ref = ("log_softmax", F.log_softmax, torch.log_softmax) if log else ("softmax", F.softmax, torch.softmax)
    t = _strided(x, layout)
    for dim in range(len(shape)):
        _check(fn(t, dim), _decomposed(name, t, dim), ref(torch.from_numpy(x), dim), dtype)


@pytest.mark.parametrize("log", [False, True])
def test_softmax_special_rows(log):
    """Rows with -inf, all -inf, +inf, NaN and huge values behave as the decomposition and PyTorch."""
    inf, nan = math.inf, math.nan
    rows = [
        [0.0, -inf, 1.0, -inf, 2.0, 3.0, 4.0, 5.0, 6.0, -inf],
        [-inf] * 10,
        [inf, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0],
        [0.0, 1.0, nan, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0],
        [3e38, -3e38, 1e30, 0.0, -1e30, 5.0, 6.0, 7.0, 8.0, 9.0],
        [-100.0, -90.0, -80.0, -70.0, -60.0, 0.0, 1.0, 2.0, 3.0, 4.0],
    ]
    x = np.array(rows, np.float32)
    name, fn, ref = ("log_softmax", F.log_softmax, torch.log_softmax) if log else ("softmax", F.softmax, torch.softmax)
    t = tp.tensor(x)
    for dim in (1, 0):
        _check(fn(t, dim), _decomposed(name, t, dim), ref(torch.from_numpy(x), dim), tp.float32)


def test_softmax_float32_accuracy():
    """float32 softmax (polynomial exp) is within a few ulp of a float64 reference, down to subnormals."""
    rng = np.random.default_rng(2)
    x = np.concatenate([rng.uniform(-110, 0, (64, 1000)), np.zeros((64, 1))], 1).astype(np.float32)
    wide = x.astype(np.float64)
    e = np.exp(wide - wide.max(1, keepdims=True))
    expected = e / e.sum(1, keepdims=True)
    got = F.softmax(tp.tensor(x), 1).numpy().astype(np.float64)
    tiny = np.finfo(np.float32).tiny
    normal = expected > tiny
    assert np.max(np.abs(got - expected)[normal] / expected[normal]) < 4 * 2.0**-24
    assert np.max(np.abs(got - expected)[~normal]) < 2 * 2.0**-149
    log_expected = wide - wide.max(1, keepdims=True) - np.log(e.sum(1, keepdims=True))
    np.testing.assert_allclose(F.log_softmax(tp.tensor(x), 1).numpy(), log_expected, rtol=2e-7, atol=1e-6)


@pytest.mark.parametrize("shape", [(0, 5), (3, 0), (1, 1)])
def test_softmax_degenerate_shapes(shape):
    """Empty and single-element inputs work."""
    x = np.ones(shape, np.float32)
    np.testing.assert_array_equal(F.softmax(tp.tensor(x), 1).numpy(), torch.softmax(torch.from_numpy(x), 1).numpy())


# --- conv2d --------------------------------------------------------------------------------
CONV_CASES = [
    # (input shape, weight shape, stride, padding, dilation, groups, bias)
    ((2, 3, 9, 10), (4, 3, 3, 3), (1, 1), (1, 1), (1, 1), 1, True),
    ((2, 3, 9, 10), (4, 3, 3, 3), (2, 2), (0, 0), (1, 1), 1, False),
    ((1, 4, 11, 8), (6, 2, 3, 2), (2, 1), (2, 1), (2, 3), 2, True),
    ((3, 6, 7, 7), (6, 1, 3, 3), (1, 1), (1, 1), (1, 1), 6, True),  # depthwise
    ((2, 8, 5, 6), (4, 8, 1, 1), (1, 1), (0, 0), (1, 1), 1, True),  # 1x1: columns are the input
    ((2, 8, 5, 6), (4, 4, 1, 1), (1, 1), (0, 0), (1, 1), 2, False),  # 1x1 grouped
    ((2, 8, 9, 9), (4, 8, 1, 1), (2, 2), (1, 1), (1, 1), 1, True),  # 1x1 strided and padded
    ((5, 3, 40, 60), (7, 3, 5, 5), (1, 1), (2, 2), (1, 1), 1, True),  # one image per gemm
    ((4, 2, 3, 3), (3, 2, 3, 3), (1, 1), (0, 0), (1, 1), 1, True),  # 1x1 output
]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("case", CONV_CASES, ids=lambda c: f"{c[0]}-{c[1]}-s{c[2]}-p{c[3]}-d{c[4]}-g{c[5]}")
def test_conv2d(dtype, case):
    """conv2d with padding, stride, dilation, groups and 1x1 kernels equals the decomposition and PyTorch."""
    shape, wshape, stride, padding, dilation, groups, with_bias = case
    rng = np.random.default_rng(3)
    x, w = _data(rng, shape, dtype), _data(rng, wshape, dtype)
    b = _data(rng, (wshape[0],), dtype) if with_bias else None
    tx, tw, tb = tp.tensor(x), tp.tensor(w), None if b is None else tp.tensor(b)
    got = F.conv2d(tx, tw, tb, stride, padding, dilation, groups)
    expected = tf.conv2d(torch.from_numpy(x), torch.from_numpy(w), None if b is None else torch.from_numpy(b),
                         stride, padding, dilation, groups)
    terms = math.prod(wshape[1:])
    _check(got, _decomposed("conv2d", tx, tw, tb, stride, padding, dilation, groups), expected, dtype, terms)


def test_conv2d_strided_operands():
    """A channels-last input view and a transposed weight view give the same result."""
    rng = np.random.default_rng(4)
    x, w, b = _data(rng, (2, 5, 7, 6), tp.float32), _data(rng, (4, 5, 3, 3), tp.float32), _data(rng, (4,), tp.float32)
    tx = tp.tensor(np.ascontiguousarray(x.transpose(0, 2, 3, 1))).permute(0, 3, 1, 2)
    tw = tp.tensor(np.ascontiguousarray(w.transpose(1, 0, 2, 3))).transpose(0, 1)
    tb = tp.tensor(np.stack([b, b], 1))[:, 0]
    assert not tx.is_contiguous() and not tw.is_contiguous()
    got = F.conv2d(tx, tw, tb, padding=1)
    expected = tf.conv2d(torch.from_numpy(x), torch.from_numpy(w), torch.from_numpy(b), padding=1)
    # A float32 3x3 stride-1 convolution runs Winograd F(4x4, 3x3), whose rounding error scales
    # with the largest output (about 1.5e-5 of it on random data; tests/cpu/test_conv_winograd.py).
    scale = float(np.abs(expected.numpy()).max())
    np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=0, atol=2e-5 * scale)


def test_conv1d_and_unbatched_use_the_fused_kernel():
    """conv1d (a conv2d of height 1) and unbatched conv2d agree with PyTorch."""
    rng = np.random.default_rng(5)
    x, w = _data(rng, (2, 3, 20), tp.float32), _data(rng, (4, 3, 5), tp.float32)
    got = F.conv1d(tp.tensor(x), tp.tensor(w), stride=2, padding=2)
    np.testing.assert_allclose(got.numpy(), tf.conv1d(torch.from_numpy(x), torch.from_numpy(w), stride=2, padding=2).numpy(),
                               rtol=2e-5, atol=2e-5)
    x2 = _data(rng, (3, 8, 8), tp.float32)
    w2 = _data(rng, (2, 3, 3, 3), tp.float32)
    np.testing.assert_allclose(F.conv2d(tp.tensor(x2), tp.tensor(w2), padding="same").numpy(),
                               tf.conv2d(torch.from_numpy(x2), torch.from_numpy(w2), padding="same").numpy(),
                               rtol=2e-5, atol=2e-5)


# --- pooling -------------------------------------------------------------------------------
POOL_CASES = [
    # (kernel, stride, padding, dilation, ceil_mode)
    ((2, 2), (2, 2), (0, 0), (1, 1), False),
    ((3, 3), (2, 2), (1, 1), (1, 1), False),
    ((3, 2), (2, 3), (1, 0), (1, 1), True),
    ((3, 3), (2, 2), (1, 1), (2, 1), True),
    ((2, 2), (3, 3), (0, 0), (1, 1), True),
    ((1, 1), (1, 1), (0, 0), (1, 1), False),
]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
@pytest.mark.parametrize("case", POOL_CASES, ids=str)
def test_max_pool2d(dtype, layout, case):
    """max_pool2d with padding, stride, dilation and ceil_mode equals the decomposition and PyTorch."""
    kernel, stride, padding, dilation, ceil_mode = case
    rng = np.random.default_rng(6)
    x = _data(rng, (2, 3, 10, 11), dtype)
    t = _strided(x, layout)
    got = F.max_pool2d(t, kernel, stride, padding, dilation, ceil_mode)
    expected = tf.max_pool2d(torch.from_numpy(x), kernel, stride, padding, dilation, ceil_mode)
    _check(got, _decomposed("max_pool2d", t, kernel, stride, padding, dilation, ceil_mode), expected, dtype)


@pytest.mark.parametrize("case", POOL_CASES, ids=str)
def test_max_pool2d_indices_kernel(case):
    """The C++ kernel's indices (flat positions in each input plane) equal PyTorch's return_indices."""
    kernel, stride, padding, dilation, ceil_mode = case
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 3, 10, 11)).astype(np.float32)
    values, indices = tf.max_pool2d(torch.from_numpy(x), kernel, stride, padding, dilation, ceil_mode, return_indices=True)
    t = tp.tensor(x)
    out, idx = tp.empty(tuple(values.shape)), tp.empty(tuple(values.shape), dtype=tp.int64)
    op = lambda u: (backend_storage(u), u.storage_offset(), u.stride())  # noqa: E731
    load_kernels().max_pool2d(7, t.shape, tuple(values.shape[2:]), op(out), op(idx), op(t), kernel, stride, padding, dilation)
    np.testing.assert_array_equal(out.numpy(), values.numpy())
    np.testing.assert_array_equal(idx.numpy(), indices.numpy())
    # tensorplug's own return_indices path agrees too.
    _, tp_indices = F.max_pool2d(t, kernel, stride, padding, dilation, ceil_mode, return_indices=True)
    np.testing.assert_array_equal(tp_indices.numpy(), indices.numpy())


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("case", POOL_CASES)
def test_max_pool2d_with_indices_backward(dtype, case):
    """Training's gradient through the forward's indices (the fused max_pool2d_with_indices_backward)
    equals its decomposition and PyTorch's gradient, on a strided grad."""
    kernel, stride, padding, dilation, ceil_mode = case
    rng = np.random.default_rng(14)
    x = _data(rng, (2, 3, 11, 10), dtype)
    x[0, 0, :4, :4] = 0.25  # ties: the first maximum takes the gradient
    tx = tp.tensor(x, requires_grad=True)
    values = F.max_pool2d(tx, kernel, stride, padding, dilation, ceil_mode)
    assert values.grad_fn.name() == "_MaxPool2dWithIndicesBackward"
    ttx = torch.from_numpy(x).requires_grad_()
    expected = tf.max_pool2d(ttx, kernel, stride, padding, dilation, ceil_mode)
    g = _data(rng, tuple(expected.shape) + (2,), dtype)
    values.backward(tp.tensor(g)[..., 0])
    expected.backward(torch.from_numpy(np.ascontiguousarray(g[..., 0])))
    indices = F.max_pool2d(tp.tensor(x), kernel, stride, padding, dilation, ceil_mode, return_indices=True)[1]
    geometry = tuple((k, k) if isinstance(k, int) else k for k in (kernel, stride, padding, dilation)) + (ceil_mode,)
    decomposed = _decomposed("max_pool2d_with_indices_backward", tp.tensor(g)[..., 0], tp.tensor(x), indices, *geometry)
    _check(tx.grad, decomposed, ttx.grad, dtype)


def test_max_pool2d_nan_and_inf():
    """A NaN in a window wins; -inf windows give -inf, as in PyTorch and the decomposition."""
    x = np.arange(2 * 6 * 6, dtype=np.float32).reshape(1, 2, 6, 6)
    x[0, 0, 1, 1] = np.nan
    x[0, 1, :2, :2] = -np.inf
    x[0, 1, 4, 4] = np.inf
    t = tp.tensor(x)
    got = F.max_pool2d(t, 2, 2, 1)
    _check(got, _decomposed("max_pool2d", t, (2, 2), (2, 2), (1, 1), (1, 1), False),
           tf.max_pool2d(torch.from_numpy(x), 2, 2, 1), tp.float32)


def test_max_pool2d_integer_input_falls_back():
    """Dtypes without a fused kernel run the decomposition."""
    x = np.arange(2 * 3 * 6 * 6, dtype=np.int64).reshape(2, 3, 6, 6) % 17
    got = F.max_pool2d(tp.tensor(x), 3, 2, 1)
    np.testing.assert_array_equal(got.numpy(), tf.max_pool2d(torch.from_numpy(x).double(), 3, 2, 1).long().numpy())


AVG_CASES = [
    # (kernel, stride, padding, ceil_mode, count_include_pad, divisor_override)
    ((2, 2), (2, 2), (0, 0), False, True, None),
    ((3, 3), (2, 2), (1, 1), False, True, None),
    ((3, 3), (2, 2), (1, 1), True, False, None),
    ((3, 2), (2, 3), (1, 1), True, True, None),
    ((2, 3), (1, 2), (1, 0), False, True, 5),
    ((4, 4), (3, 3), (2, 1), True, False, None),
]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("case", AVG_CASES, ids=str)
def test_avg_pool2d(dtype, case):
    """avg_pool2d with padding, ceil_mode, count_include_pad and divisor_override equals the
    decomposition and PyTorch."""
    kernel, stride, padding, ceil_mode, include_pad, divisor = case
    rng = np.random.default_rng(8)
    x = _data(rng, (2, 3, 9, 11), dtype)
    t = _strided(x, "transposed")
    got = F.avg_pool2d(t, kernel, stride, padding, ceil_mode, include_pad, divisor)
    expected = tf.avg_pool2d(torch.from_numpy(x), kernel, stride, padding, ceil_mode, include_pad, divisor)
    _check(got, _decomposed("avg_pool2d", t, kernel, stride, padding, ceil_mode, include_pad, divisor), expected, dtype)


# --- layer_norm ----------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape, normalized", [((6, 33), (33,)), ((2, 3, 4, 5), (4, 5)), ((7,), (7,)), ((3, 1), (1,))])
@pytest.mark.parametrize("affine", [False, True])
def test_layer_norm(dtype, shape, normalized, affine):
    """layer_norm with and without weight and bias equals the decomposition and PyTorch."""
    rng = np.random.default_rng(9)
    x = _data(rng, shape, dtype, 2.0) + 3
    w = _data(rng, normalized, dtype) if affine else None
    b = _data(rng, normalized, dtype) if affine else None
    tx = _strided(x, "sliced")
    tw, tb = (tp.tensor(w), tp.tensor(b)) if affine else (None, None)
    got = F.layer_norm(tx, normalized, tw, tb, 1e-5)
    expected = tf.layer_norm(torch.from_numpy(x), normalized, None if w is None else torch.from_numpy(w),
                             None if b is None else torch.from_numpy(b), 1e-5)
    _check(got, _decomposed("layer_norm", tx, normalized, tw, tb, 1e-5), expected, dtype)


# --- gradients through the overridden ops --------------------------------------------------
def _grads(tp_fn, torch_fn, arrays, seed=10):
    """Gradients of sum(output * r) for random r, from tensorplug and from PyTorch."""
    tps = [tp.tensor(a, requires_grad=True) for a in arrays]
    ts = [torch.from_numpy(a).requires_grad_() for a in arrays]
    out_tp, out_t = tp_fn(*tps), torch_fn(*ts)
    r = np.random.default_rng(seed).standard_normal(tuple(out_t.shape)).astype(arrays[0].dtype)
    (out_tp * tp.tensor(r)).sum().backward()
    (out_t * torch.from_numpy(r)).sum().backward()
    np.testing.assert_allclose(out_tp.detach().numpy(), out_t.detach().numpy(), rtol=1e-9, atol=1e-10)
    for a, b in zip(tps, ts):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-9, atol=1e-10)


def test_gradients_through_fused_ops():
    """Backward through each overridden op (its explicit derivative) matches PyTorch in float64."""
    rng = np.random.default_rng(11)
    x4 = rng.standard_normal((2, 4, 9, 8))
    _grads(lambda x: F.softmax(x, 1), lambda x: torch.softmax(x, 1), [x4])
    _grads(lambda x: F.log_softmax(x, -1), lambda x: torch.log_softmax(x, -1), [x4])
    w, b = rng.standard_normal((6, 2, 3, 3)), rng.standard_normal(6)
    _grads(lambda x, w, b: F.conv2d(x, w, b, 2, 1, 1, 2), lambda x, w, b: tf.conv2d(x, w, b, 2, 1, 1, 2), [x4, w, b])
    _grads(lambda x: F.max_pool2d(x, 3, 2, 1, ceil_mode=True), lambda x: tf.max_pool2d(x, 3, 2, 1, ceil_mode=True), [x4])
    _grads(lambda x: F.avg_pool2d(x, 3, 2, 1, True, False), lambda x: tf.avg_pool2d(x, 3, 2, 1, True, False), [x4])
    lw, lb = rng.standard_normal((9, 8)), rng.standard_normal((9, 8))
    _grads(lambda x, w, b: F.layer_norm(x, (9, 8), w, b), lambda x, w, b: tf.layer_norm(x, (9, 8), w, b), [x4, lw, lb])
    target = rng.integers(0, 4, (2, 9, 8))
    _grads(lambda x: F.cross_entropy(x, tp.tensor(target)), lambda x: tf.cross_entropy(x, torch.from_numpy(target)), [x4])


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("case", [
    dict(shape=(6, 11)),
    dict(shape=(5, 7), weight=True, ignore=2),
    dict(shape=(4, 9), smoothing=0.1, weight=True),
    dict(shape=(3, 5, 4, 2), smoothing=0.2, ignore=1),
    dict(shape=(1, 1)),
])
def test_cross_entropy_backward(dtype, reduction, case):
    """The fused cross_entropy_backward equals the op's decomposition and PyTorch's input gradient,
    with weights, ignored targets (a zero gradient row), label smoothing and extra dims."""
    rng = np.random.default_rng(12)
    shape = case["shape"]
    x = _data(rng, shape, dtype, 3.0)
    target = rng.integers(0, shape[1], (shape[0],) + shape[2:])
    ignore = case.get("ignore", -100)
    if ignore >= 0:
        target.flat[::2] = ignore
    w = rng.uniform(0.5, 2.0, shape[1]).astype(x.dtype) if case.get("weight") else None
    smoothing = case.get("smoothing", 0.0)
    kwargs = dict(ignore_index=ignore, reduction=reduction, label_smoothing=smoothing)
    tx = tp.tensor(x, requires_grad=True)
    loss = F.cross_entropy(tx, tp.tensor(target), None if w is None else tp.tensor(w), **kwargs)
    ttx = torch.from_numpy(x).requires_grad_()
    expected = tf.cross_entropy(ttx, torch.from_numpy(target), None if w is None else torch.from_numpy(w), **kwargs)
    upstream = np.asarray(_data(rng, tuple(expected.shape), dtype))
    loss.backward(tp.tensor(upstream))
    expected.backward(torch.from_numpy(upstream))
    n, c = shape[:2]
    flat = (n, c, math.prod(shape[2:]))
    grad = tp.tensor(upstream).reshape(flat[0], flat[2]) if reduction == "none" else tp.tensor(upstream)
    decomposed = _decomposed("cross_entropy_backward", grad, tp.tensor(x).reshape(flat),
                             tp.tensor(target).reshape(flat[0], flat[2]), None if w is None else tp.tensor(w),
                             reduction, ignore, smoothing)
    _check(tx.grad.reshape(flat), decomposed, ttx.grad.reshape(flat), dtype, scale=10.0)


def test_cross_entropy_backward_ignored_rows_follow_torch():
    """An ignored row's gradient is 0, or NaN where its logits hold NaN or +inf, as PyTorch gives."""
    x = np.array([[1.0, np.nan, 0.0], [np.inf, 0.0, 1.0], [0.5, -np.inf, 0.1], [0.5, 0.2, 0.1]], np.float32)
    target = np.array([-100, -100, -100, 1])
    ours, theirs = tp.tensor(x, requires_grad=True), torch.from_numpy(x).requires_grad_()
    F.cross_entropy(ours, tp.tensor(target)).backward()
    tf.cross_entropy(theirs, torch.from_numpy(target)).backward()
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-6, atol=1e-7, equal_nan=True)


def test_cross_entropy_double_backward():
    """cross_entropy_backward's own derivative (in its grad and its input) gives PyTorch's second
    derivatives, with and without label smoothing."""
    rng = np.random.default_rng(13)
    x, target, w = rng.standard_normal((4, 6)), rng.integers(0, 6, 4), rng.uniform(0.5, 2.0, 6)
    target[1] = 3
    for reduction, smoothing in [("mean", 0.0), ("sum", 0.3), ("none", 0.1)]:
        kwargs = dict(ignore_index=3, reduction=reduction, label_smoothing=smoothing)
        results = []
        for lib, tensor in ((tp, tp.tensor), (torch, torch.from_numpy)):
            fn = F.cross_entropy if lib is tp else tf.cross_entropy
            xx = tensor(x).requires_grad_()
            up = tensor(np.linspace(0.5, 1.5, 4) if reduction == "none" else np.array(1.3)).requires_grad_()
            loss = fn(xx, tensor(target), tensor(w), **kwargs)
            (gx,) = lib.autograd.grad(loss, xx, up, create_graph=True)
            (gx * tensor(np.cos(np.arange(24.0)).reshape(4, 6))).sum().backward()
            results.append((gx.detach().numpy(), xx.grad.numpy(), up.grad.numpy()))
        for got, expected in zip(*results):
            np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-11)


# --- the C++ entry points check what they are given -----------------------------------------
def test_kernels_reject_bad_operands():
    """Operands that do not fit their storage, or inconsistent shapes, raise instead of crashing."""
    K = load_kernels()
    t = tp.zeros(4, 5)
    op = (backend_storage(t), t.storage_offset(), (5, 5, 1))
    with pytest.raises(ValueError, match="storage"):
        K.softmax(7, False, 4, 6, 1, op, op)  # 4 x 6 does not fit 20 elements
    with pytest.raises(ValueError, match="float32 and float64"):
        K.softmax(5, False, 4, 5, 1, op, op)
    x, w, out = tp.zeros(1, 4, 5, 5), tp.zeros(2, 3, 3, 3), tp.zeros(1, 2, 3, 3)
    opx = lambda u: (backend_storage(u), u.storage_offset(), u.stride())  # noqa: E731
    with pytest.raises(ValueError, match="groups"):
        K.conv2d(7, x.shape, w.shape, opx(out), opx(x), opx(w), None, (1, 1), (0, 0), (1, 1), 1)
    with pytest.raises(ValueError, match="storage"):
        K.max_pool2d(7, (1, 4, 9, 9), (4, 4), opx(out), None, opx(x), (2, 2), (2, 2), (0, 0), (1, 1))
    with pytest.raises(ValueError, match="kernel"):
        K.avg_pool2d(7, x.shape, (2, 2), opx(out), opx(x), (0, 2), (2, 2), (0, 0), True, 0)


def test_gradient_and_loss_kernels_reject_bad_operands():
    """The conv2d and max_pool2d gradient kernels and cross_entropy check shapes, storage, layout
    and targets before touching memory."""
    K = load_kernels()
    opx = lambda u: (backend_storage(u), u.storage_offset(), u.stride())  # noqa: E731
    x, w, g = tp.zeros(2, 4, 5, 5), tp.zeros(6, 2, 3, 3), tp.zeros(2, 6, 3, 3)
    geometry = ((1, 1), (0, 0), (1, 1), 2)
    with pytest.raises(ValueError, match="storage"):  # grad is (2, 6, 3, 3), not (2, 6, 4, 4)
        K.conv2d_input_backward(7, x.shape, w.shape, opx(x), opx(g), opx(w), (1, 1), (1, 0), (1, 1), 2)
    with pytest.raises(ValueError, match="groups"):
        K.conv2d_weight_backward(7, x.shape, w.shape, opx(w), opx(g), opx(x), (1, 1), (0, 0), (1, 1), 3)
    with pytest.raises(ValueError, match="contiguous"):
        K.conv2d_input_backward(7, x.shape, w.shape, opx(x.transpose(2, 3)), opx(g), opx(w), *geometry)
    with pytest.raises(ValueError, match="read-only|storage"):
        K.conv2d_weight_backward(7, x.shape, (6, 2, 4, 4), opx(w), opx(g), opx(x), *geometry)
    with pytest.raises(ValueError, match="storage"):
        K.max_pool2d_backward(7, (2, 4, 9, 9), (2, 2), opx(x), opx(g), opx(x), (2, 2), (2, 2), (0, 0), (1, 1))
    with pytest.raises(ValueError, match="contiguous"):
        K.max_pool2d_backward(7, x.shape, (2, 2), opx(x.transpose(2, 3)), opx(tp.zeros(2, 4, 2, 2)), opx(x),
                              (2, 2), (2, 2), (0, 0), (1, 1))
    indices = tp.tensor([[[[0, 3], [81, 1]]]])  # 81 is outside a 9 x 9 plane
    with pytest.raises(IndexError, match="out of bounds"):
        K.max_pool2d_with_indices_backward(7, (1, 1, 9, 9), (2, 2), opx(tp.zeros(1, 1, 9, 9)), opx(tp.zeros(1, 1, 2, 2)),
                                           opx(indices))
    with pytest.raises(ValueError, match="contiguous"):
        K.max_pool2d_with_indices_backward(7, (1, 1, 9, 9), (2, 2), opx(tp.zeros(1, 1, 9, 9).transpose(2, 3)),
                                           opx(tp.zeros(1, 1, 2, 2)), opx(indices.abs() % 4))
    with pytest.raises(ValueError, match="storage"):
        K.max_pool2d_with_indices_backward(7, (1, 1, 9, 9), (3, 3), opx(tp.zeros(1, 1, 9, 9)), opx(tp.zeros(1, 1, 2, 2)),
                                           opx(indices))
    logits, target, loss = tp.zeros(3, 4, 1), tp.tensor([[0], [1], [2]]), tp.zeros(())
    with pytest.raises(ValueError, match="storage"):
        K.cross_entropy(7, 3, 5, 1, 1, opx(loss), opx(logits), opx(target), None, -100, 0.0)
    with pytest.raises(ValueError, match="reduction"):
        K.cross_entropy(7, 3, 4, 1, 3, opx(loss), opx(logits), opx(target), None, -100, 0.0)
    with pytest.raises(IndexError, match="out of bounds"):
        K.cross_entropy(7, 3, 4, 1, 1, opx(loss), opx(logits), opx(tp.tensor([[0], [9], [2]])), None, -100, 0.0)
    grad_logits = tp.zeros(3, 4, 1)
    with pytest.raises(ValueError, match="strides"):  # grad must be 0-d for mean, not (3,)
        K.cross_entropy_backward(7, 3, 4, 1, 1, opx(grad_logits), opx(tp.zeros(3)), opx(logits), opx(target), None,
                                 -100, 0.0)
    with pytest.raises(ValueError, match="contiguous"):
        K.cross_entropy_backward(7, 3, 4, 1, 1, opx(tp.zeros(1, 4, 3).transpose(0, 2)), opx(loss), opx(logits),
                                 opx(target), None, -100, 0.0)
    with pytest.raises(IndexError, match="out of bounds"):
        K.cross_entropy_backward(7, 3, 4, 1, 1, opx(grad_logits), opx(loss), opx(logits),
                                 opx(tp.tensor([[0], [-3], [2]])), None, -100, 0.0)


# --- linear --------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shapes", [((32, 4), (1, 4), True), ((5, 3), (4, 3), False), ((2, 3, 5), (6, 5), True),
                                    ((7,), (3, 7), True), ((0, 3), (2, 3), True), ((4, 0), (2, 0), True),
                                    ((40, 64), (70, 64), True)], ids=str)
def test_linear(dtype, shapes):
    """The fused layer equals its decomposition bit for bit (the same product, then the bias)
    and PyTorch's within rounding, forward and backward."""
    input_shape, weight_shape, with_bias = shapes
    rng = np.random.default_rng(0)
    x, w, b = _data(rng, input_shape, dtype), _data(rng, weight_shape, dtype), _data(rng, weight_shape[:1], dtype)
    bias = tp.tensor(b) if with_bias else None
    got = F.linear(tp.tensor(x), tp.tensor(w), bias)
    decomposed = _decomposed("linear", tp.tensor(x), tp.tensor(w), bias)
    np.testing.assert_array_equal(got.numpy(), decomposed.numpy())
    tx, tw, tb = (torch.tensor(v, requires_grad=True) for v in (x, w, b))
    expected = tf.linear(tx, tw, tb if with_bias else None)
    np.testing.assert_allclose(got.numpy(), expected.detach().numpy(), **TOL[dtype])
    px, pw, pb = (tp.tensor(v, requires_grad=True) for v in (x, w, b))
    grad = _data(rng, expected.shape, dtype)
    F.linear(px, pw, pb if with_bias else None).backward(tp.tensor(grad))
    expected.backward(torch.tensor(grad))
    np.testing.assert_allclose(px.grad.numpy(), tx.grad.numpy(), **TOL[dtype])
    np.testing.assert_allclose(pw.grad.numpy(), tw.grad.numpy(), **TOL[dtype])
    if with_bias:
        np.testing.assert_allclose(pb.grad.numpy(), tb.grad.numpy(), **TOL[dtype])


@pytest.mark.parametrize("layout", ["transposed", "strided"])
def test_linear_strided_operands(layout):
    """Non-contiguous inputs and weights (rows whose leading dims do not merge run the
    decomposition) give the same values."""
    rng = np.random.default_rng(1)
    x, w, b = rng.standard_normal((4, 6)), rng.standard_normal((3, 6)), rng.standard_normal(3)
    got = F.linear(_strided(x, layout), _strided(w, layout), tp.tensor(b))
    np.testing.assert_allclose(got.numpy(), x @ w.T + b, rtol=1e-12)
    x3 = rng.standard_normal((2, 5, 6))
    permuted = tp.tensor(np.ascontiguousarray(x3.transpose(1, 0, 2))).permute(1, 0, 2)
    np.testing.assert_allclose(F.linear(permuted, tp.tensor(w)).numpy(), x3 @ w.T, rtol=1e-12)


def test_linear_and_smooth_l1_are_fused_on_the_cpu():
    """Both ops and smooth_l1's gradient dispatch to the CPU backend's kernels."""
    tp.zeros(1)
    for name in ("linear", "smooth_l1_loss", "smooth_l1_loss_backward"):
        kernels = [k for k in get_operator(name).kernels.values() if getattr(k, "__module__", "").endswith("cpu.kernels")]
        assert kernels, name


def test_linear_entry_refuses_bad_operands():
    """The C++ entry checks shapes against storage: a wrong size raises ValueError."""
    from tensorplug.backends.api import strided

    K = load_kernels()
    code = dict(K.DTYPES)["float32"]
    a, w, out = tp.ones(2, 3), tp.ones(4, 3), tp.empty(2, 4)
    with pytest.raises(ValueError):
        K.linear(code, 2, 4, 5, strided(out), strided(a), strided(w), None)
    with pytest.raises(ValueError):
        K.linear(code, 2, 4, 3, strided(out), strided(a), strided(w), strided(tp.ones(2)))
