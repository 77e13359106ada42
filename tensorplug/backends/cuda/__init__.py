"""``tp.backends.cuda``: CUDA's math switches (``tp.backends.cuda.matmul.allow_tf32`` ...).

As in PyTorch, ``matmul.allow_tf32`` is another spelling of the float32 matmul precision:
True means ``tp.get_float32_matmul_precision() != "highest"``. No tensorplug kernel reads these
flags (docs/deviations.md). The CUDA backend, when it is written, belongs beside these flags in
this package (entry point ``cuda = "tensorplug.backends.cuda:plugin"``); ``tp.cuda`` finds it
through the registry.
"""
from __future__ import annotations

from ... import _settings

__all__ = ["matmul", "is_built", "enable_flash_sdp", "flash_sdp_enabled", "enable_mem_efficient_sdp",
           "mem_efficient_sdp_enabled", "enable_math_sdp", "math_sdp_enabled", "enable_cudnn_sdp", "cudnn_sdp_enabled"]


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
    """Whether a CUDA backend is installed (PyTorch: compiled in). Never loads it."""
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
