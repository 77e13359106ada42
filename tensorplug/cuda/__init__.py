"""``tp.cuda``: PyTorch's ``torch.cuda`` names, present on every machine.

Scripts ask ``tp.cuda.is_available()`` in their first lines, so this module exists and answers
without CUDA. The work goes to the backend registered under the ``cuda`` device type (the
``tensorplug.backends`` entry point named ``cuda``: tensorplug's own CuPy backend,
``tensorplug/backends/cuda``). Without CuPy or without a GPU ``is_available()`` is False and the
reason is kept: ``tp.cuda.init()``, and every call that needs a device, raises ``RuntimeError``
naming which of the two is missing. Calls that PyTorch answers without a device
(``device_count``, ``manual_seed``, ``empty_cache``, ``memory_allocated``, ...) answer here too.

Seams for the CUDA backend: it is found through ``tp.backends`` like any plugin; besides the
backend contract, ``tp.cuda`` uses these optional backend methods when the backend has them:
``device_name(index) -> str``, ``device_capability(index) -> (major, minor)``,
``device_properties(index) -> object`` and ``mem_get_info(index) -> (free, total)``. Streams
and events (``Stream``, ``Event``, ``stream``, ``current_stream``, ...) are the generic ones of
every device module (``tensorplug._device_runtime``), over the contract's runtime methods.
"""
from __future__ import annotations

from typing import Any

from .._device_runtime import runtime_for
from ..backends import _registry
from ..backends._probe import Probe, probe
from ..backends.cuda import OutOfMemoryError
from ..frontend.device import current_device_index as _current_index_of
from ..frontend.device import device as _device
from ..frontend.device import set_current_device_index as _set_current_index_of
from . import _tensor_methods, amp

__all__ = [
    "amp", "is_available", "unavailable_reason", "is_initialized", "init", "device_count", "current_device",
    "set_device", "device", "synchronize", "get_device_name", "get_device_capability", "get_device_properties",
    "is_bf16_supported", "is_tf32_supported", "manual_seed", "manual_seed_all", "seed", "seed_all", "initial_seed",
    "empty_cache", "memory_stats", "memory_allocated", "max_memory_allocated", "memory_reserved",
    "max_memory_reserved", "reset_peak_memory_stats", "reset_max_memory_allocated", "mem_get_info", "Stream", "Event",
    "StreamContext", "stream", "current_stream", "default_stream", "set_stream", "OutOfMemoryError",
]

DEVICE_TYPE = "cuda"
_NO_BACKEND = (
    "no CUDA backend is installed: no plugin provides the 'cuda' device type (tensorplug's own was "
    "disabled or failed to register); use device 'cpu', or another device listed by tp.backends.status()"
)
_initialized = False


def _probe() -> Probe:
    found = probe(DEVICE_TYPE)
    if found.backend is None and not found.available and found.reason.startswith("no installed plugin"):
        return Probe(DEVICE_TYPE, None, False, 0, _NO_BACKEND)
    if found.backend is not None and not found.available and found.reason.endswith("found no device"):
        return Probe(DEVICE_TYPE, found.backend, False, 0, "no CUDA device found")
    # After a failed first use the registry repeats its own wording; the reason is what follows.
    prefix = f"the {DEVICE_TYPE!r} backend is not available: "
    if not found.available and found.reason.startswith(prefix):
        return Probe(DEVICE_TYPE, found.backend, False, 0, found.reason[len(prefix):])
    return found


def unavailable_reason() -> str:
    """Why CUDA cannot be used here ("" when it can). A tensorplug addition: PyTorch has no such call."""
    return _probe().reason


def _require() -> Probe:
    found = _probe()
    if not found.available:
        raise RuntimeError(f"CUDA is not available: {found.reason}")
    return found


# The message a `.to("cuda")` gets when no plugin provides the device type.
_registry.missing_device_hints[DEVICE_TYPE] = lambda: f"CUDA is not available: {_probe().reason}"
_tensor_methods.attach()


# Streams and events: the generic runtime, with this module's "CUDA is not available" errors.
_runtime = runtime_for(DEVICE_TYPE, require=lambda: _require())
Stream, Event, StreamContext = _runtime.Stream, _runtime.Event, _runtime.StreamContext
stream, current_stream, default_stream, set_stream = (
    _runtime.stream, _runtime.current_stream, _runtime.default_stream, _runtime.set_stream)


def is_available() -> bool:
    """Whether a CUDA backend is installed and sees a device. Never raises."""
    return _probe().available


def is_initialized() -> bool:
    return _initialized


def init() -> None:
    """Load the CUDA backend now (it otherwise loads on first use); raises RuntimeError saying why
    when CUDA is not available."""
    global _initialized
    _require()
    _registry.backend_for(DEVICE_TYPE)
    _initialized = True


def _backend():
    """The ready CUDA backend (loading it on first use) or a RuntimeError saying why not."""
    global _initialized
    _require()
    backend = _registry.backend_for(DEVICE_TYPE)
    _initialized = True
    return backend


def device_count() -> int:
    """How many CUDA devices the backend sees; 0 without one."""
    return _probe().device_count


def _index(device) -> int:
    """A device argument (None, an int, "cuda:1", a tp.device) as a CUDA device index."""
    if device is None:
        return _current_index_of(DEVICE_TYPE)
    if isinstance(device, int):
        return device
    dev = _device(device)
    if dev.type != DEVICE_TYPE:
        raise ValueError(f"Expected a cuda device, but got: {dev}")
    return _current_index_of(DEVICE_TYPE) if dev.index is None else dev.index


