"""``tp.backends.mkldnn``: oneDNN's switches, settable as in PyTorch (``mkldnn.enabled = False``).

tensorplug's CPU kernels are its own (and OpenBLAS's), not oneDNN's: ``is_available()`` is False.
The flags keep PyTorch's names and defaults for the scripts that set and read them; no tensorplug
kernel reads them.
"""
from __future__ import annotations

import contextlib

__all__ = ["enabled", "deterministic", "allow_tf32", "is_available", "flags", "set_flags"]

enabled = True
deterministic = False
allow_tf32 = True


def is_available() -> bool:
    """False: tensorplug is not built with oneDNN."""
    return False


def set_flags(_enabled: bool | None = None, _deterministic: bool | None = None, _allow_tf32: bool | None = None,
              _fp32_precision: str = "none") -> tuple:
    """Set the given flags; returns the previous ``(enabled, deterministic, allow_tf32)``."""
    module = globals()
    previous = (enabled, deterministic, allow_tf32)
    for name, value in (("enabled", _enabled), ("deterministic", _deterministic), ("allow_tf32", _allow_tf32)):
        if value is not None:
            module[name] = bool(value)
    return previous


@contextlib.contextmanager
def flags(enabled: bool = False, deterministic: bool = False, allow_tf32: bool = True, fp32_precision: str = "none"):
    """Set the flags inside a ``with`` block and restore them after, as ``torch.backends.mkldnn.flags``."""
    previous = set_flags(enabled, deterministic, allow_tf32)
    try:
        yield
    finally:
        set_flags(*previous)
