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


def image(i, shape=(3, 16, 16)):
    """Sample i of Images as a NumPy array: the independent reference for batches."""
    import numpy as np

    return (np.arange(np.prod(shape), dtype=np.float32).reshape(shape) * 0.5 + i).astype(np.float32)


class Images(Dataset):
    """Sample i is (float32 image of 3x16x16 = 3 KiB, int label i, int16 mask): a batch of 32
    images (96 KiB) is large enough to travel through shared memory."""

    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        import numpy as np

        return tp.from_numpy(image(i)), i, np.full((64, 64), i, dtype=np.int16)


class BigIterable(IterableDataset):
    """Images 0..n-1 split between workers, each a 3x64x64 float32 tensor (48 KiB)."""

    def __init__(self, n):
        self.n = n

    def __iter__(self):
        info = get_worker_info()
        ids = range(self.n) if info is None else range(info.id, self.n, info.num_workers)
        return (tp.from_numpy(image(i, (3, 64, 64))) for i in ids)


def views_collate(samples):
    """A collate_fn returning a transposed view and a slice of the collated batch, a fresh
    (non-shared) tensor, and a bfloat16 tensor (of the labels: exact in bfloat16)."""
    from tensorplug.utils.data import default_collate

    images, labels, masks = default_collate(samples)
    return {"t": images.transpose(1, 3), "tail": images[1:, 2], "fresh": images * 2,
            "bf16": labels.reshape(-1, 1, 1).expand(len(samples), 64, 32).to(tp.bfloat16),
            "labels": labels, "masks": masks}


class CachingCollate:
    """Returns the first batch it collated for every call: the same shared block sent again
    while the main process still holds it."""

    def __init__(self):
        self.first = None

    def __call__(self, samples):
        from tensorplug.utils.data import default_collate

        if self.first is None:
            self.first = default_collate(samples)
        return self.first


class Crashes(Dataset):
    """Kills its worker process (no exception, no message) at index 5."""

    def __len__(self):
        return 64

    def __getitem__(self, i):
        import os

        if i == 5:
            os._exit(3)
        return tp.from_numpy(image(i))


class OnDevice(Dataset):
    """Images(n)'s images, made on ``device`` in the worker."""

    def __init__(self, n, device):
        self.n, self.device = n, device

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return tp.from_numpy(image(i)).to(self.device)


class WaitsAtZero(Dataset):
    """Sample i is (i, released). Sample 0 waits until the file ``marker`` exists (released True)
    or ``limit`` seconds have passed (released False); the others come at once."""

    def __init__(self, n, marker, limit):
        self.n, self.marker, self.limit = n, str(marker), limit

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        import os
        import time

        if i != 0:
            return i, False
        deadline = time.monotonic() + self.limit
        while time.monotonic() < deadline:
            if os.path.exists(self.marker):
                return i, True
            time.sleep(0.01)
        return i, False


class UnevenStreams(IterableDataset):
    """Worker w streams 100*w, 100*w + 1, ... (3*w + 1 items): the workers' streams end at
    different batches (in the main process: worker 0's single item)."""

    def __iter__(self):
        info = get_worker_info()
        worker = 0 if info is None else info.id
        return iter(range(100 * worker, 100 * worker + 3 * worker + 1))
