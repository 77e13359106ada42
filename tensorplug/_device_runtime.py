"""One device runtime API for every device type: streams, events, synchronization, memory.

``tp.npdev``, ``tp.opencl`` (a module for any installed device type, made on first access), the
stream and event names of ``tp.cuda`` and ``tp.cpu``, and ``tp.accelerator`` all come from
:class:`DeviceRuntime`, which is written against the backend contract's optional runtime methods
(``Backend.new_stream``, ``record_event``, ...; docs/backend-contract.md). A backend that fills
none of them in still gets a correct runtime, that of a synchronous device.

>>> import tensorplug as tp
>>> start, end = tp.npdev.Event(enable_timing=True), tp.npdev.Event(enable_timing=True)
>>> start.record(); y = tp.ones(1000, device="npdev") * 2; end.record()
>>> end.synchronize(); start.elapsed_time(end) >= 0.0
True

As in PyTorch, each device has a current stream (its default stream unless ``set_stream`` or a
``with tp.<device>.stream(s):`` block changes it), and work issued for the device goes to it.
Unlike PyTorch, the current stream is per process, not per thread (docs/deviations.md).
"""
from __future__ import annotations

import types
from typing import Any

from .backends import _registry
from .backends._probe import VALUELESS_DEVICE_TYPES, known_device_types, probe
from .frontend.device import current_device_index as _current_index_of
from .frontend.device import device as _device
from .frontend.device import set_current_device_index as _set_current_index_of

__all__ = ["DeviceRuntime", "Stream", "Event", "StreamContext", "runtime_for", "device_module", "RUNTIME_NAMES"]

#: The names every device module has (``tp.npdev.<name>``).
RUNTIME_NAMES = (
    "Stream", "Event", "StreamContext", "stream", "current_stream", "default_stream", "set_stream", "synchronize",
    "is_available", "is_initialized", "device_count", "current_device", "set_device", "device", "memory_stats",
    "memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved", "reset_peak_memory_stats",
    "empty_cache",
)

#: (device type, index) -> the stream made current there (absent: the default stream is).
_current: dict[tuple[str, int], Stream] = {}
#: (device type, index) -> the Stream object of the device's default stream (one per device, so
#: that ``current_stream() == default_stream()`` and ``is`` both hold).
_defaults: dict[tuple[str, int], Stream] = {}
_runtimes: dict[str, DeviceRuntime] = {}
_modules: dict[str, types.ModuleType] = {}


def runtime_for(device_type: str, require=None) -> DeviceRuntime:
    """The runtime of ``device_type`` (made once; nothing is loaded until a call needs it).
    ``require``, given by the first caller only, is DeviceRuntime's."""
    runtime = _runtimes.get(device_type)
    if runtime is None:
        runtime = _runtimes[device_type] = DeviceRuntime(device_type, require)
    return runtime


class Stream:
    """An order of work on one device: work issued to one stream runs in the order issued, and
    work on two streams is ordered only by events (``wait_event``, ``wait_stream``).

    ``Stream(device=None, priority=0)`` makes a new stream on ``device`` (the current device of
    the module's type by default). Use it with ``with tp.<device>.stream(s):`` or ``with s:``.
    """

    #: Set on each device module's subclass (``tp.npdev.Stream.device_type == "npdev"``).
    device_type = ""

    def __init__(self, device=None, priority: int = 0, **kwargs: Any) -> None:
        runtime = _runtime_of(type(self), device)
        index = runtime.checked_index(device)
        self.device = _device(runtime.device_type, index)
        self.priority = int(priority)
        self._handle = runtime.backend().new_stream(index, self.priority)

    @classmethod
    def _wrap(cls, device: _device, handle: Any) -> Stream:
        stream = cls.__new__(cls)
        stream.device, stream.priority, stream._handle = device, 0, handle
        return stream

    def _backend(self):
        return _registry.backend_for(self.device.type)

    def query(self) -> bool:
        """Whether all work issued to this stream has finished."""
        return bool(self._backend().query_stream(self.device.index, self._handle))

    def synchronize(self) -> None:
        """Wait for the work issued to this stream; pending device errors are raised here."""
        self._backend().synchronize_stream(self.device.index, self._handle)

    def wait_event(self, event: Event) -> None:
        """Make work issued to this stream from now on wait for ``event`` (the host does not wait)."""
        if event._handle is None:
            return  # PyTorch: waiting for an event that was never recorded waits for nothing
        if event.device != self.device:
            raise ValueError(f"Stream.wait_event: the event was recorded on {event.device}, the stream is on {self.device}")
        self._backend().stream_wait_event(self.device.index, self._handle, event._handle)

    def wait_stream(self, stream: Stream) -> None:
        """Make work issued to this stream from now on wait for the work issued to ``stream`` so far."""
        self.wait_event(stream.record_event())

    def record_event(self, event: Event | None = None) -> Event:
        """Record ``event`` (a new one by default) at the current end of this stream's work."""
        if event is None:
            event = runtime_for(self.device.type).Event()
        event.record(self)
        return event

    def __enter__(self) -> Stream:
        context = StreamContext(self)
        self.__dict__.setdefault("_contexts", []).append(context)
        context.__enter__()
        return self

    def __exit__(self, *exc_info: Any) -> bool:
        return self.__dict__["_contexts"].pop().__exit__(*exc_info)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Stream) and self.device == other.device and self._handle == other._handle

    def __hash__(self) -> int:
        return hash(self.device)

    def __repr__(self) -> str:
        return f"<{_public_module(self.device.type)}.Stream device={self.device} handle={self._handle!r}>"


