"""CUDA devices, streams, storage from CuPy's caching pool, host copies and the device error flag.

Each device gets a ``CUDADevice``. Its ``queue`` is the handle of the current stream (the legacy
default stream unless ``set_current_stream`` changed it): every kernel launch and copy goes there,
in order, and nothing waits except host reads (``to_host``) and the synchronize calls. Memory
comes from CuPy's memory pool, which caches freed blocks per stream (the caching allocator of
the PyTorch paper): a storage hands its block back the moment it dies (CPython reference
counting), and a later allocation on the same stream reuses it without a cudaMalloc, which is
safe because that stream runs in order.

Kernels that read index values (or divide integers) report bad data through a small device
buffer, the error flag ``long[4] = {code, value, dim, size}`` (helpers.cl's ``tp_raise``).
Host reads and synchronize read it and raise ``IndexError`` (or ``ZeroDivisionError``) there, as
the contract asks of asynchronous devices; the flag is then cleared, so the process keeps working.

The GPU is reached only through ``runtime`` (a ``_cupy.CuPyRuntime``, or a test's stand-in set
with ``use_runtime``).
"""
from __future__ import annotations

import numpy as np

from ..api import backend_storage, host_numpy_dtype, is_contiguous
from . import OutOfMemoryError

__all__ = ["CUDADevice", "CUDAStream", "CUDAStorage", "devices", "use_runtime", "runtime", "allocate",
           "copy_from_host", "to_host", "synchronize", "memory_stats", "reset_peak_memory_stats", "empty_cache",
           "default_stream", "new_stream", "set_current_stream", "synchronize_stream", "query_stream",
           "record_event", "synchronize_event", "query_event", "event_elapsed_time", "stream_wait_event"]

# Error codes written by kernels into the flag (helpers.cl of the OpenCL backend).
_ERR_INDEX, _ERR_ZERO_DIV = 1, 2
_FLAG_BYTES = 32

_runtime = None
_devices: list | None = None


def use_runtime(rt) -> None:
    """Make ``rt`` the runtime every device uses (tests pass a stand-in); forgets the devices."""
    global _runtime, _devices
    _runtime, _devices = rt, None


def runtime():
    """The CuPy runtime, made (and CuPy imported) on first use."""
    global _runtime
    if _runtime is None:
        from ._cupy import CuPyRuntime

        _runtime = CuPyRuntime()
    return _runtime


class CUDAStream:
    """A stream of a device: the runtime's stream object and its handle for launches."""

    __slots__ = ("device", "stream", "handle")

    def __init__(self, device: CUDADevice, stream) -> None:
        self.device = device
        self.stream = stream
        self.handle = runtime().stream_handle(stream)

    def __repr__(self) -> str:
        default = " (default)" if self is self.device.default_stream else ""
        return f"CUDAStream(cuda:{self.device.index}{default})"


class CUDADevice:
    """One CUDA device as tensorplug uses it: streams, compiled kernels, counters, error flag.

    Besides these, the OpenCL kernel adapters that kernels.py reuses read ``queue`` (the current
    stream's handle), ``group`` (the 1-d block size), ``has_fp64``, ``kernels`` (their cache),
    ``allocate``, ``build_kernel`` and ``compact_kernels``.
    """

    #: False: the shared adapters launch the general kernels here, which kernels.py's launch plans
    #: mirror (the compact variants answer PoCL's per-element costs, not a GPU's).
    compact_kernels = False

    def __init__(self, index: int) -> None:
        rt = runtime()
        self.index = index
        props = rt.properties(index)
        self.name = props["name"]
        self.capability = props["capability"]
        self.total_memory = props["total_memory"]
        self.has_fp64 = True
        self.group = 256
        self.strided_run = 1  # one element per thread in the strided kernels (TP_RUN under CUDA)
        self.kernels: dict = {}  # (family, dtype, name) -> kernels.CUDAKernel
        self.modules: dict = {}  # (family, dtype) -> (loaded module, argument signatures)
        self.allocated_bytes = 0
        self.peak_bytes = 0
        self.allocations = 0
        rt.use_device(index)
        self.default_stream = CUDAStream(self, rt.null_stream())
        self.streams = [self.default_stream]
        self.streams_reused = 0  # new_stream hands out side streams in turn past MAX_SIDE_STREAMS
        self.current = self.default_stream
        self.queue = self.default_stream.handle
        flag = self.allocate(_FLAG_BYTES)
        self.error_block = flag
        self.error_flag = flag.buffer
        rt.memset(self.error_flag, 0, _FLAG_BYTES, self.queue)
        self.error_possible = False  # set by launches of kernels that can raise; cleared by checks

    def allocate(self, nbytes: int) -> CUDAStorage:
        return _allocate_on(self, nbytes)

    def build_kernel(self, family: str, dtype: str, name: str):
        from .kernels import build_kernel

        return build_kernel(self, family, dtype, name)

    def check_errors(self) -> None:
        """Raise the error a kernel recorded since the last check (the caller has synchronized
        the stream the flag is read on; reading it waits for that stream anyway)."""
        if not self.error_possible:
            return
        self.error_possible = False
        rt = runtime()
        host = np.zeros(4, dtype=np.int64)
        rt.copy_to_host(host, self.error_flag, self.queue)
        code, value, dim, size = (int(v) for v in host)
        if code == 0:
            return
        rt.memset(self.error_flag, 0, _FLAG_BYTES, self.queue)
        if code == _ERR_INDEX:
            raise IndexError(f"index {value} is out of bounds for dimension {dim} with size {size}")
        if code == _ERR_ZERO_DIV:
            raise ZeroDivisionError("integer division by zero (cuda: detected at synchronization; "
                                    "the affected elements were set to 0)")
        raise RuntimeError(f"cuda: a kernel reported error code {code}")


