"""Backends: the contract (``api``), the registry of installed backends, and ``status()``.

The built-in backends live in subpackages (``cpu``) and register through the same
``tensorplug.backends`` entry point group as third-party plugins. Ops a backend lacks run through
the CPU fallback (``fallback_stats()`` counts them); ``set_check_kernels(True)`` checks what
kernels hand back (docs/writing-a-backend.md).
"""
from ._registry import (
    BackendStatus, FallbackWarning, backend_for, check_kernels_enabled, fallback_stats, plugin_manager, ready_backends,
    reset_fallback_stats, set_check_kernels, status,
)
from .api import CONTRACT_VERSION, PRIMITIVES, Backend
from . import cuda, cudnn, mkldnn, mps, opt_einsum  # PyTorch's flag modules: tp.backends.cudnn.benchmark, ...

__all__ = [
    "CONTRACT_VERSION", "PRIMITIVES", "Backend", "BackendStatus", "FallbackWarning", "backend_for", "check_kernels_enabled",
    "fallback_stats", "plugin_manager", "ready_backends", "reset_fallback_stats", "set_check_kernels", "status",
    "cuda", "cudnn", "mkldnn", "mps", "opt_einsum",
]
