"""Which backends exist, and turning a device type into a ready backend on first use.

``backend_for(device_type)`` is on the path of every tensor creation, so a ready backend is one
dict lookup; the first use of a device type loads its plugin, checks the backend against the
contract, runs ``Backend.load()`` and registers its kernels with the dispatcher.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from .. import dispatcher
from ..plugins import PluginManager
from .api import CONTRACT_VERSION, PRIMITIVES, Backend

__all__ = ["backend_for", "ready_backends", "status", "plugin_manager", "BackendStatus"]

plugin_manager = PluginManager()
_ready: dict[str, Backend] = {}
_keys: dict[str, dispatcher.DispatchKey] = {}
_errors: dict[str, str] = {}
_lock = threading.RLock()


def backend_for(device_type: str) -> Backend:
    """The ready backend of ``device_type``, loading its plugin on first use."""
    backend = _ready.get(device_type)
    if backend is not None:
        return backend
    with _lock:
        backend = _ready.get(device_type)
        return backend if backend is not None else _activate(device_type)


def backend_key(device_type: str) -> dispatcher.DispatchKey:
    backend_for(device_type)
    return _keys[device_type]


def ready_backends() -> dict[str, Backend]:
    return dict(_ready)


def _activate(device_type: str) -> Backend:
    if device_type in _errors:
        raise RuntimeError(_errors[device_type])
    record = plugin_manager.load(device_type)
    if record is None:
        known = ", ".join(sorted(plugin_manager.records))
        raise RuntimeError(
            f"Expected one of {known} device type at start of device string: {device_type} "
            f"(no installed plugin provides {device_type!r}; see tp.backends.status())"
        )
    if record.state != "loaded":
        first_line = record.error.strip().splitlines()[0] if record.error else record.state
        raise RuntimeError(f"device type {device_type!r} is unusable: {record.describe()} {record.state}: {first_line}")
    try:
        backend = _checked_backend(device_type, record.backends, record.describe())
        available, reason = backend.is_available()
        if not available:
            raise RuntimeError(f"the {device_type!r} backend is not available: {reason}")
        backend.load()
        _register_kernels(device_type, backend, record.describe())
    except Exception as exc:
        _errors[device_type] = str(exc)
        raise
    _ready[device_type] = backend
    return backend


def _checked_backend(device_type: str, backends: list[Any], origin: str) -> Backend:
    matching = [b for b in backends if getattr(b, "device_type", None) == device_type]
    if not matching:
        provided = [getattr(b, "device_type", repr(b)) for b in backends]
        raise RuntimeError(f"{origin} provides no backend for device type {device_type!r} (it provides {provided})")
    backend = matching[0]
    if not isinstance(backend, Backend):
        raise TypeError(f"{origin}: {backend!r} is not a tensorplug.backends.api.Backend")
    if backend.contract_version != CONTRACT_VERSION:
        raise RuntimeError(
            f"{origin}: backend {device_type!r} was written for backend contract version "
            f"{backend.contract_version}, but this tensorplug implements version {CONTRACT_VERSION}"
        )
    return backend


def _register_kernels(device_type: str, backend: Backend, origin: str) -> None:
    kernels = backend.kernels()
    known = dispatcher.operators()
    unknown = sorted(name for name in kernels if name not in known)
    if unknown:
        raise RuntimeError(f"{origin}: backend {device_type!r} declares kernels for ops that do not exist: {unknown}")
    key = dispatcher.allocate_backend_key(device_type)
    for name, kernel in kernels.items():
        dispatcher.register_kernel(known[name], key, kernel)
    fallback = backend.fallback()
    if fallback is not None:
        dispatcher.register_backend_fallback(key, fallback)
    _keys[device_type] = key


@dataclass
class BackendStatus:
    """One line of ``tp.backends.status()``."""

    device_type: str
    plugin: str
    state: str  # ready | loaded | failed | disabled | unavailable | discovered
    detail: str
    missing_primitives: tuple[str, ...] = ()


class StatusReport(list):
    """A list of BackendStatus that prints as a table."""

    def __str__(self) -> str:
        rows = [f"{s.device_type:<10} {s.state:<12} {s.plugin}" + (f"\n{'':<24}{s.detail}" if s.detail else "") for s in self]
        return "\n".join(["device     state        plugin", *rows])

    __repr__ = __str__


def status() -> StatusReport:
    """Every known backend plugin and its state; loads plugins (not devices) to find out."""
    plugin_manager.load_all()
    report = StatusReport()
    for name, record in sorted(plugin_manager.records.items()):
        if record.state != "loaded":
            detail = record.error.strip().splitlines()[0] if record.error else ""
            report.append(BackendStatus(name, record.describe(), record.state, detail))
            continue
        for backend in record.backends:
            device_type = getattr(backend, "device_type", "?")
            if device_type in _ready:
                missing = tuple(sorted(set(PRIMITIVES) - set(_ready[device_type].kernels())))
                detail = f"missing primitives (run through fallback): {', '.join(missing)}" if missing else ""
                report.append(BackendStatus(device_type, record.describe(), "ready", detail, missing))
            elif device_type in _errors:
                report.append(BackendStatus(device_type, record.describe(), "failed", _errors[device_type]))
            else:
                try:
                    available, reason = backend.is_available()
                except Exception as exc:  # report, never raise, from a status query
                    available, reason = False, f"is_available() raised {type(exc).__name__}: {exc}"
                report.append(BackendStatus(device_type, record.describe(), "loaded" if available else "unavailable", reason))
    return report
