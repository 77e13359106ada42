"""OpenCL devices, streams, storage from memory pools, host copies and the device error flag.

Each device gets one context. A stream (``tp.opencl.Stream``) is an in-order command queue on
that context with its own ``pyopencl.tools.MemoryPool`` over an ``ImmediateAllocator``; the
device's default stream is one more. Work issued while a stream is current (kernels, copies,
allocations) goes to its queue: ``set_current_stream`` swaps the device's ``queue`` and ``pool``,
which every kernel reads. A storage holds a pooled buffer and gives it back to the pool it came
from the moment the storage dies (CPython reference counting). Because each pool serves only one
in-order queue, a freed block handed to a later operation is only written after earlier commands
of that queue that used it have finished; a tensor used on a second stream must stay alive until
that stream has passed it (PyTorch's rule for CUDA streams, docs/backend-contract.md). Queues
order each other only through events (``stream_wait_event`` enqueues a barrier waiting for a
marker of the other queue). Every queue profiles its commands, so events give device time.

Kernels that read index values (or divide integers) report bad data through a small device
buffer, the error flag: ``[code, value, dim, size]``. Host reads (``to_host``) and
``synchronize`` read it and raise ``IndexError`` (or ``ZeroDivisionError``/``ValueError``) there,
as the contract asks of asynchronous devices; the flag is cleared, so the process keeps working.
"""
from __future__ import annotations

import os
import time
import warnings

import numpy as np
import pyopencl as cl
import pyopencl.tools as cl_tools

from ..api import backend_storage, host_numpy_dtype, is_contiguous
from . import _source, c_launch, worker_threads

__all__ = ["DeviceState", "OpenCLStream", "OpenCLStorage", "devices", "discover", "allocate", "copy_from_host",
           "to_host", "synchronize", "memory_stats", "reset_peak_memory_stats", "empty_cache", "numpy_dtype",
           "default_stream", "new_stream", "set_current_stream", "synchronize_stream", "query_stream", "record_event",
           "synchronize_event", "query_event", "event_elapsed_time", "stream_wait_event", "ENV_DEVICE"]

#: Environment variable selecting devices: comma-separated ``P:D`` (platform and device index as
#: ``clinfo`` lists them) or case-insensitive substrings of "platform name / device name". The
#: devices named become opencl:0, opencl:1, ... in that order.
ENV_DEVICE = "TENSORPLUG_OPENCL_DEVICE"

# Error codes written by kernels into the flag buffer (see helpers.cl).
_ERR_INDEX, _ERR_ZERO_DIV = 1, 2

# A tiny kernel built on each candidate device: a device whose compiler cannot build it (pip's PoCL
# 3.0 on CPUs its LLVM 14 does not know reports "unknown target CPU 'generic'") is left out, with
# the reason kept for tp.backends.status().
_PROBE = "__kernel void probe(__global int* x) { x[get_global_id(0)] += 1; }"
_POCL = "Portable Computing Language"  # PoCL's platform name


class OpenCLStream:
    """One stream of a device: an in-order, profiling command queue and the memory pool whose
    blocks are reused only by work on that queue."""

    __slots__ = ("state", "queue", "pool")

    def __init__(self, state: DeviceState):
        self.state = state
        self.queue = cl.CommandQueue(state.context, state.device,
                                     properties=cl.command_queue_properties.PROFILING_ENABLE)
        self.pool = cl_tools.MemoryPool(cl_tools.ImmediateAllocator(self.queue))

    def __repr__(self) -> str:
        default = " (default)" if self is self.state.default_stream else ""
        return f"OpenCLStream(opencl:{self.state.index}{default})"


