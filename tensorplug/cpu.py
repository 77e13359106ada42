"""``tp.cpu``: the CPU device's memory statistics and cache control."""
from __future__ import annotations

from .backends import backend_for

__all__ = ["memory_stats", "memory_allocated", "memory_reserved", "empty_cache", "reset_peak_memory_stats", "max_memory_allocated"]


def memory_stats() -> dict:
    """Allocator statistics: allocated (live), reserved (live + cached), peak, counts."""
    return backend_for("cpu").memory_stats(None)


def memory_allocated() -> int:
    return memory_stats()["allocated_bytes"]


def memory_reserved() -> int:
    return memory_stats()["reserved_bytes"]


def max_memory_allocated() -> int:
    return memory_stats()["peak_allocated_bytes"]


def reset_peak_memory_stats() -> None:
    from .backends.cpu._load import load_kernels

    load_kernels().reset_peak_memory_stats()


def empty_cache() -> None:
    """Give cached, unused blocks back to the operating system."""
    backend_for("cpu").empty_cache()
