"""``FileStore``: a key-value store in a file, shared by every process that opens the same path on
one machine (or on a file system with working ``flock``).

Each operation takes an exclusive ``flock`` on the file, reads the whole table, applies the
operation and, when it changed something, writes the table back: simple and atomic across
processes, and fast enough for what stores hold (rendezvous data, counters, a few KB). Blocking
calls poll, sleeping a little longer each time up to 50 ms.
"""
from __future__ import annotations

import datetime
import fcntl
import os
import time

from . import _wire
from ._table import INTERNAL_PREFIX, MUTATING, KeyValueTable
from .base import DEFAULT_STORE_TIMEOUT, Store

__all__ = ["FileStore"]

_FORMAT = b"tensorplug-filestore-1\n"
_REFCOUNT_KEY = INTERNAL_PREFIX + "refcount"


class FileStore(Store):
    """``dist.FileStore(file_name, world_size=-1)``: processes opening the same file see one store."""

    def __init__(self, file_name: str, world_size: int = -1, timeout: datetime.timedelta = DEFAULT_STORE_TIMEOUT):
        super().__init__(timeout)
        if not isinstance(file_name, (str, os.PathLike)):
            raise TypeError(f"FileStore: file_name must be a path, got {type(file_name).__name__}")
        self._path = os.fspath(file_name)
        self._world_size = int(world_size)
        # Each opener counts itself, as PyTorch's FileStore does (num_keys includes that key).
        self._run("add", _REFCOUNT_KEY, 1)

    @property
    def path(self) -> str:
        """The file that holds the store."""
        return self._path

    def _run(self, op: str, *args):
        with open(self._path, "a+b") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            try:
                f.seek(0)
                table = _load(f.read(), self._path)
                result = table.apply(op, list(args))
                if op in MUTATING:
                    f.seek(0)
                    f.truncate()
                    f.write(_dump(table))
                    f.flush()
                return result
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)

    def _run_blocking(self, op: str, args: list, seconds: float):
        deadline = time.monotonic() + seconds
        pause = 1e-3
        while True:
            result = self._run(op, *args)
            if result is not None:
                return result
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            time.sleep(min(pause, left))
            pause = min(pause * 2, 0.05)

    def delete_key(self, key: str) -> bool:
        """Removes ``key``; True whether or not it existed, as PyTorch's FileStore answers."""
        super().delete_key(key)
        return True

    def has_extended_api(self) -> bool:
        """False, as PyTorch's FileStore answers (the extended calls work all the same)."""
        return False

    def clone(self) -> "FileStore":
        """Another handle on the same file."""
        return FileStore(self._path, self._world_size, self.timeout)


def _dump(table: KeyValueTable) -> bytes:
    return _FORMAT + _wire.encode([[[k, v] for k, v in table.data.items()],
                                   [[k, list(q)] for k, q in table.queues.items()]])


def _load(raw: bytes, path: str) -> KeyValueTable:
    if not raw:
        return KeyValueTable()
    if not raw.startswith(_FORMAT):
        raise ValueError(f"FileStore: {path} is not a tensorplug FileStore file (another program's file, or PyTorch's "
                         "format); give each store its own new file")
    data, queues = _wire.decode(raw[len(_FORMAT):])
    return KeyValueTable(dict((k, v) for k, v in data), dict((k, q) for k, q in queues))
