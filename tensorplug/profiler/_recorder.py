"""Recording: the Profiler dispatch key's fallback, which times every op of a profiling thread.

A profiling thread has the Profiler key in its include set (``local_state.include``), so every
op it calls, on any backend, resolves first to :func:`_profiled_call`; that records an event and
continues the call with the key set below the Profiler key. Threads without the key never reach
this module: with no profiler running, the per-op path is what it was.

Ops called from inside a kernel (a decomposition's primitives, the ops of a derivative formula)
carry the key too, so they become children of the event that called them.
"""
from __future__ import annotations

import threading
import time

from .. import dispatcher
from ..dispatcher import PROFILER, Operator, keys_in, local_state
from ..frontend.tensor import Tensor
from ._events import FunctionEvent

__all__ = ["Recorder", "current_recorder", "kernel_name"]

_now = time.perf_counter_ns


class _ThreadRecorder(threading.local):
    recorder: Recorder | None = None


_thread = _ThreadRecorder()


def current_recorder() -> Recorder | None:
    """The recorder of the calling thread's running profile, if any."""
    return _thread.recorder


def kernel_name(kernel) -> str:
    """A kernel's dotted name, written as ``tp.dispatcher.explain`` writes it."""
    kernel = getattr(kernel, "__wrapped__", kernel)
    return f"{getattr(kernel, '__module__', '?')}.{getattr(kernel, '__qualname__', repr(kernel))}"


class _Resolved:
    """The facts about one (op, key set) that every event of it repeats; worked out once."""

    __slots__ = ("dispatch_key", "source", "kernel", "backend_key", "backend_source", "backend_kernel", "runs_kernel")

    def __init__(self, op: Operator, keyset: int):
        resolution = op.resolve(keyset)
        self.dispatch_key = resolution.key.name if resolution.key is not None else None
        self.source = resolution.source
        self.kernel = kernel_name(resolution.kernel)
        backend_keys = 0
        for key in keys_in(keyset):
            if key.is_backend:
                backend_keys |= key.mask
        below = resolution if backend_keys == keyset else op.resolve(backend_keys)
        self.backend_key = below.key.name if below.key is not None else None
        self.backend_source = below.source
        self.backend_kernel = kernel_name(below.kernel)
        # Whether the call reaches a device kernel without another dispatch: the backend key
        # resolves to a kernel or boxed fallback (not a decomposition, whose ops are events of
        # their own), and any layer above it (Autograd) calls that directly.
        self.runs_kernel = (
            below.key is not None and below.key.is_backend
            and (below.source.endswith(" kernel") or below.source.endswith(" boxed fallback"))
        )


class Recorder:
    """The events of one profiling thread, while its profile records."""

    def __init__(self, record_shapes: bool, device_timing: bool, base_ns: int):
        self.record_shapes = record_shapes
        self.device_timing = device_timing
        self.base_ns = base_ns
        self.thread = threading.get_native_id()
        self.events: list[FunctionEvent] = []  # in start order
        self._open: list[FunctionEvent] = []
        self._resolved: dict[tuple[Operator, int], _Resolved] = {}
        self._next_id = 0

    # --- the calling thread's state --------------------------------------------------------
    def attach(self) -> None:
        """Start recording the calling thread's ops."""
        if _thread.recorder is not None:
            raise RuntimeError("tp.profiler: a profiler is already running in this thread; profilers do not nest")
        _thread.recorder = self
        local_state.include |= PROFILER.mask

    def detach(self) -> None:
        """Stop recording; ranges still open end now."""
        if _thread.recorder is self:
            local_state.include &= ~PROFILER.mask
            _thread.recorder = None
        end = _now()
        while self._open:
            self.close(self._open[-1], end)

    # --- events ----------------------------------------------------------------------------
    def open(self, name: str, kind: str) -> FunctionEvent:
        parent = self._open[-1] if self._open else None
        event = FunctionEvent(self._next_id, name, kind, self.thread, self.base_ns, parent)
        self._next_id += 1
        if parent is not None:
            parent.cpu_children.append(event)
        self.events.append(event)
        self._open.append(event)
        event.start_ns = _now()
        return event

    def close(self, event: FunctionEvent, end_ns: int | None = None) -> None:
        event.end_ns = _now() if end_ns is None else end_ns
        # Normally the innermost range; a range closed out of order closes those opened in it.
        while self._open:
            last = self._open.pop()
            if last is event:
                return
            last.end_ns = event.end_ns

    def resolved(self, op: Operator, keyset: int) -> _Resolved:
        found = self._resolved.get((op, keyset))
        if found is None:
            found = self._resolved[(op, keyset)] = _Resolved(op, keyset)
        return found


def _first_device(args: tuple, kwargs: dict):
    for value in (*args, *kwargs.values()):
        if isinstance(value, Tensor):
            return value._device
        if isinstance(value, (list, tuple)):
            for item in value:
                if isinstance(item, Tensor):
                    return item._device
    return None


def _describe(value) -> tuple[list, str]:
    """An argument's entry in "Input Dims" and "Input type", as PyTorch's record_shapes gives."""
    if isinstance(value, Tensor):
        return list(value._shape), value._dtype.name
    if isinstance(value, (list, tuple)) and value and any(isinstance(item, Tensor) for item in value):
        return [list(item._shape) if isinstance(item, Tensor) else [] for item in value], "TensorList"
    if value is None:
        return [], ""
    if isinstance(value, (bool, int, float, complex)):
        return [], "Scalar"
    if isinstance(value, (list, tuple)):
        return [], "ScalarList"
    return [], type(value).__name__


def _profiled_call(op: Operator, below: int, args: tuple, kwargs: dict):
    """The Profiler key's fallback: record the call, run it with the keys below the Profiler key."""
    kernel = op.lookup(below)
    recorder = _thread.recorder
    if recorder is None:  # the key was added to the include set by hand, not by a profile
        return kernel(*args, **kwargs)
    facts = recorder.resolved(op, below)
    device = _first_device(args, kwargs)
    sync = None
    if recorder.device_timing and facts.runs_kernel and device is not None and device.type != "cpu":
        # Drain work queued before this op, so that the time measured is this op's alone.
        sync = device._backend
        sync.synchronize(device.index)
    event = recorder.open(op.name, "op")
    event.dispatch_key, event.source, event.kernel = facts.dispatch_key, facts.source, facts.kernel
    event.backend_key, event.backend_source, event.backend_kernel = (
        facts.backend_key, facts.backend_source, facts.backend_kernel)
    event.on_device = sync is not None
    if device is not None:
        event.device = str(device)
    if recorder.record_shapes:
        described = [_describe(value) for value in (*args, *kwargs.values())]
        event.input_shapes = [dims for dims, _ in described]
        event.input_types = [kind for _, kind in described]
    event.start_ns = _now()  # the bookkeeping above is the profiler's cost, not the op's
    try:
        result = kernel(*args, **kwargs)
        if sync is not None:
            sync.synchronize(device.index)  # an asynchronous device has now finished the kernel
        return result
    finally:
        recorder.close(event)


dispatcher.register_key_fallback(PROFILER, _profiled_call)
