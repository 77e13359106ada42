"""Everything the CUDA backend asks of CuPy, in one narrow seam.

The rest of the backend (storage.py, kernels.py) talks to the GPU only through a ``CuPyRuntime``
object: raw device pointers as ints, stream handles as ints, kernels as CUfunction handles. Tests
on machines without a GPU hand the backend a stand-in with the same methods
(tests/cuda/fake_runtime.py), so storage bookkeeping, kernel selection, argument packing and the
error flag run in CI; only this module needs a real device.

CuPy is imported when a ``CuPyRuntime`` is made, which ``storage.devices()`` does on the first
use of a cuda device (never at ``import tensorplug``).
"""
from __future__ import annotations

import hashlib
import os
import warnings
from typing import Any

import numpy as np

__all__ = ["CuPyRuntime", "probe", "cache_dir", "nvrtc_compile", "compile_cached", "nvrtc_options"]

# CUDA's cudaMemcpyKind values (cuda_runtime_api.h).
_HOST_TO_DEVICE, _DEVICE_TO_HOST, _DEVICE_TO_DEVICE = 1, 2, 3


def cache_dir() -> str:
    """Where compiled kernels are kept: $TENSORPLUG_CUDA_CACHE, else ~/.cache/tensorplug/cuda."""
    return os.environ.get("TENSORPLUG_CUDA_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "tensorplug",
                                                                    "cuda")


def _import_cupy():
    # CuPy may warn at import about its environment (a CUDA path it cannot find, an old driver);
    # under ``-W error`` that would make every later cuda call fail for a note. The import's
    # errors still surface.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import cupy
        from cupy.cuda import runtime
    return cupy, runtime


def probe() -> tuple[bool, str, int]:
    """(available, reason, device count) without making a runtime: CuPy importable and a device."""
    try:
        _, runtime = _import_cupy()
    except ImportError as exc:
        return False, f"CuPy is not installed ({exc}): pip install tensorplug[cuda]", 0
    except Exception as exc:  # a CuPy whose CUDA libraries are missing fails with its own errors
        return False, f"CuPy cannot load its CUDA libraries: {exc}", 0
    try:
        count = int(runtime.getDeviceCount())
    except Exception as exc:  # cudaErrorNoDevice, cudaErrorInsufficientDriver, ...
        return False, f"no CUDA device found ({exc})", 0
    if count == 0:
        return False, "no CUDA device found", 0
    return True, "", count


def nvrtc_options(capability: tuple[int, int]) -> tuple[str, ...]:
    # -fmad=false: no contraction to fused multiply-add, as the CPU build and the OpenCL
    # programs (FP_CONTRACT OFF), so float results match theirs.
    return (f"--gpu-architecture=sm_{capability[0]}{capability[1]}", "-fmad=false", "--std=c++17")


def nvrtc_compile(source: str, name: str, capability: tuple[int, int]) -> bytes:
    """The cubin NVRTC makes of ``source`` (needs CuPy and NVRTC, not a GPU)."""
    from cupy.cuda import nvrtc

    prog = nvrtc.createProgram(source, f"{name}.cu", (), ())
    try:
        try:
            nvrtc.compileProgram(prog, nvrtc_options(capability))
        except nvrtc.NVRTCError as exc:
            log = nvrtc.getProgramLog(prog)
            raise RuntimeError(f"cuda: NVRTC could not compile {name}: {exc}\n{log}") from None
        return nvrtc.getCUBIN(prog)
    finally:
        nvrtc.destroyProgram(prog)


def compile_cached(source: str, name: str, capability: tuple[int, int]) -> bytes:
    """nvrtc_compile's cubin, read from ``cache_dir()`` when an earlier process made it."""
    from cupy.cuda import nvrtc

    version = ".".join(str(v) for v in nvrtc.getVersion())
    key = hashlib.sha256("\0".join((source, *nvrtc_options(capability), version)).encode()).hexdigest()
    path = os.path.join(cache_dir(), f"{name}-{key[:32]}.cubin")
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        pass
    image = nvrtc_compile(source, name, capability)
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        partial = f"{path}.{os.getpid()}"
        with open(partial, "wb") as f:
            f.write(image)
        os.replace(partial, path)  # atomic: another process never reads half a file
    except OSError:
        pass  # a read-only home: compile again next time
    return image