class DeviceState:
    """One OpenCL device as tensorplug uses it: context, streams, programs, error flag.

    ``queue`` and ``pool`` are those of the current stream (the default one unless
    ``set_current_stream`` changed it): kernels and ``allocate`` read them on every call.
    """

    #: The shared adapters (kernels.py) may launch the compact kernel variants (``_tv``/``_vt``,
    #: ``_tr``/``_rt``, ``rw_*``), which exist for PoCL's per-element and per-argument costs. The
    #: CUDA backend's state does not set it: its launch plans mirror the general kernels.
    compact_kernels = True

    def __init__(self, index: int, device, context=None):
        self.index = index
        self.device = device
        self.context = context if context is not None else cl.Context([device])
        self.default_stream = OpenCLStream(self)
        # Every stream ever made, so that synchronize() waits for all of them: a side stream is
        # never released (as CUDA's stream pool), at most MAX_SIDE_STREAMS of them (new_stream).
        self.streams: list[OpenCLStream] = [self.default_stream]
        self.streams_made = 0
        self.queue = self.default_stream.queue
        self.pool = self.default_stream.pool
        extensions = device.extensions.split()
        self.has_fp64 = "cl_khr_fp64" in extensions or device.double_fp_config != 0
        self.has_fp16 = "cl_khr_fp16" in extensions
        self.max_alloc = int(device.max_mem_alloc_size)
        self.global_mem = int(device.global_mem_size)
        self.max_work_group = int(device.max_work_group_size)
        self.compute_units = int(device.max_compute_units)  # PoCL: the CPU's cores it runs groups on
        self.group = min(256, self.max_work_group)  # work-group size of the 1-d kernels
        self.strided_run = _source.STRIDED_RUN  # elements per work-item of the strided kernels (TP_RUN)
        self.programs: dict = {}  # (family, key) -> built pyopencl.Program
        self.kernels: dict = {}  # (family, key, name) -> pyopencl.Kernel with arg dtypes set
        self.allocated_bytes = 0
        self.peak_bytes = 0
        self.allocations = 0
        self.error_host = np.zeros(4, dtype=np.int64)
        self.error_flag = cl.Buffer(self.context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR,
                                    hostbuf=self.error_host)
        self.error_possible = False  # set by launches of kernels that can raise; cleared by checks

    @property
    def name(self) -> str:
        return f"{self.device.platform.name.strip()} / {self.device.name.strip()}"

    def allocate(self, nbytes: int) -> OpenCLStorage:
        """Scratch or result memory on this device's current stream (what kernels.py allocates)."""
        return allocate(nbytes, self.index)

    def build_kernel(self, family: str, dtype: str, name: str):
        """One kernel of a generated program, built on first use (kernels.py caches it)."""
        from .kernels import build_kernel

        return build_kernel(self, family, dtype, name)

    def check_errors(self) -> None:
        """Raise the error a kernel recorded since the last check (reads 32 bytes; the caller
        has synchronized or is about to)."""
        if not self.error_possible:
            return
        self.error_possible = False
        c_launch.read(self.queue, self.error_flag, 0, self.error_host)
        code, value, dim, size = (int(v) for v in self.error_host)
        if code == 0:
            return
        self.error_host[:] = 0
        c_launch.write(self.queue, self.error_flag, 0, self.error_host)
        if code == _ERR_INDEX:
            raise IndexError(f"index {value} is out of bounds for dimension {dim} with size {size}")
        if code == _ERR_ZERO_DIV:
            raise ZeroDivisionError("integer division by zero (opencl: detected at synchronization; "
                                    "the affected elements were set to 0)")
        raise RuntimeError(f"opencl: a kernel reported error code {code}")


class OpenCLStorage:
    """A block of device memory from the device's pool; returned to the pool when it dies."""

    __slots__ = ("buffer", "nbytes", "state", "__weakref__")

    def __init__(self, buffer, nbytes: int, state: DeviceState):
        self.buffer = buffer
        self.nbytes = nbytes
        self.state = state

    def __del__(self):
        state = self.state
        state.allocated_bytes -= self.nbytes
        # Dropping the pooled buffer returns it to the pool (reference counting, right now).

    def __repr__(self) -> str:
        return f"OpenCLStorage({self.nbytes} bytes on opencl:{self.state.index})"


_devices: list[DeviceState] | None = None
_skipped: list[str] = []


def _candidates():
    found = []
    for p, platform in enumerate(cl.get_platforms()):
        threads_before = worker_threads.thread_ids()
        try:
            platform_devices = platform.get_devices()
        except cl.Error:  # a platform without devices raises DEVICE_NOT_FOUND
            continue
        # PoCL starts its CPU driver's workers when it first lists its devices (worker_threads.py).
        if platform.name.strip() == _POCL and all(dev.type & cl.device_type.CPU for dev in platform_devices):
            worker_threads.yield_to_host(worker_threads.thread_ids() - threads_before)
        for d, dev in enumerate(platform_devices):
            found.append((f"{p}:{d}", f"{platform.name.strip()} / {dev.name.strip()}", dev))
    return found


def _select(found):
    spec = os.environ.get(ENV_DEVICE, "").strip()
    if not spec:
        # GPUs and accelerators before CPUs; otherwise the platforms' own order.
        return sorted(found, key=lambda f: 0 if f[2].type & (cl.device_type.GPU | cl.device_type.ACCELERATOR) else 1)
    chosen = []
    for part in (s.strip() for s in spec.split(",")):
        match = [f for f in found if f[0] == part] or [f for f in found if part.lower() in f[1].lower()]
        if not match:
            listed = "; ".join(f"{i} = {n}" for i, n, _ in found)
            raise RuntimeError(f"{ENV_DEVICE}={spec!r}: no OpenCL device matches {part!r} (devices: {listed})")
        chosen.extend(m for m in match if m not in chosen)
    return chosen


