"""DataLoader with worker processes (forkserver/spawn): same batches, seeds, errors, no hangs."""
import time

import pytest

import tensorplug as tp
from tensorplug.utils.data import DataLoader, TensorDataset, get_worker_info

from data_helpers import FailsAt, Range, Slow, Squares, Stamped, UnevenStreams, WaitsAtZero, WorkerSeeds, record_init


def _ids(loader):
    return [batch[1].tolist() for batch in loader]


def test_two_workers_give_the_same_batches_as_none():
    """num_workers=2 yields the same shuffled batches, in the same order, as num_workers=0."""
    ds = TensorDataset(tp.arange(23.0), tp.arange(23))
    make = lambda n: DataLoader(ds, batch_size=4, shuffle=True, num_workers=n, generator=tp.Generator().manual_seed(9))  # noqa: E731
    assert _ids(make(2)) == _ids(make(0))
    dicts = list(DataLoader(Squares(7), batch_size=3, num_workers=2))
    assert [d["y"].tolist() for d in dicts] == [[0, 1, 2], [3, 4, 5], [6]] and dicts[2]["name"] == ["s6"]


def test_worker_info_and_seeds():
    """Each worker sees its own WorkerInfo, with seed base_seed + worker_id; the main process sees None."""
    assert get_worker_info() is None
    info = [b[0] for b in DataLoader(WorkerSeeds(), batch_size=None, num_workers=2, generator=tp.Generator().manual_seed(1))]
    ids = [int(t[0].item()) for t in info]
    seeds = [int(t[1].item()) for t in info]
    assert ids == [0, 1, 0, 1] and all(int(t[2].item()) == 2 for t in info)
    assert (seeds[1] - seeds[0]) % 1000003 == 1 and seeds[0] == seeds[2]


def test_worker_exception_propagates_with_traceback():
    """A worker's exception is re-raised in the main process with the worker's traceback text, promptly."""
    loader = DataLoader(FailsAt(8, bad=5), batch_size=2, num_workers=2, timeout=30)
    start = time.monotonic()
    with pytest.raises(ValueError) as excinfo:
        list(loader)
    message = str(excinfo.value)
    assert "Caught ValueError in DataLoader worker process 0" in message
    assert "Original Traceback" in message and "sample 5 is broken" in message and "data_helpers.py" in message
    assert time.monotonic() - start < 25


def test_worker_init_fn_and_persistent_workers():
    """worker_init_fn runs in each worker; persistent workers serve several epochs."""
    loader = DataLoader(Stamped(), batch_size=None, num_workers=2, worker_init_fn=record_init, persistent_workers=True)
    assert list(loader) == [0, 1, 0, 1]
    assert list(loader) == [0, 1, 0, 1]
    assert loader._persistent_iterator is not None
    loader._persistent_iterator.close()


def test_iterable_dataset_with_workers():
    """Each worker streams its share; batches interleave round-robin and every item arrives once."""
    batches = [b.tolist() for b in DataLoader(Range(10), batch_size=2, num_workers=2)]
    assert sorted(x for b in batches for x in b) == list(range(10))
    assert batches[:2] == [[0, 2], [1, 3]]


def _stream_batches(worker, batch_size, drop_last):
    """Worker ``worker``'s batches of UnevenStreams, cut here in plain Python."""
    items = list(range(100 * worker, 100 * worker + 3 * worker + 1))
    batches = [items[i:i + batch_size] for i in range(0, len(items), batch_size)]
    return [b for b in batches if len(b) == batch_size] if drop_last else batches


