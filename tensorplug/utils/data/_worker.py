"""What runs inside a DataLoader worker process, and the objects that cross the process boundary.

Workers are started with the 'forkserver' or 'spawn' method, never 'fork': a fork after OpenMP,
OpenBLAS or PoCL threads exist can deadlock the child (DESIGN.md). Each worker imports
tensorplug afresh, seeds itself with ``base_seed + worker_id``, and answers index lists sent on
its own queue with batches on the shared result queue: tensors in shared memory, the rest
pickled (``_shared_memory``). Everything a worker sends is pickled in the worker first, so an
unpicklable batch or exception becomes an error message in the main process instead of a
silent hang.
"""
from __future__ import annotations

import multiprocessing
import pickle
import queue
import random
import sys
import traceback
from dataclasses import dataclass

from . import _shared_memory

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


def _send(data_queue, idx, data, blocks: _shared_memory.WorkerBlocks) -> None:
    try:
        payload = blocks.dumps(idx, data)
    except Exception:
        wrapped = ExceptionWrapper(sys.exc_info(), f"in DataLoader worker process {blocks.worker_id} while pickling its batch")
        payload = blocks.dumps(idx, wrapped)
    data_queue.put(payload)


#: Worker processes are named WORKER_NAME:<the loader's shared-memory prefix>, so that a worker
#: that finds itself re-running an unguarded main script can tell the main process (below).
WORKER_NAME = "tensorplug-DataLoader-worker"
UNGUARDED_MARKER = "unguarded_main"


def unguarded_main_message(script: str | None) -> str:
    where = f"the main script ({script})" if script else "the main module"
    return (
        f"DataLoader worker processes could not start: {where} starts DataLoader workers as soon as it is "
        "imported. tensorplug starts workers with 'forkserver' or 'spawn', which import the main script again "
        "in every worker, so the code that iterates over a DataLoader with num_workers > 0 must run only when "
        "the script is the program being run. Put it (your training loop) under\n\n"
        "    if __name__ == \"__main__\":\n\n"
        "or use num_workers=0. See 'Safe importing of main module' in the multiprocessing documentation."
    )


def _reimporting_main() -> bool:
    """Whether this process is a child re-running its parent's main script (multiprocessing
    runs it as module ``__mp_main__`` while preparing a 'spawn' or 'forkserver' child)."""
    if getattr(multiprocessing.current_process(), "_inheriting", False):
        return True
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "<module>" and frame.f_globals.get("__name__") == "__mp_main__":
            return True
        frame = frame.f_back
    return False


def refuse_workers_while_reimporting_main() -> None:
    """Called before starting workers. In a child that re-runs an unguarded main script this
    would start workers from workers, forever; instead say what to fix and end the child. A
    DataLoader worker also leaves a marker next to its loader's blocks, from which the main
    process raises the same message (rather than "worker exited unexpectedly")."""
    if not _reimporting_main():
        return
    module = sys.modules.get("__mp_main__") or sys.modules.get("__main__")
    message = unguarded_main_message(getattr(module, "__file__", None))
    name = multiprocessing.current_process().name
    if name.startswith(WORKER_NAME + ":"):
        try:
            with open(name.split(":", 1)[1] + UNGUARDED_MARKER, "w") as marker:
                marker.write(message)
            raise SystemExit(1)  # the main process raises the message
        except OSError:
            pass
    # Not a DataLoader worker of a live loader (or no marker could be written): say it here.
    sys.stderr.write(f"RuntimeError: {message}\n")
    sys.stderr.flush()
    raise SystemExit(1)


def worker_loop(is_iterable, dataset, index_queue, data_queue, done_event, auto_collation, collate_fn, drop_last,
                base_seed, init_fn, worker_id, num_workers, persistent_workers, shm_prefix) -> None:
    """The body of a worker process (the target of ``Process``)."""
    global _worker_info
    blocks = _shared_memory.WorkerBlocks(shm_prefix, worker_id)
    _shared_memory.set_worker_blocks(blocks)
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
        # Watch the main process itself, not os.getppid(): a forkserver child's parent is the
        # fork server, which outlives the main process while its workers hold its pipe.
        main_process = multiprocessing.parent_process()
        while main_process is None or main_process.is_alive():  # a worker whose main process died exits
            try:
                task = index_queue.get(timeout=MP_STATUS_CHECK_INTERVAL)
            except queue.Empty:
                continue
            if isinstance(task, _ResumeIteration):
                _send(data_queue, task, None, blocks)
                iteration_end = False
                if init_exception is None:
                    try:
                        fetcher = create_fetcher(is_iterable, dataset, auto_collation, collate_fn, drop_last)
                    except Exception:
                        init_exception = ExceptionWrapper(sys.exc_info(), f"in DataLoader worker process {worker_id}")
                continue
            if task is None:
                break  # shutdown
            idx, index, freed_blocks = task
            blocks.give_back(freed_blocks)
            if done_event.is_set() or iteration_end:
                continue  # the main process is shutting down, or this worker's stream ended
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
            _send(data_queue, idx, data, blocks)
            del data, task
        else:
            blocks.remove_files()  # the parent died: nobody else will remove them
    except KeyboardInterrupt:
        pass
    if done_event.is_set():
        data_queue.cancel_join_thread()
        data_queue.close()