def _checked_index(device) -> int:
    found = _require()
    index = _index(device)
    if not 0 <= index < found.device_count:
        raise RuntimeError(f"Invalid device argument {device!r}: there are {found.device_count} CUDA device(s)")
    return index


def current_device() -> int:
    _require()
    return _current_index_of(DEVICE_TYPE)


def set_device(device) -> None:
    """Make ``device`` the one ``"cuda"`` means. A negative index is ignored, as in PyTorch."""
    index = _index(device)
    if index < 0:
        return
    _set_current_index_of(DEVICE_TYPE, _checked_index(index))


class device:
    """Context manager: ``with tp.cuda.device(1):`` makes device 1 current inside."""

    def __init__(self, device) -> None:
        self.index = -1 if device is None else _index(device)
        self._previous = -1

    def __enter__(self):
        if self.index >= 0:
            self._previous = current_device()
            set_device(self.index)
        return self

    def __exit__(self, *exc_info):
        if self._previous >= 0:
            set_device(self._previous)
        return False


def synchronize(device=None) -> None:
    """Wait for all work queued on a CUDA device."""
    index = _checked_index(device)
    _backend().synchronize(index)


def _optional(name: str, index: int, default: Any) -> Any:
    method = getattr(_backend(), name, None)
    return default if method is None else method(index)


def get_device_name(device=None) -> str:
    index = _checked_index(device)
    return _optional("device_name", index, f"CUDA device {index}")


def get_device_capability(device=None) -> tuple[int, int]:
    index = _checked_index(device)
    method = getattr(_backend(), "device_capability", None)
    if method is None:
        raise NotImplementedError("the installed CUDA backend does not report compute capability")
    return tuple(method(index))


def get_device_properties(device=None) -> Any:
    index = _checked_index(device)
    method = getattr(_backend(), "device_properties", None)
    if method is None:
        raise NotImplementedError("the installed CUDA backend does not report device properties")
    return method(index)


def mem_get_info(device=None) -> tuple[int, int]:
    """(free, total) bytes of a CUDA device."""
    index = _checked_index(device)
    method = getattr(_backend(), "mem_get_info", None)
    if method is None:
        raise NotImplementedError("the installed CUDA backend does not report free memory")
    return tuple(method(index))


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """Whether the CUDA backend computes in bfloat16; False without CUDA (as PyTorch)."""
    found = _probe()
    return found.available and "bfloat16" in found.backend.dtypes


def is_tf32_supported() -> bool:
    """tensorplug never computes float32 matmuls in TF32, so False everywhere."""
    return False


# --- random numbers -------------------------------------------------------------------------------
# Without CUDA these are no-ops, as in PyTorch (whose calls are queued until CUDA initializes and
# so never run). tp.manual_seed already seeds every device's generator, CUDA's included.
def manual_seed(seed: int) -> None:
    """Seed the current CUDA device's generator; does nothing without CUDA."""
    if is_available():
        from ..frontend.random import default_generator

        default_generator(_device(DEVICE_TYPE, current_device())).manual_seed(int(seed))


def manual_seed_all(seed: int) -> None:
    """Seed every CUDA device's generator; does nothing without CUDA."""
    found = _probe()
    if found.available:
        from ..frontend.random import default_generator

        for index in range(found.device_count):
            default_generator(_device(DEVICE_TYPE, index)).manual_seed(int(seed))


def seed() -> None:
    """Seed the current CUDA device's generator from a random number; does nothing without CUDA."""
    if is_available():
        from ..frontend.random import default_generator

        default_generator(_device(DEVICE_TYPE, current_device())).seed()


def seed_all() -> None:
    found = _probe()
    if found.available:
        from ..frontend.random import default_generator

        new_seed = default_generator(_device(DEVICE_TYPE, 0)).seed()
        for index in range(1, found.device_count):
            default_generator(_device(DEVICE_TYPE, index)).manual_seed(new_seed)


def initial_seed() -> int:
    from ..frontend.random import default_generator

    return default_generator(_device(DEVICE_TYPE, current_device())).initial_seed()


# --- memory ---------------------------------------------------------------------------------------
# PyTorch answers these with zeros before CUDA is initialized (and so on machines without it).
def empty_cache() -> None:
    """Give cached, unused CUDA memory back; nothing to do when the backend never ran."""
    backend = _registry.ready_backends().get(DEVICE_TYPE)
    if backend is not None:
        backend.empty_cache()


def memory_stats(device=None) -> dict:
    backend = _registry.ready_backends().get(DEVICE_TYPE)
    if backend is None:
        return {}
    return dict(backend.memory_stats(_index(device)))


def memory_allocated(device=None) -> int:
    return int(memory_stats(device).get("allocated_bytes", 0))


def max_memory_allocated(device=None) -> int:
    return int(memory_stats(device).get("peak_allocated_bytes", 0))


def memory_reserved(device=None) -> int:
    return int(memory_stats(device).get("reserved_bytes", 0))


def max_memory_reserved(device=None) -> int:
    return int(memory_stats(device).get("peak_reserved_bytes", 0))


def reset_peak_memory_stats(device=None) -> None:
    """Restart peak counting on a CUDA device (when its backend keeps peaks); no-op otherwise."""
    backend = _registry.ready_backends().get(DEVICE_TYPE)
    method = None if backend is None else getattr(backend, "reset_peak_memory_stats", None)
    if method is not None:
        method(_index(device))


reset_max_memory_allocated = reset_peak_memory_stats
