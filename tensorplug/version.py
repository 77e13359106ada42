"""``tp.version``, as ``torch.version``: the package's version, and the CUDA version behind the
CUDA backend (``None`` without one, as on PyTorch's CPU builds). Scripts print these when they
report their environment."""
from __future__ import annotations

__all__ = ["__version__", "cuda", "hip", "git_version", "debug"]

hip = None  # no ROCm backend
git_version = "unknown"
debug = False


def __getattr__(name: str):
    if name == "__version__":
        from . import __version__

        return __version__
    if name == "cuda":
        return _cuda_version()
    raise AttributeError(f"module 'tensorplug.version' has no attribute {name!r}")


def _cuda_version() -> str | None:
    """The CUDA runtime version CuPy (the CUDA backend) runs on, as 'major.minor'; None when the
    CUDA backend cannot be used here. Loads nothing unless CUDA is available."""
    from .cuda import is_available

    if not is_available():
        return None
    import cupy

    version = cupy.cuda.runtime.runtimeGetVersion()  # 12040 for 12.4
    return f"{version // 1000}.{version % 1000 // 10}"
