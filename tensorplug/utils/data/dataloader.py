"""DataLoader: batches from a dataset, in the main process or in worker processes.

Follows ``torch.utils.data.DataLoader``: the same arguments, defaults, batching, shuffling and
worker protocol (index lists go out round-robin, batches come back in order, at most
``prefetch_factor * num_workers`` outstanding; with ``in_order=False`` a batch is yielded as soon
as it arrives, and each worker holds at most ``prefetch_factor`` tasks). Workers start with 'forkserver' (Linux) or
'spawn', never 'fork' (see ``_worker``), and send tensors through shared memory
(``_shared_memory``).
"""
from __future__ import annotations

import itertools
import math
import multiprocessing
import os
import queue
import sys
import time
import weakref

from ...frontend import dtypes as _dt
from . import _shared_memory, _worker
from ._worker import MP_STATUS_CHECK_INTERVAL, ExceptionWrapper, _IterableDatasetStopIteration, _ResumeIteration
from .collate import default_collate, default_convert
from .dataset import IterableDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

__all__ = ["DataLoader", "get_worker_info", "default_collate", "default_convert"]

get_worker_info = _worker.get_worker_info


class _InfiniteConstantSampler(Sampler):
    """Yields None forever: the 'indices' of an IterableDataset."""

    def __iter__(self):
        while True:
            yield None


def _default_context_name() -> str:
    return "forkserver" if sys.platform.startswith("linux") else "spawn"


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

    def __init__(self, dataset, batch_size: int | None = 1, shuffle: bool | None = None, sampler=None, batch_sampler=None,
                 num_workers: int = 0, collate_fn=None, pin_memory: bool = False, drop_last: bool = False,
                 timeout: float = 0, worker_init_fn=None, multiprocessing_context=None, generator=None, *,
                 prefetch_factor: int | None = None, persistent_workers: bool = False, pin_memory_device: str = "",
                 in_order: bool = True) -> None:
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError(
                "prefetch_factor option could only be specified in multiprocessing.let num_workers > 0 to enable "
                "multiprocessing, otherwise set prefetch_factor to None."
            )
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        elif prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")

        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.generator = generator
        self.persistent_workers = persistent_workers
        self.in_order = in_order
        self.multiprocessing_context = multiprocessing_context
        self._is_iterable = isinstance(dataset, IterableDataset)

        if self._is_iterable:
            if shuffle not in (False, None):
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified shuffle option, but got shuffle={shuffle}")
            if sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified sampler option, but got sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError(
                    f"DataLoader with IterableDataset: expected unspecified batch_sampler option, but got batch_sampler={batch_sampler}"
                )
        shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and drop_last")
            batch_size = None
            drop_last = False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with drop_last")
        if sampler is None:
            if self._is_iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self._mp_context = self._check_context(multiprocessing_context) if num_workers > 0 else None
        self._iterator = None

    @staticmethod
    def _check_context(context):
        if context is None:
            return multiprocessing.get_context(_default_context_name())
        name = context if isinstance(context, str) else context.get_start_method()
        if name == "fork":
            raise ValueError(
                "DataLoader workers cannot start with 'fork': forking after OpenMP, OpenBLAS or PoCL threads exist "
                "can deadlock. Use 'forkserver' or 'spawn'."
            )
        if name not in ("forkserver", "spawn"):
            raise ValueError(f"multiprocessing_context option should specify a valid start method in ['forkserver', 'spawn'], but got multiprocessing_context={context!r}")
        return multiprocessing.get_context(name) if isinstance(context, str) else context

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def _get_shared_seed(self) -> int:
        from ...frontend.factories import empty

        return int(empty((), dtype=_dt.int64).random_(generator=self.generator).item())

    def __iter__(self):
        if self.num_workers == 0:
            return _SingleProcessDataLoaderIter(self)
        if self.persistent_workers:
            if self._iterator is None:
                self._iterator = _MultiProcessingDataLoaderIter(self)
            else:
                self._iterator._reset(self)
            return self._iterator
        return _MultiProcessingDataLoaderIter(self)

    def __len__(self) -> int:
        if self._is_iterable:
            length = len(self.dataset)
            if self.batch_size is not None:
                length = length // self.batch_size if self.drop_last else math.ceil(length / self.batch_size)
            return length
        return len(self._index_sampler)


