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
from ._options import MemoryTracker, flops_of, user_stack

__all__ = ["Recorder", "call_module_in_range", "current_recorder", "kernel_name", "module_ranges"]

_now = time.perf_counter_ns


class _ThreadRecorder(threading.local):
    recorder: Recorder | None = None


_thread = _ThreadRecorder()


#: How many running profiles record nn.Module ranges (with_modules): Module.__call__ reads this
#: one integer before anything else, so modules pay nothing when no such profile runs.
module_ranges = [0]


def call_module_in_range(module, call, args, kwargs):
    """``call(*args, **kwargs)`` (a module's call) inside its range, when this thread's profile
    records module ranges."""
    recorder = _thread.recorder
    if recorder is None or not recorder.with_modules:
        return call(*args, **kwargs)
    event = recorder.open(recorder.module_name(module), "user_annotation")
    try:
        return call(*args, **kwargs)
    finally:
        if recorder is _thread.recorder:
            recorder.close(event)


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

    def __init__(self, record_shapes: bool, device_timing: bool, base_ns: int, *, with_stack: bool = False,
                 with_flops: bool = False, profile_memory: bool = False):
        self.record_shapes = record_shapes
        self.device_timing = device_timing
        self.base_ns = base_ns
        self.with_stack = with_stack
        self.with_flops = with_flops
        self.thread = threading.get_native_id()
        self.events: list[FunctionEvent] = []  # in start order
        self._open: list[FunctionEvent] = []
        self._resolved: dict[tuple[Operator, int], _Resolved] = {}
        self._next_id = 0
        self._memory = MemoryTracker(self) if profile_memory else None
        self._pending = [0, 0]  # CPU and device bytes allocated and not yet claimed (add_memory)
        self._pending_depth = 0
        self._attached = False
        self.with_modules = False  # set by the profile; module_ranges counts the recorders that want ranges
        self._module_names: dict[int, str] = {}
        self._module_counts: dict[str, int] = {}

    # --- the calling thread's state --------------------------------------------------------
    def attach(self) -> None:
        """Start recording the calling thread's ops."""
        if _thread.recorder is not None:
            raise RuntimeError("tp.profiler: a profiler is already running in this thread; profilers do not nest")
        _thread.recorder = self
        local_state.include |= PROFILER.mask
        self._attached = True
        if self.with_modules:
            module_ranges[0] += 1
        if self._memory is not None:
            from ..backends import _registry

            self._memory.start(_registry.ready_backends().values())

    def detach(self) -> None:
        """Stop recording; ranges still open end now."""
        if self._memory is not None:
            self._memory.stop()
        if self._attached and self.with_modules:
            module_ranges[0] -= 1
        self._attached = False
        if _thread.recorder is self:
            local_state.include &= ~PROFILER.mask
            _thread.recorder = None
        end = _now()
        while self._open:
            self.close(self._open[-1], end)

    # --- memory (profile_memory) ------------------------------------------------------------
    def record_memory_now(self) -> bool:
        """Whether an allocation or release now belongs to this profile: it is recording, on its
        own thread."""
        return self._attached and threading.get_native_id() == self.thread

    def add_memory(self, nbytes: int, on_cpu: bool) -> None:
        """Bytes allocated (positive) or freed (negative). A release belongs to the innermost open
        event. An allocation waits for the next op event opened at its depth: the frontend
        allocates an op's output before dispatching it, and PyTorch counts the output as the op's;
        whatever no op claims goes to the event in which it was made (or nowhere at the top)."""
        if nbytes < 0:
            if self._open:
                _add_bytes(self._open[-1], nbytes, on_cpu)
            return
        depth = len(self._open)
        if self._pending_depth != depth:
            self._flush_pending(self._pending_owner())
            self._pending_depth = depth
        self._pending[0 if on_cpu else 1] += nbytes

    def _pending_owner(self) -> FunctionEvent | None:
        """The open event at the depth the pending allocations were made (None: the top)."""
        depth = self._pending_depth
        return self._open[depth - 1] if 0 < depth <= len(self._open) else None

    def _flush_pending(self, event) -> None:
        cpu, device = self._pending
        if event is not None and (cpu or device):
            event.self_cpu_memory_usage += cpu
            event.self_device_memory_usage += device
        self._pending = [0, 0]

    # --- events ----------------------------------------------------------------------------
    def open(self, name: str, kind: str) -> FunctionEvent:
        parent = self._open[-1] if self._open else None
        event = FunctionEvent(self._next_id, name, kind, self.thread, self.base_ns, parent)
        self._next_id += 1
        if self._pending != [0, 0]:
            same_depth = self._pending_depth == len(self._open)
            self._flush_pending(event if kind == "op" and same_depth else self._pending_owner())
        if self.with_stack:
            event.stack = user_stack()
        if parent is not None:
            parent.cpu_children.append(event)
        self.events.append(event)
        self._open.append(event)
        event.start_ns = _now()
        return event

    def close(self, event: FunctionEvent, end_ns: int | None = None) -> None:
        event.end_ns = _now() if end_ns is None else end_ns
        if self._pending != [0, 0]:
            self._flush_pending(self._pending_owner())
        # Normally the innermost range; a range closed out of order closes those opened in it.
        while self._open:
            last = self._open.pop()
            if last is event:
                return
            last.end_ns = event.end_ns

    def module_name(self, module) -> str:
        """PyTorch's range name for a module's call: its class and a number per instance of it."""
        name = self._module_names.get(id(module))
        if name is None:
            kind = type(module).__name__
            count = self._module_counts.get(kind, 0)
            self._module_counts[kind] = count + 1
            name = self._module_names[id(module)] = f"nn.Module: {kind}_{count}"
        return name

    def resolved(self, op: Operator, keyset: int) -> _Resolved:
        found = self._resolved.get((op, keyset))
        if found is None:
            found = self._resolved[(op, keyset)] = _Resolved(op, keyset)
        return found


def _add_bytes(event: FunctionEvent, nbytes: int, on_cpu: bool) -> None:
    if on_cpu:
        event.self_cpu_memory_usage += nbytes
    else:
        event.self_device_memory_usage += nbytes


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
        if recorder.with_flops and facts.runs_kernel:
            event.flops = flops_of(op.name, args, result)
        return result
    finally:
        recorder.close(event)


dispatcher.register_key_fallback(PROFILER, _profiled_call)
