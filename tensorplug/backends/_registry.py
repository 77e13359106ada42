"""Which backends exist, and turning a device type into a ready backend on first use.

``backend_for(device_type)`` is on the path of every tensor creation, so a ready backend is one
dict lookup; the first use of a device type loads its plugin, checks the backend against the
contract, runs ``Backend.load()`` and registers its kernels with the dispatcher.

Ops a backend has no kernel for run through its own ``fallback()``, or else through the default
fallback that the frontend installs here (``set_default_fallback``: the CPU fallback, which needs
tensors and so cannot live in this package). ``fallback_stats()`` counts those calls.

Check mode (``TENSORPLUG_CHECK_KERNELS=1`` or ``set_check_kernels(True)``) wraps every backend
kernel in a check of what it hands back: a primitive must leave its output tensor as it got it
and return nothing; a fused composite kernel must return what the op's decomposition would
(shape, dtype, device), which the frontend's checker (``set_returned_checker``) works out.
"""
from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from typing import Any, Callable

from .. import dispatcher
from ..plugins import PluginManager
from .api import CONTRACT_VERSION, PRIMITIVES, Backend

__all__ = [
    "backend_for", "ready_backends", "status", "plugin_manager", "BackendStatus", "FallbackWarning", "fallback_stats",
    "reset_fallback_stats", "set_default_fallback", "set_check_kernels", "check_kernels_enabled",
]

plugin_manager = PluginManager()
_ready: dict[str, Backend] = {}
_keys: dict[str, dispatcher.DispatchKey] = {}
_errors: dict[str, str] = {}
_lock = threading.RLock()
#: Per device type: (key, origin, the backend's kernels as it gave them), to re-register them
#: when check mode is switched.
_registered: dict[str, tuple[dispatcher.DispatchKey, str, dict[str, Callable[..., Any]]]] = {}


class FallbackWarning(UserWarning):
    """An op ran through a fallback (the CPU, through host copies) because the backend has no
    kernel for it. Shown once per device type and op; ``fallback_stats()`` counts every call."""


#: (device type, op name) -> calls that went through the default fallback. The fallback warns
#: when a pair is first counted, so clearing this (``reset_fallback_stats``) re-arms the warning.
fallback_counts: dict[tuple[str, str], int] = {}
_default_fallback: Callable[[str], Callable[..., Any] | None] | None = None
_returned_checker: Callable[..., Callable[..., Any]] | None = None
_check_kernels = os.environ.get("TENSORPLUG_CHECK_KERNELS", "") not in ("", "0")
#: Device type -> a function giving the error for using it when no plugin provides it: device
#: types PyTorch scripts name (``"cuda"``) get a message saying why they are missing here.
missing_device_hints: dict[str, Callable[[], str]] = {}


def fallback_stats() -> dict[str, dict[str, int]]:
    """How many calls ran through the CPU fallback, by device type and op.

    >>> tp.backends.fallback_stats()          # doctest: +SKIP
    {'fallbackdev': {'mul': 3, 'sum': 1}}
    """
    stats: dict[str, dict[str, int]] = {}
    for (device_type, op), count in sorted(fallback_counts.items()):
        stats.setdefault(device_type, {})[op] = count
    return stats


def reset_fallback_stats() -> None:
    """Forget the counts; the next fallback call of each op warns again."""
    fallback_counts.clear()


def set_default_fallback(factory: Callable[[str], Callable[..., Any] | None]) -> None:
    """Install ``factory(device_type) -> boxed fallback or None``, used for every backend whose
    ``fallback()`` gives None (the frontend installs the CPU fallback at import)."""
    global _default_fallback
    _default_fallback = factory
    for device_type, (key, _, _) in list(_registered.items()):
        backend = _ready.get(device_type)
        if backend is not None and backend.fallback() is None:
            fallback = factory(device_type)
            if fallback is not None:
                dispatcher.register_backend_fallback(key, fallback)


def set_returned_checker(wrap: Callable[..., Callable[..., Any]]) -> None:
    """Install ``wrap(device_type, origin, op, kernel) -> kernel``, check mode's wrapper for
    kernels that return tensors (fused composite ops); it needs tensors, so the frontend gives it."""
    global _returned_checker
    _returned_checker = wrap


def check_kernels_enabled() -> bool:
    return _check_kernels


def set_check_kernels(enabled: bool = True) -> None:
    """Switch check mode on or off for every backend, ready ones included (a debugging aid: it
    costs a few microseconds per primitive call and a CPU run of the decomposition per fused call)."""
    global _check_kernels
    with _lock:
        _check_kernels = bool(enabled)
        for device_type, (key, origin, kernels) in _registered.items():
            for name, kernel in kernels.items():
                dispatcher.register_kernel(name, key, _maybe_checked(device_type, origin, name, kernel))


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
        record = _second_device_type(device_type)
    if record is None and device_type in missing_device_hints:
        raise RuntimeError(missing_device_hints[device_type]())
    if record is None:
        known = ", ".join(sorted(plugin_manager.records))
        raise RuntimeError(
            f"Expected one of {known} device type at start of device string: {device_type} "
            f"(no installed plugin provides {device_type!r}; see tp.backends.status())"
        )
    if record.state != "loaded":
        first_line = record.error.strip().splitlines()[0] if record.error else record.state
        raise RuntimeError(f"device type {device_type!r} is unusable: {record.describe()} {record.state}: {first_line}")
    origin = record.describe()
    try:
        backend = _checked_backend(device_type, record.backends, origin)
        available, reason = _attributed(origin, "is_available()", backend.is_available)
        if not available:
            raise RuntimeError(f"the {device_type!r} backend is not available: {reason}")
        _attributed(origin, "load()", backend.load)
        _register_kernels(device_type, backend, origin)
    except Exception as exc:
        _errors[device_type] = str(exc)
        raise
    _ready[device_type] = backend
    return backend


