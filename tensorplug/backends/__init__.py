"""Backends: the contract (``api``), the registry of installed backends, and ``status()``.

The built-in backends live in subpackages (``cpu``) and register through the same
``tensorplug.backends`` entry point group as third-party plugins.
"""
from ._registry import BackendStatus, backend_for, plugin_manager, ready_backends, status
from .api import CONTRACT_VERSION, PRIMITIVES, Backend

__all__ = ["CONTRACT_VERSION", "PRIMITIVES", "Backend", "BackendStatus", "backend_for", "plugin_manager", "ready_backends", "status"]
