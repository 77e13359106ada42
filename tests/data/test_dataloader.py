"""DataLoader in the main process: batching, shuffling, drop_last, collate_fn, argument checks."""
import pytest

import tensorplug as tp
from tensorplug.utils.data import BatchSampler, DataLoader, SequentialSampler, TensorDataset

from data_helpers import Range, Squares


def _ids(loader):
    return [batch[1].tolist() for batch in loader]


def test_batches_in_order():
    """batch_size groups consecutive samples; the last batch is short; len() agrees."""
    loader = DataLoader(TensorDataset(tp.arange(10.0), tp.arange(10)), batch_size=4)
    assert _ids(loader) == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]] and len(loader) == 3


def test_drop_last():
    """drop_last drops the short final batch."""
    loader = DataLoader(TensorDataset(tp.arange(10.0), tp.arange(10)), batch_size=4, drop_last=True)
    assert _ids(loader) == [[0, 1, 2, 3], [4, 5, 6, 7]] and len(loader) == 2


def test_shuffle_is_seeded_by_generator():
    """shuffle with a seeded generator repeats exactly; epochs differ; every sample appears once."""
    ds = TensorDataset(tp.arange(20.0), tp.arange(20))
    first = _ids(DataLoader(ds, batch_size=5, shuffle=True, generator=tp.Generator().manual_seed(5)))
    again = _ids(DataLoader(ds, batch_size=5, shuffle=True, generator=tp.Generator().manual_seed(5)))
    assert first == again
    assert sorted(i for b in first for i in b) == list(range(20)) and first != [list(range(i, i + 5)) for i in range(0, 20, 5)]
    loader = DataLoader(ds, batch_size=5, shuffle=True, generator=tp.Generator().manual_seed(5))
    assert _ids(loader) != _ids(loader)


def test_dict_samples_collate():
    """Dict samples collate into a dict of stacked tensors, int tensors and string lists."""
    batch = next(iter(DataLoader(Squares(5), batch_size=3)))
    assert batch["x"].tolist() == [[0.0, 0.0], [1.0, 1.0], [2.0, 4.0]]
    assert batch["y"].tolist() == [0, 1, 2] and batch["name"] == ["s0", "s1", "s2"]


def test_custom_collate_and_batch_sampler():
    """collate_fn and batch_sampler are used as given."""
    sampler = BatchSampler(SequentialSampler(range(6)), 2, drop_last=False)
    loader = DataLoader(list(range(6)), batch_sampler=sampler, collate_fn=lambda b: sum(b))
    assert list(loader) == [1, 5, 9]


def test_no_auto_batching():
    """batch_size=None yields samples one by one (converted, not collated)."""
    assert [x for x in DataLoader([1, 2, 3], batch_size=None)] == [1, 2, 3]


def test_iterable_dataset():
    """An IterableDataset is batched in stream order; len follows the dataset."""
    loader = DataLoader(Range(7), batch_size=3)
    assert [b.tolist() for b in loader] == [[0, 1, 2], [3, 4, 5], [6]] and len(loader) == 3
    assert [b.tolist() for b in DataLoader(Range(7), batch_size=3, drop_last=True)] == [[0, 1, 2], [3, 4, 5]]


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(num_workers=-1), "num_workers option should be non-negative"),
        (dict(timeout=-1), "timeout option should be non-negative"),
        (dict(prefetch_factor=2), "prefetch_factor option could only be specified"),
        (dict(persistent_workers=True), "persistent_workers option needs num_workers > 0"),
        (dict(shuffle=True, sampler=SequentialSampler(range(4))), "mutually exclusive with shuffle"),
        (dict(batch_size=None, drop_last=True), "mutually exclusive with drop_last"),
        (dict(batch_sampler=[[0]], batch_size=2), "batch_sampler option is mutually exclusive"),
        (dict(num_workers=1, multiprocessing_context="fork"), "cannot start with 'fork'"),
    ],
)
def test_argument_errors(kwargs, message):
    """Invalid argument combinations raise torch's ValueErrors (and 'fork' is refused)."""
    with pytest.raises(ValueError, match=message):
        DataLoader(list(range(4)), **kwargs)


def test_iterable_dataset_refuses_shuffle():
    """shuffle with an IterableDataset is an error, as in torch."""
    with pytest.raises(ValueError, match="expected unspecified shuffle option"):
        DataLoader(Range(3), shuffle=True)
