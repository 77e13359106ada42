"""Global switches PyTorch scripts set in their first lines: deterministic algorithms, the
float32 matmul precision and the inter-op thread count.

tensorplug keeps them with PyTorch's names, values and validation, but no kernel reads them:
every tensorplug kernel computes float32 matmuls in float32 (never TF32 or bfloat16 passes), and
no op refuses to run in deterministic mode. docs/deviations.md lists this.
"""
from __future__ import annotations

import warnings

__all__ = [
    "use_deterministic_algorithms", "are_deterministic_algorithms_enabled",
    "is_deterministic_algorithms_warn_only_enabled", "set_deterministic_debug_mode", "get_deterministic_debug_mode",
    "set_float32_matmul_precision", "get_float32_matmul_precision", "set_num_interop_threads",
    "get_num_interop_threads",
]

_deterministic = False
_warn_only = False
_MATMUL_PRECISIONS = ("highest", "high", "medium")
_matmul_precision = "highest"
# PyTorch's pool for running independent ops concurrently (TorchScript forks); tensorplug runs
# ops one after another, so the count is only kept for the scripts that set and print it.
_interop_threads: int | None = None
_interop_threads_set = False


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Record whether only deterministic algorithms may run (``tp.are_deterministic_algorithms_enabled``)."""
    global _deterministic, _warn_only
    if not isinstance(mode, bool):
        raise TypeError(f"use_deterministic_algorithms(): argument 'mode' must be bool, not {type(mode).__name__}")
    if not isinstance(warn_only, bool):
        raise TypeError(f"use_deterministic_algorithms(): argument 'warn_only' must be bool, not {type(warn_only).__name__}")
    _deterministic, _warn_only = mode, warn_only


def are_deterministic_algorithms_enabled() -> bool:
    return _deterministic


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    return _warn_only


_DEBUG_MODES = {"default": 0, "warn": 1, "error": 2}


def set_deterministic_debug_mode(debug_mode) -> None:
    """0/"default": off; 1/"warn": deterministic, warn only; 2/"error": deterministic."""
    if isinstance(debug_mode, str):
        if debug_mode not in _DEBUG_MODES:
            raise RuntimeError(f"invalid value of debug_mode, expected one of `default`, `warn`, `error`, but got {debug_mode}")
        debug_mode = _DEBUG_MODES[debug_mode]
    if debug_mode not in (0, 1, 2):
        raise RuntimeError(f"invalid value of debug_mode, expected 0, 1, or 2, but got {debug_mode}")
    use_deterministic_algorithms(debug_mode != 0, warn_only=debug_mode == 1)


def get_deterministic_debug_mode() -> int:
    return 0 if not _deterministic else (1 if _warn_only else 2)


def set_float32_matmul_precision(precision: str) -> None:
    """"highest", "high" or "medium", as PyTorch (another value warns and changes nothing)."""
    global _matmul_precision
    if precision not in _MATMUL_PRECISIONS:
        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current "
                      "set_float32_matmul_precision call has no effect.", UserWarning, stacklevel=2)
        return
    _matmul_precision = precision


def get_float32_matmul_precision() -> str:
    return _matmul_precision


def set_num_interop_threads(nthreads: int) -> None:
    """Record the inter-op thread count; as in PyTorch, only once and only a positive int."""
    global _interop_threads, _interop_threads_set
    if isinstance(nthreads, bool) or not isinstance(nthreads, int):
        raise RuntimeError(f"set_num_interop_threads expects an int, but got {type(nthreads).__name__}")
    if nthreads <= 0:
        raise RuntimeError("set_num_interop_threads expects a positive integer")
    if _interop_threads_set:
        raise RuntimeError("Error: cannot set number of interop threads after parallel work has started or "
                           "set_num_interop_threads called")
    _interop_threads, _interop_threads_set = nthreads, True


def get_num_interop_threads() -> int:
    """The inter-op thread count: the value set, else the machine's core count (PyTorch's default)."""
    import os

    return _interop_threads if _interop_threads is not None else (os.cpu_count() or 1)
