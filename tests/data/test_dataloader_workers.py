"""DataLoader with worker processes (forkserver/spawn): same batches, seeds, errors, no hangs."""
import time

import pytest

import tensorplug as tp
from tensorplug.utils.data import DataLoader, TensorDataset, get_worker_info

from data_helpers import FailsAt, Range, Slow, Squares, Stamped, WorkerSeeds, record_init


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
    assert loader._iterator is not None
    loader._iterator._shutdown_workers()


def test_iterable_dataset_with_workers():
    """Each worker streams its share; batches interleave round-robin and every item arrives once."""
    batches = [b.tolist() for b in DataLoader(Range(10), batch_size=2, num_workers=2)]
    assert sorted(x for b in batches for x in b) == list(range(10))
    assert batches[:2] == [[0, 2], [1, 3]]


def test_timeout():
    """A batch slower than timeout raises RuntimeError instead of waiting forever."""
    with pytest.raises(RuntimeError, match="timed out after 1 seconds"):
        list(DataLoader(Slow(), batch_size=None, num_workers=1, timeout=1))


def test_spawn_context():
    """The 'spawn' start method works as well as the default 'forkserver'."""
    loader = DataLoader(TensorDataset(tp.arange(6.0), tp.arange(6)), batch_size=4, num_workers=1, multiprocessing_context="spawn")
    assert _ids(loader) == [[0, 1, 2, 3], [4, 5]]