class CuPyRuntime:
    """The CUDA operations the backend uses, implemented with CuPy."""

    def __init__(self) -> None:
        cupy, runtime = _import_cupy()
        from cupy.cuda import driver, nvrtc

        self.cupy, self.driver, self.nvrtc, self.runtime = cupy, driver, nvrtc, runtime
        self.OutOfMemory = cupy.cuda.memory.OutOfMemoryError
        self.pool = cupy.get_default_memory_pool()
        # Bound once: a launch is on every op's path.
        self._launch_kernel = driver.launchKernel
        self._cublas = None  # cupy_backends' cublas module, imported by the first gemm
        self._gemm_scalars: dict = {}  # host scalar type -> (ones, zeros, their addresses): alpha, beta

    # --- devices ------------------------------------------------------------------------------
    def device_count(self) -> int:
        return int(self.runtime.getDeviceCount())

    def properties(self, index: int) -> dict:
        """name, (major, minor) capability and total memory of a device."""
        props = self.runtime.getDeviceProperties(index)
        name = props["name"]
        name = name.decode() if isinstance(name, bytes) else str(name)
        return {"name": name, "capability": (int(props["major"]), int(props["minor"])),
                "total_memory": int(props["totalGlobalMem"])}

    def use_device(self, index: int) -> None:
        self.cupy.cuda.Device(index).use()

    def mem_get_info(self, index: int) -> tuple[int, int]:
        with self.cupy.cuda.Device(index):
            free, total = self.runtime.memGetInfo()
        return int(free), int(total)

    def versions(self) -> dict:
        return {"cupy": self.cupy.__version__, "runtime": int(self.runtime.runtimeGetVersion()),
                "driver": int(self.runtime.driverGetVersion())}

    # --- memory -------------------------------------------------------------------------------
    def malloc(self, index: int, nbytes: int) -> tuple[int, Any]:
        """(pointer, block) of ``nbytes`` from CuPy's caching pool on device ``index`` and the
        current stream; the block goes back to the pool when ``block`` dies."""
        with self.cupy.cuda.Device(index):
            block = self.pool.malloc(nbytes)
        return int(block.ptr), block

    def pool_bytes(self, index: int) -> tuple[int, int]:
        """(bytes in use, bytes held) of the pool on a device."""
        with self.cupy.cuda.Device(index):
            return int(self.pool.used_bytes()), int(self.pool.total_bytes())

    def free_cached(self) -> None:
        self.pool.free_all_blocks()

    def copy_to_device(self, dst: int, host: np.ndarray, stream: int) -> None:
        # From pageable memory the call returns once ``host`` has been staged: it may be freed.
        self.runtime.memcpyAsync(dst, host.ctypes.data, host.nbytes, _HOST_TO_DEVICE, stream)

    def copy_to_host(self, host: np.ndarray, src: int, stream: int) -> None:
        self.runtime.memcpyAsync(host.ctypes.data, src, host.nbytes, _DEVICE_TO_HOST, stream)
        self.runtime.streamSynchronize(stream)

    def copy_device(self, dst: int, src: int, nbytes: int, stream: int) -> None:
        self.runtime.memcpyAsync(dst, src, nbytes, _DEVICE_TO_DEVICE, stream)

    def memset(self, dst: int, value: int, nbytes: int, stream: int) -> None:
        self.runtime.memsetAsync(dst, value, nbytes, stream)

    # --- kernels ------------------------------------------------------------------------------
    def compile(self, source: str, name: str, capability: tuple[int, int]) -> Any:
        """Compile CUDA C with NVRTC into a loaded module (raises RuntimeError with the log).
        Compiled images are kept on disk (``cache_dir()``), so a later process loads them."""
        return self.driver.moduleLoadData(compile_cached(source, name, capability))

    def function(self, module: Any, name: str) -> int:
        return int(self.driver.moduleGetFunction(module, name))

    def launch(self, function: int, grid: tuple, block: tuple, stream: int, params: Any) -> None:
        """Queue a kernel; ``params.address`` is the void*[] of its packed arguments."""
        self._launch_kernel(function, grid[0], grid[1], grid[2], block[0], block[1], block[2], 0, stream,
                            params.address, 0)

    # --- streams and events -------------------------------------------------------------------
    def null_stream(self) -> Any:
        return self.cupy.cuda.Stream.null

    def new_stream(self, priority: int = 0) -> Any:
        # Blocking streams: they order themselves with the legacy default stream, which the
        # default tensorplug stream is, as PyTorch's side streams are ordered by events only
        # with respect to each other.
        if priority:
            return self.cupy.cuda.Stream(non_blocking=False, priority=priority)
        return self.cupy.cuda.Stream(non_blocking=False)

    def stream_handle(self, stream: Any) -> int:
        return int(stream.ptr)

    def use_stream(self, stream: Any) -> None:
        stream.use()

    def synchronize_stream(self, stream: Any) -> None:
        stream.synchronize()

    def query_stream(self, stream: Any) -> bool:
        return bool(stream.done)

    def synchronize_device(self, index: int) -> None:
        with self.cupy.cuda.Device(index):
            self.runtime.deviceSynchronize()

    def record_event(self, stream: Any, enable_timing: bool) -> Any:
        event = self.cupy.cuda.Event(disable_timing=not enable_timing)
        event.record(stream)
        return event

    def synchronize_event(self, event: Any) -> None:
        event.synchronize()

    def query_event(self, event: Any) -> bool:
        return bool(event.done)

    def elapsed_ms(self, start: Any, end: Any) -> float:
        return float(self.cupy.cuda.get_elapsed_time(start, end))

    def stream_wait_event(self, stream: Any, event: Any) -> None:
        stream.wait_event(event)

    # --- cuBLAS -------------------------------------------------------------------------------
    def gemm(self, dtype: str, trans_a: str, trans_b: str, m: int, n: int, k: int, a: int, lda: int, stride_a: int,
             b: int, ldb: int, stride_b: int, c: int, ldc: int, stride_c: int, batch: int) -> None:
        """Column-major C = op(A) @ op(B) for ``batch`` matrices (cublasGemmStridedBatchedEx) on
        CuPy's current stream, alpha 1 and beta 0. float16 and bfloat16 accumulate in float32;
        float32 is computed in float32 (no TF32), as PyTorch's default."""
        cublas = self._cublas
        if cublas is None:
            from cupy_backends.cuda.libs import cublas

            self._cublas = cublas
        data_type, compute, scalar = _GEMM_TYPES[dtype]
        scalars = self._gemm_scalars.get(scalar)
        if scalars is None:
            # alpha and beta live as long as the runtime: host pointer mode reads them during the call.
            one, zero = np.ones(1, dtype=scalar), np.zeros(1, dtype=scalar)
            scalars = self._gemm_scalars[scalar] = (one, zero, one.ctypes.data, zero.ctypes.data)
        handle = self.cupy.cuda.device.get_cublas_handle()
        cublas.setPointerMode(handle, _POINTER_MODE_HOST)
        cublas.gemmStridedBatchedEx(handle, _OPS[trans_a], _OPS[trans_b], m, n, k, scalars[2], a, data_type, lda,
                                    stride_a, b, data_type, ldb, stride_b, scalars[3], c, data_type, ldc,
                                    stride_c, batch, compute, _GEMM_DEFAULT)


# cudaDataType (library_types.h) and cublasComputeType_t (cublas_api.h) values, and the host type
# of alpha and beta for each compute type.
_CUDA_R_32F, _CUDA_R_64F, _CUDA_R_16F, _CUDA_R_16BF = 0, 1, 2, 14
_COMPUTE_32F, _COMPUTE_64F = 68, 70
_GEMM_TYPES = {"float32": (_CUDA_R_32F, _COMPUTE_32F, np.float32), "float64": (_CUDA_R_64F, _COMPUTE_64F, np.float64),
               "float16": (_CUDA_R_16F, _COMPUTE_32F, np.float32), "bfloat16": (_CUDA_R_16BF, _COMPUTE_32F, np.float32)}
_OP_N, _OP_T = 0, 1
_OPS = {"N": _OP_N, "T": _OP_T}
_POINTER_MODE_HOST = 0
_GEMM_DEFAULT = -1
