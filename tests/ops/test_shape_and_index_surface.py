"""The joining, splitting, rearranging, product, scan, statistics, index-update and factory ops
tensorplug added for issue 13: values, dtypes and gradients against PyTorch 2.13 on every
backend, NumPy references, and their errors."""
import warnings

import numpy as np
import pytest

import tensorplug as tp
from device_params import every_device, torch_or_skip
from torch_reference import assert_same_error, compare

R = np.random.default_rng(11)


def f(*shape):
    return R.standard_normal(shape)


def ints(*shape):
    return R.integers(-5, 6, shape)


CASES = {
    "baddbmm": (lambda L, a, b, c: L.baddbmm(a, b, c, beta=0.5, alpha=2), [f(3, 5), f(2, 3, 4), f(2, 4, 5)]),
    "baddbmm_": (lambda L, a, b, c: a.clone().baddbmm_(b, c), [f(2, 3, 5), f(2, 3, 4), f(2, 4, 5)]),
    "addbmm": (lambda L, a, b, c: L.addbmm(a, b, c, beta=0.5, alpha=2), [f(3, 5), f(2, 3, 4), f(2, 4, 5)]),
    "addbmm beta 0 ignores NaN": (lambda L, a, b, c: L.addbmm((a * np.nan).detach(), b, c, beta=0), [f(3, 5), f(2, 3, 4), f(2, 4, 5)]),
    "addr": (lambda L, a, b, c: L.addr(a, b, c, beta=0.5, alpha=2), [f(3, 4), f(3), f(4)]),
    "addr int": (lambda L, a, b, c: L.addr(a, b, c), [ints(3, 4), ints(3), ints(4)]),
    "addr bool": (lambda L, a, b, c: L.addr(a > 0, b > 0, c > 0), [ints(3, 4), ints(3), ints(4)]),
    "addr promotes": (lambda L, a, b, c: L.addr(a, b, c), [f(3, 4), ints(3), ints(4)]),
    "cross": (lambda L, a, b: L.cross(a, b, dim=1), [f(2, 3), f(1, 3)]),
    "linalg.cross": (lambda L, a, b: L.linalg.cross(a, b), [f(4, 3), f(4, 3)]),
    "tensordot pairs": (lambda L, a, b: L.tensordot(a, b, dims=([1, 2], [1, 0])), [f(2, 3, 4), f(4, 3, 5)]),
    "tensordot int": (lambda L, a, b: L.tensordot(a, b), [f(2, 3, 4), f(3, 4, 5)]),
    "tensordot outer": (lambda L, a, b: L.tensordot(a, b, 0), [f(2, 3), f(3)]),
    "hstack": (lambda L, a, b: L.hstack([a, b]), [f(2, 1), f(2, 3)]),
    "hstack vectors": (lambda L, a, b: L.hstack((a, b)), [np.array(1.0), f(3)]),
    "vstack": (lambda L, a, b: L.vstack([a, b]), [f(3), f(2, 3)]),
    "row_stack": (lambda L, a, b: L.row_stack([a, b]), [f(3), f(3)]),
    "dstack": (lambda L, a, b: L.dstack([a, b]), [f(3), f(1, 3)]),
    "column_stack": (lambda L, a, b: L.column_stack([a, b]), [f(3), f(3, 2)]),
    "concat": (lambda L, a, b: L.concat([a, b], 1), [f(2, 1), f(2, 3)]),
    "concatenate": (lambda L, a, b: L.concatenate([a, b], axis=-1), [f(2, 1), f(2, 3)]),
    "tensor_split sections": (lambda L, a: L.tensor_split(a, 3, dim=1), [f(2, 7)]),
    "tensor_split indices": (lambda L, a: L.tensor_split(a, [2, 20, 1, -3]), [f(10)]),
    "tensor_split tensor": (lambda L, a: L.tensor_split(a, L.tensor([1, 4])), [f(10)]),
    "hsplit": (lambda L, a: L.hsplit(a, 2), [f(2, 4)]),
    "vsplit": (lambda L, a: a.vsplit([1]), [f(4, 2)]),
    "dsplit": (lambda L, a: L.dsplit(a, 2), [f(2, 2, 4)]),
    "take_along_dim": (lambda L, a: L.take_along_dim(a, L.tensor([[0, 2], [1, 1]]), 1), [f(2, 3)]),
    "take_along_dim broadcast": (lambda L, a: a.take_along_dim(L.tensor([[0], [0], [0]]), 0), [f(1, 3)]),
    "take_along_dim flat": (lambda L, a: L.take_along_dim(a, L.tensor([5, 0])), [f(2, 3)]),
    "repeat_interleave": (lambda L, a: L.repeat_interleave(a, 2, dim=-1), [f(2, 3)]),
    "repeat_interleave tensor": (lambda L, a: L.repeat_interleave(a, L.tensor([1, 0, 2]), dim=1), [f(2, 3)]),
    "repeat_interleave flat": (lambda L, a: a.repeat_interleave(3), [f(2, 2)]),
    "repeat_interleave counts": (lambda L: L.repeat_interleave(L.tensor([2, 0, 1])), []),
    "rot90 1": (lambda L, a: L.rot90(a, 1, [1, 2]), [f(2, 3, 4)]),
    "rot90 2": (lambda L, a: a.rot90(2), [f(3, 4)]),
    "rot90 -1": (lambda L, a: L.rot90(a, -1, [2, 0]), [f(2, 3, 4)]),
    "diag_embed": (lambda L, a: L.diag_embed(a, 1, 0, 2), [f(2, 3)]),
    "diag_embed negative offset": (lambda L, a: a.diag_embed(-1), [f(2, 3)]),
    "diagflat": (lambda L, a: L.diagflat(a, -1), [f(2, 2)]),
    "block_diag": (lambda L, a, b, c: L.block_diag(a, b, c), [f(2, 2), np.array(3.0), f(3)]),
    "block_diag promotes": (lambda L, a, b: L.block_diag(a, b), [ints(2, 2), f(1, 2)]),
    "cartesian_prod": (lambda L, a, b: L.cartesian_prod(a, b), [f(2), f(3)]),
    "combinations": (lambda L, a: L.combinations(a, 2), [f(4)]),
    "combinations replacement": (lambda L, a: L.combinations(a, 3, with_replacement=True), [f(3)]),
    "combinations too long": (lambda L, a: L.combinations(a, 4), [f(3)]),
    "cummax": (lambda L, a: L.cummax(a, 1), [np.array([[1.0, 3, 2, 3, np.nan, 0, 5, np.nan], [0, 0, -1, 2, 2, 1, 7, 7]])]),
    "cummax gradient": (lambda L, a: L.cummax(a, -1), [f(3, 9)]),
    "cummin int": (lambda L, a: L.cummin(a, 0), [ints(9, 2)]),
    "cummin gradient": (lambda L, a: a.cummin(0), [f(9, 2)]),
    "cummax empty": (lambda L, a: L.cummax(a, 1), [np.zeros((2, 0))]),
    "logcumsumexp": (lambda L, a: L.logcumsumexp(a, 1), [np.array([[-1000.0, 0, 3, -np.inf, 2], [1, 2, 3, 4, 5]])]),
    "logcumsumexp gradient": (lambda L, a: a.logcumsumexp(0), [f(7, 2)]),
    "trapezoid": (lambda L, a: L.trapezoid(a), [f(3, 4)]),
    "trapezoid x": (lambda L, a, b: L.trapezoid(a, b), [f(3, 4), f(4)]),
    "trapezoid x broadcast": (lambda L, a, b: L.trapezoid(a, b, dim=0), [f(3, 4), f(3, 4)]),
    "trapezoid int": (lambda L, a: L.trapezoid(a), [ints(5)]),
    "trapz dx": (lambda L, a: L.trapz(a, dx=2.0), [f(3, 4)]),
    "cumulative_trapezoid": (lambda L, a: L.cumulative_trapezoid(a, dx=0.5, dim=0), [f(3, 4)]),
    "cov": (lambda L, a: L.cov(a), [f(3, 5)]),
    "cov weights": (lambda L, a: L.cov(a, fweights=L.tensor([1, 2, 1, 3, 1]),
                                       aweights=L.tensor([0.5, 1, 1, 2, 0.1], dtype=L.float64)), [f(3, 5)]),
    "cov vector": (lambda L, a: L.cov(a, correction=0), [f(5)]),
    "corrcoef": (lambda L, a: L.corrcoef(a), [f(3, 5)]),
    "aminmax": (lambda L, a: L.aminmax(a), [f(3, 5)]),
    "aminmax dim": (lambda L, a: a.aminmax(dim=1, keepdim=True), [f(3, 5)]),
    "dist": (lambda L, a, b: L.dist(a, b, 3), [f(3, 5), f(5)]),
    "index_copy": (lambda L, a, b: L.index_copy(a, 1, L.tensor([2, 0]), b), [f(3, 4), f(3, 2)]),
    "index_copy_": (lambda L, a, b: a.clone().index_copy_(0, L.tensor([2]), b), [f(3, 4), f(1, 4)]),
    "index_fill": (lambda L, a: L.index_fill(a, 1, L.tensor([0, -1]), -2.0), [f(3, 4)]),
    "index_fill tensor": (lambda L, a, v: a.index_fill(1, L.tensor([0, 2]), v), [f(3, 4), np.array(3.0)]),
    "index_put": (lambda L, a, v: L.index_put(a, (L.tensor([0, 1]), L.tensor([1, 1])), v), [f(3, 4), f(2)]),
    "index_put accumulate": (lambda L, a, v: a.index_put((L.tensor([0, 0]),), v, accumulate=True), [f(3, 4), f(4)]),
    "masked_scatter": (lambda L, a, s: L.masked_scatter(a, L.tensor([True, False, True, True]), s), [f(2, 4), f(3, 3)]),
    "masked_scatter_": (lambda L, a, s: a.clone().masked_scatter_(L.tensor([[True], [False]]), s), [f(2, 4), f(3, 3)]),
    "put": (lambda L, a, s: L.put(a, L.tensor([3, -4, 1]), s), [f(2, 2), f(3)]),
    "put accumulate": (lambda L, a, s: a.put(L.tensor([1, 1]), s, accumulate=True), [f(2, 2), f(2)]),
    "put_": (lambda L, a, s: a.clone().put_(L.tensor([1, 0]), s), [f(2, 2), f(2)]),
    "nonzero_static pads": (lambda L, a: L.nonzero_static(a, size=9), [ints(2, 3)]),
    "nonzero_static truncates": (lambda L, a: L.nonzero_static(a, size=1, fill_value=-7), [ints(2, 3)]),
    "fill": (lambda L, a: L.fill(a, 3), [f(2, 3)]),
    "fill tensor": (lambda L, a, v: L.fill(a, v), [f(2, 3), np.array(2.0)]),
    "isin": (lambda L, a, b: L.isin(a, b), [ints(10), ints(4)]),
    "isin invert nan": (lambda L, a, b: L.isin(a, b, invert=True), [np.array([0.0, 1, np.nan, 2]), np.array([0.0, 1, np.nan])]),
    "isin number": (lambda L, a: L.isin(a, 2), [ints(6)]),
    "tril_indices": (lambda L: L.tril_indices(4, 3, -1), []),
    "triu_indices": (lambda L: L.triu_indices(3, 4, 1), []),
    "unravel_index": (lambda L: L.unravel_index(L.tensor([5, 7, 9, -1]), (2, 4)), []),
    "vander": (lambda L, a: L.vander(a, 4).detach(), [f(3)]),  # (PyTorch's own vander gradient raises)
    "vander int increasing": (lambda L, a: L.vander(a, increasing=True), [ints(3)]),
    "hann_window": (lambda L: L.hann_window(7), []),
    "hann_window symmetric": (lambda L: L.hann_window(7, False, dtype=L.float64), []),
    "hamming_window": (lambda L: L.hamming_window(6, True, 0.6, 0.4), []),
    "blackman_window": (lambda L: L.blackman_window(5, dtype=L.float64), []),
    "bartlett_window": (lambda L: L.bartlett_window(6), []),
    "kaiser_window": (lambda L: L.kaiser_window(6, True, 5.0, dtype=L.float64), []),
    "windows of 0 and 1": (lambda L: (L.hann_window(0), L.kaiser_window(1)), []),
    "scalar_tensor": (lambda L: L.scalar_tensor(3), []),
}


