"""What a profile holds: one :class:`FunctionEvent` per op call or user range, and their averages.

Times are kept in integer nanoseconds (``time.perf_counter_ns``) and shown in microseconds, as
PyTorch's ``FunctionEvent`` shows them. An event's total time is its own duration; its self time
is the total minus the totals of the events directly nested in it, so summing self times over a
profile counts every nanosecond once.
"""
from __future__ import annotations

from typing import NamedTuple

__all__ = ["Interval", "FunctionEvent", "FunctionEventAvg", "EventList"]


class Interval(NamedTuple):
    """An event's start and end, in microseconds since the profile started."""

    start: float
    end: float

    def elapsed_us(self) -> float:
        return self.end - self.start


class _Microseconds:
    """The four nanosecond totals of an event (or of their sum) in microseconds, PyTorch's unit."""

    __slots__ = ()

    @property
    def cpu_time_total(self) -> float:
        return self.cpu_time_total_ns / 1e3

    @property
    def self_cpu_time_total(self) -> float:
        return self.self_cpu_time_total_ns / 1e3

    @property
    def device_time_total(self) -> float:
        return self.device_time_total_ns / 1e3

    @property
    def self_device_time_total(self) -> float:
        return self.self_device_time_total_ns / 1e3


class FunctionEvent(_Microseconds):
    """One op call (``kind == "op"``) or user range (``"user_annotation"``) of a profile.

    For an op, ``dispatch_key``, ``source`` and ``kernel`` are what ``tp.dispatcher.explain``
    says for the same call; ``backend_key``, ``backend_source`` and ``backend_kernel`` are what
    the call's backend key alone resolves to (the device kernel under an autograd wrapper, or the
    backend's boxed fallback). ``device`` is the device of the call's first tensor argument.
    """

    __slots__ = (
        "id", "name", "kind", "thread", "start_ns", "end_ns", "cpu_parent", "cpu_children", "device",
        "dispatch_key", "source", "kernel", "backend_key", "backend_source", "backend_kernel",
        "input_shapes", "input_types", "on_device", "_base_ns", "stack", "flops", "self_cpu_memory_usage",
        "self_device_memory_usage",
    )

    def __init__(self, id: int, name: str, kind: str, thread: int, base_ns: int, parent: FunctionEvent | None):
        self.id = id
        self.name = name
        self.kind = kind
        self.thread = thread
        self._base_ns = base_ns
        self.start_ns = 0
        self.end_ns = 0
        self.cpu_parent = parent
        self.cpu_children: list[FunctionEvent] = []
        self.device: str | None = None
        self.dispatch_key = self.source = self.kernel = None
        self.backend_key = self.backend_source = self.backend_kernel = None
        self.input_shapes: list | None = None
        self.input_types: list | None = None
        # Whether the event's self time is device time: a backend kernel (or boxed fallback) on
        # a non-CPU device, profiled with a device activity.
        self.on_device = False
        self.stack: list[str] = []  # with_stack: the calling Python frames, innermost first
        self.flops: int | None = None  # with_flops: the op's floating-point operations, where counted
        # profile_memory: bytes allocated minus bytes freed while this event was the innermost one
        self.self_cpu_memory_usage = 0
        self.self_device_memory_usage = 0

    def __repr__(self) -> str:
        return (f"<FunctionEvent id={self.id} name={self.name!r} kind={self.kind} "
                f"cpu_time_total={self.cpu_time_total:.3f}us device={self.device}>")

    @property
    def key(self) -> str:
        return self.name

    @property
    def is_user_annotation(self) -> bool:
        return self.kind == "user_annotation"

    @property
    def time_range(self) -> Interval:
        return Interval((self.start_ns - self._base_ns) / 1e3, (self.end_ns - self._base_ns) / 1e3)

    @property
    def cpu_time_total_ns(self) -> int:
        return self.end_ns - self.start_ns

    @property
    def self_cpu_time_total_ns(self) -> int:
        return self.cpu_time_total_ns - sum(child.cpu_time_total_ns for child in self.cpu_children)

    @property
    def self_device_time_total_ns(self) -> int:
        return self.self_cpu_time_total_ns if self.on_device else 0

    @property
    def device_time_total_ns(self) -> int:
        # Iterative walk: deep nesting (a long decomposition chain) must not hit the recursion limit.
        total, pending = 0, [self]
        while pending:
            event = pending.pop()
            total += event.self_device_time_total_ns
            pending.extend(event.cpu_children)
        return total

    def _subtree_sum(self, attribute: str) -> int:
        total, pending = 0, [self]
        while pending:
            event = pending.pop()
            total += getattr(event, attribute)
            pending.extend(event.cpu_children)
        return total

    @property
    def cpu_memory_usage(self) -> int:
        """Bytes allocated minus freed on the CPU by the event and the events nested in it."""
        return self._subtree_sum("self_cpu_memory_usage")

    @property
    def device_memory_usage(self) -> int:
        return self._subtree_sum("self_device_memory_usage")

    @property
    def cpu_time(self) -> float:
        """The event's total time (microseconds), as PyTorch's FunctionEvent.cpu_time."""
        return self.cpu_time_total

    @property
    def device_time(self) -> float:
        return self.device_time_total


