"""Sorting ops (sort primitive, argsort, topk, kthvalue, msort, median, mode, unique) against NumPy
and PyTorch."""
import numpy as np
import pytest

import tensorplug as tp
from tensorplug.backends.api import backend_storage
from ops_helpers import as_layout, check

LAYOUTS = ["contiguous", "transposed", "sliced"]
SORT_DTYPES = [tp.float32, tp.float64, tp.float16, tp.bfloat16, tp.int64, tp.int32, tp.int8, tp.uint8, tp.bool]


def _values(rng, dtype, shape):
    """Values with many ties, so stability is exercised."""
    if dtype is tp.bool:
        return rng.integers(0, 2, shape).astype(bool)
    if dtype is tp.uint8:
        return rng.integers(0, 6, shape).astype(np.uint8)
    raw = rng.integers(-5, 6, shape)
    if dtype is tp.bfloat16:
        return raw.astype(np.float32)
    return raw.astype(np.dtype(dtype.name))


@pytest.mark.parametrize("dtype", SORT_DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_sort_matches_numpy_stable(dtype, layout, dim, rng):
    """sort/argsort equal NumPy's stable sort for every dtype, layout and dim, both directions."""
    a = _values(rng, dtype, (4, 5, 6))
    x = as_layout(a, layout).to(dtype)
    values, indices = tp.sort(x, dim)
    order = np.argsort(a, axis=dim, kind="stable")
    check(indices, order, dtype=tp.int64)
    check(values, np.take_along_axis(a, order, dim), dtype=dtype)
    # Descending and stable: the order of -a (ties keep their original order).
    key = ~a if dtype is tp.bool else (-a.astype(np.float64))
    order = np.argsort(key, axis=dim, kind="stable")
    values, indices = x.sort(dim=dim, descending=True, stable=True)
    check(indices, order)
    check(values, np.take_along_axis(a, order, dim))
    check(tp.argsort(x, dim), np.argsort(a, axis=dim, kind="stable"))


def test_sort_places_nan_last_ascending_and_first_descending():
    """NaN counts as the largest value, as in PyTorch."""
    nan = float("nan")
    x = tp.tensor([3.0, nan, 1.0, -float("inf"), nan, 2.0])
    assert tp.sort(x).indices.tolist() == [3, 2, 5, 0, 1, 4]
    assert tp.sort(x, descending=True).indices.tolist() == [1, 4, 0, 5, 2, 3]
    assert np.isnan(tp.sort(x).values.numpy()[-2:]).all()


def test_sort_empty_and_0d():
    """Empty tensors give empty results; a 0-d tensor sorts to itself with index 0."""
    v, i = tp.sort(tp.ones(3, 0), dim=1)
    assert v.shape == (3, 0) and i.shape == (3, 0) and i.dtype is tp.int64
    v, i = tp.sort(tp.tensor(2.5), dim=-1)
    assert v.shape == () and v.item() == 2.5 and i.item() == 0


def test_sort_large_rows_use_threads_and_agree():
    """Many long rows (the parallel path) give NumPy's stable order."""
    a = np.random.default_rng(0).integers(0, 50, (64, 2000)).astype(np.float32)
    values, indices = tp.sort(tp.tensor(a), dim=1)
    check(indices, np.argsort(a, axis=1, kind="stable"))
    check(values, np.sort(a, axis=1))


def test_sort_out_and_errors():
    """out= receives the result; a bad dim raises IndexError naming sort."""
    x = tp.tensor([[2.0, 1.0]])
    values, indices = tp.empty(1, 2), tp.empty(1, 2, dtype=tp.int64)
    result = tp.sort(x, out=(values, indices))
    assert result.values is values and values.tolist() == [[1.0, 2.0]] and indices.tolist() == [[1, 0]]
    with pytest.raises(IndexError, match="sort"):
        tp.sort(x, dim=2)
    with pytest.raises(IndexError, match="argsort"):
        tp.argsort(x, dim=-3)
    with pytest.raises(TypeError):
        tp.sort([1, 2])


def test_sort_values_gradient():
    """The gradient of sorted values scatters back through the indices."""
    x = tp.randn(3, 4, dtype=tp.float64, requires_grad=True)
    assert tp.autograd.gradcheck(lambda t: tp.sort(t, 0).values, (x,))
    assert tp.autograd.gradcheck(lambda t: tp.sort(t, -1, descending=True).values, (x,))
    assert tp.autograd.gradcheck(lambda t: tp.topk(t, 2, dim=1).values, (x,))


def test_sort_kernel_rejects_bad_operands():
    """The C++ entry point validates its operands instead of crashing."""
    from tensorplug.backends.cpu._load import load_kernels

    k = load_kernels()
    x = tp.ones(4)
    op = (backend_storage(x), 0, (1,))
    idx = tp.empty(4, dtype=tp.int64)
    iop = (backend_storage(idx), 0, (1,))
    code = dict(k.DTYPES)["float32"]
    with pytest.raises(ValueError):
        k.sort(code, (4,), op, iop, op, 1, False, False)  # dim out of range
    with pytest.raises(ValueError):
        k.sort(code, (8,), op, iop, op, 0, False, False)  # operand too small for the shape
    with pytest.raises(TypeError):
        k.sort(code, (4,), op, iop, op, 0, 1, False)  # descending must be a bool


@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("dim", [0, -1])
def test_topk_matches_torch(largest, dim, rng):
    """topk values and indices equal PyTorch's on distinct values (both directions)."""
    torch = pytest.importorskip("torch")
    a = rng.permutation(60).reshape(6, 10).astype(np.float32)
    x = as_layout(a, "transposed")
    got = tp.topk(x, 3, dim=dim, largest=largest)
    want = torch.topk(torch.tensor(a), 3, dim=dim, largest=largest)
    check(got.values, want.values)
    check(got.indices, want.indices)
    assert x.topk(0, dim).values.shape[dim] == 0


def test_topk_and_kthvalue_errors():
    """k out of range is a RuntimeError; a bad dim an IndexError naming the op."""
    x = tp.ones(2, 3)
    with pytest.raises(RuntimeError, match="topk"):
        tp.topk(x, 4)
    with pytest.raises(IndexError, match="topk"):
        tp.topk(x, 1, dim=2)
    with pytest.raises(RuntimeError, match="kthvalue"):
        tp.kthvalue(x, 0)
    with pytest.raises(IndexError, match="kthvalue"):
        tp.kthvalue(x, 1, dim=-3)


@pytest.mark.parametrize("keepdim", [False, True])
def test_kthvalue_and_msort(keepdim, rng):
    """kthvalue is the k-th smallest (1-based); msort sorts along dim 0."""
    torch = pytest.importorskip("torch")
    a = rng.permutation(24).reshape(2, 3, 4).astype(np.float64)
    got = tp.kthvalue(tp.tensor(a), 2, dim=1, keepdim=keepdim)
    want = torch.kthvalue(torch.tensor(a), 2, dim=1, keepdim=keepdim)
    check(got.values, want.values)
    check(got.indices, want.indices)
    check(tp.msort(tp.tensor(a)), np.sort(a, axis=0))


@pytest.mark.parametrize("dtype", [tp.float32, tp.float64, tp.int64])
def test_median_lower_median_like_torch(dtype, rng):
    """median returns the lower median (values and indices with dim), NaN for lines with NaN."""
    torch = pytest.importorskip("torch")
    a = rng.permutation(40).reshape(5, 8).astype(np.dtype(dtype.name))
    for dim in (0, 1, -1):
        got, want = tp.median(tp.tensor(a), dim), torch.median(torch.tensor(a), dim)
        check(got.values, want.values)
        check(got.indices, want.indices)
    check(tp.median(tp.tensor(a)), torch.median(torch.tensor(a)))
    assert tp.tensor(a).median(0, keepdim=True).values.shape == (1, 8)
    if dtype.is_floating_point:
        b = a.copy()
        b[1, 3] = np.nan
        got, want = tp.median(tp.tensor(b), 1), torch.median(torch.tensor(b), 1)
        check(got.values, want.values)
        check(got.indices, want.indices)
        check(tp.nanmedian(tp.tensor(b), 1).values, torch.nanmedian(torch.tensor(b), 1).values)
        assert np.isnan(tp.median(tp.tensor(b)).item())


def test_median_errors():
    """An empty reduced dim raises IndexError; bad dims name the op."""
    with pytest.raises(IndexError, match="median"):
        tp.median(tp.ones(2, 0), 1)
    with pytest.raises(IndexError, match="median"):
        tp.median(tp.ones(2), 1)


def test_mode_matches_torch(rng):
    """mode picks the most frequent value (smallest on ties) and PyTorch's index."""
    torch = pytest.importorskip("torch")
    a = rng.integers(0, 4, (5, 9))
    for dim in (0, 1):
        got, want = tp.mode(tp.tensor(a), dim), torch.mode(torch.tensor(a), dim)
        check(got.values, want.values)
        check(got.indices, want.indices)
    assert tp.tensor(a).mode(1, keepdim=True).values.shape == (5, 1)


@pytest.mark.parametrize("dtype", [tp.float32, tp.int64, tp.bool])
def test_unique_flat(dtype, rng):
    """unique with inverse and counts equals NumPy's np.unique."""
    a = _values(rng, dtype, (4, 6))
    x = as_layout(a, "sliced").to(dtype)
    values, inverse, counts = tp.unique(x, return_inverse=True, return_counts=True)
    want, want_inverse, want_counts = np.unique(a, return_inverse=True, return_counts=True)
    check(values, want, dtype=dtype)
    check(inverse, want_inverse.reshape(a.shape))
    check(counts, want_counts)
    check(x.unique(), want)
    assert tp.unique(tp.ones(0)).shape == (0,)


def test_unique_dim():
    """unique along a dim finds distinct slices in lexicographic order."""
    torch = pytest.importorskip("torch")
    a = np.array([[1, 2, 1, 0], [0, 5, 0, 0], [1, 2, 1, 3]])
    for dim in (0, 1, -1):
        got = tp.unique(tp.tensor(a), dim=dim, return_inverse=True, return_counts=True)
        want = torch.unique(torch.tensor(a), dim=dim, return_inverse=True, return_counts=True)
        for g, w in zip(got, want):
            check(g, w)
    with pytest.raises(IndexError, match="unique"):
        tp.unique(tp.tensor(a), dim=2)
