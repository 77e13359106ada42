"""The data of a key-value store and the meaning of every store operation on it.

HashStore and TCPStore's server keep one table in memory; FileStore loads one from its file for
each operation. Keeping the semantics here (what ``add`` stores, what ``compare_set`` answers)
makes every store behave the same. Each operation is atomic and never blocks: one that would
have to wait (a missing key, an empty queue) answers ``None`` and the caller decides how to wait.
"""
from __future__ import annotations

from collections import deque

__all__ = ["KeyValueTable", "INTERNAL_PREFIX", "MUTATING"]

#: Keys the stores use for their own bookkeeping (a worker count, a reference count): PyTorch's
#: stores count such keys in ``num_keys`` but do not list them, and so do these.
INTERNAL_PREFIX = "\x00tensorplug/"

#: Operations that change the table (FileStore writes the file back only after these).
MUTATING = frozenset({"set", "add", "compare_set", "delete_key", "multi_set", "append", "queue_push", "queue_pop"})


class KeyValueTable:
    """Keys (str) to values (bytes), plus named FIFO queues of bytes."""

    def __init__(self, data: dict | None = None, queues: dict | None = None):
        self.data: dict[str, bytes] = dict(data or {})
        self.queues: dict[str, deque] = {k: deque(v) for k, v in (queues or {}).items()}

    def apply(self, op: str, args: list):
        """Runs one operation; ``None`` means "not yet" for the operations that can wait."""
        return getattr(self, "_op_" + op)(*args)

    # Operations: named after the Store methods they serve.
    def _op_set(self, key: str, value: bytes) -> None:
        self.data[key] = value

    def _op_get(self, key: str) -> bytes | None:
        return self.data.get(key)

    def _op_add(self, key: str, amount: int) -> int:
        current = self.data.get(key, b"0")
        try:
            total = int(current) + amount
        except ValueError:
            raise ValueError(f"add: the value of key {key!r} is {current!r}, not an integer counter") from None
        # Stored as decimal text, as PyTorch does, so get() after add() reads b"3".
        self.data[key] = str(total).encode()
        return total

    def _op_compare_set(self, key: str, expected: bytes, desired: bytes) -> bytes:
        current = self.data.get(key)
        if current is None:
            # A missing key counts as holding the empty value: compare_set(k, "", v) creates it.
            if expected == b"":
                self.data[key] = desired
                return desired
            return expected
        if current == expected:
            self.data[key] = desired
            return desired
        return current

    def _op_check(self, keys: list) -> bool:
        return all(k in self.data for k in keys)

    def _op_wait(self, keys: list) -> bool | None:
        return True if self._op_check(keys) else None

    def _op_delete_key(self, key: str) -> bool:
        return self.data.pop(key, None) is not None

    def _op_num_keys(self) -> int:
        return len(self.data)

    def _op_list_keys(self) -> list:
        return [k for k in self.data if not k.startswith(INTERNAL_PREFIX)]

    def _op_multi_get(self, keys: list) -> list | None:
        return [self.data[k] for k in keys] if self._op_check(keys) else None

    def _op_multi_set(self, keys: list, values: list) -> None:
        self.data.update(zip(keys, values))

    def _op_append(self, key: str, value: bytes) -> None:
        self.data[key] = self.data.get(key, b"") + value

    def _op_queue_push(self, key: str, value: bytes) -> None:
        self.queues.setdefault(key, deque()).append(value)

    def _op_queue_pop(self, key: str) -> bytes | None:
        queue = self.queues.get(key)
        if not queue:
            return None
        value = queue.popleft()
        if not queue:
            del self.queues[key]
        return value

    def _op_queue_len(self, key: str) -> int:
        return len(self.queues.get(key, ()))
