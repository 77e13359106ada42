"""Datasets for the DataLoader tests; module-level so that worker processes can import them."""
import tensorplug as tp
from tensorplug.utils.data import Dataset, IterableDataset, get_worker_info


class Squares(Dataset):
    """Sample i is {"x": tensor([i, i*i]), "y": i, "name": "s<i>"}."""

    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return {"x": tp.tensor([float(i), float(i * i)]), "y": i, "name": f"s{i}"}


class FailsAt(Dataset):
    """Raises ValueError at one index."""

    def __init__(self, n, bad):
        self.n, self.bad = n, bad

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if i == self.bad:
            raise ValueError(f"sample {i} is broken")
        return tp.tensor(i)


class WorkerSeeds(Dataset):
    """Each sample reports the worker id, seed and a random draw made in the worker."""

    def __len__(self):
        return 4

    def __getitem__(self, i):
        info = get_worker_info()
        return tp.tensor([info.id, info.seed % 1000003, info.num_workers]), tp.rand(1)


class Range(IterableDataset):
    """0..n-1, split between workers by get_worker_info()."""

    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __iter__(self):
        info = get_worker_info()
        if info is None:
            return iter(range(self.n))
        return iter(range(info.id, self.n, info.num_workers))


def record_init(worker_id):
    """A worker_init_fn that stamps the worker id into the dataset copy."""
    get_worker_info().dataset.stamp = worker_id


class Stamped(Dataset):
    """Returns the stamp worker_init_fn put on this worker's copy."""

    stamp = -1

    def __len__(self):
        return 4

    def __getitem__(self, i):
        return self.stamp


class Slow(Dataset):
    """Sleeps long enough to trip a DataLoader timeout."""

    def __len__(self):
        return 2

    def __getitem__(self, i):
        import time

        time.sleep(5)
        return i
