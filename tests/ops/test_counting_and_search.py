"""searchsorted, bucketize, bincount and histc: NumPy float64 references on every backend, PyTorch
2.13 for dtypes, edge cases and errors (issue 13)."""
import numpy as np
import pytest

import tensorplug as tp
import tensorplug.frontend.ops.searching as searching
from device_params import every_device, torch_or_skip


def _np(t):
    return t.cpu().numpy()


@pytest.mark.parametrize("device", every_device())
@pytest.mark.parametrize("side", ["left", "right"])
@pytest.mark.parametrize("path", ["pairwise", "merged"])
def test_searchsorted_matches_numpy(device, side, path, monkeypatch, rng):
    """1-D boundaries with many ties, searched for values that hit them, as np.searchsorted;
    the all-pairs comparison and the merged sort agree."""
    monkeypatch.setattr(searching, "PAIRWISE_LIMIT", 0 if path == "merged" else 1 << 40)
    boundaries = np.sort(rng.integers(-5, 6, 40)).astype(np.float64)
    values = rng.integers(-7, 8, (3, 7)).astype(np.float64)
    got = tp.searchsorted(tp.tensor(boundaries, device=device), tp.tensor(values, device=device), side=side)
    assert got.dtype is tp.int64 and got.device.type == device
    np.testing.assert_array_equal(_np(got), np.searchsorted(boundaries, values, side=side))


@pytest.mark.parametrize("device", every_device())
@pytest.mark.parametrize("path", ["pairwise", "merged"])
def test_searchsorted_row_by_row_with_sorter(device, path, monkeypatch, rng):
    """N-D boundaries are searched row by row; a sorter sorts unsorted boundaries first; int32
    results with out_int32."""
    monkeypatch.setattr(searching, "PAIRWISE_LIMIT", 0 if path == "merged" else 1 << 40)
    rows = rng.normal(size=(2, 3, 9)).astype(np.float32)
    values = rng.normal(size=(2, 3, 5)).astype(np.float32)
    sorter = np.argsort(rows, -1)
    got = tp.searchsorted(tp.tensor(rows, device=device), tp.tensor(values, device=device), right=True,
                          sorter=tp.tensor(sorter, device=device), out_int32=True)
    assert got.dtype is tp.int32 and got.shape == (2, 3, 5)
    ordered = np.take_along_axis(rows, sorter, -1)
    expected = np.stack([np.searchsorted(r, v, side="right") for r, v in zip(ordered.reshape(6, 9), values.reshape(6, 5))])
    np.testing.assert_array_equal(_np(got), expected.reshape(2, 3, 5))


@pytest.mark.parametrize("device", every_device())
def test_searchsorted_nan_values_go_past_the_end_and_scalars_give_0d(device):
    """NaN values get len(boundaries), as PyTorch's binary search gives them; a Python number
    searches one value and gives a 0-d result; empty inputs give empty or zero results."""
    boundaries = tp.tensor([1.0, 3.0, 5.0], device=device)
    assert tp.searchsorted(boundaries, tp.tensor([float("nan"), 3.0], device=device)).tolist() == [3, 1]
    assert tp.searchsorted(boundaries, tp.tensor([float("nan")], device=device), right=True).tolist() == [3]
    scalar = tp.searchsorted(boundaries, 3.5, right=True)
    assert scalar.shape == () and scalar.item() == 2
    assert tp.searchsorted(boundaries, tp.zeros(0, device=device)).shape == (0,)
    assert tp.searchsorted(tp.zeros(0, device=device), tp.tensor([1.0, 2.0], device=device)).tolist() == [0, 0]


@pytest.mark.parametrize("device", every_device())
def test_bucketize_matches_numpy_digitize(device, rng):
    """bucketize(x, b) is np.digitize(x, b, right=True) for right=False (PyTorch's convention:
    b[i-1] < x <= b[i]), and np.digitize(x, b) for right=True; integer values with float
    boundaries promote."""
    boundaries = np.array([-2.0, -0.5, 0.0, 1.0, 3.0])
    values = rng.integers(-4, 5, (4, 6))
    b, x = tp.tensor(boundaries, device=device), tp.tensor(values, device=device)
    np.testing.assert_array_equal(_np(tp.bucketize(x, b)), np.digitize(values, boundaries, right=True))
    np.testing.assert_array_equal(_np(tp.bucketize(x, b, right=True)), np.digitize(values, boundaries))
    assert tp.bucketize(3, b).item() == 4


