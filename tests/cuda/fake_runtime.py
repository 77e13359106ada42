"""A stand-in for the CuPy seam (tensorplug/backends/cuda/_cupy.py) that runs without a GPU.

Device memory is host memory (NumPy buffers, so pointers are real addresses and copies are real);
kernels are "compiled" by keeping their CUDA source and "launched" by recording the call with its
unpacked arguments. What it checks is the backend's own Python: storage bookkeeping, which kernel
an op picks, its launch shape and arguments, streams, events and the error flag.
"""
from __future__ import annotations

import ctypes
import re
import struct

import numpy as np


class FakeOutOfMemory(Exception):
    """What the stand-in pool raises, as CuPy's OutOfMemoryError."""


class FakeStream:
    def __init__(self, handle: int) -> None:
        self.ptr = handle
        self.synchronized = 0


class FakeEvent:
    def __init__(self, stream: FakeStream, timing: bool, time_ms: float) -> None:
        self.stream, self.timing, self.time_ms = stream, timing, time_ms


class Launch:
    def __init__(self, name: str, grid: tuple, block: tuple, stream: int, args: tuple) -> None:
        self.name, self.grid, self.block, self.stream, self.args = name, grid, block, stream, args

    def __repr__(self) -> str:
        return f"Launch({self.name}, grid={self.grid}, block={self.block}, args={self.args})"


