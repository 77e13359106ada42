"""``tp.backends.opt_einsum``: the switches of PyTorch's einsum contraction-order optimizer.

PyTorch orders the contractions of an einsum with three or more operands through the
``opt_einsum`` package when it is installed. tensorplug's einsum contracts left to right and
never calls it, so ``is_available()`` is False; ``enabled`` and ``strategy`` keep PyTorch's
defaults for that case (``enabled`` False, ``strategy`` None) and can be set as there.
"""
from __future__ import annotations

import contextlib

__all__ = ["enabled", "strategy", "is_available", "get_opt_einsum", "flags"]

enabled = False
strategy = None


def is_available() -> bool:
    """False: tensorplug's einsum does not use the opt_einsum package."""
    return False


def get_opt_einsum():
    """The opt_einsum package when PyTorch would use it; None here (see ``is_available``)."""
    return None


@contextlib.contextmanager
def flags(enabled: bool | None = None, strategy: str | None = None):
    """Set ``enabled``/``strategy`` (those given) inside a ``with`` block and restore them after."""
    module = globals()
    saved = {"enabled": module["enabled"], "strategy": module["strategy"]}
    if enabled is not None:
        module["enabled"] = bool(enabled)
    if strategy is not None:
        module["strategy"] = strategy
    try:
        yield
    finally:
        module.update(saved)
