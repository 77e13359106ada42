"""``PrefixStore``: a view of another store in which every key is ``prefix + "/" + key``, so that
several users (process groups, libraries) share one store without colliding."""
from __future__ import annotations

from .base import Store

__all__ = ["PrefixStore"]

# Operations whose first argument is one key, and those whose first argument is a list of keys.
_ONE_KEY = frozenset({"set", "get", "add", "compare_set", "delete_key", "append", "queue_push", "queue_pop", "queue_len"})
_KEY_LIST = frozenset({"check", "wait", "multi_get", "multi_set"})


class PrefixStore(Store):
    """``dist.PrefixStore(prefix, store)``: ``store`` with every key prefixed by ``prefix/``."""

    def __init__(self, prefix: str, store: Store):
        if not isinstance(prefix, str):
            raise TypeError(f"PrefixStore: prefix must be str, got {type(prefix).__name__}")
        if not isinstance(store, Store):
            raise TypeError(f"PrefixStore: store must be a tensorplug.distributed Store, got {type(store).__name__}")
        super().__init__(store.timeout)
        self._prefix = prefix
        self._store = store

    @property
    def underlying_store(self) -> Store:
        """The store this one prefixes."""
        return self._store

    @property
    def timeout(self):
        """The underlying store's timeout (they share it)."""
        return self._store.timeout

    def set_timeout(self, timeout) -> None:
        """Sets the underlying store's timeout."""
        self._store.set_timeout(timeout)

    def _with_prefix(self, op: str, args: list) -> list:
        if op in _ONE_KEY:
            return [f"{self._prefix}/{args[0]}", *args[1:]]
        if op in _KEY_LIST:
            return [[f"{self._prefix}/{k}" for k in args[0]], *args[1:]]
        return args

    def _run(self, op: str, *args):
        result = self._store._run(op, *self._with_prefix(op, list(args)))
        if op == "list_keys":
            head = self._prefix + "/"
            return [k[len(head):] for k in result if k.startswith(head)]
        return result

    def _run_blocking(self, op: str, args: list, seconds: float):
        return self._store._run_blocking(op, self._with_prefix(op, args), seconds)

    def has_extended_api(self) -> bool:
        """The underlying store's answer."""
        return self._store.has_extended_api()

    def clone(self) -> "PrefixStore":
        """The same prefix over a clone of the underlying store."""
        return PrefixStore(self._prefix, self._store.clone())
