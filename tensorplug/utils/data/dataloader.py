"""DataLoader: batches from a dataset, in the main process or in worker processes.

Follows ``torch.utils.data.DataLoader``: the same arguments, defaults, errors, batching and
shuffling, and the same draws from the random generators, so a seeded run gives PyTorch's order.

How it is put together:

- ``_settle_arguments`` checks the arguments against ``_ARGUMENT_RULES`` (a table of forbidden
  combinations and their messages) and fills in the defaults: the sampler, the batch sampler,
  the collate function, the prefetch factor. The loader keeps the results as its attributes.
- ``iter(loader)`` is a ``_LoaderIterator``. It draws the epoch's tasks from the loader's batch
  sampler (or sampler, without auto-batching) and hands them to its batch source: a reader in
  this process (``_InProcessBatches``), or a ``WorkerPool`` of processes (``_worker_pool``),
  which keeps its workers between epochs with ``persistent_workers``.
- An IterableDataset has no indices. Its loader's sampler is ``_StreamSlots``, which yields a
  None for every sample of the stream; the batch sampler groups them as for any dataset, and
  the reader takes as many samples from the stream as a task has slots.

Workers start with 'forkserver' (Linux) or 'spawn', never 'fork' (see ``_worker``), and send
tensors through shared memory (``_shared_memory``).
"""
from __future__ import annotations

import itertools
import multiprocessing
import sys
from types import SimpleNamespace
from typing import Any, Callable, Iterator

from ...frontend import dtypes as _dt
from . import _worker
from ._reading import make_reader
from ._worker_pool import WorkerPool
from .collate import default_collate, default_convert
from .dataset import IterableDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler, batch_count

__all__ = ["DataLoader", "get_worker_info", "default_collate", "default_convert"]

get_worker_info = _worker.get_worker_info

_STREAM_ARGUMENT = "DataLoader with IterableDataset: expected unspecified {0} option, but got {0}={{{0}}}"

#: Forbidden argument combinations, checked in this order: (is it violated?, the ValueError's
#: message, formatted with the arguments). Each test reads the arguments as the caller gave them.
_ARGUMENT_RULES: tuple[tuple[Callable[[SimpleNamespace], bool], str], ...] = (
    (lambda a: a.num_workers < 0,
     "num_workers option should be non-negative; use num_workers=0 to disable multiprocessing."),
    (lambda a: a.timeout < 0, "timeout option should be non-negative"),
    (lambda a: a.num_workers == 0 and a.prefetch_factor is not None,
     "prefetch_factor option could only be specified in multiprocessing.let num_workers > 0 to enable "
     "multiprocessing, otherwise set prefetch_factor to None."),
    (lambda a: a.prefetch_factor is not None and a.prefetch_factor < 0, "prefetch_factor option should be non-negative"),
    (lambda a: a.persistent_workers and a.num_workers == 0, "persistent_workers option needs num_workers > 0"),
    (lambda a: a.stream and a.shuffle not in (False, None), _STREAM_ARGUMENT.format("shuffle")),
    (lambda a: a.stream and a.sampler is not None, _STREAM_ARGUMENT.format("sampler")),
    (lambda a: a.stream and a.batch_sampler is not None, _STREAM_ARGUMENT.format("batch_sampler")),
    (lambda a: a.sampler is not None and a.shuffle, "sampler option is mutually exclusive with shuffle"),
    (lambda a: a.batch_sampler is not None and (a.batch_size != 1 or a.shuffle or a.sampler is not None or a.drop_last),
     "batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and drop_last"),
    (lambda a: a.batch_sampler is None and a.batch_size is None and a.drop_last,
     "batch_size=None option disables auto-batching and is mutually exclusive with drop_last"),
)

#: The start methods workers may use; 'fork' is refused with its own message.
_START_METHODS = ("forkserver", "spawn")


class _StreamSlots(Sampler):
    """The sampler of an IterableDataset's loader: a stream has no indices, only a next sample,
    so each sample's slot is None, for as long as the stream lasts."""

    def __iter__(self) -> Iterator[None]:
        return itertools.repeat(None)