class FunctionEventAvg(_Microseconds):
    """The events of one name (and, when grouped so, one list of input shapes) added up."""

    __slots__ = (
        "key", "count", "cpu_time_total_ns", "self_cpu_time_total_ns", "device_time_total_ns",
        "self_device_time_total_ns", "input_shapes", "is_user_annotation", "backend_sources", "stack", "flops",
        "cpu_memory_usage", "self_cpu_memory_usage", "device_memory_usage", "self_device_memory_usage",
    )

    def __init__(self, key: str, input_shapes=None, stack=None):
        self.key = key
        self.count = 0
        self.cpu_time_total_ns = self.self_cpu_time_total_ns = 0
        self.device_time_total_ns = self.self_device_time_total_ns = 0
        self.input_shapes = input_shapes
        self.stack: list[str] = list(stack) if stack else []  # the grouped stack frames (group_by_stack_n)
        self.flops = 0
        self.cpu_memory_usage = self.self_cpu_memory_usage = 0
        self.device_memory_usage = self.self_device_memory_usage = 0
        self.is_user_annotation = False
        #: Where the events' backend key sent them ("cpu kernel", "npdev boxed fallback", ...),
        #: in first-seen order.
        self.backend_sources: list[str] = []

    def add(self, event: FunctionEvent) -> None:
        self.count += 1
        self.cpu_time_total_ns += event.cpu_time_total_ns
        self.self_cpu_time_total_ns += event.self_cpu_time_total_ns
        self.device_time_total_ns += event.device_time_total_ns
        self.self_device_time_total_ns += event.self_device_time_total_ns
        self.flops += event.flops or 0
        self.cpu_memory_usage += event.cpu_memory_usage
        self.self_cpu_memory_usage += event.self_cpu_memory_usage
        self.device_memory_usage += event.device_memory_usage
        self.self_device_memory_usage += event.self_device_memory_usage
        self.is_user_annotation = event.is_user_annotation
        if event.backend_source is not None and event.backend_source not in self.backend_sources:
            self.backend_sources.append(event.backend_source)

    def __repr__(self) -> str:
        return f"<FunctionEventAvg key={self.key!r} count={self.count} cpu_time_total={self.cpu_time_total:.3f}us>"


    @property
    def cpu_time(self) -> float:
        """Average total time per call (microseconds)."""
        return self.cpu_time_total / self.count if self.count else 0.0

    @property
    def device_time(self) -> float:
        return self.device_time_total / self.count if self.count else 0.0


class EventList(list):
    """A list of events (or of averages) that prints as a table."""

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0) -> EventList:
        """One :class:`FunctionEventAvg` per event name (per name and input shapes when
        ``group_by_input_shape``, and per innermost ``group_by_stack_n`` stack frames, recorded
        with ``with_stack``), in order of first appearance."""
        groups: dict = {}
        for event in self:
            shapes = repr(event.input_shapes) if group_by_input_shape else None
            stack = tuple(event.stack[:group_by_stack_n]) if group_by_stack_n > 0 else ()
            group = groups.get((event.name, shapes, stack))
            if group is None:
                group = groups[(event.name, shapes, stack)] = FunctionEventAvg(
                    event.name, event.input_shapes if group_by_input_shape else None, stack)
            group.add(event)
        return EventList(groups.values())

    def total_average(self) -> FunctionEventAvg:
        total = FunctionEventAvg("Total")
        for event in self:
            total.add(event)
        return total

    @property
    def self_cpu_time_total(self) -> float:
        return sum(event.self_cpu_time_total_ns for event in self) / 1e3

    def table(self, sort_by: str | None = None, row_limit: int = 100, max_name_column_width: int = 55,
              header: str | None = None, top_level_events_only: bool = False) -> str:
        """The events (or averages) as a text table, as PyTorch's ``EventList.table``."""
        from ._table import build_table

        return build_table(self, sort_by=sort_by, row_limit=row_limit, name_width=max_name_column_width,
                           header=header, top_level_events_only=top_level_events_only)

    def export_chrome_trace(self, path: str) -> None:
        """Write the events as a Chrome trace-event JSON file (see ``profile.export_chrome_trace``)."""
        from ._chrome import write_chrome_trace

        write_chrome_trace(self, path)
