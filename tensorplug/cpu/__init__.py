"""``tp.cpu``: the CPU device as ``torch.cpu``: streams and events, synchronize, memory statistics.

The CPU backend is synchronous (a kernel has finished when it returns), so its streams share the
one order of the program and its events take host timestamps: the contract's defaults
(``tensorplug._device_runtime``). The memory statistics are the caching host allocator's.

>>> import tensorplug as tp
>>> with tp.cpu.stream(tp.cpu.Stream()):
...     y = tp.ones(3) + 1
"""
from __future__ import annotations

from .._device_runtime import runtime_for
from ..backends import backend_for
from . import amp  # the deprecated tp.cpu.amp spellings

__all__ = [
    "amp", "Stream", "Event", "StreamContext", "stream", "current_stream", "default_stream", "set_stream", "synchronize",
    "is_available", "device_count", "current_device", "set_device", "memory_stats", "memory_allocated",
    "memory_reserved", "max_memory_allocated", "max_memory_reserved", "reset_peak_memory_stats", "empty_cache",
]

_runtime = runtime_for("cpu")
Stream, Event, StreamContext = _runtime.Stream, _runtime.Event, _runtime.StreamContext
stream, current_stream, default_stream, set_stream = (
    _runtime.stream, _runtime.current_stream, _runtime.default_stream, _runtime.set_stream)


def synchronize(device=None) -> None:
    """Wait for the CPU's work (none is ever pending: kernels finish before they return)."""
    _runtime.synchronize(0)


def is_available() -> bool:
    return True


def device_count() -> int:
    return 1


def current_device() -> str:
    """``"cpu"``, as ``torch.cpu.current_device()``."""
    return "cpu"


def set_device(device) -> None:
    """Accepted and ignored, as in PyTorch: there is one CPU device."""


def memory_stats() -> dict:
    """Allocator statistics: allocated (live), reserved (live + cached), peak, counts."""
    return backend_for("cpu").memory_stats(None)


def memory_allocated() -> int:
    return memory_stats()["allocated_bytes"]


def memory_reserved() -> int:
    return memory_stats()["reserved_bytes"]


def max_memory_allocated() -> int:
    return memory_stats()["peak_allocated_bytes"]


def max_memory_reserved() -> int:
    return int(memory_stats().get("peak_reserved_bytes", 0))


def reset_peak_memory_stats() -> None:
    backend_for("cpu").reset_peak_memory_stats(0)


def empty_cache() -> None:
    """Give cached, unused blocks back to the operating system."""
    backend_for("cpu").empty_cache()