class _BaseDataLoaderIter:
    def __init__(self, loader: DataLoader) -> None:
        self._dataset = loader.dataset
        self._is_iterable = loader._is_iterable
        self._auto_collation = loader._auto_collation
        self._drop_last = loader.drop_last
        self._index_sampler = loader._index_sampler
        self._num_workers = loader.num_workers
        self._timeout = loader.timeout
        self._collate_fn = loader.collate_fn
        self._sampler_iter = iter(self._index_sampler)
        self._base_seed = loader._get_shared_seed()
        self._num_yielded = 0

    def __iter__(self):
        return self

    def _reset(self, loader: DataLoader) -> None:
        self._sampler_iter = iter(self._index_sampler)
        self._num_yielded = 0

    def _next_index(self):
        return next(self._sampler_iter)

    def __next__(self):
        data = self._next_data()
        self._num_yielded += 1
        return data

    def __len__(self) -> int:
        return len(self._index_sampler)


class _SingleProcessDataLoaderIter(_BaseDataLoaderIter):
    def __init__(self, loader: DataLoader) -> None:
        super().__init__(loader)
        self._fetcher = _worker.create_fetcher(self._is_iterable, self._dataset, self._auto_collation, self._collate_fn, self._drop_last)

    def _next_data(self):
        index = self._next_index()
        return self._fetcher.fetch(index)