def _settle_arguments(dataset, batch_size, shuffle, sampler, batch_sampler, num_workers, collate_fn, drop_last, timeout,
                      generator, prefetch_factor, persistent_workers, multiprocessing_context) -> dict[str, Any]:
    """Check DataLoader's arguments (``_ARGUMENT_RULES``) and return the settings a loader keeps,
    defaults filled in. Raises ValueError naming the argument at fault."""
    given = SimpleNamespace(stream=isinstance(dataset, IterableDataset), batch_size=batch_size, shuffle=shuffle,
                            sampler=sampler, batch_sampler=batch_sampler, num_workers=num_workers, drop_last=drop_last,
                            timeout=timeout, prefetch_factor=prefetch_factor, persistent_workers=persistent_workers)
    for violated, message in _ARGUMENT_RULES:
        if violated(given):
            raise ValueError(message.format(**vars(given)))
    if batch_sampler is not None:  # it decides the batches: batch_size and drop_last do not apply
        batch_size, drop_last = None, False
    if sampler is None:
        if given.stream:
            sampler = _StreamSlots()
        elif shuffle:
            sampler = RandomSampler(dataset, generator=generator)
        else:
            sampler = SequentialSampler(dataset)
    if batch_sampler is None and batch_size is not None:
        batch_sampler = BatchSampler(sampler, batch_size, drop_last)
    if collate_fn is None:  # batches are collated into tensors; single samples only converted
        collate_fn = default_collate if batch_sampler is not None else default_convert
    if prefetch_factor is None and num_workers > 0:
        prefetch_factor = 2
    return dict(batch_size=batch_size, drop_last=drop_last, sampler=sampler, batch_sampler=batch_sampler,
                collate_fn=collate_fn, prefetch_factor=prefetch_factor,
                _start_context=_start_context(multiprocessing_context) if num_workers > 0 else None)


def _start_context(requested):
    """The multiprocessing context workers start with: the requested one, by name or as a
    context, or forkserver (Linux) / spawn (elsewhere). 'fork' is refused."""
    if requested is None:
        return multiprocessing.get_context("forkserver" if sys.platform.startswith("linux") else "spawn")
    method = requested if isinstance(requested, str) else requested.get_start_method()
    if method == "fork":
        raise ValueError(
            "DataLoader workers cannot start with 'fork': forking after OpenMP, OpenBLAS or PoCL threads exist "
            "can deadlock. Use 'forkserver' or 'spawn'."
        )
    if method not in _START_METHODS:
        raise ValueError(f"multiprocessing_context option should specify a valid start method in {list(_START_METHODS)}, "
                         f"but got multiprocessing_context={requested!r}")
    return multiprocessing.get_context(method) if isinstance(requested, str) else requested