class FakeRuntime:
    OutOfMemory = FakeOutOfMemory

    def __init__(self, devices: int = 1, memory_limit: int = 1 << 30) -> None:
        self.devices = devices
        self.memory_limit = memory_limit
        self.blocks: dict[int, ctypes.Array] = {}  # pointer -> the host memory standing in
        self.in_use = 0  # bytes of ``blocks``, kept as a count so malloc stays O(1)
        self.cached = 0
        self.free_blocks: dict[int, list] = {}  # size -> freed buffers, reused as CuPy's pool does
        self.freed_cache = 0
        self.sources: list[str] = []
        self.functions: dict[int, str] = {}
        self.launches: list[Launch] = []
        self.gemms: list[tuple] = []
        self.current_device = 0
        self.streams = [FakeStream(0)]
        self.current_stream = self.streams[0]
        self.clock = 0.0

    # devices
    def device_count(self) -> int:
        return self.devices

    def properties(self, index: int) -> dict:
        return {"name": f"Fake H100 {index}", "capability": (9, 0), "total_memory": self.memory_limit}

    def use_device(self, index: int) -> None:
        self.current_device = index

    def mem_get_info(self, index: int) -> tuple[int, int]:
        return self.memory_limit - self.used(), self.memory_limit

    # memory
    def used(self) -> int:
        return self.in_use

    def malloc(self, index: int, nbytes: int):
        if self.used() + nbytes > self.memory_limit:
            raise FakeOutOfMemory(f"out of memory allocating {nbytes} bytes")
        # Freed buffers of the same size are reused (their contents are stale, as CuPy's pooled
        # blocks are), and a ctypes buffer's address is cheap to read (ndarray.ctypes costs
        # microseconds): the stand-in's share of a measured op stays small.
        free = self.free_blocks.get(nbytes)
        if free:
            block = free.pop()
            self.cached -= nbytes
        else:
            block = ctypes.create_string_buffer(nbytes)
        ptr = ctypes.addressof(block)
        self.blocks[ptr] = block
        self.in_use += nbytes
        return ptr, _Block(self, ptr, nbytes)

    def pool_bytes(self, index: int) -> tuple[int, int]:
        return self.used(), self.used() + self.cached

    def free_cached(self) -> None:
        self.freed_cache += 1
        self.cached = 0
        self.free_blocks.clear()

    def copy_to_device(self, dst: int, host: np.ndarray, stream: int) -> None:
        ctypes.memmove(dst, host.ctypes.data, host.nbytes)

    def copy_to_host(self, host: np.ndarray, src: int, stream: int) -> None:
        ctypes.memmove(host.ctypes.data, src, host.nbytes)

    def copy_device(self, dst: int, src: int, nbytes: int, stream: int) -> None:
        ctypes.memmove(dst, src, nbytes)

    def memset(self, dst: int, value: int, nbytes: int, stream: int) -> None:
        ctypes.memset(dst, value, nbytes)

    # kernels
    def compile(self, source: str, name: str, capability: tuple) -> list:
        self.sources.append(source)
        return [source]

    def function(self, module: list, name: str) -> int:
        if not re.search(rf'extern "C" __global__ void {name}\(|__kernel void {name}\(', module[0]):
            raise KeyError(f"no kernel {name} in the module")
        handle = len(self.functions) + 1
        self.functions[handle] = name
        return handle

    def launch(self, function: int, grid: tuple, block: tuple, stream: int, params) -> None:
        args = struct.unpack(params.fmt, params.buffer.raw[: struct.calcsize(params.fmt)])
        self.launches.append(Launch(self.functions[function], grid, block, stream, args))

    # streams and events
    def null_stream(self) -> FakeStream:
        return self.streams[0]

    def new_stream(self, priority: int = 0) -> FakeStream:
        stream = FakeStream(1000 + len(self.streams))
        self.streams.append(stream)
        return stream

    def stream_handle(self, stream: FakeStream) -> int:
        return stream.ptr

    def use_stream(self, stream: FakeStream) -> None:
        self.current_stream = stream

    def synchronize_stream(self, stream: FakeStream) -> None:
        stream.synchronized += 1

    def query_stream(self, stream: FakeStream) -> bool:
        return True

    def synchronize_device(self, index: int) -> None:
        for stream in self.streams:
            stream.synchronized += 1

    def record_event(self, stream: FakeStream, enable_timing: bool) -> FakeEvent:
        self.clock += 1.5
        return FakeEvent(stream, enable_timing, self.clock)

    def synchronize_event(self, event: FakeEvent) -> None:
        pass

    def query_event(self, event: FakeEvent) -> bool:
        return True

    def elapsed_ms(self, start: FakeEvent, end: FakeEvent) -> float:
        return end.time_ms - start.time_ms

    def stream_wait_event(self, stream: FakeStream, event: FakeEvent) -> None:
        pass

    # cuBLAS
    def gemm(self, dtype, trans_a, trans_b, m, n, k, a, lda, stride_a, b, ldb, stride_b, c, ldc, stride_c, batch):
        """cublasGemmStridedBatchedEx's column-major semantics, computed with NumPy on host memory."""
        self.gemms.append((dtype, trans_a, trans_b, m, n, k, lda, ldb, ldc, batch))
        itemsize = np.dtype(dtype).itemsize

        def matrix(ptr, rows, cols, ld, index, stride):
            # column-major rows x cols at ptr + index * stride elements, leading dimension ld
            start = ptr + index * stride * itemsize
            span = (cols - 1) * ld + rows
            flat = np.ctypeslib.as_array((ctypes.c_uint8 * (span * itemsize)).from_address(start)).view(dtype)
            return np.lib.stride_tricks.as_strided(flat, (rows, cols), (itemsize, ld * itemsize))

        for i in range(batch):
            op_a = matrix(a, *((m, k) if trans_a == "N" else (k, m)), lda, i, stride_a)
            op_b = matrix(b, *((k, n) if trans_b == "N" else (n, k)), ldb, i, stride_b)
            op_a = op_a if trans_a == "N" else op_a.T
            op_b = op_b if trans_b == "N" else op_b.T
            matrix(c, m, n, ldc, i, stride_c)[...] = op_a.astype(np.float64) @ op_b.astype(np.float64)


class _Block:
    """Gives the stand-in's memory back when the storage drops it (as CuPy's MemoryPointer)."""

    def __init__(self, runtime: FakeRuntime, ptr: int, nbytes: int) -> None:
        self.runtime, self.ptr, self.nbytes = runtime, ptr, nbytes

    def __del__(self):
        runtime = self.runtime
        runtime.free_blocks.setdefault(self.nbytes, []).append(runtime.blocks.pop(self.ptr))
        runtime.in_use -= self.nbytes
        runtime.cached += self.nbytes