class _MultiProcessingDataLoaderIter(_BaseDataLoaderIter):
    def __init__(self, loader: DataLoader) -> None:
        super().__init__(loader)
        self._prefetch_factor = loader.prefetch_factor
        self._persistent_workers = loader.persistent_workers
        self._in_order = loader.in_order
        self._shutdown = False
        _worker.refuse_workers_while_reimporting_main()
        context = loader._mp_context
        self._result_queue = context.Queue()
        self._done_event = context.Event()
        self._index_queues = []
        self._workers = []
        self._blocks = _shared_memory.MainBlocks(_shared_memory.new_prefix())
        # Shutdown lives in a finalizer, not in __del__, so that it also runs at interpreter
        # exit (before multiprocessing kills daemonic workers) and holds no reference to self.
        self._finalizer = weakref.finalize(self, _shutdown_worker_resources, self._workers, self._index_queues,
                                           self._result_queue, self._done_event, self._blocks)
        try:
            for worker_id in range(self._num_workers):
                index_queue = context.Queue()
                index_queue.cancel_join_thread()
                process = context.Process(
                    target=_worker.worker_loop,
                    args=(self._is_iterable, self._dataset, index_queue, self._result_queue, self._done_event,
                          self._auto_collation, self._collate_fn, self._drop_last, self._base_seed,
                          loader.worker_init_fn, worker_id, self._num_workers, self._persistent_workers,
                          self._blocks.prefix),
                    name=f"{_worker.WORKER_NAME}:{self._blocks.prefix}",
                    daemon=True,
                )
                process.start()
                self._index_queues.append(index_queue)
                self._workers.append(process)
        except BaseException:
            self._workers_status = [True] * len(self._workers)
            self._shutdown_workers()
            raise
        self._reset(loader, first_iter=True)

    def _reset(self, loader: DataLoader, first_iter: bool = False) -> None:
        super()._reset(loader)
        self._send_idx = 0
        self._rcvd_idx = 0
        self._task_info: dict = {}
        self._tasks_outstanding = 0
        self._workers_status = [True] * self._num_workers
        # Tasks sent to each worker whose batch has not been yielded yet: with in_order=False a
        # worker gets a new task only below its share, so a slow one cannot hoard the indices.
        self._workers_num_tasks = [0] * self._num_workers
        self._worker_queue_idx_cycle = itertools.cycle(range(self._num_workers))
        if not first_iter:
            for index_queue in self._index_queues:
                index_queue.put(_ResumeIteration())
            remaining = self._num_workers
            while remaining > 0:
                tag, _ = self._get_data()
                if isinstance(tag, _ResumeIteration):
                    remaining -= 1
        for _ in range(self._prefetch_factor * self._num_workers):
            self._try_put_index()

    def _try_put_index(self) -> None:
        worker_id = self._next_worker()
        if worker_id is None:
            return
        try:
            index = self._next_index()
        except StopIteration:
            return
        # Blocks the program has let go of go back with the worker's next task.
        self._index_queues[worker_id].put((self._send_idx, index, self._blocks.take_freed(worker_id)))
        self._task_info[self._send_idx] = (worker_id,)
        self._workers_num_tasks[worker_id] += 1
        self._tasks_outstanding += 1
        self._send_idx += 1

    def _next_worker(self) -> int | None:
        """The worker the next task goes to: the next active one round-robin; with in_order=False
        the next active one holding fewer than its share of the outstanding tasks (PyTorch's
        rule). None when no worker qualifies (every worker's stream has ended)."""
        active = sum(self._workers_status)
        for _ in range(self._num_workers):
            worker_id = next(self._worker_queue_idx_cycle)
            if not self._workers_status[worker_id]:
                continue
            if self._in_order or self._workers_num_tasks[worker_id] < self._prefetch_factor * self._num_workers // active:
                return worker_id
        return None

    def _try_get_data(self, timeout: float = MP_STATUS_CHECK_INTERVAL):
        try:
            payload = self._result_queue.get(timeout=timeout)
        except queue.Empty:
            failed = [w for i, w in enumerate(self._workers) if self._workers_status[i] and not w.is_alive()]
            if failed:
                pids = ", ".join(str(w.pid) for w in failed)
                unguarded = os.path.exists(self._blocks.prefix + _worker.UNGUARDED_MARKER)
                self._shutdown_workers()
                if unguarded:
                    script = getattr(sys.modules.get("__main__"), "__file__", None)
                    raise RuntimeError(_worker.unguarded_main_message(script)) from None
                raise RuntimeError(f"DataLoader worker (pid(s) {pids}) exited unexpectedly") from None
            return False, None
        return True, self._blocks.loads(payload)

    def _get_data(self):
        # Wait in short slices, even under a long timeout, so that a dead worker is reported
        # within MP_STATUS_CHECK_INTERVAL rather than when the timeout runs out.
        deadline = time.monotonic() + self._timeout if self._timeout > 0 else None
        while True:
            wait = MP_STATUS_CHECK_INTERVAL
            if deadline is not None:
                wait = min(wait, deadline - time.monotonic())
                if wait <= 0:
                    raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds")
            success, data = self._try_get_data(wait)
            if success:
                return data

    def _next_data(self):
        while True:
            while self._rcvd_idx < self._send_idx:
                info = self._task_info.get(self._rcvd_idx)  # None: yielded already, out of order
                if info is not None:
                    if len(info) == 2 or self._workers_status[info[0]]:
                        break
                    del self._task_info[self._rcvd_idx]  # its worker's stream ended: nothing will come
                self._rcvd_idx += 1
            else:
                if not self._persistent_workers:
                    self._shutdown_workers()
                raise StopIteration
            if len(self._task_info[self._rcvd_idx]) == 2:
                worker_id, data = self._task_info.pop(self._rcvd_idx)
                self._rcvd_idx += 1
                return self._process_data(data, worker_id)
            idx, data = self._get_data()
            self._tasks_outstanding -= 1
            if isinstance(data, _IterableDatasetStopIteration):
                self._workers_status[data.worker_id] = False
                if not self._persistent_workers:
                    self._index_queues[data.worker_id].put(None)
                self._try_put_index()
                continue
            if idx == self._rcvd_idx:
                worker_id = self._task_info.pop(idx)[0]
                self._rcvd_idx += 1
                return self._process_data(data, worker_id)
            if self._in_order:
                self._task_info[idx] += (data,)  # kept until the batches before it are yielded
            else:
                return self._process_data(data, self._task_info.pop(idx)[0])

    def _process_data(self, data, worker_id: int):
        self._workers_num_tasks[worker_id] -= 1
        self._try_put_index()
        if isinstance(data, ExceptionWrapper):
            data.reraise()
        return data

    def _shutdown_workers(self) -> None:
        if self._shutdown or not hasattr(self, "_finalizer"):
            return
        self._shutdown = True
        self._finalizer()


def _shutdown_worker_resources(workers, index_queues, result_queue, done_event, blocks) -> None:
    """Stop the workers (politely, then by force), close the queues, and remove every shared
    memory block file the main process has not mapped (in flight, or left by a dead worker)."""
    try:
        done_event.set()
        for index_queue in index_queues:
            index_queue.put(None)
        for process in workers:
            process.join(timeout=MP_STATUS_CHECK_INTERVAL)
        for index_queue in index_queues:
            index_queue.cancel_join_thread()
            index_queue.close()
        result_queue.cancel_join_thread()
        result_queue.close()
    finally:
        for process in workers:
            if process.is_alive():
                process.terminate()
                process.join(timeout=MP_STATUS_CHECK_INTERVAL)
        blocks.close()  # after the workers stopped: none can create a block behind it