def test_searchsorted_and_bucketize_match_torch(rng):
    """Mixed dtypes, both sides and the N-D form give PyTorch's indices."""
    torch = torch_or_skip()
    boundaries = np.sort(rng.integers(0, 10, (3, 8)), 1)
    values = rng.integers(-1, 11, (3, 5)).astype(np.float32)
    for right in (False, True):
        ours = tp.searchsorted(tp.tensor(boundaries), tp.tensor(values), right=right)
        theirs = torch.searchsorted(torch.tensor(boundaries), torch.tensor(values), right=right)
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
        ours = tp.bucketize(tp.tensor(values), tp.tensor(boundaries[0]), right=right, out_int32=True)
        theirs = torch.bucketize(torch.tensor(values), torch.tensor(boundaries[0]), right=right, out_int32=True)
        assert str(ours.dtype).split(".")[1] == str(theirs.dtype).split(".")[1]
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_searchsorted_errors_name_the_problem():
    """PyTorch's checks: side/right conflicts, bad sides, shapes, sorter dtype/shape/range, 0-d
    boundaries, bool, and out= of the wrong dtype."""
    b = tp.tensor([1.0, 3.0, 5.0])
    cases = [
        (lambda: tp.searchsorted(b, tp.tensor([3.0]), side="left", right=True), "side and right can't be set to opposites"),
        (lambda: tp.searchsorted(b, tp.tensor([3.0]), side="middle"), "side can only be 'left' or 'right'"),
        (lambda: tp.searchsorted(tp.ones(1, 3), tp.ones(2)), r"boundaries tensor \[1, 3\] and input value tensor \[2\]"),
        (lambda: tp.searchsorted(tp.tensor(1.0), tp.ones(2)), "positive dimension"),
        (lambda: tp.searchsorted(b, tp.ones(1), sorter=tp.tensor([2, 1, 0], dtype=tp.int32)), "sorter must be a tensor of long"),
        (lambda: tp.searchsorted(b, tp.ones(1), sorter=tp.tensor([2, 1])), "boundary and sorter must have the same size"),
        (lambda: tp.searchsorted(b, tp.ones(1), sorter=tp.tensor([2, 1, 5])), "sorter index out of range"),
        (lambda: tp.searchsorted(tp.ones(2, 3), 1.0), "scalar only when boundaries tensor dimension is 1"),
        (lambda: tp.searchsorted(tp.tensor([True]), tp.tensor([True])), "not implemented for 'Bool'"),
        (lambda: tp.searchsorted(b, tp.ones(2), out=tp.empty(2)), "output tensor's dtype is wrong"),
        (lambda: tp.bucketize(tp.ones(2), tp.ones(1, 3)), r"boundaries tensor must be 1 dimension, but got dim\(2\)"),
    ]
    for call, message in cases:
        with pytest.raises(RuntimeError, match=message):
            call()
    with pytest.raises(TypeError, match="searchsorted"):
        tp.searchsorted([1, 2], tp.ones(2))


@pytest.mark.parametrize("device", every_device())
def test_bincount_counts_and_sums_weights(device, rng):
    """Counts (int64) and weighted sums equal np.bincount, with minlength; float32 weights stay
    float32 and other weights sum in float64, as PyTorch."""
    values = rng.integers(0, 7, 50)
    x = tp.tensor(values, device=device)
    counts = tp.bincount(x)
    assert counts.dtype is tp.int64
    np.testing.assert_array_equal(_np(counts), np.bincount(values))
    np.testing.assert_array_equal(_np(x.bincount(minlength=9)), np.bincount(values, minlength=9))
    weights = rng.normal(size=50)
    got = tp.bincount(x, tp.tensor(weights, dtype=tp.float32, device=device), minlength=10)
    assert got.dtype is tp.float32 and got.shape == (10,)
    np.testing.assert_allclose(_np(got), np.bincount(values, weights.astype(np.float32), minlength=10), rtol=1e-5, atol=1e-5)
    got = tp.bincount(x.int(), tp.tensor(values, device=device))
    assert got.dtype is tp.float64
    np.testing.assert_array_equal(_np(got), np.bincount(values, values.astype(np.float64)))
    assert tp.bincount(tp.zeros(0, dtype=tp.int64, device=device), minlength=3).tolist() == [0, 0, 0]
    assert tp.bincount(tp.zeros(0, dtype=tp.int64, device=device)).shape == (0,)