@pytest.mark.parametrize("device", every_device())
@pytest.mark.parametrize("case", list(CASES))
def test_matches_pytorch(case, device):
    """Values, dtypes and gradients as PyTorch's; factories and index arguments are made with
    each library's own ``tensor`` (on the CPU for PyTorch), inputs on ``device`` for tensorplug."""
    torch = torch_or_skip()
    fn, arrays = CASES[case]
    if not arrays:
        with tp.device(device):
            got = fn(tp)
        expected = fn(torch)
        got, expected = (got, expected) if isinstance(got, tuple) else ((got,), (expected,))
        for g, e in zip(got, expected):
            assert g.dtype.name == str(e.dtype).removeprefix("torch.") and tuple(g.shape) == tuple(e.shape)
            np.testing.assert_allclose(g.cpu().numpy(), e.numpy(), rtol=1e-6, atol=1e-7)
        return
    with tp.device(device):  # index tensors made inside the expression land on the device too
        compare(torch, fn, arrays, device, rtol=1e-9, atol=1e-12)


def test_range_warns_and_includes_the_end():
    """tp.range is PyTorch's deprecated inclusive range, with its warning."""
    with pytest.warns(UserWarning, match="torch.range is deprecated"):
        assert tp.range(0, 1, 0.25).tolist() == [0.0, 0.25, 0.5, 0.75, 1.0]


