"""What runs inside a DataLoader worker process, and the objects that cross the process boundary.

Workers are started with the 'forkserver' or 'spawn' method, never 'fork': a fork after OpenMP,
OpenBLAS or PoCL threads exist can deadlock the child (DESIGN.md). Each worker imports
tensorplug afresh, seeds itself with ``base_seed + worker_id``, and answers index lists sent on
its own queue with pickled batches on the shared result queue. Everything a worker sends is
pickled in the worker first, so an unpicklable batch or exception becomes an error message in
the main process instead of a silent hang.
"""
from __future__ import annotations

import os
import pickle
import queue
import random
import sys
import traceback
from dataclasses import dataclass

#: How often (seconds) a blocked worker checks that its parent lives, and the main process that
#: its workers live.
MP_STATUS_CHECK_INTERVAL = 1.0

_worker_info = None


@dataclass(frozen=True)
class WorkerInfo:
    """What ``get_worker_info()`` returns inside a worker: its id, the worker count, its seed and
    its own copy of the dataset."""

    id: int
    num_workers: int
    seed: int
    dataset: object


def get_worker_info() -> WorkerInfo | None:
    """This worker's ``WorkerInfo``; None in the main process."""
    return _worker_info


class _IterableDatasetStopIteration:
    """Sent by a worker whose copy of an IterableDataset is exhausted."""

    def __init__(self, worker_id: int) -> None:
        self.worker_id = worker_id


class _ResumeIteration:
    """Sent to persistent workers at the start of a new epoch."""


class _KeyErrorMessage(str):
    """Keeps the multi-line message of a re-raised KeyError readable (KeyError reprs its arg)."""

    def __repr__(self) -> str:
        return self


class ExceptionWrapper:
    """An exception caught in a worker: its type and the full traceback text."""

    def __init__(self, exc_info, where: str) -> None:
        exc_type = exc_info[0]
        text = "".join(traceback.format_exception(*exc_info))
        try:
            pickle.loads(pickle.dumps(exc_type))
        except Exception:  # a type the main process could not rebuild: report it as RuntimeError
            text = f"(original exception type {exc_type.__qualname__} is not picklable)\n{text}"
            exc_type = RuntimeError
        self.exc_type = exc_type
        self.exc_msg = text
        self.where = where

    def reraise(self):
        msg = f"Caught {self.exc_type.__name__} {self.where}.\nOriginal {self.exc_msg}"
        if self.exc_type is KeyError:
            msg = _KeyErrorMessage(msg)
        try:
            exception = self.exc_type(msg)
        except Exception:  # the type needs other constructor arguments
            raise RuntimeError(msg) from None
        raise exception


class _MapDatasetFetcher:
    def __init__(self, dataset, auto_collation: bool, collate_fn, drop_last: bool) -> None:
        self.dataset, self.auto_collation, self.collate_fn = dataset, auto_collation, collate_fn

    def fetch(self, index):
        if self.auto_collation:
            getitems = getattr(self.dataset, "__getitems__", None)
            data = getitems(index) if getitems is not None else [self.dataset[i] for i in index]
        else:
            data = self.dataset[index]
        return self.collate_fn(data)


class _IterableDatasetFetcher:
    def __init__(self, dataset, auto_collation: bool, collate_fn, drop_last: bool) -> None:
        self.iterator = iter(dataset)
        self.auto_collation, self.collate_fn, self.drop_last = auto_collation, collate_fn, drop_last
        self.ended = False

    def fetch(self, index):
        if self.ended:
            raise StopIteration
        if self.auto_collation:
            data = []
            for _ in index:
                try:
                    data.append(next(self.iterator))
                except StopIteration:
                    self.ended = True
                    break
            if len(data) == 0 or (self.drop_last and len(data) < len(index)):
                raise StopIteration
        else:
            data = next(self.iterator)
        return self.collate_fn(data)


def create_fetcher(is_iterable: bool, dataset, auto_collation: bool, collate_fn, drop_last: bool):
    kind = _IterableDatasetFetcher if is_iterable else _MapDatasetFetcher
    return kind(dataset, auto_collation, collate_fn, drop_last)


def _seed_everything(seed: int, base_seed: int, worker_id: int) -> None:
    import numpy as np

    from ...frontend.random import manual_seed

    random.seed(seed)
    manual_seed(seed)
    np.random.seed(np.random.SeedSequence([base_seed & (2**64 - 1), worker_id]).generate_state(4))


def _send(data_queue, idx, data, worker_id: int) -> None:
    try:
        payload = pickle.dumps((idx, data), protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:
        wrapped = ExceptionWrapper(sys.exc_info(), f"in DataLoader worker process {worker_id} while pickling its batch")
        payload = pickle.dumps((idx, wrapped), protocol=pickle.HIGHEST_PROTOCOL)
    data_queue.put(payload)


def worker_loop(is_iterable, dataset, index_queue, data_queue, done_event, auto_collation, collate_fn, drop_last,
                base_seed, init_fn, worker_id, num_workers, persistent_workers) -> None:
    """The body of a worker process (the target of ``Process``)."""
    global _worker_info
    try:
        from ... import set_num_threads

        set_num_threads(1)  # workers are many; one thread each keeps the cores for the main process
        seed = base_seed + worker_id
        _seed_everything(seed, base_seed, worker_id)
        _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed, dataset=dataset)
        init_exception = None
        fetcher = None
        try:
            if init_fn is not None:
                init_fn(worker_id)
            fetcher = create_fetcher(is_iterable, dataset, auto_collation, collate_fn, drop_last)
        except Exception:
            init_exception = ExceptionWrapper(sys.exc_info(), f"in DataLoader worker process {worker_id}")
        iteration_end = False
        parent = os.getppid()
        while os.getppid() == parent:  # a worker whose parent died exits
            try:
                task = index_queue.get(timeout=MP_STATUS_CHECK_INTERVAL)
            except queue.Empty:
                continue
            if isinstance(task, _ResumeIteration):
                _send(data_queue, task, None, worker_id)
                iteration_end = False
                if init_exception is None:
                    try:
                        fetcher = create_fetcher(is_iterable, dataset, auto_collation, collate_fn, drop_last)
                    except Exception:
                        init_exception = ExceptionWrapper(sys.exc_info(), f"in DataLoader worker process {worker_id}")
                continue
            if task is None:
                break  # shutdown
            if done_event.is_set() or iteration_end:
                continue  # the main process is shutting down, or this worker's stream ended
            idx, index = task
            if init_exception is not None:
                data, init_exception = init_exception, None
            else:
                try:
                    data = fetcher.fetch(index)
                except Exception as exc:
                    if isinstance(exc, StopIteration) and is_iterable:
                        data = _IterableDatasetStopIteration(worker_id)
                        iteration_end = True
                    else:
                        data = ExceptionWrapper(sys.exc_info(), f"in DataLoader worker process {worker_id}")
            _send(data_queue, idx, data, worker_id)
            del data, task
    except KeyboardInterrupt:
        pass
    if done_event.is_set():
        data_queue.cancel_join_thread()
        data_queue.close()