class Event:
    """A point in a stream's work: ``record()`` marks it, ``synchronize()`` waits for it,
    ``elapsed_time(end)`` gives the milliseconds between two events recorded with
    ``enable_timing=True`` (device time where the backend measures it).
    """

    device_type = ""

    def __init__(self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False) -> None:
        if interprocess:
            raise NotImplementedError("Event(interprocess=True): tensorplug events cannot be shared between processes")
        self.enable_timing = bool(enable_timing)
        self.blocking = bool(blocking)
        self.device: _device | None = None
        self._handle: Any = None

    def record(self, stream: Stream | None = None) -> None:
        """Mark the current end of ``stream``'s work (the current stream by default)."""
        if stream is None:
            if not self.device_type:
                raise ValueError("Event.record: pass the stream to record on (this event has no device type)")
            stream = runtime_for(self.device_type).current_stream(self.device)
        if self.device_type and stream.device.type != self.device_type:
            raise ValueError(f"Event.record: a {self.device_type} event cannot be recorded on a stream of {stream.device}")
        if self.device is not None and stream.device != self.device:
            raise ValueError(f"Event.record: the event was recorded on {self.device} before; the stream is on {stream.device}")
        self._handle = stream._backend().record_event(stream.device.index, stream._handle, self.enable_timing)
        self.device = stream.device

    def wait(self, stream: Stream | None = None) -> None:
        """Make work issued to ``stream`` (the current stream by default) wait for this event."""
        if self._handle is None:
            return
        if stream is None:
            stream = runtime_for(self.device.type).current_stream(self.device)
        stream.wait_event(self)

    def query(self) -> bool:
        """Whether the work before the event has finished (True for an event never recorded)."""
        if self._handle is None:
            return True
        return bool(_registry.backend_for(self.device.type).query_event(self.device.index, self._handle))

    def synchronize(self) -> None:
        """Wait for the work before the event; pending device errors are raised here."""
        if self._handle is not None:
            _registry.backend_for(self.device.type).synchronize_event(self.device.index, self._handle)

    def elapsed_time(self, end_event: Event) -> float:
        """Milliseconds from this event to ``end_event``; waits for both to complete."""
        if not (self.enable_timing and end_event.enable_timing):
            raise RuntimeError("Both events must be created with argument 'enable_timing=True'.")
        if self._handle is None or end_event._handle is None:
            raise RuntimeError("Both events must be recorded before calculating elapsed time.")
        if self.device != end_event.device:
            raise ValueError(f"elapsed_time: the events were recorded on different devices ({self.device}, {end_event.device})")
        backend = _registry.backend_for(self.device.type)
        backend.synchronize_event(self.device.index, self._handle)
        backend.synchronize_event(self.device.index, end_event._handle)
        return float(backend.event_elapsed_time(self.device.index, self._handle, end_event._handle))

    def __repr__(self) -> str:
        state = "unrecorded" if self._handle is None else f"recorded on {self.device}"
        return f"<{_public_module(self.device_type or 'tensorplug')}.Event {state}>"


