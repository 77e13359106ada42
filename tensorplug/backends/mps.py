"""``tp.backends.mps``: Apple's Metal device, as PyTorch names it.

Available when an installed plugin provides a usable ``mps`` device type (tensorplug ships none).
"""
from __future__ import annotations

__all__ = ["is_available", "is_built"]


def is_available() -> bool:
    from ._probe import probe

    return probe("mps").available


def is_built() -> bool:
    """Whether an ``mps`` backend is installed (PyTorch: compiled in)."""
    from ._probe import known_device_types

    return "mps" in known_device_types()
