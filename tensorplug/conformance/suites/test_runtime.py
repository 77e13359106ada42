"""The device runtime: streams order work, events mark it and time it, synchronize waits for it.

These hold for every backend, whether it fills in the contract's runtime methods (an asynchronous
device with queues) or keeps the defaults (a synchronous one); docs/backend-contract.md states them.
"""
import numpy as np
import pytest

import tensorplug as tp
from tensorplug._device_runtime import runtime_for
from tensorplug.conformance._checks import ConformanceFailure
from tensorplug.conformance.suites import item


@item("runtime", "streams and events order work")
def test_stream_event_ordering(conformance):
    """Work issued on a side stream, joined back with wait_stream, gives the values a single
    stream would, and the event recorded after it has completed once the host waited for it."""
    runtime = runtime_for(conformance.device)
    x = tp.arange(4096, dtype=tp.float32, device=conformance.device)
    side = runtime.Stream()
    side.wait_stream(runtime.current_stream())
    with runtime.stream(side):
        if runtime.current_stream() != side:
            raise ConformanceFailure("inside stream(s), current_stream() is not s")
        y = (x * 2 + 1).sum()
        done = side.record_event()
    if runtime.current_stream() != runtime.default_stream():
        raise ConformanceFailure("after stream(s), the default stream is not current again")
    runtime.current_stream().wait_event(done)
    got = y.item()
    expected = float((np.arange(4096, dtype=np.float64) * 2 + 1).sum())
    if got != expected:
        raise ConformanceFailure(f"sum computed on a side stream: {got}, expected {expected}")
    done.synchronize()
    if not done.query():
        raise ConformanceFailure("an event reports unfinished work after synchronize()")


@item("runtime", "event timing")
def test_event_timing(conformance):
    """elapsed_time is non-negative, and additive over three events recorded in order."""
    runtime = runtime_for(conformance.device)
    events = [runtime.Event(enable_timing=True) for _ in range(3)]
    x = tp.ones(1 << 16, device=conformance.device)
    events[0].record()
    y = x * 3
    events[1].record()
    z = (y + x).sum()
    events[2].record()
    runtime.synchronize()
    first, second, whole = (events[0].elapsed_time(events[1]), events[1].elapsed_time(events[2]),
                            events[0].elapsed_time(events[2]))
    if min(first, second, whole) < 0:
        raise ConformanceFailure(f"negative elapsed_time: {first}, {second}, {whole} ms")
    if abs(first + second - whole) > 1e-3 + 1e-6 * whole:
        raise ConformanceFailure(f"elapsed_time is not additive: {first} + {second} != {whole} ms")
    del z


@item("runtime", "memory statistics follow allocation")
def test_memory_statistics(conformance):
    """memory_allocated grows by a new tensor's bytes and drops back when it dies."""
    runtime = runtime_for(conformance.device)
    if "allocated_bytes" not in runtime.memory_stats():
        pytest.skip("not supported: the backend reports no allocated_bytes in memory_stats()")
    before = runtime.memory_allocated()
    x = tp.empty(1 << 16, device=conformance.device)
    grown = runtime.memory_allocated() - before
    if grown != x.untyped_storage().nbytes():
        raise ConformanceFailure(f"memory_allocated grew by {grown} bytes for a {x.untyped_storage().nbytes()}-byte tensor")
    if runtime.max_memory_allocated() < before + grown:
        raise ConformanceFailure("max_memory_allocated is below memory_allocated")
    del x
    if runtime.memory_allocated() != before:
        raise ConformanceFailure(f"memory_allocated did not drop back to {before} when the tensor died")
