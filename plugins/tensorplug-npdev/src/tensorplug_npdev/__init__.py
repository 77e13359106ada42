"""tensorplug-npdev: an example backend package, the full-size companion of docs/writing-a-backend.md.

It registers the device type ``npdev`` through the ``tensorplug.backends`` entry point (see
pyproject.toml). Its memory is NumPy byte buffers owned by this package, never shared with CPU
tensors, so it behaves as separate device memory would: data reaches it only through
``copy_from_host`` and leaves only through ``to_host``. The kernels are plain NumPy.

This module is what tensorplug imports when ``npdev`` is first used, so it stays cheap: the
kernel table and the allocator are imported in :meth:`NpDevBackend.load`.

npdev is the minimum: its kernels finish before they return, so the contract's default runtime
(one stream; events that take host timestamps) is right for it and ``tp.npdev.Stream``,
``tp.npdev.Event`` and ``tp.npdev.synchronize`` work with nothing written here. It declares no
``autocast_dtypes`` (NumPy computes float16 slowly), so ``tp.autocast("npdev")`` is refused.
"""
from __future__ import annotations

from tensorplug.backends.api import Backend
from tensorplug.plugins import hookimpl

__all__ = ["NpDevBackend", "plugin"]


class NpDevBackend(Backend):
    device_type = "npdev"
    # float32, int64 and bool are required; the rest are optional capabilities this backend
    # declares, so the conformance suite tests them too.
    dtypes = frozenset({"float32", "int64", "bool", "float64", "float16", "uint8", "int8", "int16", "int32"})

    def is_available(self):
        return True, ""

    def device_count(self):
        return 1

    def load(self):
        from . import kernels, storage

        self._kernels = kernels.table()
        self.allocate = storage.allocate
        self.copy_from_host = storage.copy_from_host
        self.to_host = storage.to_host
        self.memory_stats = storage.memory_stats
        self.reset_peak_memory_stats = storage.reset_peak_memory_stats
        self.empty_cache = storage.empty_cache

    def kernels(self):
        return self._kernels


class _Plugin:
    @hookimpl
    def tensorplug_register_backends(self):
        return [NpDevBackend()]


plugin = _Plugin()