class StreamContext:
    """``with StreamContext(s):`` makes ``s`` the current stream of its device (and its device
    the current one of its type) inside, and restores both after; ``None`` does nothing."""

    def __init__(self, stream: Stream | None) -> None:
        self.stream = stream
        self._saved: tuple[int, Stream] | None = None

    def __enter__(self) -> Stream | None:
        if self.stream is None:
            return None
        runtime = runtime_for(self.stream.device.type)
        device_type = self.stream.device.type
        self._saved = (_current_index_of(device_type), runtime.current_stream(self.stream.device))
        _set_current_index_of(device_type, self.stream.device.index)
        runtime.set_stream(self.stream)
        return self.stream

    def __exit__(self, *exc_info: Any) -> bool:
        if self._saved is not None:
            index, previous = self._saved
            runtime_for(self.stream.device.type).set_stream(previous)
            _set_current_index_of(self.stream.device.type, index)
            self._saved = None
        return False


def _runtime_of(cls: type, device) -> DeviceRuntime:
    if cls.device_type:
        return runtime_for(cls.device_type)
    if device is None:
        raise ValueError(f"{cls.__name__}(device=...): name the device (this class has no device type of its own)")
    return runtime_for(_device(device).type)


def _public_module(device_type: str) -> str:
    return device_type if device_type == "tensorplug" else f"tensorplug.{device_type}"


class DeviceRuntime:
    """The runtime functions of one device type, delegating to its backend.

    ``require`` (optional) is called before any call that needs the device and raises when it
    cannot be used (``tp.cuda`` passes its own, to keep its messages).
    """

    def __init__(self, device_type: str, require=None) -> None:
        self.device_type = device_type
        self._require_hook = require
        module = _public_module(device_type)
        self.Stream = type("Stream", (Stream,), {"device_type": device_type, "__module__": module,
                                                  "__doc__": Stream.__doc__})
        self.Event = type("Event", (Event,), {"device_type": device_type, "__module__": module,
                                                "__doc__": Event.__doc__})
        self.StreamContext = StreamContext
        self.device = self._device_context_class()

    # --- the device --------------------------------------------------------------------------
    def require(self) -> None:
        if self._require_hook is not None:
            self._require_hook()
            return
        found = probe(self.device_type)
        if not found.available:
            raise RuntimeError(f"device type {self.device_type!r} is not available: {found.reason}")

    def backend(self):
        """The ready backend (loaded on first use), or RuntimeError saying why it cannot be used."""
        self.require()
        return _registry.backend_for(self.device_type)

    def index_of(self, device) -> int:
        """A device argument (None, an int, ``"npdev:1"``, a tp.device) as an index of this type."""
        if device is None:
            return _current_index_of(self.device_type)
        if isinstance(device, int):
            return device
        dev = _device(device)
        if dev.type != self.device_type:
            raise ValueError(f"Expected a {self.device_type} device, but got: {dev}")
        return _current_index_of(self.device_type) if dev.index is None else dev.index

    def checked_index(self, device) -> int:
        index = self.index_of(device)
        count = self.device_count()
        if not 0 <= index < count:
            self.require()
            raise RuntimeError(f"Invalid device argument {device!r}: there are {count} {self.device_type} device(s)")
        return index

    def is_available(self) -> bool:
        """Whether the device type can be used here. Never raises, never loads the device."""
        return probe(self.device_type).available

    def is_initialized(self) -> bool:
        """Whether the backend has been loaded (by the first tensor or runtime call on it)."""
        return self.device_type in _registry.ready_backends()

    def device_count(self) -> int:
        return probe(self.device_type).device_count

    def current_device(self) -> int:
        self.require()
        return _current_index_of(self.device_type)

    def set_device(self, device) -> None:
        """Make ``device`` the one the bare device type means. A negative index is ignored."""
        index = self.index_of(device)
        if index >= 0:
            _set_current_index_of(self.device_type, self.checked_index(index))

    def _device_context_class(self):
        runtime = self

        class device:
            """Context manager: ``with tp.<device>.device(1):`` makes device 1 current inside."""

            def __init__(self, device) -> None:
                self.index = -1 if device is None else runtime.index_of(device)
                self._previous = -1

            def __enter__(self):
                if self.index >= 0:
                    self._previous = runtime.current_device()
                    runtime.set_device(self.index)
                return self

            def __exit__(self, *exc_info):
                if self._previous >= 0:
                    runtime.set_device(self._previous)
                return False

        device.__module__ = _public_module(self.device_type)
        return device

    def synchronize(self, device=None) -> None:
        """Wait for all work queued on a device (every stream); pending device errors are raised here."""
        index = self.checked_index(device)
        self.backend().synchronize(index)

    # --- streams -----------------------------------------------------------------------------
    def default_stream(self, device=None) -> Stream:
        index = self.checked_index(device)
        key = (self.device_type, index)
        stream = _defaults.get(key)
        if stream is None:
            handle = self.backend().default_stream(index)
            stream = _defaults[key] = self.Stream._wrap(_device(self.device_type, index), handle)
        return stream

    def current_stream(self, device=None) -> Stream:
        """The stream work for ``device`` goes to now (its default stream unless changed)."""
        index = self.checked_index(device)
        return _current.get((self.device_type, index)) or self.default_stream(index)

    def set_stream(self, stream: Stream) -> None:
        """Make ``stream`` the current stream of its device. Prefer ``with stream(s):``."""
        if stream is None:
            return
        if stream.device.type != self.device_type:
            raise ValueError(f"set_stream: expected a {self.device_type} stream, got one on {stream.device}")
        index = stream.device.index
        if stream == self.default_stream(index):
            _current.pop((self.device_type, index), None)
        else:
            _current[(self.device_type, index)] = stream
        self.backend().set_current_stream(index, stream._handle)

    def stream(self, stream: Stream | None) -> StreamContext:
        """``with tp.<device>.stream(s):`` issues the work inside to ``s``."""
        return StreamContext(stream)

    # --- memory ------------------------------------------------------------------------------
    # Answered without loading the device, as PyTorch answers before CUDA is initialized: a
    # backend that never ran has allocated nothing.
    def _ready(self):
        return _registry.ready_backends().get(self.device_type)

    def memory_stats(self, device=None) -> dict:
        """The backend's allocator counters for a device ({} when it keeps none or never ran)."""
        backend = self._ready()
        return {} if backend is None else dict(backend.memory_stats(self.index_of(device)))

    def memory_allocated(self, device=None) -> int:
        """Bytes held by live tensors' storages."""
        return int(self.memory_stats(device).get("allocated_bytes", 0))

    def max_memory_allocated(self, device=None) -> int:
        """The peak of ``memory_allocated`` since the start or ``reset_peak_memory_stats``."""
        return int(self.memory_stats(device).get("peak_allocated_bytes", 0))

    def memory_reserved(self, device=None) -> int:
        """Bytes the allocator holds: live storages plus its cache of freed blocks."""
        return int(self.memory_stats(device).get("reserved_bytes", 0))

    def max_memory_reserved(self, device=None) -> int:
        return int(self.memory_stats(device).get("peak_reserved_bytes", 0))

    def reset_peak_memory_stats(self, device=None) -> None:
        backend = self._ready()
        if backend is not None:
            backend.reset_peak_memory_stats(self.index_of(device))

    def empty_cache(self) -> None:
        """Give cached, unused memory back (nothing to do when the backend never ran)."""
        backend = self._ready()
        if backend is not None:
            backend.empty_cache()

    def namespace(self) -> dict[str, Any]:
        """The functions and classes of a device module, by name (RUNTIME_NAMES)."""
        return {name: getattr(self, name) for name in RUNTIME_NAMES}


