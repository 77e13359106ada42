"""``tp.multiprocessing``: Python's ``multiprocessing`` with PyTorch's additions
(shared CPU tensors, ``get/set_sharing_strategy``, ``spawn``, ``start_processes``).

Every name of the standard module is re-exported (``Process``, ``Queue``, ``Pool``,
``get_context``, ``set_start_method``, ...). A CPU tensor moved to shared memory
(``Tensor.share_memory_()``, ``Module.share_memory()``) and sent to another process (as a
``Process`` argument, through a ``Queue`` or a ``Pipe``, with any start method) arrives on the same
memory: in-place updates by any process are seen by all, which is what Hogwild training needs::

    model.share_memory()
    workers = [mp.Process(target=train, args=(model,)) for _ in range(4)]

Other tensors arrive as copies. The memory is freed when the last process holding a tensor on it
drops it; nothing is left in /dev/shm (``frontend/shared_memory.py``). Shared tensors travel by
file descriptor whatever the sharing strategy (``_reductions.py``).
DataLoader workers have their own shared-memory transport (docs/data-loading.md).
"""
from __future__ import annotations

import multiprocessing as _mp
import multiprocessing.connection  # noqa: F401  (join waits on process sentinels)
import sys
import traceback
from multiprocessing import *  # noqa: F401,F403  (PyTorch's module re-exports the standard one)

from . import _reductions

__all__ = list(_mp.__all__) + [
    "get_sharing_strategy", "set_sharing_strategy", "get_all_sharing_strategies", "spawn", "start_processes",
    "ProcessContext", "ProcessException", "ProcessRaisedException", "ProcessExitedException",
]

_STRATEGIES = ("file_descriptor", "file_system") if sys.platform.startswith("linux") else ("file_system",)
_strategy = _STRATEGIES[0]


def get_all_sharing_strategies() -> set:
    """The strategies PyTorch offers on this platform."""
    return set(_STRATEGIES)


def get_sharing_strategy() -> str:
    """The strategy last set (PyTorch's default at first). Shared tensors travel by file
    descriptor under either: tensorplug's shared memory files are anonymous (no name in /dev/shm
    that another process could open, and none to leak), which is ``"file_descriptor"``'s
    transport; ``"file_system"`` is accepted so that programs setting it run unchanged."""
    return _strategy


def set_sharing_strategy(new_strategy: str) -> None:
    """Record ``new_strategy`` (one of ``get_all_sharing_strategies()``); see
    ``get_sharing_strategy`` for what it changes (nothing: both send descriptors)."""
    global _strategy
    if new_strategy not in _STRATEGIES:
        raise ValueError(f"set_sharing_strategy(): {new_strategy!r} is not one of {sorted(_STRATEGIES)}")
    _strategy = new_strategy


_reductions.register()


class ProcessException(Exception):
    """A process started by ``spawn`` failed."""

    def __init__(self, msg: str, error_index: int, pid: int):
        super().__init__(msg)
        self.msg, self.error_index, self.pid = msg, error_index, pid

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.pid)


class ProcessRaisedException(ProcessException):
    """A spawned process raised an exception; the message holds its traceback."""


class ProcessExitedException(ProcessException):
    """A spawned process exited with a non-zero code without raising."""

    def __init__(self, msg: str, error_index: int, error_pid: int, exit_code: int, signal_name=None):
        super().__init__(msg, error_index, error_pid)
        self.exit_code, self.signal_name = exit_code, signal_name

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.pid, self.exit_code, self.signal_name)


def _run(fn, index: int, args: tuple, errors) -> None:
    """The spawned process's entry point: ``fn(index, *args)``, its traceback sent back on failure."""
    try:
        fn(index, *args)
    except KeyboardInterrupt:
        pass
    except BaseException:
        errors.put(traceback.format_exc())
        sys.exit(1)


class ProcessContext:
    """The processes that ``spawn(..., join=False)`` started; ``join()`` waits for them."""

    def __init__(self, processes, error_queues):
        self.processes = processes
        self.error_queues = error_queues

    def pids(self) -> list:
        return [p.pid for p in self.processes]

    def join(self, timeout=None) -> bool:
        """Wait until a process exits (or ``timeout`` seconds pass); True once all exited cleanly.
        A failure is raised as ``ProcessRaisedException``/``ProcessExitedException`` after the
        other processes are terminated, as in PyTorch."""
        running = [p.sentinel for p in self.processes if p.exitcode is None]
        if running:
            _mp.connection.wait(running, timeout=timeout)
        for index, process in enumerate(self.processes):
            if process.exitcode is None or process.exitcode == 0:
                continue
            for other in self.processes:
                if other.is_alive():
                    other.terminate()
                other.join()
            if not self.error_queues[index].empty():
                message = f"\n\n-- Process {index} terminated with the following error:\n{self.error_queues[index].get()}"
                raise ProcessRaisedException(message, index, process.pid)
            raise ProcessExitedException(f"process {index} terminated with exit code {process.exitcode}", index,
                                         process.pid, process.exitcode)
        return all(p.exitcode == 0 for p in self.processes)


def start_processes(fn, args=(), nprocs: int = 1, join: bool = True, daemon: bool = False, start_method: str = "spawn"):
    """Run ``fn(i, *args)`` for i in range(nprocs), each in a new process started by ``start_method``."""
    context = _mp.get_context(start_method)
    processes, error_queues = [], []
    for index in range(nprocs):
        errors = context.SimpleQueue()
        process = context.Process(target=_run, args=(fn, index, tuple(args), errors), daemon=daemon)
        process.start()
        processes.append(process)
        error_queues.append(errors)
    processes_context = ProcessContext(processes, error_queues)
    if not join:
        return processes_context
    while not processes_context.join():
        pass
    return None


def spawn(fn, args=(), nprocs: int = 1, join: bool = True, daemon: bool = False, start_method: str = "spawn"):
    """``start_processes`` with PyTorch's default, the spawn start method."""
    return start_processes(fn, args, nprocs, join, daemon, start_method)