class CUDAStorage:
    """A block of device memory from CuPy's pool; returned to the pool when the storage dies.
    ``buffer`` is the device pointer, what kernels receive."""

    __slots__ = ("buffer", "nbytes", "device", "block", "__weakref__")

    def __init__(self, buffer: int, nbytes: int, device: CUDADevice, block) -> None:
        self.buffer = buffer
        self.nbytes = nbytes
        self.device = device
        self.block = block

    @property
    def state(self) -> CUDADevice:
        """The device, under the name the shared kernel adapters read."""
        return self.device

    def data_ptr(self) -> int:
        return self.buffer

    def __del__(self):
        self.device.allocated_bytes -= self.nbytes
        # Dropping ``block`` returns it to CuPy's pool (reference counting, right now).

    def __repr__(self) -> str:
        return f"CUDAStorage({self.nbytes} bytes on cuda:{self.device.index})"


def devices() -> list[CUDADevice]:
    """Every CUDA device (made once, on first use)."""
    global _devices
    if _devices is None:
        rt = runtime()
        _devices = [CUDADevice(i) for i in range(rt.device_count())]
        rt.use_device(0)
    return _devices


def allocate(nbytes: int, device_index=None) -> CUDAStorage:
    # Every op's output comes from here: _allocate_on's body, inlined (one Python call fewer).
    device = (_devices if _devices is not None else devices())[device_index or 0]
    rt = _runtime  # made by devices(), before any device exists
    size = nbytes if nbytes > 0 else 1  # a zero-byte tensor still gets a distinct pointer
    try:
        ptr, block = rt.malloc(device.index, size)
    except rt.OutOfMemory:
        ptr, block = _malloc_after_freeing(device, nbytes, size)
    allocated = device.allocated_bytes + nbytes
    device.allocated_bytes = allocated
    device.allocations += 1
    if allocated > device.peak_bytes:
        device.peak_bytes = allocated
    return CUDAStorage(ptr, nbytes, device, block)


def _allocate_on(device: CUDADevice, nbytes: int) -> CUDAStorage:
    rt = _runtime
    size = nbytes if nbytes > 0 else 1
    try:
        ptr, block = rt.malloc(device.index, size)
    except rt.OutOfMemory:
        ptr, block = _malloc_after_freeing(device, nbytes, size)
    device.allocated_bytes += nbytes
    device.allocations += 1
    if device.allocated_bytes > device.peak_bytes:
        device.peak_bytes = device.allocated_bytes
    return CUDAStorage(ptr, nbytes, device, block)


def _malloc_after_freeing(device: CUDADevice, nbytes: int, size: int):
    """(pointer, block) of a second try after a failed one, or OutOfMemoryError."""
    rt = _runtime
    rt.free_cached()  # CuPy retries after freeing its own cache too; one more try is ours
    try:
        return rt.malloc(device.index, size)
    except rt.OutOfMemory:
        _out_of_memory(device, nbytes)


def _format_bytes(n: int) -> str:
    """PyTorch's out-of-memory message style: 20.00 MiB, 1.50 GiB."""
    if n < 1024:
        return f"{n} bytes"
    for unit in ("KiB", "MiB", "GiB"):
        n /= 1024
        if n < 1024 or unit == "GiB":
            return f"{n:.2f} {unit}"
    return f"{n:.2f} GiB"


def _out_of_memory(device: CUDADevice, nbytes: int):
    used, held = runtime().pool_bytes(device.index)
    raise OutOfMemoryError(
        f"CUDA out of memory. Tried to allocate {_format_bytes(nbytes)} on cuda:{device.index} "
        f"({device.name}, {_format_bytes(device.total_memory)} total); tensorplug has "
        f"{_format_bytes(device.allocated_bytes)} allocated and {_format_bytes(max(0, held - used))} cached "
        f"(reserved {_format_bytes(held)}). Free tensors, or call tp.cuda.empty_cache()."
    )