def test_cross_without_dim_warns_and_uses_the_first_dim_of_size_3():
    """As PyTorch: a deprecation warning, then the first dim of size 3."""
    a, b = tp.tensor(np.eye(3)), tp.tensor(np.roll(np.eye(3), 1, 0))
    with pytest.warns(UserWarning, match="without specifying the dim"):
        got = tp.cross(a, b)
    np.testing.assert_array_equal(got.numpy(), np.cross(np.eye(3), np.roll(np.eye(3), 1, 0), axis=0))


def test_cov_warns_without_degrees_of_freedom():
    with pytest.warns(UserWarning, match="degrees of freedom is <= 0"):
        assert np.isnan(tp.cov(tp.ones(2, 1)).numpy()).all()


def test_empty_strided_has_the_strides():
    t = tp.empty_strided((2, 3), (1, 2))
    assert t.shape == (2, 3) and t.stride() == (1, 2)
    assert tp.empty_strided((0, 3), (3, 1)).numel() == 0


def test_dtype_queries_match_pytorch():
    torch = torch_or_skip()
    pairs = [(tp.tensor([1]), 1.0), (tp.tensor(1.0), tp.tensor([1])), (2, 3.0),
             (tp.tensor([1], dtype=tp.int8), tp.tensor(1000)), (tp.tensor([True]), 2)]
    for a, b in pairs:
        conv = [torch.tensor(x.tolist(), dtype=getattr(torch, x.dtype.name)) if isinstance(x, tp.Tensor) else x for x in (a, b)]
        assert tp.result_type(a, b).name == str(torch.result_type(*conv)).removeprefix("torch.")
    names = ["bool", "uint8", "int8", "int32", "int64", "float16", "float32", "float64", "complex64"]
    for x in names:
        for y in names:
            assert tp.can_cast(getattr(tp, x), getattr(tp, y)) == torch.can_cast(getattr(torch, x), getattr(torch, y)), (x, y)
    assert tp.is_nonzero(tp.tensor([2])) and not tp.tensor([0.0]).is_nonzero()
    assert not tp.is_same_size(tp.ones(2), tp.ones(2, 1)) and tp.ones(2).is_same_size(tp.zeros(2))
    assert not tp.is_signed(tp.ones(1, dtype=tp.uint8)) and tp.ones(1).is_signed()