def _works(dev) -> str:
    """'' if the device builds and runs the probe kernel, else why not."""
    try:
        context = cl.Context([dev])
        queue = cl.CommandQueue(context, dev)
        with warnings.catch_warnings():  # compiler chatter is not a failure (kernels.build_program)
            warnings.simplefilter("ignore", cl.CompilerWarning)
            program = cl.Program(context, _PROBE).build()
        host = np.zeros(4, dtype=np.int32)
        buf = cl.Buffer(context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=host)
        program.probe(queue, (4,), None, buf)
        cl.enqueue_copy(queue, host, buf, is_blocking=True)
        if not (host == 1).all():
            return "the probe kernel computed wrong values"
        return ""
    except cl.Error as exc:
        lines = [line for line in str(exc).splitlines() if line.strip()]
        detail = next((line for line in lines if "error" in line.lower() and "clBuildProgram" not in line), lines[-1] if lines else "")
        return f"cannot build kernels: {detail.strip()}"


def discover() -> tuple[list, list[str]]:
    """(usable (id, name, device) triples, reasons for devices left out); no state is made."""
    found = _select(_candidates())
    usable, skipped = [], []
    for ident, name, dev in found:
        reason = _works(dev)
        if reason:
            skipped.append(f"{ident} {name}: {reason}")
        else:
            usable.append((ident, name, dev))
    return usable, skipped


def devices() -> list[DeviceState]:
    """The selected, working devices (made once)."""
    global _devices
    if _devices is None:
        usable, skipped = discover()
        _skipped[:] = skipped
        _devices = [DeviceState(i, dev) for i, (_, _, dev) in enumerate(usable)]
    return _devices


def skipped_devices() -> list[str]:
    return list(_skipped)


_numpy_dtypes: dict = {}
#: dtypes NumPy lacks, moved to and from the host as unsigned integers of their width.
_RAW_HOST_TYPES = {"bfloat16": np.uint16, "float8_e4m3fn": np.uint8, "float8_e5m2": np.uint8,
                   "float8_e4m3fnuz": np.uint8, "float8_e5m2fnuz": np.uint8}


def numpy_dtype(dtype) -> np.dtype:
    """The NumPy dtype used for host copies (bfloat16 and the float8 types are moved as their raw
    16- and 8-bit patterns: NumPy has none of them)."""
    found = _numpy_dtypes.get(dtype)
    if found is None:
        raw = _RAW_HOST_TYPES.get(dtype.name)
        found = np.dtype(raw) if raw is not None else np.dtype(dtype.name)
        _numpy_dtypes[dtype] = found
    return found


def allocate(nbytes: int, device_index=None) -> OpenCLStorage:
    state = _devices[device_index or 0]
    size = nbytes if nbytes > 0 else 1  # OpenCL has no empty buffers
    if size > state.max_alloc or state.allocated_bytes + nbytes > state.global_mem:
        _out_of_memory(state, nbytes)
    try:
        buffer = state.pool.allocate(size)
    except cl.Error:
        for stream in state.streams:  # every stream's cached blocks, not only the current one's
            stream.pool.free_held()
        try:
            buffer = state.pool.allocate(size)
        except cl.Error:
            _out_of_memory(state, nbytes)
    state.allocated_bytes += nbytes
    state.allocations += 1
    if state.allocated_bytes > state.peak_bytes:
        state.peak_bytes = state.allocated_bytes
    return OpenCLStorage(buffer, nbytes, state)


def _out_of_memory(state: DeviceState, nbytes: int):
    raise MemoryError(
        f"opencl:{state.index} out of memory: tried to allocate {nbytes} bytes "
        f"({state.allocated_bytes} allocated of {state.global_mem}; the largest single buffer this "
        f"device allows is {state.max_alloc} bytes)"
    )


def copy_from_host(dst, array: np.ndarray) -> None:
    storage = backend_storage(dst)
    itemsize = dst.dtype.itemsize
    if array.nbytes == 0:
        return
    host = np.ascontiguousarray(array)
    raw = _RAW_HOST_TYPES.get(dst.dtype.name)
    if raw is not None:
        host = host.view(raw)
    c_launch.write(storage.state.queue, storage.buffer, dst.storage_offset() * itemsize, host)


