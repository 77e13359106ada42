"""The CUDA backend (CuPy) and ``tp.backends.cuda``'s math switches (``matmul.allow_tf32`` ...).

The backend registers through the ``tensorplug.backends`` entry point ``cuda`` like any
third-party backend; CuPy is imported only when the first cuda tensor is made
(``CUDABackend.load``). ``pip install tensorplug[cuda]`` installs CuPy for CUDA 12
(``cupy-cuda13x`` works as well). Its kernels are the OpenCL backend's generated programs
compiled by NVRTC (kernels.py, _dialect.py), its memory CuPy's caching pool (storage.py), and
all of CuPy that it uses sits behind one seam (_cupy.py). docs/cuda.md tells the whole story.

Documented behaviour (docs/backend-contract.md leaves these to each device):

* Work is queued on the current stream and nothing waits except host reads (``item``,
  ``numpy``, ``tolist``, ``print``, ``.cpu()``) and the synchronize calls.
* Index values out of range raise ``IndexError``, and integer division by zero by a tensor
  divisor ``ZeroDivisionError``, at the next synchronization; the kernel never reads or writes
  out of bounds (a Python number divisor of 0 raises at once, as on the CPU).
* Out of memory is ``tp.cuda.OutOfMemoryError`` (a RuntimeError), naming the requested size and
  what is allocated and cached; the process keeps working.

As in PyTorch, ``matmul.allow_tf32`` is another spelling of the float32 matmul precision:
True means ``tp.get_float32_matmul_precision() != "highest"``. No tensorplug kernel reads these
flags (docs/deviations.md).
"""
from __future__ import annotations

import contextlib
import warnings

from ... import _settings
from ...plugins import hookimpl
from ..api import OPTIONAL_DTYPES, REQUIRED_DTYPES, Backend

__all__ = ["CUDABackend", "OutOfMemoryError", "plugin", "matmul", "is_built", "enable_flash_sdp", "flash_sdp_enabled", "enable_mem_efficient_sdp",
           "mem_efficient_sdp_enabled", "enable_math_sdp", "math_sdp_enabled", "enable_cudnn_sdp", "cudnn_sdp_enabled", "sdp_kernel"]


class _MatmulFlags:
    """``matmul``: cuBLAS switches, settable attributes."""

    def __init__(self) -> None:
        self.allow_fp16_reduced_precision_reduction = True
        self.allow_bf16_reduced_precision_reduction = True

    @property
    def allow_tf32(self) -> bool:
        return _settings.get_float32_matmul_precision() != "highest"

    @allow_tf32.setter
    def allow_tf32(self, value: bool) -> None:
        _settings.set_float32_matmul_precision("high" if value else "highest")

    def __repr__(self) -> str:
        return (f"matmul(allow_tf32={self.allow_tf32}, allow_fp16_reduced_precision_reduction="
                f"{self.allow_fp16_reduced_precision_reduction}, allow_bf16_reduced_precision_reduction="
                f"{self.allow_bf16_reduced_precision_reduction})")


matmul = _MatmulFlags()


def is_built() -> bool:
    """Whether a CUDA backend is installed (PyTorch: compiled in): tensorplug's own always is, so
    True unless its plugin was removed; whether it can run is ``tp.cuda.is_available()``."""
    from .._probe import known_device_types

    return "cuda" in known_device_types()


# scaled_dot_product_attention's kernel choices: tensorplug has one (the math one) everywhere.
_sdp = {"flash": True, "mem_efficient": True, "math": True, "cudnn": True}


def enable_flash_sdp(enabled: bool) -> None:
    _sdp["flash"] = bool(enabled)


def flash_sdp_enabled() -> bool:
    return _sdp["flash"]


def enable_mem_efficient_sdp(enabled: bool) -> None:
    _sdp["mem_efficient"] = bool(enabled)


def mem_efficient_sdp_enabled() -> bool:
    return _sdp["mem_efficient"]


def enable_math_sdp(enabled: bool) -> None:
    _sdp["math"] = bool(enabled)


def math_sdp_enabled() -> bool:
    return _sdp["math"]


def enable_cudnn_sdp(enabled: bool) -> None:
    _sdp["cudnn"] = bool(enabled)


def cudnn_sdp_enabled() -> bool:
    return _sdp["cudnn"]