#: PyTorch's own device modules: they exist there whatever is installed (scripts ask
#: ``torch.xpu.is_available()`` or ``torch.mps.is_available()`` on any machine), so they exist
#: here too and answer as an uninstalled device type does (not available, no devices).
PYTORCH_DEVICE_MODULES = ("cuda", "xpu", "mps", "mtia")


def device_module(device_type: str) -> types.ModuleType:
    """``tp.<device_type>``: a module with the runtime API (RUNTIME_NAMES) of an installed device
    type; AttributeError naming the installed ones otherwise."""
    module = _modules.get(device_type)
    if module is not None:
        return module
    if device_type in VALUELESS_DEVICE_TYPES:  # PyTorch has no torch.meta either
        raise AttributeError(f"module 'tensorplug' has no attribute {device_type!r} (the {device_type!r} device has "
                             f"no runtime: its tensors hold no values, and nothing runs on it)")
    installed = [t for t in known_device_types() if t not in VALUELESS_DEVICE_TYPES]
    if device_type not in installed and device_type not in PYTORCH_DEVICE_MODULES:
        raise AttributeError(f"module 'tensorplug' has no attribute {device_type!r} (device modules exist for the "
                             f"installed device types: {', '.join(installed)})")
    module = types.ModuleType(_public_module(device_type), f"The {device_type!r} device's runtime: streams, events, "
                              "synchronization and memory statistics, as torch.cuda's.")
    module.__dict__.update(runtime_for(device_type).namespace())
    module.__all__ = list(RUNTIME_NAMES)
    _modules[device_type] = module
    return module