def test_bincount_matches_torch_dtypes_and_errors():
    """Result dtypes for every weight dtype equal PyTorch's; bad inputs raise RuntimeError."""
    torch = torch_or_skip()
    for name in ("float32", "float64", "float16", "int64"):
        ours = tp.bincount(tp.tensor([1, 2, 2]), tp.tensor([1, 2, 3]).to(getattr(tp, name)))
        theirs = torch.bincount(torch.tensor([1, 2, 2]), torch.tensor([1, 2, 3]).to(getattr(torch, name)))
        assert ours.dtype.name == str(theirs.dtype).split(".")[1]
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    for call, message in [
        (lambda: tp.bincount(tp.tensor([-1, 2])), "non-negative integral"),
        (lambda: tp.bincount(tp.tensor([[1, 2]])), "1-d non-negative integral"),
        (lambda: tp.bincount(tp.tensor([1.0, 2.0])), "integral"),
        (lambda: tp.bincount(tp.tensor([True])), "integral"),
        (lambda: tp.bincount(tp.tensor([1]), minlength=-1), "minlength should be >= 0"),
        (lambda: tp.bincount(tp.tensor([1, 2]), tp.tensor([1.0])), "same length as input"),
    ]:
        with pytest.raises(RuntimeError, match=message):
            call()


def _histc_reference(values, bins, low, high):
    """np.histogram with the last bin closed, values outside [low, high] dropped."""
    counts, _ = np.histogram(values[(values >= low) & (values <= high)], bins=bins, range=(low, high))
    return counts.astype(np.float64)


@pytest.mark.parametrize("device", every_device())
@pytest.mark.parametrize("dtype", [tp.float32, tp.float64])
def test_histc_matches_numpy_histogram(device, dtype, rng):
    """A given range drops values outside it; without one the data's range is used; the right
    edge falls in the last bin."""
    values = rng.normal(size=500)
    x = tp.tensor(values, dtype=dtype, device=device)
    values = _np(x).astype(np.float64)
    got = tp.histc(x, bins=9, min=-1, max=1.5)
    assert got.dtype is dtype and got.shape == (9,)
    np.testing.assert_array_equal(_np(got), _histc_reference(values, 9, -1, 1.5))
    np.testing.assert_array_equal(_np(x.histc(9, -1, 1.5)), _np(got))
    got = tp.histc(x, bins=13)
    np.testing.assert_array_equal(_np(got), _histc_reference(values, 13, values.min(), values.max()))
    assert tp.histc(tp.tensor([0.0, 1.0, 2.0], dtype=dtype, device=device), bins=2, min=0, max=2).tolist() == [1.0, 2.0]
    assert tp.histc(tp.tensor([1.0, float("nan"), 3.0], dtype=dtype, device=device), bins=2, min=0, max=4).tolist() == [1.0, 1.0]


def test_histc_matches_torch_edge_cases_and_errors():
    """Constant data widens to [v - 1, v + 1]; float16 keeps its dtype; empty input counts
    nothing; PyTorch's errors."""
    torch = torch_or_skip()
    for values, kwargs in [([1.0, 1.0], {"bins": 4}), ([1.0, 5.0, 1.0], {"bins": 4, "min": 0, "max": 2}), ([], {"bins": 3}),
                           ([0.1, 0.2, 0.7, 0.3], {"bins": 10, "min": 0, "max": 1})]:
        ours, theirs = tp.histc(tp.tensor(values), **kwargs), torch.histc(torch.tensor(values), **kwargs)
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    half = tp.histc(tp.tensor([1.0, 2.0]).half(), bins=4)
    assert half.dtype is tp.float16
    np.testing.assert_array_equal(half.float().numpy(), torch.histc(torch.tensor([1.0, 2.0]).half(), bins=4).float().numpy())
    for call, message in [
        (lambda: tp.histc(tp.tensor([1, 2])), "not implemented for 'int64'"),
        (lambda: tp.histc(tp.tensor([1.0]), bins=0), "bins must be > 0"),
        (lambda: tp.histc(tp.tensor([1.0]), bins=4, min=3, max=1), "max must be larger than min"),
        (lambda: tp.histc(tp.tensor([1.0, float("inf")])), r"range of \[1, inf\] is not finite"),
    ]:
        with pytest.raises(RuntimeError, match=message):
            call()
