"""The OpenCL backend: generated OpenCL C kernels launched through PyOpenCL, on any OpenCL device.

It registers through the ``tensorplug.backends`` entry point like any third-party backend and
imports PyOpenCL only when an opencl tensor is first made (``Backend.load``). ``pip install
tensorplug[opencl]`` installs PyOpenCL and PoCL, an OpenCL implementation that runs on the CPU.

Devices: every device of every OpenCL platform that can build kernels, GPUs and accelerators
first, as ``opencl:0``, ``opencl:1``, ... ``TENSORPLUG_OPENCL_DEVICE`` picks and orders them
(``"0:1"`` for platform 0's device 1, or part of a "platform / device" name, comma-separated).

Documented behaviour (docs/backend-contract.md leaves these to each device):

* Integer division or remainder by zero: a Python number divisor raises ``ZeroDivisionError``
  at once, as on the CPU. A tensor divisor is checked by the kernel, which sets the result to 0
  and records the error; ``ZeroDivisionError`` is raised at the next synchronization (a host read
  such as ``item()``/``numpy()``/``print``, or ``synchronize``), as for index errors.
* Index values out of range raise ``IndexError`` at the next synchronization; the kernel never
  reads or writes out of bounds.
* float64 is declared only when every selected device has cl_khr_fp64. float16 and bfloat16 are
  storage formats computed in float32 (``vload_half``/``vstore_half`` are core OpenCL), so they
  need no cl_khr_fp16; so are the float8 types (8-bit codes, rounded once per op as on the CPU,
  docs/dtypes.md). uint16/uint32/uint64 are OpenCL C's ushort/uint/ulong and wrap.
* Streams are in-order command queues on the device's context, each with its own memory pool;
  events are queue markers whose profiling timestamps give device time (storage.py).
* On PoCL's CPU driver, PoCL's worker threads run under SCHED_BATCH so that a launch does not
  take the host thread's core (worker_threads.py; ``TENSORPLUG_OPENCL_WORKER_POLICY=normal``
  leaves them alone).
"""
from __future__ import annotations

from ...plugins import hookimpl
from ..api import EXTRA_DTYPES, OPTIONAL_DTYPES, REQUIRED_DTYPES, Backend

__all__ = ["OpenCLBackend", "plugin"]

_INSTALL_HINT = "pip install tensorplug[opencl] installs PyOpenCL and PoCL"


class OpenCLBackend(Backend):
    device_type = "opencl"
    # Until load() has seen the devices: what every device supports. load() adds float64 when
    # every selected device has it. The extra dtypes need nothing of the device: the unsigned
    # types are OpenCL C's own, the float8 types are stored as bytes and computed in float32.
    dtypes = frozenset(REQUIRED_DTYPES + tuple(d for d in OPTIONAL_DTYPES if d != "float64") + EXTRA_DTYPES)
    # Both are stored in 16 bits and computed in float32: they halve the memory traffic, which is
    # what bounds elementwise kernels here.
    autocast_dtypes = frozenset({"float16", "bfloat16"})

    def __init__(self) -> None:
        self._availability: tuple[bool, str] | None = None
        self._kernels: dict = {}

    def is_available(self) -> tuple[bool, str]:
        if self._availability is None:
            self._availability = self._check()
        return self._availability

    def _check(self) -> tuple[bool, str]:
        try:
            import pyopencl as cl
        except ImportError as exc:
            return False, f"PyOpenCL is not installed ({exc}); {_INSTALL_HINT}"
        try:
            platforms = cl.get_platforms()
        except cl.Error:
            platforms = []
        if not platforms:
            return False, f"no OpenCL platform found; {_INSTALL_HINT}"
        from . import storage

        try:
            devices = storage.devices()
        except RuntimeError as exc:  # a TENSORPLUG_OPENCL_DEVICE that names nothing
            return False, str(exc)
        if not devices:
            skipped = storage.skipped_devices()
            detail = "; ".join(skipped) if skipped else "the OpenCL platforms list no devices"
            return False, f"no usable OpenCL device ({detail}); {_INSTALL_HINT}"
        return True, ""

    def device_count(self) -> int:
        from . import storage

        return len(storage.devices()) if self.is_available()[0] else 0

    def load(self) -> None:
        from . import kernels, storage

        states = storage.devices()
        if states and all(s.has_fp64 for s in states):
            self.dtypes = self.dtypes | {"float64"}
        self._kernels = kernels.table()
        # Bound straight to the storage functions: allocation is on every op's path.
        self.allocate = storage.allocate
        self.copy_from_host = storage.copy_from_host
        self.to_host = storage.to_host
        self.synchronize = storage.synchronize
        self.memory_stats = storage.memory_stats
        self.reset_peak_memory_stats = storage.reset_peak_memory_stats
        self.empty_cache = storage.empty_cache
        for name in ("default_stream", "new_stream", "set_current_stream", "synchronize_stream", "query_stream",
                     "record_event", "synchronize_event", "query_event", "event_elapsed_time", "stream_wait_event"):
            setattr(self, name, getattr(storage, name))

    def kernels(self):
        return self._kernels

    def describe_devices(self) -> list[str]:
        """One line per selected device (and per device left out, with the reason)."""
        from . import storage

        lines = [f"opencl:{s.index}: {s.name}" + (" (float64)" if s.has_fp64 else "") for s in storage.devices()]
        return lines + [f"left out: {reason}" for reason in storage.skipped_devices()]


class _OpenCLPlugin:
    @hookimpl
    def tensorplug_register_backends(self):
        return [OpenCLBackend()]


plugin = _OpenCLPlugin()