@contextlib.contextmanager
def sdp_kernel(enable_flash: bool = True, enable_math: bool = True, enable_mem_efficient: bool = True,
               enable_cudnn: bool = True):
    """The deprecated spelling of ``tp.nn.attention.sdpa_kernel``: sets the four switches for the
    block (with PyTorch's FutureWarning); no tensorplug kernel reads them."""
    warnings.warn("`torch.backends.cuda.sdp_kernel()` is deprecated. In the future, this context manager will be "
                  "removed. Please see `torch.nn.attention.sdpa_kernel()` for the new context manager, with updated "
                  "signature.", FutureWarning, stacklevel=3)
    saved = dict(_sdp)
    _sdp.update(flash=bool(enable_flash), math=bool(enable_math), mem_efficient=bool(enable_mem_efficient),
                cudnn=bool(enable_cudnn))
    try:
        yield
    finally:
        _sdp.update(saved)


# --- the backend ------------------------------------------------------------------------------
class OutOfMemoryError(RuntimeError):
    """A CUDA allocation failed even after the cache was emptied (``tp.cuda.OutOfMemoryError``)."""


class CUDABackend(Backend):
    device_type = "cuda"
    # Every CUDA device computes float64; float16 and bfloat16 are stored in 16 bits and computed
    # in float32 by the generated kernels (cuBLAS takes them natively).
    dtypes = frozenset(REQUIRED_DTYPES + OPTIONAL_DTYPES)
    autocast_dtypes = frozenset({"float16", "bfloat16"})

    def __init__(self) -> None:
        self._availability: tuple[bool, str, int] | None = None
        self._kernels: dict = {}

    def _probe(self) -> tuple[bool, str, int]:
        if self._availability is None:
            from . import storage

            if storage._runtime is not None:  # a runtime given by a test, or already made
                count = storage._runtime.device_count()
                self._availability = (count > 0, "" if count else "no CUDA device found", count)
            else:
                from ._cupy import probe

                self._availability = probe()
        return self._availability

    def is_available(self) -> tuple[bool, str]:
        available, reason, _ = self._probe()
        return available, reason

    def device_count(self) -> int:
        return self._probe()[2]

    def load(self) -> None:
        from . import kernels, storage

        storage.devices()
        self._kernels = kernels.table()
        # Bound straight to the storage functions: allocation is on every op's path.
        for name in ("allocate", "copy_from_host", "to_host", "synchronize", "memory_stats",
                     "reset_peak_memory_stats", "empty_cache", "default_stream", "new_stream", "set_current_stream",
                     "synchronize_stream", "query_stream", "record_event", "synchronize_event", "query_event",
                     "event_elapsed_time", "stream_wait_event"):
            setattr(self, name, getattr(storage, name))

    def kernels(self):
        return self._kernels

    # Optional members tp.cuda reads (tensorplug/cuda/__init__.py).
    def device_name(self, index: int) -> str:
        from . import storage

        return storage.devices()[index].name

    def device_capability(self, index: int) -> tuple[int, int]:
        from . import storage

        return tuple(storage.devices()[index].capability)

    def device_properties(self, index: int):
        from . import storage

        device = storage.devices()[index]
        return _DeviceProperties(device.name, *device.capability, device.total_memory)

    def mem_get_info(self, index: int) -> tuple[int, int]:
        from . import storage

        return storage.runtime().mem_get_info(index)

    def describe_devices(self) -> list[str]:
        from . import storage

        return [f"cuda:{d.index}: {d.name} (compute capability {d.capability[0]}.{d.capability[1]})"
                for d in storage.devices()]


class _DeviceProperties:
    """What ``tp.cuda.get_device_properties`` returns (PyTorch's names)."""

    def __init__(self, name: str, major: int, minor: int, total_memory: int) -> None:
        self.name, self.major, self.minor, self.total_memory = name, major, minor, total_memory

    def __repr__(self) -> str:
        return (f"_CudaDeviceProperties(name='{self.name}', major={self.major}, minor={self.minor}, "
                f"total_memory={self.total_memory // (1024 * 1024)}MB)")


class _CUDAPlugin:
    @hookimpl
    def tensorplug_register_backends(self):
        return [CUDABackend()]


plugin = _CUDAPlugin()
