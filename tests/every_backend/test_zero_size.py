"""Zero-size dimensions in every position, for every op family, on every backend present.

An empty input must give PyTorch's shape and, where the result has elements, the identity of the
operation (sum 0, prod 1, all True, mean NaN, ...), or a clear Python exception; never a crash.
Issue 16: an empty reduction on OpenCL divided 0 by 0 inside a kernel and killed the process.
References are NumPy float64 (for values) and PyTorch's documented shapes.
"""
import numpy as np
import pytest

import tensorplug as tp
import tensorplug.nn.functional as F

#: Shapes with a zero in every position, up to three dims.
EMPTY_SHAPES = [(0,), (0, 3), (3, 0), (0, 3, 4), (3, 0, 4), (3, 4, 0), (0, 0)]
DTYPES = ["float32", "int64", "bool"]


def _values(shape, dtype):
    return np.zeros(shape, dtype=np.dtype(dtype))


def _tensor(shape, dtype, device, transposed=False):
    t = tp.tensor(_values(shape, dtype), device=device)
    return t.t() if transposed and t.dim() == 2 else t


def _host(t) -> np.ndarray:
    return t.cpu().numpy()


def _check(t, expected: np.ndarray, dtype=None):
    got = _host(t)
    assert tuple(t.shape) == expected.shape, (tuple(t.shape), expected.shape)
    if dtype is not None:
        assert t.dtype is dtype, (t.dtype, dtype)
    np.testing.assert_array_equal(got.astype(np.float64), np.asarray(expected, dtype=np.float64))


