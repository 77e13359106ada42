"""npdev memory: storages over NumPy byte buffers, a small caching allocator, host copies.

A storage is the object tensorplug keeps on every tensor (``backend_storage(t)``); all it
needs is ``nbytes``. When the last tensor using a storage dies, CPython drops the storage at
once and ``__del__`` hands its buffer back to the cache, where the next allocation of the same
size picks it up (``empty_cache()`` releases the cache). ``memory_stats()`` reports what the
conformance suite's memory checks read (``allocated_bytes``) and what ``tp.npdev.memory_allocated()``
and friends report.
"""
from __future__ import annotations

import threading

import numpy as np

from tensorplug.backends.api import backend_storage

__all__ = ["NpStorage", "allocate", "copy_from_host", "to_host", "view", "memory_stats", "reset_peak_memory_stats",
           "empty_cache"]

# Reentrant: a garbage collection that starts inside a locked section (any allocation there may
# start one) can run a dead storage's __del__ on the same thread, which takes this lock again; a
# plain Lock deadlocked there (issue 16, found by the long differential run).
_lock = threading.RLock()
_cache: dict[int, list[np.ndarray]] = {}  # free buffers by size
_stats = {"allocated_bytes": 0, "reserved_bytes": 0, "peak_allocated_bytes": 0, "num_allocs": 0, "num_cache_hits": 0}


class NpStorage:
    """``nbytes`` bytes of npdev memory."""

    __slots__ = ("buffer", "nbytes", "__weakref__")

    def __init__(self, buffer: np.ndarray):
        self.buffer = buffer
        self.nbytes = buffer.nbytes

    def __del__(self):
        # Interpreter shutdown may already have cleared the module's globals.
        if _stats is None or _lock is None:
            return
        with _lock:
            _stats["allocated_bytes"] -= self.nbytes
            _cache.setdefault(self.nbytes, []).append(self.buffer)


def allocate(nbytes: int, device_index=None) -> NpStorage:
    with _lock:
        free = _cache.get(nbytes)
        if free:
            buffer = free.pop()
            _stats["num_cache_hits"] += 1
        else:
            buffer = np.empty(nbytes, dtype=np.uint8)
            _stats["reserved_bytes"] += nbytes
        _stats["num_allocs"] += 1
        _stats["allocated_bytes"] += nbytes
        _stats["peak_allocated_bytes"] = max(_stats["peak_allocated_bytes"], _stats["allocated_bytes"])
    return NpStorage(buffer)


def empty_cache() -> None:
    with _lock:
        for buffers in _cache.values():
            _stats["reserved_bytes"] -= sum(b.nbytes for b in buffers)
        _cache.clear()


def memory_stats(device_index=None) -> dict:
    with _lock:
        return dict(_stats)


def reset_peak_memory_stats(device_index=None) -> None:
    with _lock:
        _stats["peak_allocated_bytes"] = _stats["allocated_bytes"]


def numpy_dtype(dtype) -> np.dtype:
    return np.dtype(dtype.name)


def view(t) -> np.ndarray:
    """A NumPy view of tensor ``t`` over its npdev buffer (for kernels: writes go to device memory).

    It reads only what the contract gives kernels: shape, stride(), storage_offset(), dtype and
    backend_storage(t). Strides are in elements and may be 0 (broadcast inputs).
    """
    dtype = numpy_dtype(t.dtype)
    buffer = backend_storage(t).buffer
    count = buffer.nbytes // dtype.itemsize
    base = buffer[: count * dtype.itemsize].view(dtype)
    offset = t.storage_offset()
    if not t.shape:
        return base[offset:offset + 1].reshape(())
    strides = tuple(s * dtype.itemsize for s in t.stride())
    return np.lib.stride_tricks.as_strided(base[offset:], shape=t.shape, strides=strides)


def copy_from_host(dst, array: np.ndarray) -> None:
    """Host to device: ``dst`` is contiguous and ``array`` C-contiguous with dst's shape."""
    view(dst)[...] = array


def to_host(src) -> np.ndarray:
    """Device to host: always a copy, as for real device memory."""
    return np.array(view(src), copy=True)