@pytest.mark.parametrize("device", every_device())
def test_samplers_moments(device):
    """normal, poisson and binomial draw from tensorplug's generators with the right means and
    variances (both sampling methods of poisson and binomial), reproducibly for a seed."""
    n = 20000
    tp.manual_seed(3)
    rates = tp.tensor([0.5, 4.0, 30.0, 500.0], dtype=tp.float64, device=device).repeat(n, 1)
    counts = tp.poisson(rates).cpu().numpy()
    assert (counts == np.floor(counts)).all() and (counts >= 0).all()
    np.testing.assert_allclose(counts.mean(0), [0.5, 4.0, 30.0, 500.0], rtol=0.03)
    np.testing.assert_allclose(counts.var(0), [0.5, 4.0, 30.0, 500.0], rtol=0.08)
    trials = tp.tensor([5.0, 40.0, 1000.0, 1000.0], dtype=tp.float64, device=device).repeat(n, 1)
    probs = tp.tensor([0.3, 0.9, 0.02, 0.6], dtype=tp.float64, device=device).repeat(n, 1)
    draws = tp.binomial(trials, probs).cpu().numpy()
    assert (draws >= 0).all() and (draws <= trials.cpu().numpy()).all()
    means = np.array([1.5, 36.0, 20.0, 600.0])
    np.testing.assert_allclose(draws.mean(0), means, rtol=0.03)
    np.testing.assert_allclose(draws.var(0), means * (1 - np.array([0.3, 0.9, 0.02, 0.6])), rtol=0.08)
    normal = tp.normal(tp.full((n,), 2.0, device=device), tp.full((n,), 3.0, device=device)).cpu().numpy()
    assert abs(normal.mean() - 2) < 0.1 and abs(normal.std() - 3) < 0.1
    tp.manual_seed(5)
    first = tp.poisson(rates[:3]).cpu().numpy()
    tp.manual_seed(5)
    np.testing.assert_array_equal(tp.poisson(rates[:3]).cpu().numpy(), first)


