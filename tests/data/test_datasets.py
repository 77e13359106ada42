"""Datasets: TensorDataset, Subset, ConcatDataset and random_split."""
import pytest

import tensorplug as tp
from tensorplug.utils.data import ConcatDataset, Subset, TensorDataset, random_split


def test_tensor_dataset_rows():
    """Sample i is the tuple of each tensor's row i."""
    ds = TensorDataset(tp.arange(6.0).reshape(3, 2), tp.tensor([7, 8, 9]))
    x, y = ds[1]
    assert len(ds) == 3 and x.tolist() == [2.0, 3.0] and y.item() == 8
    with pytest.raises(ValueError, match="Size mismatch"):
        TensorDataset(tp.zeros(3), tp.zeros(4))


def test_subset_and_concat():
    """Subset reorders by indices; ConcatDataset chains lengths and negative indices work."""
    a, b = TensorDataset(tp.arange(3)), TensorDataset(tp.arange(10, 14))
    assert [Subset(a, [2, 0])[i][0].item() for i in range(2)] == [2, 0]
    both = a + b
    assert isinstance(both, ConcatDataset) and len(both) == 7
    assert [both[i][0].item() for i in range(7)] == [0, 1, 2, 10, 11, 12, 13]
    assert both[-1][0].item() == 13


def test_random_split_lengths_and_determinism():
    """random_split partitions the indices; one seed gives one split."""
    ds = TensorDataset(tp.arange(10))
    parts = random_split(ds, [3, 7], generator=tp.Generator().manual_seed(42))
    again = random_split(ds, [3, 7], generator=tp.Generator().manual_seed(42))
    assert [len(p) for p in parts] == [3, 7]
    assert sorted(parts[0].indices + parts[1].indices) == list(range(10))
    assert parts[0].indices == again[0].indices
    other = random_split(ds, [3, 7], generator=tp.Generator().manual_seed(43))
    assert other[0].indices + other[1].indices != parts[0].indices + parts[1].indices


def test_random_split_fractions():
    """Fractions floor, and the remainder goes round-robin to the first subsets (as torch)."""
    torch = pytest.importorskip("torch")
    for n, fractions in [(11, [0.5, 0.3, 0.2]), (10, [0.25, 0.25, 0.25, 0.25]), (7, [0.1, 0.9])]:
        parts = random_split(TensorDataset(tp.arange(n)), fractions, generator=tp.Generator().manual_seed(0))
        expected = torch.utils.data.random_split(range(n), fractions)
        assert [len(p) for p in parts] == [len(p) for p in expected]


def test_random_split_bad_lengths():
    """Lengths that do not add up to the dataset raise torch's ValueError."""
    with pytest.raises(ValueError, match="Sum of input lengths"):
        random_split(TensorDataset(tp.arange(5)), [2, 2])
