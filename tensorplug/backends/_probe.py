"""Whether a device type can be used here, and if not why, without loading its device.

``tp.cuda.is_available()`` and ``tp.accelerator`` ask this question in a script's first lines;
answering it must never raise and must not run ``Backend.load()`` (which imports the runtime
and builds kernels). It imports the plugin module (cheap by the contract) and calls the
backend's ``is_available()`` and ``device_count()``; backends cache what those find.
"""
from __future__ import annotations

from dataclasses import dataclass

from . import _registry
from .api import Backend

__all__ = ["Probe", "probe", "known_device_types", "VALUELESS_DEVICE_TYPES"]

#: Device types whose tensors hold no values (PyTorch's ``meta``, ``backends/meta``): a place to
#: work out shapes, never one to compute on, so neither ``tp.accelerator`` nor the device modules
#: (``tp.<device_type>``) offer them.
VALUELESS_DEVICE_TYPES = frozenset({"meta"})


@dataclass(frozen=True)
class Probe:
    """What ``probe`` found: the backend (when one is installed and loaded), whether it is
    usable, how many devices it has, and the reason when it is not usable."""

    device_type: str
    backend: Backend | None
    available: bool
    device_count: int
    reason: str


def known_device_types() -> list[str]:
    """Every device type an installed plugin claims (read from entry points; nothing imported)."""
    _registry.plugin_manager.discover()
    return sorted(_registry.plugin_manager.records)


def probe(device_type: str) -> Probe:
    """Find out whether ``device_type`` is usable; never raises for a broken or missing plugin."""
    ready = _registry.ready_backends().get(device_type)
    if ready is not None:
        return Probe(device_type, ready, True, _count(ready), "")
    if device_type in _registry._errors:  # an earlier activation failed: the same reason again
        return Probe(device_type, None, False, 0, _registry._errors[device_type])
    manager = _registry.plugin_manager
    manager.discover()
    if device_type not in manager.records:
        return Probe(device_type, None, False, 0, f"no installed plugin provides the {device_type!r} device type")
    record = manager.load(device_type)
    if record.state != "loaded":
        first_line = record.error.strip().splitlines()[0] if record.error else record.state
        return Probe(device_type, None, False, 0, f"{record.describe()} is {record.state}: {first_line}")
    matching = [b for b in record.backends if getattr(b, "device_type", None) == device_type]
    if not matching:
        return Probe(device_type, None, False, 0, f"{record.describe()} provides no backend for {device_type!r}")
    backend = matching[0]
    try:
        available, reason = backend.is_available()
    except Exception as exc:  # a status question is answered, never raised
        return Probe(device_type, backend, False, 0, f"is_available() raised {type(exc).__name__}: {exc}")
    if not available:
        return Probe(device_type, backend, False, 0, reason or f"the {device_type!r} backend says it is unavailable")
    count = _count(backend)
    if count == 0:
        return Probe(device_type, backend, False, 0, f"the {device_type!r} backend found no device")
    return Probe(device_type, backend, True, count, "")


def _count(backend: Backend) -> int:
    try:
        return int(backend.device_count())
    except Exception:  # a backend that cannot count its devices has none we can use
        return 0