def test_normal_passes_no_gradient():
    """As PyTorch: the sample is a graph node whose gradients to mean and std are 0."""
    mean, std = tp.zeros(3, requires_grad=True), tp.ones(3, requires_grad=True)
    tp.normal(mean, std).sum().backward()
    assert mean.grad.tolist() == [0.0] * 3 and std.grad.tolist() == [0.0] * 3


ERRORS = [
    (lambda L: L.baddbmm(L.zeros(3, 5), L.ones(2, 3, 4), L.ones(2, 3, 5)), RuntimeError, "Expected size for first two dimensions of batch2"),
    (lambda L: L.addbmm(L.zeros(3, 5), L.ones(2, 3, 4), L.ones(3, 4, 5)), RuntimeError, "same number of batches"),
    (lambda L: L.addr(L.zeros(3, 3, dtype=L.int64), L.ones(3, dtype=L.int64), L.ones(3, dtype=L.int64), alpha=0.5), RuntimeError, "must not be a floating point"),
    (lambda L: L.tensordot(L.ones(2, 3), L.ones(4, 4), dims=1), RuntimeError, "contracted dimensions need to match"),
    (lambda L: L.tensordot(L.ones(2, 3), L.ones(3, 4), dims=-1), RuntimeError, "expects dims >= 0"),
    (lambda L: L.cross(L.ones(2, 4), L.ones(2, 4), dim=1), RuntimeError, "must have length 3"),
    (lambda L: L.hstack([]), RuntimeError, "non-empty"),
    (lambda L: L.vstack(L.ones(2)), TypeError, "tuple of Tensors"),
    (lambda L: L.tensor_split(L.tensor(1), 2), RuntimeError, "at least a 1-dimensional tensor"),
    (lambda L: L.tensor_split(L.ones(4), 0), RuntimeError, "number of sections must be larger than 0"),
    (lambda L: L.hsplit(L.ones(2, 4), 3), RuntimeError, "not divisible by the split_size 3"),
    (lambda L: L.vsplit(L.ones(4), 2), RuntimeError, "at least 2 dimension"),
    (lambda L: L.take_along_dim(L.ones(2, 3), L.tensor([0]), 1), RuntimeError, "same number of dimensions"),
    (lambda L: L.repeat_interleave(L.ones(2, 3), L.tensor([-1, 2]), dim=0), RuntimeError, "repeats can not be negative"),
    (lambda L: L.repeat_interleave(L.ones(2, 3), L.tensor([1, 2, 3]), dim=0), RuntimeError, "same size as input along dim"),
    (lambda L: L.rot90(L.ones(2, 3), 1, [0, 0]), RuntimeError, "rotation dims to be different"),
    (lambda L: L.diag_embed(L.ones(2, 3), dim1=1, dim2=1), RuntimeError, "diagonal dimensions cannot be identical"),
    (lambda L: L.block_diag(L.ones(1, 1, 1)), RuntimeError, "2 or fewer dimensions"),
    (lambda L: L.combinations(L.ones(2, 2)), RuntimeError, "Expect a 1D vector"),
    (lambda L: L.tril_indices(-1, 3), RuntimeError, "row must be non-negative"),
    (lambda L: L.vander(L.ones(2, 2)), RuntimeError, "one-dimensional"),
    (lambda L: L.cov(L.ones(2, 2, 2)), RuntimeError, "two or fewer dimensions"),
    (lambda L: L.aminmax(L.ones(0)), RuntimeError, "cannot compute aminmax over an empty dimension"),
    (lambda L: L.index_copy(L.zeros(3, 4), 0, L.tensor([5]), L.ones(1, 4)), IndexError, "out of bounds"),
    (lambda L: L.index_copy(L.zeros(3, 4), 0, L.tensor([1]), L.ones(1, 4, dtype=L.float64)), RuntimeError, "same dtype"),
    (lambda L: L.index_fill(L.zeros(3), 0, L.tensor([0]), L.tensor([2.0])), RuntimeError, "0-dimensional value tensor"),
    (lambda L: L.masked_scatter(L.zeros(2, 3), L.ones(2, 3, dtype=L.bool), L.ones(2)), RuntimeError, "Number of elements of source"),
    (lambda L: L.masked_scatter(L.zeros(3), L.tensor([1, 0, 1]), L.ones(3)), RuntimeError, "only supports boolean masks"),
    (lambda L: L.put(L.zeros(2, 2), L.tensor([4]), L.ones(1)), IndexError, None),
    (lambda L: L.fill(L.zeros(2), L.tensor([3.0])), RuntimeError, "0-dimension value tensor"),
    (lambda L: L.is_nonzero(L.tensor([1, 2])), RuntimeError, "more than one value is ambiguous"),
    (lambda L: L.empty_strided((2, 3), (1,)), RuntimeError, "must match dimensionality of strides"),
    (lambda L: L.hann_window(-1), RuntimeError, "non-negative window_length"),
    (lambda L: L.normal(0.0, -1.0, size=(2,)), RuntimeError, "std >= 0.0"),
    (lambda L: L.poisson(L.tensor([1.0, -1.0])), RuntimeError, "invalid Poisson rate"),
    (lambda L: L.binomial(L.tensor([5]), L.tensor([0.5])), ValueError, "floating-point dtypes for count"),
]


@pytest.mark.parametrize("index", range(len(ERRORS)))
def test_errors_match_pytorch(index):
    """The same exception type as PyTorch, with its words, raised before computing."""
    torch = torch_or_skip()
    call, error, words = ERRORS[index]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (cross, cov, range warn before they raise)
        assert_same_error(torch, call, error, words)