@pytest.mark.parametrize("drop_last", [False, True])
def test_streams_that_end_at_different_times(drop_last):
    """Workers whose streams end early stop getting tasks; the others' batches still come in
    round-robin order, and each worker's short last batch is dropped with drop_last. The
    expected order is PyTorch's (same loader, PyTorch 2.13)."""
    loader = DataLoader(UnevenStreams(), batch_size=3, num_workers=3, drop_last=drop_last, persistent_workers=True)
    expected = [[0], [100, 101, 102], [200, 201, 202], [103], [203, 204, 205], [206]]
    if drop_last:
        expected = [b for b in expected if len(b) == 3]
    for _ in range(2):  # the persistent workers restart their streams for the second epoch
        batches = [b.tolist() for b in loader]
        assert batches == expected
        assert sorted(batches) == sorted(b for w in range(3) for b in _stream_batches(w, 3, drop_last))
    loader._persistent_iterator.close()


def test_timeout():
    """A batch slower than timeout raises RuntimeError instead of waiting forever."""
    with pytest.raises(RuntimeError, match="timed out after 1 seconds"):
        list(DataLoader(Slow(), batch_size=None, num_workers=1, timeout=1))


def test_spawn_context():
    """The 'spawn' start method works as well as the default 'forkserver'."""
    loader = DataLoader(TensorDataset(tp.arange(6.0), tp.arange(6)), batch_size=4, num_workers=1, multiprocessing_context="spawn")
    assert _ids(loader) == [[0, 1, 2, 3], [4, 5]]


def _arrivals(loader, marker):
    """[(sample, released)] in the order the loader yields them; the marker file is created once
    the first batch has arrived, which releases sample 0 of WaitsAtZero."""
    seen = []
    for ids, released in loader:
        seen.extend(zip(ids.tolist(), released.tolist()))
        marker.touch()
    return seen


def test_out_of_order_batches_do_not_wait_for_a_slow_one(tmp_path):
    """in_order=False yields the batches that are ready while an earlier one is still being made:
    sample 0 waits for the main process to receive another batch first, and every batch still
    arrives exactly once."""
    marker = tmp_path / "first-batch-arrived"
    loader = DataLoader(WaitsAtZero(12, marker, limit=4.0), batch_size=2, num_workers=2, in_order=False)
    seen = _arrivals(loader, marker)
    assert sorted(i for i, _ in seen) == list(range(12))
    assert seen[0][0] != 0
    assert dict(seen)[0] is True  # released by the main process, not by its time limit


def test_in_order_waits_for_the_slow_batch(tmp_path):
    """in_order=True (the default) yields the sampler's order even when the first batch is the
    slowest: sample 0 runs out its time limit, as nothing arrives before it."""
    marker = tmp_path / "first-batch-arrived"
    loader = DataLoader(WaitsAtZero(12, marker, limit=0.3), batch_size=2, num_workers=2)
    seen = _arrivals(loader, marker)
    assert [i for i, _ in seen] == list(range(12)) and dict(seen)[0] is False


def test_out_of_order_with_persistent_workers_gives_every_batch_once_per_epoch():
    """in_order=False with persistent workers: each sample exactly once in each of two epochs."""
    ds = TensorDataset(tp.arange(23.0), tp.arange(23))
    loader = DataLoader(ds, batch_size=4, shuffle=True, num_workers=2, in_order=False, persistent_workers=True,
                        prefetch_factor=3)
    for _ in range(2):
        assert sorted(i for b in _ids(loader) for i in b) == list(range(23))
    loader._persistent_iterator.close()


def test_out_of_order_streams_and_in_process_loading():
    """in_order=False with an IterableDataset gives each item once; without workers the order is
    the sampler's, as in PyTorch."""
    ds = TensorDataset(tp.arange(23.0), tp.arange(23))
    batches = [b.tolist() for b in DataLoader(Range(10), batch_size=2, num_workers=2, in_order=False)]
    assert sorted(x for b in batches for x in b) == list(range(10))
    in_process = DataLoader(ds, batch_size=4, shuffle=True, in_order=False, generator=tp.Generator().manual_seed(2))
    ordered = DataLoader(ds, batch_size=4, shuffle=True, generator=tp.Generator().manual_seed(2))
    assert _ids(in_process) == _ids(ordered)