def _second_device_type(device_type: str):
    """The record of a device type that no entry point is named after: one a plugin provides
    beside its own (found by loading every plugin), or a disabled plugin's (to say so)."""
    plugin_manager.load_all()
    record = plugin_manager.records.get(device_type)
    if record is None:
        record = next((r for r in plugin_manager.disabled if r.name == device_type), None)
    return record


def _attributed(origin: str, what: str, fn: Callable[[], Any]) -> Any:
    """Call a backend method; an exception it raises is re-raised naming the plugin and method."""
    try:
        return fn()
    except Exception as exc:
        raise RuntimeError(f"{origin}: {what} raised {type(exc).__name__}: {exc}") from exc


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
    kernels = dict(_attributed(origin, "kernels()", backend.kernels))
    _check_kernel_table(device_type, kernels, origin)
    fallback = _attributed(origin, "fallback()", backend.fallback)
    if fallback is None and _default_fallback is not None:
        fallback = _default_fallback(device_type)
    # Everything is checked before the first registration, so a refused backend leaves nothing
    # half-registered behind it.
    key = dispatcher.allocate_backend_key(device_type)
    for name, kernel in kernels.items():
        dispatcher.register_kernel(name, key, _maybe_checked(device_type, origin, name, kernel))
    if fallback is not None:
        dispatcher.register_backend_fallback(key, fallback)
    _registered[device_type] = (key, origin, kernels)
    _keys[device_type] = key


def _check_kernel_table(device_type: str, kernels: dict, origin: str) -> None:
    known = dispatcher.operators()
    unknown = sorted(name for name in kernels if name not in known)
    if unknown:
        raise RuntimeError(f"{origin}: backend {device_type!r} declares kernels for ops that do not exist: {unknown}")
    not_callable = sorted(name for name, kernel in kernels.items() if not callable(kernel))
    if not_callable:
        raise TypeError(f"{origin}: backend {device_type!r} gives kernels that are not callable for {not_callable}")
    underivable = sorted(name for name in kernels if known[name].is_composite and known[name].differentiable
                         and dispatcher.AUTOGRAD not in known[name].kernels)
    if underivable:
        raise RuntimeError(
            f"{origin}: backend {device_type!r} overrides composite ops without an explicit derivative: {underivable} "
            f"(their gradients would be lost; register a derivative for the op first)"
        )


# --- check mode -----------------------------------------------------------------------------------
def _maybe_checked(device_type: str, origin: str, name: str, kernel: Callable[..., Any]) -> Callable[..., Any]:
    if not _check_kernels:
        return kernel
    if name in PRIMITIVES:
        return _checked_primitive(device_type, origin, name, kernel)
    if _returned_checker is not None:
        return _returned_checker(device_type, origin, dispatcher.get_operator(name), kernel)
    return kernel


def _describe(value: Any) -> str:
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        return f"shape {list(value.shape)}, dtype {getattr(value.dtype, 'name', value.dtype)}"
    return f"a {type(value).__name__}"


def _layout(t: Any) -> tuple:
    return (id(t._storage), tuple(t.shape), tuple(t.stride()), t.storage_offset(), t.dtype)


def _checked_primitive(device_type: str, origin: str, name: str, kernel: Callable[..., Any]) -> Callable[..., Any]:
    outputs = 2 if name == "sort" else 1  # sort writes values and indices; the rest one output

    def checked(*args: Any) -> Any:
        before = [_layout(t) for t in args[:outputs]]
        result = kernel(*args)
        where = f"check mode: {origin}: the {device_type!r} kernel for primitive {name!r}"
        if result is not None and result is not args[0]:
            raise RuntimeError(
                f"{where} returned a value ({_describe(result)}); primitive kernels write into their output "
                f"argument ({_describe(args[0])}) and return None"
            )
        for t, layout in zip(args[:outputs], before):
            if _layout(t) != layout:
                raise RuntimeError(f"{where} changed its output tensor: it was {_describe_layout(layout)}, now {_describe_layout(_layout(t))}")
        return result

    checked.__wrapped__ = kernel  # type: ignore[attr-defined]
    return checked


def _describe_layout(layout: tuple) -> str:
    _, shape, stride, offset, dtype = layout
    return f"shape {list(shape)}, stride {list(stride)}, offset {offset}, dtype {dtype.name}"


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
                try:  # what can be checked without the device: the class and contract version
                    _checked_backend(device_type, [backend], record.describe())
                except Exception as exc:
                    report.append(BackendStatus(device_type, record.describe(), "failed", str(exc)))
                    continue
                try:
                    available, reason = backend.is_available()
                except Exception as exc:  # report, never raise, from a status query
                    available, reason = False, f"is_available() raised {type(exc).__name__}: {exc}"
                if available:
                    report.append(BackendStatus(device_type, record.describe(), "loaded",
                                                "not used yet: its kernel table is checked on first use"))
                else:
                    report.append(BackendStatus(device_type, record.describe(), "unavailable", reason))
    for record in plugin_manager.rejected + plugin_manager.disabled:
        report.append(BackendStatus(record.name, record.describe(), record.state, record.error.strip().splitlines()[0]))
    return report