class DataLoader:
    """Iterate over ``dataset`` in batches.

    >>> loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True, num_workers=2)
    >>> for xb, yb in loader: ...

    ``multiprocessing_context`` may be 'forkserver', 'spawn' or a context of either; 'fork' is
    refused (forking after OpenMP/OpenBLAS/PoCL threads exist can deadlock). ``pin_memory`` is
    accepted and has no effect (tensorplug has no pinned host memory). ``in_order=False`` lets
    workers' batches through as they arrive instead of in the sampler's order (each batch still
    exactly once; with ``num_workers=0`` the order is the sampler's), as in PyTorch.
    """

    # The attributes a loader keeps (PyTorch's names); a program may read them, and change those
    # read at iteration (num_workers, collate_fn, timeout, ...) between epochs. The dataset and
    # samplers are whatever was given (any object with __getitem__ and __len__, any iterable of
    # indices), so Any: ``len(loader.dataset)`` must type-check.
    dataset: Any
    batch_size: int | None  # None when batch_sampler was given, or without auto-batching
    drop_last: bool
    sampler: Any
    batch_sampler: Any  # None without auto-batching
    collate_fn: Callable
    num_workers: int
    prefetch_factor: int | None  # 2 by default with workers, None without
    persistent_workers: bool
    pin_memory: bool
    pin_memory_device: str
    timeout: float
    worker_init_fn: Callable | None
    generator: Any
    in_order: bool
    multiprocessing_context: Any  # as given

    def __init__(self, dataset, batch_size: int | None = 1, shuffle: bool | None = None, sampler=None, batch_sampler=None,
                 num_workers: int = 0, collate_fn=None, pin_memory: bool = False, drop_last: bool = False,
                 timeout: float = 0, worker_init_fn=None, multiprocessing_context=None, generator=None, *,
                 prefetch_factor: int | None = None, persistent_workers: bool = False, pin_memory_device: str = "",
                 in_order: bool = True) -> None:
        settled = _settle_arguments(dataset, batch_size, shuffle, sampler, batch_sampler, num_workers, collate_fn,
                                    drop_last, timeout, generator, prefetch_factor, persistent_workers,
                                    multiprocessing_context)
        vars(self).update(settled, dataset=dataset, num_workers=num_workers, persistent_workers=persistent_workers,
                          pin_memory=pin_memory, pin_memory_device=pin_memory_device, timeout=timeout,
                          worker_init_fn=worker_init_fn, generator=generator, in_order=in_order,
                          multiprocessing_context=multiprocessing_context)
        self._stream = isinstance(dataset, IterableDataset)
        self._persistent_iterator: _LoaderIterator | None = None

    def __iter__(self) -> "_LoaderIterator":
        if not (self.persistent_workers and self.num_workers > 0):
            return _LoaderIterator(self)
        if self._persistent_iterator is None:
            self._persistent_iterator = _LoaderIterator(self)
        else:
            self._persistent_iterator.restart()
        return self._persistent_iterator

    def __len__(self) -> int:
        """Batches per epoch; for an IterableDataset, as many as ``len(dataset)`` samples make."""
        if not self._stream:
            return len(self._task_sampler())
        samples = len(self.dataset)
        return samples if self.batch_size is None else batch_count(samples, self.batch_size, self.drop_last)

    def _task_sampler(self):
        """What yields the tasks: index lists from the batch sampler, or single indices."""
        return self.sampler if self.batch_sampler is None else self.batch_sampler


def _draw_base_seed(generator) -> int:
    """One int64 from the loader's generator (or the default one) per iterator: the workers'
    seeds are this plus their id. Drawn without workers too, so that the generator's later
    draws (the shuffling) do not depend on num_workers."""
    from ...frontend.factories import empty

    return int(empty((), dtype=_dt.int64).random_(generator=generator).item())


class _InProcessBatches:
    """The batch source without workers: each task read here, when the batch is asked for."""

    def __init__(self, loader: DataLoader) -> None:
        self._loader = loader

    def start_epoch(self, tasks: Iterator) -> None:
        loader = self._loader
        self._tasks = tasks
        self._read = make_reader(loader.dataset, stream=loader._stream, batched=loader.batch_sampler is not None,
                                 collate_fn=loader.collate_fn, drop_last=loader.drop_last)

    def next_batch(self):
        return self._read(next(self._tasks))  # StopIteration from either ends the epoch

    def close(self) -> None:
        pass


class _LoaderIterator:
    """What ``iter(loader)`` returns: one epoch of batches (with persistent workers, each epoch
    in turn), read by its source, in this process or in worker processes."""

    def __init__(self, loader: DataLoader) -> None:
        self._task_sampler = loader._task_sampler()
        # PyTorch's order of side effects: the sampler's __iter__ runs before the base seed is
        # drawn (a sampler may draw from the same generator there), and with workers it runs
        # again once they are up.
        tasks = iter(self._task_sampler)
        base_seed = _draw_base_seed(loader.generator)
        if loader.num_workers == 0:
            self._source = _InProcessBatches(loader)
        else:
            self._source = WorkerPool(loader, base_seed, loader._start_context or _start_context(None))
            tasks = iter(self._task_sampler)
        self._source.start_epoch(tasks)

    def restart(self) -> None:
        """Begin the next epoch with the same workers (persistent_workers)."""
        self._source.start_epoch(iter(self._task_sampler))

    def close(self) -> None:
        """Stop the workers now rather than when the iterator is dropped."""
        self._source.close()

    def __iter__(self) -> "_LoaderIterator":
        return self

    def __next__(self):
        return self._source.next_batch()

    def __len__(self) -> int:
        return len(self._task_sampler)
