"""``tp.backends.cudnn``: cuDNN's switches, settable as in PyTorch (``cudnn.benchmark = True``).

tensorplug has no cuDNN: ``is_available()`` is False unless the CUDA backend (when one is
installed) reports a cuDNN version through an optional ``cudnn_version()`` method. The flags
keep their values and defaults (PyTorch's) for the scripts that set and read them; no
tensorplug kernel reads them.
"""
from __future__ import annotations

import contextlib

__all__ = ["enabled", "benchmark", "deterministic", "allow_tf32", "benchmark_limit", "is_available", "version", "flags"]

enabled = True
benchmark = False
deterministic = False
allow_tf32 = True
benchmark_limit = 10


def version() -> int | None:
    """cuDNN's version as an int, or None without it (as PyTorch)."""
    from .. import cuda

    if not cuda.is_available():
        return None
    from ._registry import backend_for

    reporter = getattr(backend_for("cuda"), "cudnn_version", None)
    return None if reporter is None else reporter()


def is_available() -> bool:
    return version() is not None


def is_acceptable(tensor) -> bool:
    """Whether cuDNN would take ``tensor`` (never: tensorplug has no cuDNN kernels)."""
    return False


@contextlib.contextmanager
def flags(enabled: bool = False, benchmark: bool = False, benchmark_limit: int = 10, deterministic: bool = False,
          allow_tf32: bool = True):
    """Set the flags inside a ``with`` block and restore them after, as ``torch.backends.cudnn.flags``."""
    module = globals()
    names = ("enabled", "benchmark", "benchmark_limit", "deterministic", "allow_tf32")
    saved = {name: module[name] for name in names}
    module.update(enabled=enabled, benchmark=benchmark, benchmark_limit=benchmark_limit, deterministic=deterministic,
                  allow_tf32=allow_tf32)
    try:
        yield
    finally:
        module.update(saved)