# --- elementwise -------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", EMPTY_SHAPES)
@pytest.mark.parametrize("transposed", [False, True], ids=["contiguous", "transposed"])
def test_unary_and_binary_keep_the_empty_shape(device, shape, transposed):
    """Unary, binary (tensor and scalar operands, broadcasting), compare and where on empty inputs."""
    x = _tensor(shape, "float32", device, transposed)
    n = tp.tensor(_values(shape, "int64"), device=device)
    n = n.t() if transposed and n.dim() == 2 else n
    expected = np.zeros(tuple(x.shape))
    for y in (-x, x.abs(), x.exp(), x.sqrt(), x.sigmoid(), x.floor(), F.relu(x), x + x, x * 2.0, x / x,
              x.pow(2), tp.maximum(x, x), tp.where(x > 0, x, 1.0), x.clone(), x.contiguous(), x.float()):
        _check(y, expected)
    for y in (n // n, n % n, n // 3, n % 3, n << 2, n >> 1, n & n, n | 1, -n, n.abs()):
        _check(y, expected, tp.int64)
    _check(x < x, expected, tp.bool)
    _check(tp.logical_not(x > 0), expected, tp.bool)


@pytest.mark.parametrize("shapes", [((0, 3), (1, 3)), ((0, 3), (3,)), ((3, 1), (3, 0)), ((0, 1), (1, 0))])
def test_broadcasting_to_an_empty_shape(device, shapes):
    """Broadcasting a non-empty operand against an empty one gives the empty broadcast shape."""
    a = tp.ones(*shapes[0], device=device)
    b = tp.ones(*shapes[1], device=device)
    expected = np.broadcast_shapes(*shapes)
    _check(a + b, np.zeros(expected))
    _check(a.floor_divide(b), np.zeros(expected))


def test_integer_division_by_zero_on_empty_tensors(device):
    """An empty integer tensor divided by zero has nothing to divide: no error, an empty result."""
    n = tp.zeros(0, 3, dtype=tp.int64, device=device)
    _check(n // tp.zeros(0, 3, dtype=tp.int64, device=device), np.zeros((0, 3)))
    _check(n % tp.zeros(1, 3, dtype=tp.int64, device=device), np.zeros((0, 3)))


# --- reductions and scans ----------------------------------------------------------------------

_IDENTITIES = {"sum": 0.0, "prod": 1.0, "all": True, "any": False}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", EMPTY_SHAPES)
@pytest.mark.parametrize("name", sorted(_IDENTITIES))
def test_reductions_over_empty_dims_give_the_identity(device, name, shape, dtype):
    """sum/prod/all/any over every dim of an empty input, keepdim or not, and over all elements."""
    x = _tensor(shape, dtype, device)
    host = _values(shape, dtype).astype(np.float64)
    numpy_fn = {"sum": np.sum, "prod": np.prod, "all": np.all, "any": np.any}[name]
    _check(getattr(x, name)(), np.asarray(numpy_fn(host)))
    for dim in range(len(shape)):
        if name in ("all", "any"):
            got = getattr(x, name)(dim=dim, keepdim=True)
        else:
            got = getattr(x, name)(dim, keepdim=True)
        _check(got, numpy_fn(host, axis=dim, keepdims=True))
        _check(getattr(x, name)(dim), numpy_fn(host, axis=dim))


@pytest.mark.parametrize("shape", [(0, 3), (3, 0), (3, 0, 4)])
def test_reductions_with_nan_or_inf_identities(device, shape):
    """mean, var and std of nothing are NaN; logsumexp is -inf; norm is 0; count_nonzero is 0."""
    x = _tensor(shape, "float32", device)
    host = np.zeros(shape)
    zero_dim = shape.index(0)
    with np.errstate(invalid="ignore", divide="ignore"):
        _check(x.mean(zero_dim), np.full(np.delete(shape, zero_dim), np.nan))
        _check(x.mean(), np.asarray(np.nan))
        with pytest.warns(UserWarning, match="degrees of freedom is <= 0"):  # PyTorch warns too
            _check(x.var(zero_dim), np.full(np.delete(shape, zero_dim), np.nan))
        with pytest.warns(UserWarning, match="degrees of freedom is <= 0"):
            _check(x.std(), np.asarray(np.nan))
    _check(x.logsumexp(zero_dim), np.full(np.delete(shape, zero_dim), -np.inf))
    _check(tp.linalg.vector_norm(x, dim=zero_dim) if hasattr(tp, "linalg") else x.norm(dim=zero_dim),
           np.zeros(np.delete(shape, zero_dim)))
    _check(tp.count_nonzero(x, dim=zero_dim), np.zeros(np.delete(shape, zero_dim)))
    _check(x.sum(dim=tuple(range(len(shape)))), np.asarray(host.sum()))


@pytest.mark.parametrize("name", ["amax", "amin", "argmax", "argmin"])
def test_selecting_reductions_over_empty_dims_raise(device, name):
    """amax/amin/argmax/argmin over a zero-size dim have no answer: IndexError naming the op."""
    x = tp.zeros(0, 3, device=device)
    with pytest.raises(IndexError, match=name):
        getattr(x, name)(0)
    with pytest.raises((IndexError, RuntimeError), match=name):
        getattr(x, name)()
    # Reducing a non-empty dim of an empty tensor is fine and empty.
    _check(getattr(x, name)(1), np.zeros(0))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", EMPTY_SHAPES)
@pytest.mark.parametrize("name", ["cumsum", "cumprod"])
def test_scans_of_empty_inputs(device, name, shape, dtype):
    """cumsum/cumprod along every dim of an empty input: same shape, integer inputs give int64."""
    x = _tensor(shape, dtype, device)
    for dim in range(len(shape)):
        got = getattr(x, name)(dim)
        assert tuple(got.shape) == shape
        assert got.dtype is (tp.float32 if dtype == "float32" else tp.int64)
        _check(got, np.zeros(shape))


# --- matmul --------------------------------------------------------------------------------------

@pytest.mark.parametrize("a_shape,b_shape", [((0, 3), (3, 4)), ((3, 0), (0, 4)), ((3, 4), (4, 0)), ((0, 0), (0, 0)),
                                             ((0, 3, 4), (0, 4, 5)), ((2, 3, 0), (2, 0, 5)), ((0,), (0,)),
                                             ((3, 0), (0,)), ((0,), (0, 4))])
@pytest.mark.parametrize("dtype", ["float32", "int64"])
def test_matmul_with_empty_operands(device, a_shape, b_shape, dtype):
    """A zero inner dimension gives zeros; a zero outer dimension gives an empty result."""
    a, b = _tensor(a_shape, dtype, device), _tensor(b_shape, dtype, device)
    _check(a @ b, np.zeros(a_shape) @ np.zeros(b_shape))


def test_linear_and_addmm_with_empty_batches(device):
    """nn.functional.linear on a batch of zero rows; addmm over k=0 gives beta * input."""
    x = tp.zeros(0, 4, device=device)
    w, bias = tp.ones(3, 4, device=device), tp.ones(3, device=device)
    _check(F.linear(x, w, bias), np.zeros((0, 3)))
    base = tp.ones(2, 3, device=device)
    _check(tp.addmm(base, tp.zeros(2, 0, device=device), tp.zeros(0, 3, device=device), beta=2.0), np.full((2, 3), 2.0))


# --- indexing ------------------------------------------------------------------------------------

def test_indexing_with_empty_indices_and_sources(device):
    """index_select, gather, scatter, masks, nonzero and setitem with zero-size indices or sources."""
    x = tp.arange(12, dtype=tp.float32, device=device).reshape(3, 4)
    empty_index = tp.zeros(0, dtype=tp.int64, device=device)
    _check(x.index_select(0, empty_index), np.zeros((0, 4)))
    _check(x.index_select(1, empty_index), np.zeros((3, 0)))
    _check(x.gather(1, tp.zeros(3, 0, dtype=tp.int64, device=device)), np.zeros((3, 0)))
    _check(x[empty_index], np.zeros((0, 4)))
    _check(x[:, empty_index], np.zeros((3, 0)))
    _check(x[x > 100], np.zeros(0))
    _check(tp.nonzero(x > 100), np.zeros((0, 2)))
    _check(tp.zeros(0, 3, device=device).nonzero(), np.zeros((0, 2)))
    y = x.clone()
    y[empty_index] = 5.0
    y.scatter_(1, tp.zeros(3, 0, dtype=tp.int64, device=device), tp.zeros(3, 0, device=device))
    y.index_add_(0, empty_index, tp.zeros(0, 4, device=device))
    _check(y, np.arange(12.0).reshape(3, 4))
    e = tp.zeros(0, 4, device=device)
    _check(e.index_select(0, empty_index), np.zeros((0, 4)))
    _check(e.masked_fill(e > 0, 1.0), np.zeros((0, 4)))
    _check(e[:, 1:3], np.zeros((0, 2)))


def test_indexing_an_empty_dim_with_a_value_raises(device):
    """Any index into a zero-size dim is out of range: IndexError, never a read."""
    e = tp.zeros(0, 4, device=device)
    with pytest.raises(IndexError):
        _host(e.index_select(0, tp.tensor([0], device=device)))
    with pytest.raises(IndexError):
        _host(e[tp.tensor([0], device=device)])


# --- shape ops -----------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", EMPTY_SHAPES)
def test_shape_ops_on_empty_inputs(device, shape):
    """cat, stack, flip, roll, repeat, split, transpose, reshape and contiguous keep zero sizes."""
    x = _tensor(shape, "float32", device)
    host = np.zeros(shape)
    _check(tp.cat([x, x], 0), np.concatenate([host, host], 0))
    _check(tp.stack([x, x], -1), np.stack([host, host], -1))
    _check(x.flip(0), host)
    _check(x.roll(1, 0), host)
    _check(x.repeat(*([2] * len(shape))), np.tile(host, [2] * len(shape)))
    _check(x.reshape(-1), host.reshape(-1))
    _check(x.transpose(0, -1).contiguous(), np.ascontiguousarray(np.swapaxes(host, 0, -1)))
    assert [tuple(p.shape) for p in x.split(2, dim=-1)] == [p.shape for p in np.array_split(host, max(1, -(-shape[-1] // 2)), -1)][:len(x.split(2, dim=-1))]


def test_cat_skips_legacy_empty_but_checks_the_rest(device):
    """cat of a non-empty tensor with an empty 1-d one (PyTorch's legacy rule) keeps the data."""
    a = tp.ones(2, 3, device=device)
    _check(tp.cat([a, tp.zeros(0, device=device)], 0), np.ones((2, 3)))
    _check(tp.cat([tp.zeros(0, 3, device=device), a], 0), np.ones((2, 3)))


# --- sorting -------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", EMPTY_SHAPES)
def test_sort_topk_and_unique_of_empty_inputs(device, shape):
    """sort, argsort and topk(k=0) along every dim; unique of nothing is empty."""
    x = _tensor(shape, "float32", device)
    for dim in range(len(shape)):
        values, indices = x.sort(dim)
        _check(values, np.zeros(shape))
        _check(indices, np.zeros(shape), tp.int64)
        _check(x.argsort(dim, descending=True), np.zeros(shape))
        top, where = x.topk(0, dim)
        expected = list(shape)
        expected[dim] = 0
        _check(top, np.zeros(expected))
        _check(where, np.zeros(expected))
    _check(tp.unique(x), np.zeros(0))


# --- random --------------------------------------------------------------------------------------

def test_random_factories_with_zero_elements(device):
    """rand, randn, randint, randperm, bernoulli and dropout with no elements."""
    for t in (tp.rand(0, 3, device=device), tp.randn(3, 0, device=device), tp.randint(0, 5, (0,), device=device),
              tp.randperm(0, device=device), tp.bernoulli(tp.zeros(0, 2, device=device)),
              F.dropout(tp.zeros(4, 0, device=device), 0.5, training=True)):
        assert t.numel() == 0
        assert _host(t).size == 0


# --- nn ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(0, 5), (3, 0), (0, 2, 5), (2, 0, 5)])
def test_softmax_family_on_empty_inputs(device, shape):
    """softmax and log_softmax along every dim of an empty input."""
    x = _tensor(shape, "float32", device)
    for dim in range(len(shape)):
        _check(x.softmax(dim), np.zeros(shape))
        _check(F.log_softmax(x, dim), np.zeros(shape))


def test_layers_on_empty_batches(device):
    """layer_norm, conv2d, max/avg pooling, embedding and cross_entropy on a batch of zero."""
    _check(F.layer_norm(tp.zeros(0, 4, device=device), (4,)), np.zeros((0, 4)))
    w = tp.ones(2, 3, 3, 3, device=device)
    _check(F.conv2d(tp.zeros(0, 3, 5, 5, device=device), w, padding=1), np.zeros((0, 2, 5, 5)))
    _check(F.max_pool2d(tp.zeros(0, 2, 4, 4, device=device), 2), np.zeros((0, 2, 2, 2)))
    _check(F.avg_pool2d(tp.zeros(0, 2, 4, 4, device=device), 2), np.zeros((0, 2, 2, 2)))
    _check(F.max_pool2d(tp.zeros(2, 0, 4, 4, device=device), 2), np.zeros((2, 0, 2, 2)))
    table = tp.ones(5, 3, device=device)
    _check(F.embedding(tp.zeros(0, dtype=tp.int64, device=device), table), np.zeros((0, 3)))
    logits, target = tp.zeros(0, 4, device=device), tp.zeros(0, dtype=tp.int64, device=device)
    _check(F.cross_entropy(logits, target, reduction="sum"), np.asarray(0.0))
    _check(F.cross_entropy(logits, target, reduction="none"), np.zeros(0))
    assert np.isnan(_host(F.cross_entropy(logits, target)))  # mean over nothing, as PyTorch


def test_conv2d_with_zero_channels(device):
    """A convolution with no input channels gives the bias; no output channels, an empty result."""
    x = tp.zeros(2, 0, 4, 4, device=device)
    w = tp.zeros(3, 0, 3, 3, device=device)
    b = tp.tensor([1.0, 2.0, 3.0], device=device)
    _check(F.conv2d(x, w, b), np.broadcast_to(np.array([1.0, 2.0, 3.0])[None, :, None, None], (2, 3, 2, 2)))
    _check(F.conv2d(tp.zeros(2, 3, 4, 4, device=device), tp.zeros(0, 3, 3, 3, device=device)), np.zeros((2, 0, 2, 2)))


# --- autograd ------------------------------------------------------------------------------------

def test_backward_through_empty_tensors(device):
    """Gradients of reductions and matmuls over nothing are empty, or zero where the input is not."""
    x = tp.zeros(0, 3, device=device, requires_grad=True)
    w = tp.ones(3, 2, device=device, requires_grad=True)
    ((x @ w).sum() + x.mean(0).nan_to_num().sum() + x.softmax(1).sum()).backward()
    _check(x.grad, np.zeros((0, 3)))
    _check(w.grad, np.zeros((3, 2)))


@pytest.mark.parametrize("x_shape,w_shape", [((0, 3, 5, 5), (2, 3, 3, 3)), ((2, 0, 5, 5), (2, 0, 3, 3)),
                                             ((2, 3, 5, 5), (0, 3, 3, 3))])
def test_conv2d_backward_with_zero_sizes(device, x_shape, w_shape):
    """Gradients of a convolution with no images, no input channels or no output channels: zeros."""
    x = tp.ones(*x_shape, device=device, requires_grad=True)
    w = tp.ones(*w_shape, device=device, requires_grad=True)
    F.conv2d(x, w).sum().backward()
    _check(x.grad, np.zeros(x_shape))
    _check(w.grad, np.zeros(w_shape))
