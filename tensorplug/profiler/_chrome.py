"""Chrome trace-event JSON (the format chrome://tracing, Perfetto and TensorBoard read).

Every op and user range is a complete ("X") event on its thread's track of this process, with
``ts`` and ``dur`` in microseconds since the profile started. A kernel that ran on a non-CPU
device while a device activity was profiled is repeated as an "X" event (category ``kernel``) on
that device's track: a process of its own per device, numbered from 0 as PyTorch numbers GPUs,
named by metadata ("M") events. Events on one track are sorted by start, parents before the
children they contain.
"""
from __future__ import annotations

import json
import os

__all__ = ["chrome_trace", "write_chrome_trace"]


def _us(ns: int) -> float:
    return round(ns / 1e3, 3)


def _op_args(event) -> dict:
    args = {"External id": event.id}
    if event.kind == "op":
        args.update({
            "Device": event.device,
            "Dispatch key": event.dispatch_key,
            "Dispatch source": event.source,
            "Kernel": event.kernel,
            "Backend key": event.backend_key,
            "Backend source": event.backend_source,
            "Backend kernel": event.backend_kernel,
        })
    if event.input_shapes is not None:
        args["Input Dims"] = event.input_shapes
        args["Input type"] = event.input_types
    return args


def chrome_trace(events) -> dict:
    """The trace of ``events`` as a JSON-ready dict."""
    pid = os.getpid()
    base = min((event._base_ns for event in events), default=0)
    device_pids: dict[str, int] = {}
    for event in events:
        if event.on_device and event.device not in device_pids:
            device_pids[event.device] = len(device_pids)

    timed = []
    threads = set()
    for event in events:
        start, duration = _us(event.start_ns - base), _us(event.end_ns - event.start_ns)
        threads.add(event.thread)
        timed.append({
            "ph": "X", "cat": "cpu_op" if event.kind == "op" else event.kind, "name": event.name,
            "pid": pid, "tid": event.thread, "ts": start, "dur": duration, "args": _op_args(event),
        })
        if event.on_device:
            timed.append({
                "ph": "X", "cat": "kernel", "name": event.name, "pid": device_pids[event.device], "tid": 0,
                "ts": start, "dur": _us(event.self_device_time_total_ns),
                "args": {"External id": event.id, "Device": event.device, "Kernel": event.backend_kernel},
            })
    # Parents first at equal start times (longer duration first), so a reader stacks them right.
    timed.sort(key=lambda e: (e["pid"], e["tid"], e["ts"], -e["dur"]))

    metadata = [{"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": "python"}}]
    metadata += [{"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": f"thread {tid}"}}
                 for tid in sorted(threads)]
    for device, device_pid in device_pids.items():
        metadata.append({"ph": "M", "name": "process_name", "pid": device_pid, "tid": 0, "args": {"name": device}})
        metadata.append({"ph": "M", "name": "thread_name", "pid": device_pid, "tid": 0,
                         "args": {"name": f"{device} kernels"}})
    return {"schemaVersion": 1, "displayTimeUnit": "ms", "traceEvents": metadata + timed}


def write_chrome_trace(events, path) -> None:
    with open(path, "w", encoding="utf-8") as file:
        json.dump(chrome_trace(events), file)
