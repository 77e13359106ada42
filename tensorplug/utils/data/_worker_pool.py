"""The main process's side of loading with worker processes: a pool that hands tasks to its
workers and puts their batches back in order.

Tasks (index lists, from the loader's sampler) go out round-robin, each with an id counting up
from 0 in the epoch, and at most ``prefetch_factor * num_workers`` are outstanding. Batches come
back on one result queue in whatever order the workers finish; the pool yields them by id
(batches that arrive early wait in ``_early``), or as they arrive with ``in_order=False``. Each
delivered batch sends the next task, to the worker that made it or the next one round-robin.

A worker that runs out of stream (IterableDataset) says so, gets no more tasks this epoch, and
the ids it was given but will not answer are skipped. Persistent workers outlive the epoch: the
next epoch starts with a ``NewEpoch`` handshake, after which nothing of the old epoch arrives.
"""
from __future__ import annotations

import os
import queue
import sys
import time
import weakref
from typing import Any, Iterator

from . import _shared_memory, _worker
from ._worker import MP_STATUS_CHECK_INTERVAL, ExceptionWrapper, NewEpoch, StreamEnded, WorkerJob


class WorkerPool:
    """``num_workers`` processes reading batches for one DataLoader iterator."""

    def __init__(self, loader, base_seed: int, context) -> None:
        _worker.refuse_workers_while_reimporting_main()
        self._size = loader.num_workers
        self._prefetch = loader.prefetch_factor
        self._in_order = loader.in_order
        self._persistent = loader.persistent_workers
        self._timeout = loader.timeout
        self._closed = False
        self._results = context.Queue()
        self._done = context.Event()
        self._task_queues: list = []
        self._processes: list = []
        self._blocks = _shared_memory.MainBlocks(_shared_memory.new_prefix())
        # Shutdown lives in a finalizer, not in __del__, so that it also runs at interpreter
        # exit (before multiprocessing kills daemonic workers) and holds no reference to self.
        self._release = weakref.finalize(self, _release_workers, self._processes, self._task_queues, self._results,
                                         self._done, self._blocks)
        job = WorkerJob(dataset=loader.dataset, stream=loader._stream, batched=loader.batch_sampler is not None,
                        collate_fn=loader.collate_fn, drop_last=loader.drop_last, base_seed=base_seed,
                        init_fn=loader.worker_init_fn, num_workers=self._size, shm_prefix=self._blocks.prefix)
        try:
            for worker_id in range(self._size):
                self._start_worker(context, job, worker_id)
        except BaseException:
            self.close()
            raise
        self._epochs = 0

    def _start_worker(self, context, job: WorkerJob, worker_id: int) -> None:
        tasks = context.Queue()
        tasks.cancel_join_thread()  # tasks left in it at shutdown are not worth waiting for
        process = context.Process(target=_worker.worker_loop, args=(job, worker_id, tasks, self._results, self._done),
                                  name=f"{_worker.WORKER_NAME}:{self._blocks.prefix}", daemon=True)
        process.start()
        self._task_queues.append(tasks)
        self._processes.append(process)

    # -- an epoch ---------------------------------------------------------------------------

    def start_epoch(self, tasks: Iterator) -> None:
        """Read the batches of ``tasks`` from now on (persistent workers: after the last epoch)."""
        self._tasks = tasks
        self._next_id = 0  # the id the next task sent gets
        self._due = 0  # the lowest id not yet yielded or skipped
        self._owner: dict[int, int] = {}  # id -> worker, for tasks sent and not yet yielded
        self._early: dict[int, Any] = {}  # id -> batch that arrived before the ones before it
        self._streaming = [True] * self._size  # False once a worker's stream has ended
        # Tasks given to each worker whose batch has not been yielded yet: with in_order=False a
        # worker gets a new task only below its share, so a slow one cannot hoard the indices.
        self._load = [0] * self._size
        self._cursor = 0  # round-robin position: each epoch starts at worker 0
        if self._epochs > 0:
            self._wait_for_new_epoch()
        self._epochs += 1
        for _ in range(self._prefetch * self._size):
            self._send_task()

    def _wait_for_new_epoch(self) -> None:
        for tasks in self._task_queues:
            tasks.put(NewEpoch())
        echoes = 0
        while echoes < self._size:  # what arrives before a worker's echo is the old epoch's: dropped
            tag, _ = self._receive()
            echoes += isinstance(tag, NewEpoch)

    def next_batch(self):
        """The next batch; StopIteration at the end of the epoch (non-persistent workers stop)."""
        while True:
            task_id = self._awaited_task()
            if task_id is None:
                if not self._persistent:
                    self.close()
                raise StopIteration
            if task_id in self._early:
                return self._deliver(task_id, self._early.pop(task_id))
            received_id, batch = self._receive()
            if isinstance(batch, StreamEnded):
                self._stream_ended(batch.worker_id)
            elif received_id == task_id or not self._in_order:
                return self._deliver(received_id, batch)
            else:
                self._early[received_id] = batch

    def _awaited_task(self) -> int | None:
        """The lowest id whose batch is still to come, or None when the epoch is over. Ids
        already yielded (out of order) are passed over, and so are those given to a worker
        whose stream has ended, unless their batch is already here."""
        while self._due < self._next_id:
            worker = self._owner.get(self._due)
            if worker is not None and (self._due in self._early or self._streaming[worker]):
                return self._due
            self._owner.pop(self._due, None)
            self._due += 1
        return None

    def _deliver(self, task_id: int, batch):
        worker = self._owner.pop(task_id)
        self._load[worker] -= 1
        self._send_task()  # before a worker's error is raised, as PyTorch does
        if isinstance(batch, ExceptionWrapper):
            batch.reraise()
        return batch

    def _stream_ended(self, worker: int) -> None:
        self._streaming[worker] = False
        if not self._persistent:
            self._task_queues[worker].put(None)  # this worker has nothing more to do
        self._send_task()

    def _send_task(self) -> None:
        worker = self._choose_worker()
        if worker is None:
            return
        try:
            task = next(self._tasks)
        except StopIteration:
            return
        # Blocks the program has let go of go back with the worker's next task.
        self._task_queues[worker].put((self._next_id, task, self._blocks.take_freed(worker)))
        self._owner[self._next_id] = worker
        self._load[worker] += 1
        self._next_id += 1

    def _choose_worker(self) -> int | None:
        """The next streaming worker round-robin; with in_order=False the next one holding fewer
        than its share of the outstanding tasks (PyTorch's rule). None when none qualifies."""
        share = self._prefetch * self._size // max(sum(self._streaming), 1)
        for _ in range(self._size):
            worker = self._cursor
            self._cursor = (worker + 1) % self._size
            if self._streaming[worker] and (self._in_order or self._load[worker] < share):
                return worker
        return None

    # -- the result queue -------------------------------------------------------------------

    def _receive(self):
        """(task id, batch) of the next result. Waits in short slices, even under a long
        timeout, so that a dead worker is reported within MP_STATUS_CHECK_INTERVAL rather than
        when the timeout runs out."""
        deadline = time.monotonic() + self._timeout if self._timeout > 0 else None
        while True:
            wait = MP_STATUS_CHECK_INTERVAL
            if deadline is not None:
                wait = min(wait, deadline - time.monotonic())
                if wait <= 0:
                    raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds")
            try:
                payload = self._results.get(timeout=wait)
            except queue.Empty:
                self._raise_if_a_worker_died()
                continue
            return self._blocks.loads(payload)

    def _raise_if_a_worker_died(self) -> None:
        # A worker whose stream ended may have exited normally; only one that still had work counts.
        dead = [process for process, streaming in zip(self._processes, self._streaming)
                if streaming and not process.is_alive()]
        if not dead:
            return
        # Checked before closing: closing removes every file under the prefix, the marker too.
        unguarded = os.path.exists(self._blocks.prefix + _worker.UNGUARDED_MARKER)
        self.close()
        if unguarded:
            script = getattr(sys.modules.get("__main__"), "__file__", None)
            raise RuntimeError(_worker.unguarded_main_message(script)) from None
        pids = ", ".join(str(process.pid) for process in dead)
        raise RuntimeError(f"DataLoader worker (pid(s) {pids}) exited unexpectedly") from None

    def close(self) -> None:
        """Stop the workers and remove this pool's shared memory (once; later calls do nothing)."""
        if not self._closed:
            self._closed = True
            self._release()


def _release_workers(processes, task_queues, results, done, blocks) -> None:
    """Stop the workers (politely, then by force), close the queues, and remove every shared
    memory block file the main process has not mapped (in flight, or left by a dead worker)."""
    try:
        done.set()
        for tasks in task_queues:
            tasks.put(None)
        for process in processes:
            process.join(timeout=MP_STATUS_CHECK_INTERVAL)
        for tasks in task_queues:
            tasks.cancel_join_thread()
            tasks.close()
        results.cancel_join_thread()
        results.close()
    finally:
        for process in processes:
            if process.is_alive():
                process.terminate()
                process.join(timeout=MP_STATUS_CHECK_INTERVAL)
        blocks.close()  # after the workers stopped: none can create a block behind it
