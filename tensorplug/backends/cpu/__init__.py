"""The CPU backend: C++ kernels (``csrc/``, built as ``_kernels``) over a caching host allocator.

It registers through the ``tensorplug.backends`` entry point like any third-party backend; the
compiled module is imported only in :meth:`CPUBackend.load`.
"""
from __future__ import annotations

from ...plugins import hookimpl
from ..api import EXTRA_DTYPES, REQUIRED_DTYPES, OPTIONAL_DTYPES, Backend

__all__ = ["CPUBackend", "plugin"]


class CPUBackend(Backend):
    device_type = "cpu"
    # The C++ kernels dispatch on every dtype, the extra ones included (docs/dtypes.md).
    dtypes = frozenset(REQUIRED_DTYPES + OPTIONAL_DTYPES + EXTRA_DTYPES)
    # PyTorch's CPU autocast dtypes (the C++ kernels compute both through float32).
    autocast_dtypes = frozenset({"bfloat16", "float16"})

    def load(self) -> None:
        from ... import _hotpath
        from . import kernels, storage

        self._kernels = kernels.table()
        # Tensor.item reads one element of this storage's buffer in C.
        _hotpath.add_host_storage(storage.storage_type)
        # Bound straight to the storage functions: allocation is on every op's path.
        self.allocate = storage.allocate
        self.copy_from_host = storage.copy_from_host
        self.to_host = storage.to_host
        self.wrap_host = storage.wrap_host
        self.memory_stats = storage.memory_stats
        self.empty_cache = storage.empty_cache

    def reset_peak_memory_stats(self, device_index) -> None:
        from ._load import load_kernels

        load_kernels().reset_peak_memory_stats()

    def kernels(self):
        return self._kernels


class _CPUPlugin:
    @hookimpl
    def tensorplug_register_backends(self):
        return [CPUBackend()]


plugin = _CPUPlugin()