def to_host(src) -> np.ndarray:
    """A copy of ``src`` on the host (synchronizes; raises errors kernels recorded)."""
    storage = backend_storage(src)
    state = storage.state
    dtype = numpy_dtype(src.dtype)
    shape = tuple(src.shape)
    numel = int(np.prod(shape, dtype=np.int64)) if shape else 1
    if numel == 0:
        state.check_errors()
        return np.empty(shape, dtype=host_numpy_dtype(src.dtype))
    if is_contiguous(src):
        host = np.empty(shape, dtype=dtype)
        c_launch.read(state.queue, storage.buffer, src.storage_offset() * dtype.itemsize, host)
    else:
        # Copy the span the view covers, then take the view on the host.
        strides = src.stride()
        span = 1 + sum((n - 1) * s for n, s in zip(shape, strides))
        flat = np.empty(span, dtype=dtype)
        c_launch.read(state.queue, storage.buffer, src.storage_offset() * dtype.itemsize, flat)
        host = np.lib.stride_tricks.as_strided(flat, shape, tuple(s * dtype.itemsize for s in strides)).copy()
    state.check_errors()
    if src.dtype.name in _RAW_HOST_TYPES:
        host = host.view(host_numpy_dtype(src.dtype))
    return host


def synchronize(device_index=None) -> None:
    """Wait for every stream of the device (of every device without an index); raise errors."""
    targets = _devices if device_index is None else [_devices[device_index]]
    for state in targets:
        for stream in state.streams:
            stream.queue.finish()
        state.check_errors()


def memory_stats(device_index=None) -> dict:
    state = _devices[device_index or 0]
    pools = [stream.pool for stream in state.streams]
    return {
        "allocated_bytes": state.allocated_bytes,
        "peak_allocated_bytes": state.peak_bytes,
        "allocations": state.allocations,
        "reserved_bytes": sum(int(pool.managed_bytes) for pool in pools),
        "cached_blocks": sum(int(pool.held_blocks) for pool in pools),
        "active_blocks": sum(int(pool.active_blocks) for pool in pools),
    }


def reset_peak_memory_stats(device_index=None) -> None:
    state = _devices[device_index or 0]
    state.peak_bytes = state.allocated_bytes


def empty_cache() -> None:
    for state in _devices or ():
        for stream in state.streams:
            stream.pool.free_held()


# --- streams and events (the contract's optional runtime methods) -------------------------------
def default_stream(device_index: int) -> OpenCLStream:
    return _devices[device_index].default_stream


#: Side streams per device; beyond that, new streams reuse these in turn (as PyTorch's pool of
#: 32 CUDA streams): sharing a queue only adds ordering, and queues and pools stay bounded.
MAX_SIDE_STREAMS = 8


def new_stream(device_index: int, priority: int = 0) -> OpenCLStream:
    """A queue on the device's context (OpenCL queues have no priorities: ignored)."""
    state = _devices[device_index]
    slot = state.streams_made % MAX_SIDE_STREAMS
    state.streams_made += 1
    if slot + 1 < len(state.streams):
        return state.streams[slot + 1]
    stream = OpenCLStream(state)
    state.streams.append(stream)
    return stream


def set_current_stream(device_index: int, stream: OpenCLStream) -> None:
    state = _devices[device_index]
    state.queue, state.pool = stream.queue, stream.pool


def synchronize_stream(device_index: int, stream: OpenCLStream) -> None:
    stream.queue.finish()
    stream.state.check_errors()


def _complete(event) -> bool:
    return event.command_execution_status == cl.command_execution_status.COMPLETE


def query_stream(device_index: int, stream: OpenCLStream) -> bool:
    """Whether the queue has run everything issued so far. OpenCL can only answer through a new
    marker, which even an idle queue completes a little later: it is given up to 2 ms, after
    which the answer is "not yet" (a caller polling query() sees True at a later call)."""
    marker = cl.enqueue_marker(stream.queue)
    stream.queue.flush()
    deadline = time.perf_counter() + 2e-3
    while not _complete(marker):
        if time.perf_counter() > deadline:
            return False
        time.sleep(0)
    return True


def record_event(device_index: int, stream: OpenCLStream, enable_timing: bool):
    """A marker: it completes when every command enqueued before it on the queue has, and its
    profiling end time is then (every queue profiles, so timing costs nothing extra)."""
    marker = cl.enqueue_marker(stream.queue)
    # Flushed so that it is submitted: another queue waiting for it, or query(), must see it
    # progress (OpenCL promises progress across queues only for flushed commands).
    stream.queue.flush()
    return marker


def synchronize_event(device_index: int, event) -> None:
    event.wait()
    _devices[device_index].check_errors()


def query_event(device_index: int, event) -> bool:
    return _complete(event)


def event_elapsed_time(device_index: int, start, end) -> float:
    return (end.profile.end - start.profile.end) / 1e6


def stream_wait_event(device_index: int, stream: OpenCLStream, event) -> None:
    cl.enqueue_barrier(stream.queue, wait_for=[event])