def numpy_dtype(dtype) -> np.dtype:
    """The NumPy dtype used for host copies (bfloat16 is moved as its raw 16-bit pattern)."""
    return np.dtype(np.uint16) if dtype.name == "bfloat16" else np.dtype(dtype.name)


def copy_from_host(dst, array: np.ndarray) -> None:
    if array.nbytes == 0:
        return
    storage = backend_storage(dst)
    host = np.ascontiguousarray(array)
    if dst.dtype.name == "bfloat16":
        host = host.view(np.uint16)
    device = storage.device
    runtime().copy_to_device(storage.buffer + dst.storage_offset() * dst.dtype.itemsize, host, device.queue)


def to_host(src) -> np.ndarray:
    """A copy of ``src`` on the host (synchronizes its stream; raises errors kernels recorded)."""
    storage = backend_storage(src)
    device = storage.device
    dtype = numpy_dtype(src.dtype)
    shape = tuple(src.shape)
    numel = int(np.prod(shape, dtype=np.int64)) if shape else 1
    rt = runtime()
    if numel == 0:
        rt.synchronize_stream(device.current.stream)
        device.check_errors()
        return np.empty(shape, dtype=host_numpy_dtype(src.dtype))
    start = storage.buffer + src.storage_offset() * dtype.itemsize
    if is_contiguous(src):
        host = np.empty(shape, dtype=dtype)
        rt.copy_to_host(host, start, device.queue)
    else:
        # Copy the span the view covers, then take the view on the host (a transposed or
        # sliced tensor costs its span, never a kernel).
        strides = src.stride()
        low = sum((n - 1) * s for n, s in zip(shape, strides) if s < 0)
        span = 1 + sum((n - 1) * abs(s) for n, s in zip(shape, strides))
        flat = np.empty(span, dtype=dtype)
        rt.copy_to_host(flat, start + low * dtype.itemsize, device.queue)
        view = np.lib.stride_tricks.as_strided(flat[-low:], shape, tuple(s * dtype.itemsize for s in strides))
        host = view.copy()
    device.check_errors()
    if src.dtype.name == "bfloat16":
        host = host.view(host_numpy_dtype(src.dtype))
    return host


def synchronize(device_index=None) -> None:
    """Wait for every stream of the device (of every device without an index); raise errors."""
    targets = _devices if device_index is None else [_devices[device_index]]
    rt = runtime()
    for device in targets or ():
        rt.synchronize_device(device.index)
        device.check_errors()


def memory_stats(device_index=None) -> dict:
    device = _devices[device_index or 0]
    used, held = runtime().pool_bytes(device.index)
    return {
        "allocated_bytes": device.allocated_bytes,
        "peak_allocated_bytes": device.peak_bytes,
        "allocations": device.allocations,
        "reserved_bytes": held,
        "pool_used_bytes": used,
    }


def reset_peak_memory_stats(device_index=None) -> None:
    device = _devices[device_index or 0]
    device.peak_bytes = device.allocated_bytes


def empty_cache() -> None:
    if _runtime is not None:
        _runtime.free_cached()


# --- streams and events (the contract's optional runtime methods) -------------------------------
def default_stream(device_index: int) -> CUDAStream:
    return _devices[device_index].default_stream


#: Side streams per device; beyond that, new streams reuse these in turn (as PyTorch's pool of
#: 32 CUDA streams per priority): sharing a stream only adds ordering.
MAX_SIDE_STREAMS = 32


def new_stream(device_index: int, priority: int = 0) -> CUDAStream:
    device = _devices[device_index]
    if len(device.streams) > MAX_SIDE_STREAMS:
        device.streams_reused += 1
        return device.streams[1 + (device.streams_reused - 1) % MAX_SIDE_STREAMS]
    rt = runtime()
    rt.use_device(device_index)
    stream = CUDAStream(device, rt.new_stream(priority))
    device.streams.append(stream)
    return stream


def set_current_stream(device_index: int, stream: CUDAStream) -> None:
    device = _devices[device_index]
    device.current, device.queue = stream, stream.handle
    # CuPy's current stream too: cuBLAS calls through CuPy (matmul) run on it.
    runtime().use_stream(stream.stream)


def synchronize_stream(device_index: int, stream: CUDAStream) -> None:
    runtime().synchronize_stream(stream.stream)
    stream.device.check_errors()


def query_stream(device_index: int, stream: CUDAStream) -> bool:
    return runtime().query_stream(stream.stream)


def record_event(device_index: int, stream: CUDAStream, enable_timing: bool):
    return runtime().record_event(stream.stream, enable_timing)


def synchronize_event(device_index: int, event) -> None:
    runtime().synchronize_event(event)
    _devices[device_index].check_errors()


def query_event(device_index: int, event) -> bool:
    return runtime().query_event(event)


def event_elapsed_time(device_index: int, start, end) -> float:
    return runtime().elapsed_ms(start, end)


def stream_wait_event(device_index: int, stream: CUDAStream, event) -> None:
    runtime().stream_wait_event(stream.stream, event)
