"""``tp.accelerator``: the best usable non-CPU device, as ``torch.accelerator``.

PyTorch has one accelerator per build; tensorplug has plugins, so "the" accelerator is the first
usable backend in this preference order:

1. the device type named by ``TENSORPLUG_ACCELERATOR`` (``none`` or ``cpu``: no accelerator);
2. ``cuda``, ``mps``, ``xpu`` (the names PyTorch scripts expect), then ``opencl``;
3. every other installed plugin (third-party ones included, e.g. the example ``npdev``),
   alphabetically.

The ``meta`` device is never an accelerator, even when named: its tensors hold no values.

A device type is usable when its plugin loads, its backend says ``is_available()`` and it has at
least one device. Backends are asked in order and the search stops at the first usable one, so
a machine with CUDA never imports PyOpenCL to answer.

Streams and memory statistics are those of the accelerator's device module (``tp.opencl``,
``tp.npdev``, ...; ``tensorplug._device_runtime``), so they behave alike on every backend.

>>> import tensorplug as tp
>>> device = tp.accelerator.current_accelerator() if tp.accelerator.is_available() else tp.device("cpu")
"""
from __future__ import annotations

import os

from ._device_runtime import DeviceRuntime, Stream, runtime_for
from .backends._probe import VALUELESS_DEVICE_TYPES, Probe, known_device_types, probe
from .frontend.device import current_device_index as _current_index_of
from .frontend.device import device as _device
from .frontend.device import set_current_device_index as _set_current_index_of

__all__ = [
    "PREFERENCE", "is_available", "current_accelerator", "device_count", "synchronize", "current_device_index",
    "current_device_idx", "set_device_index", "set_device_idx", "device_index", "current_stream", "set_stream",
    "empty_cache", "memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved", "memory_stats",
    "reset_peak_memory_stats",
]

#: Device types tried first, best first; other installed plugins follow alphabetically.
PREFERENCE = ("cuda", "mps", "xpu", "opencl")
_NONE = ("", "none", "cpu")


def _candidates() -> list[str]:
    chosen = os.environ.get("TENSORPLUG_ACCELERATOR", "").strip().lower()
    if chosen in _NONE[1:]:
        return []
    installed = [t for t in known_device_types() if t != "cpu" and t not in VALUELESS_DEVICE_TYPES]
    order = [t for t in PREFERENCE if t in installed] + sorted(t for t in installed if t not in PREFERENCE)
    if chosen and chosen not in VALUELESS_DEVICE_TYPES:
        order = [chosen] + [t for t in order if t != chosen]
    return order


def _best() -> Probe | None:
    for device_type in _candidates():
        found = probe(device_type)
        if found.available:
            return found
    return None


def _require() -> Probe:
    found = _best()
    if found is None:
        raise RuntimeError("Cannot access accelerator device when none is available. " + _why_none())
    return found


def _why_none() -> str:
    candidates = _candidates()
    if not candidates:
        if os.environ.get("TENSORPLUG_ACCELERATOR", "").strip():
            return "TENSORPLUG_ACCELERATOR asks for no accelerator."
        return "No non-CPU backend is installed (see tp.backends.status())."
    reasons = "; ".join(f"{t}: {probe(t).reason}" for t in candidates)
    return f"Backends tried: {reasons}."


def is_available() -> bool:
    """Whether some non-CPU backend is usable here. Never raises."""
    return _best() is not None


def current_accelerator(check_available: bool = False) -> _device | None:
    """The device type of the best usable non-CPU backend (``tp.device("opencl")``), or None.

    ``check_available`` is accepted for PyTorch's signature; tensorplug only ever returns a
    usable backend (a plugin that is installed but cannot run is no accelerator here).
    """
    found = _best()
    return None if found is None else _device(found.device_type)


def device_count() -> int:
    """Devices of the current accelerator (0 when there is none)."""
    found = _best()
    return 0 if found is None else found.device_count


def current_device_index() -> int:
    """The index a bare accelerator device type means (0 unless ``set_device_index`` changed it)."""
    return _current_index_of(_require().device_type)


current_device_idx = current_device_index


def set_device_index(device, /) -> None:
    """Make the accelerator's device ``device`` (an index, or a device of the accelerator's type)
    the one a bare device type means."""
    found = _require()
    index = _index_of(device, found.device_type)
    if index is None or index < 0:
        return  # PyTorch: a negative index (or None) leaves the current device as it is
    if index >= found.device_count:
        raise RuntimeError(f"invalid device index {index}: the {found.device_type!r} backend has {found.device_count} device(s)")
    _set_current_index_of(found.device_type, index)


set_device_idx = set_device_index


def _index_of(device, device_type: str) -> int | None:
    if device is None or isinstance(device, int):
        return device
    dev = _device(device)
    if dev.type != device_type:
        raise ValueError(f"{dev} is not a device of the current accelerator {device_type!r}")
    return _current_index_of(device_type) if dev.index is None else dev.index


class device_index:
    """Context manager: ``with tp.accelerator.device_index(1):`` makes device 1 current inside."""

    def __init__(self, device, /) -> None:
        self.index = device
        self._previous: int | None = None

    def __enter__(self):
        if self.index is not None:
            self._previous = current_device_index()
            set_device_index(self.index)
        return self

    def __exit__(self, *exc_info):
        if self._previous is not None:
            set_device_index(self._previous)
        return False


def _runtime() -> DeviceRuntime:
    return runtime_for(_require().device_type)


def synchronize(device=None, /) -> None:
    """Wait for the work queued on an accelerator device (the current one by default)."""
    runtime = _runtime()
    runtime.synchronize(_index_of(device, runtime.device_type))


def current_stream(device=None, /) -> Stream:
    """The stream work for an accelerator device (the current one by default) goes to now."""
    runtime = _runtime()
    return runtime.current_stream(_index_of(device, runtime.device_type))


def set_stream(stream: Stream) -> None:
    """Make ``stream`` current on its device, and its device the current accelerator device."""
    runtime = _runtime()
    if stream.device.type != runtime.device_type:
        raise ValueError(f"{stream.device} is not a device of the current accelerator {runtime.device_type!r}")
    set_device_index(stream.device.index)
    runtime.set_stream(stream)


def empty_cache() -> None:
    """Give the accelerator's cached, unused memory back; nothing to do without one."""
    found = _best()
    if found is not None:
        runtime_for(found.device_type).empty_cache()


def memory_stats(device=None, /) -> dict:
    """The backend's memory counters for a device ({} when it keeps none, or was never used)."""
    runtime = _runtime()
    return runtime.memory_stats(_index_of(device, runtime.device_type))


def memory_allocated(device=None, /) -> int:
    return int(memory_stats(device).get("allocated_bytes", 0))


def max_memory_allocated(device=None, /) -> int:
    return int(memory_stats(device).get("peak_allocated_bytes", 0))


def memory_reserved(device=None, /) -> int:
    return int(memory_stats(device).get("reserved_bytes", 0))


def max_memory_reserved(device=None, /) -> int:
    return int(memory_stats(device).get("peak_reserved_bytes", 0))


def reset_peak_memory_stats(device=None, /) -> None:
    runtime = _runtime()
    runtime.reset_peak_memory_stats(_index_of(device, runtime.device_type))
