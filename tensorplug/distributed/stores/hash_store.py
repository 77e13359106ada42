"""``HashStore``: a key-value store in this process's memory, safe to share between threads.

``LockedTable`` (a table behind a lock, with waiting) is also what TCPStore's server holds.
"""
from __future__ import annotations

import datetime
import threading
import time

from ._table import MUTATING, KeyValueTable
from .base import DEFAULT_STORE_TIMEOUT, Store

__all__ = ["HashStore", "LockedTable"]


class LockedTable:
    """A KeyValueTable whose operations run one at a time; blocked callers wake on every change."""

    def __init__(self):
        self._table = KeyValueTable()
        self._changed = threading.Condition()

    def knows(self, op: str) -> bool:
        """Whether ``op`` is a table operation (a server checks what clients send)."""
        return not op.startswith("_") and hasattr(self._table, "_op_" + op)

    def run(self, op: str, args: list):
        with self._changed:
            result = self._table.apply(op, args)
            if op in MUTATING:
                self._changed.notify_all()
            return result

    def run_blocking(self, op: str, args: list, seconds: float):
        deadline = time.monotonic() + seconds
        with self._changed:
            while True:
                result = self._table.apply(op, args)
                if result is not None:
                    if op in MUTATING:  # a blocking queue_pop changed the table
                        self._changed.notify_all()
                    return result
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self._changed.wait(left)


class HashStore(Store):
    """``dist.HashStore()``: an in-memory store for the threads of one process."""

    def __init__(self, timeout: datetime.timedelta = DEFAULT_STORE_TIMEOUT, *, _shared: LockedTable | None = None):
        super().__init__(timeout)
        self._shared = _shared if _shared is not None else LockedTable()

    def _run(self, op: str, *args):
        return self._shared.run(op, list(args))

    def _run_blocking(self, op: str, args: list, seconds: float):
        return self._shared.run_blocking(op, args, seconds)

    def clone(self) -> "HashStore":
        """Another handle on the same data."""
        return HashStore(self.timeout, _shared=self._shared)
