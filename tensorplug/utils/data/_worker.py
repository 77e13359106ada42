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
from typing import Callable

from . import _shared_memory
from ._reading import make_reader

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


class StreamEnded:
    """Sent by a worker whose copy of an IterableDataset has no batch left: the main process
    stops giving it tasks for this epoch."""

    def __init__(self, worker_id: int) -> None:
        self.worker_id = worker_id


class NewEpoch:
    """Sent to persistent workers when an epoch starts, and echoed back once the worker has
    restarted its stream: whatever it sends after the echo belongs to the new epoch."""


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


@dataclass(frozen=True)
class WorkerJob:
    """What every worker of one DataLoader iterator is started with (pickled into each)."""

    dataset: object
    stream: bool  # an IterableDataset
    batched: bool  # tasks are index lists, collated with collate_fn
    collate_fn: Callable
    drop_last: bool
    base_seed: int
    init_fn: Callable | None
    num_workers: int
    shm_prefix: str  # where this iterator's shared-memory blocks live

    def reader(self):
        """A reader for a new epoch (a stream starts again from ``iter(dataset)``)."""
        return make_reader(self.dataset, stream=self.stream, batched=self.batched, collate_fn=self.collate_fn,
                           drop_last=self.drop_last)


def worker_loop(job: WorkerJob, worker_id: int, tasks, results, done_event) -> None:
    """The body of a worker process (the target of ``Process``): answer each task on ``tasks``
    with its batch (or the error that making it raised) on ``results``, until the main process
    sends None or dies."""
    global _worker_info
    blocks = _shared_memory.WorkerBlocks(job.shm_prefix, worker_id)
    _shared_memory.set_worker_blocks(blocks)
    try:
        from ... import set_num_threads

        set_num_threads(1)  # workers are many; one thread each keeps the cores for the main process
        seed = job.base_seed + worker_id
        _seed_everything(seed, job.base_seed, worker_id)
        _worker_info = WorkerInfo(id=worker_id, num_workers=job.num_workers, seed=seed, dataset=job.dataset)
        _answer_tasks(job, worker_id, tasks, results, done_event, blocks)
    except KeyboardInterrupt:
        pass
    if done_event.is_set():
        results.cancel_join_thread()
        results.close()


def _answer_tasks(job: WorkerJob, worker_id: int, tasks, results, done_event, blocks) -> None:
    where = f"in DataLoader worker process {worker_id}"
    # An error from worker_init_fn or from starting a stream is not raised here: it answers the
    # next task, so that the main process raises it with this worker's traceback.
    reader, held_error = None, None
    try:
        if job.init_fn is not None:
            job.init_fn(worker_id)
        reader = job.reader()
    except Exception:
        held_error = ExceptionWrapper(sys.exc_info(), where)
    stream_ended = False
    # Watch the main process itself, not os.getppid(): a forkserver child's parent is the
    # fork server, which outlives the main process while its workers hold its pipe.
    main_process = multiprocessing.parent_process()
    while True:
        if main_process is not None and not main_process.is_alive():
            blocks.remove_files()  # nobody else will remove them
            return
        try:
            message = tasks.get(timeout=MP_STATUS_CHECK_INTERVAL)
        except queue.Empty:
            continue
        if message is None:
            return  # shutdown
        if isinstance(message, NewEpoch):
            _send(results, message, None, blocks)
            stream_ended = False
            if held_error is None:
                try:
                    reader = job.reader()
                except Exception:
                    held_error = ExceptionWrapper(sys.exc_info(), where)
            continue
        task_id, task, freed_blocks = message
        blocks.give_back(freed_blocks)
        if done_event.is_set() or stream_ended:
            continue  # the main process is shutting down, or this worker has nothing left to send
        if held_error is not None:
            answer, held_error = held_error, None
        else:
            try:
                answer = reader(task)
            except StopIteration:
                if not job.stream:
                    answer = ExceptionWrapper(sys.exc_info(), where)
                else:
                    answer = StreamEnded(worker_id)
                    stream_ended = True
            except Exception:
                answer = ExceptionWrapper(sys.exc_info(), where)
        _send(results, task_id, answer, blocks)
        del answer, message  # a batch held here would keep its shared block from being reused
