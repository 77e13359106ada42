"""``Store``: PyTorch's key-value store API, written once over two primitives every store kind
provides: run one atomic operation, and run one until it stops answering "not yet" (a missing
key, an empty queue) or a deadline passes.

Keys are str; values are bytes (str values are encoded as UTF-8), as in PyTorch. ``get`` and
``wait`` block up to the store's timeout and then raise ``DistStoreError``.
"""
from __future__ import annotations

import datetime

from ..errors import DistStoreError, QueueEmptyError

__all__ = ["Store"]

#: PyTorch's default store timeout.
DEFAULT_STORE_TIMEOUT = datetime.timedelta(minutes=5)


def _key(what: str, key) -> str:
    if not isinstance(key, str):
        raise TypeError(f"{what}: keys must be str, got {type(key).__name__}")
    return key


def _keys(what: str, keys) -> list:
    if isinstance(keys, (str, bytes)):
        raise TypeError(f"{what}: expected a list of str keys, got a single {type(keys).__name__}")
    return [_key(what, k) for k in keys]


def _value(what: str, value) -> bytes:
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise TypeError(f"{what}: values must be bytes or str, got {type(value).__name__}")


def _timedelta(what: str, timeout) -> datetime.timedelta:
    if not isinstance(timeout, datetime.timedelta):
        raise TypeError(f"{what}: timeout must be a datetime.timedelta, got {type(timeout).__name__}")
    return timeout


class Store:
    """Base class of the key-value stores (``HashStore``, ``FileStore``, ``TCPStore``,
    ``PrefixStore``). Subclasses provide ``_run`` and ``_run_blocking``."""

    def __init__(self, timeout: datetime.timedelta = DEFAULT_STORE_TIMEOUT):
        self._timeout = _timedelta(type(self).__name__, timeout)

    # --- what a store kind provides -------------------------------------------------------------
    def _run(self, op: str, *args):
        """Runs one atomic, non-blocking table operation (see _table.KeyValueTable)."""
        raise NotImplementedError

    def _run_blocking(self, op: str, args: list, seconds: float):
        """Runs ``op`` until it answers something other than None; None when ``seconds`` pass first."""
        raise NotImplementedError

    # --- timeouts ---------------------------------------------------------------------------------
    @property
    def timeout(self) -> datetime.timedelta:
        """How long ``get``/``wait`` block before raising DistStoreError."""
        return self._timeout

    def set_timeout(self, timeout: datetime.timedelta) -> None:
        """Sets the timeout of later blocking calls."""
        self._timeout = _timedelta("set_timeout", timeout)

    def _blocking(self, what: str, op: str, args: list, keys: list, timeout: datetime.timedelta | None = None):
        limit = self.timeout if timeout is None else _timedelta(what, timeout)
        result = self._run_blocking(op, args, max(limit.total_seconds(), 0.0))
        if result is None:
            raise DistStoreError(f"{type(self).__name__}.{what}: wait timeout after "
                                 f"{int(limit.total_seconds() * 1000)}ms, keys: {', '.join(keys)}")
        return result

    # --- the API ----------------------------------------------------------------------------------
    def set(self, key: str, value) -> None:
        """Stores ``value`` (bytes or str) under ``key``, replacing what was there."""
        self._run("set", _key("set", key), _value("set", value))

    def get(self, key: str) -> bytes:
        """The value of ``key``, waiting up to the timeout for another process to set it."""
        key = _key("get", key)
        return self._blocking("get", "get", [key], [key])

    def add(self, key: str, amount: int) -> int:
        """Adds ``amount`` to the integer counter ``key`` (0 when missing) atomically; returns the sum."""
        if not isinstance(amount, int) or isinstance(amount, bool):
            raise TypeError(f"add: amount must be an int, got {type(amount).__name__}")
        return self._run("add", _key("add", key), amount)

    def compare_set(self, key: str, expected_value, desired_value) -> bytes:
        """Sets ``key`` to ``desired_value`` if it holds ``expected_value`` (a missing key matches
        the empty value); returns the value the key holds afterwards (``expected_value`` when the
        key is missing and was not created)."""
        return self._run("compare_set", _key("compare_set", key), _value("compare_set", expected_value),
                         _value("compare_set", desired_value))

    def wait(self, keys, timeout: datetime.timedelta | None = None) -> None:
        """Blocks until every key in ``keys`` exists (DistStoreError after the timeout)."""
        keys = _keys("wait", keys)
        self._blocking("wait", "wait", [keys], keys, timeout)

    def check(self, keys) -> bool:
        """Whether every key in ``keys`` exists, without waiting."""
        return self._run("check", _keys("check", keys))

    def delete_key(self, key: str) -> bool:
        """Removes ``key``; True when it existed."""
        return self._run("delete_key", _key("delete_key", key))

    def num_keys(self) -> int:
        """How many keys the store holds (the store's own bookkeeping keys included, as in PyTorch)."""
        return self._run("num_keys")

    def list_keys(self) -> list[str]:
        """The keys set through the API."""
        return self._run("list_keys")

    def multi_get(self, keys) -> list[bytes]:
        """The values of ``keys``, waiting up to the timeout for all of them."""
        keys = _keys("multi_get", keys)
        return self._blocking("multi_get", "multi_get", [keys], keys)

    def multi_set(self, keys, values) -> None:
        """Sets every key of ``keys`` to the matching value, in one atomic step."""
        keys = _keys("multi_set", keys)
        values = [_value("multi_set", v) for v in values]
        if len(keys) != len(values):
            raise ValueError(f"multi_set: {len(keys)} keys but {len(values)} values")
        self._run("multi_set", keys, values)

    def append(self, key: str, value) -> None:
        """Appends ``value`` to the bytes of ``key`` (creating it when missing)."""
        self._run("append", _key("append", key), _value("append", value))

    def queue_push(self, key: str, value) -> None:
        """Appends ``value`` to the queue named ``key``."""
        self._run("queue_push", _key("queue_push", key), _value("queue_push", value))

    def queue_pop(self, key: str, block: bool = True) -> bytes:
        """Removes and returns the oldest value of queue ``key``; waits for one when ``block``."""
        key = _key("queue_pop", key)
        if block:
            return self._blocking("queue_pop", "queue_pop", [key], [key])
        value = self._run("queue_pop", key)
        if value is None:
            raise QueueEmptyError("queue is empty")
        return value

    def queue_len(self, key: str) -> int:
        """How many values wait in queue ``key``."""
        return self._run("queue_len", _key("queue_len", key))

    def barrier(self, key: str, world_size: int, timeout: datetime.timedelta | None = None) -> None:
        """Returns once ``world_size`` callers have entered the barrier named ``key``."""
        arrived = self.add(_key("barrier", key), 1)
        release = key + "/released"
        if arrived >= world_size:
            self.set(release, b"1")
        self.wait([release], timeout)

    def clone(self) -> "Store":
        """Another handle on the same store (a new connection for TCPStore)."""
        raise NotImplementedError(f"{type(self).__name__} cannot be cloned")

    def has_extended_api(self) -> bool:
        """Whether the store implements multi_get/multi_set/append natively (PyTorch's answer)."""
        return True
