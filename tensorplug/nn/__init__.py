"""``tp.nn``: neural-network building blocks (``tp.nn.functional`` for now)."""
from . import functional

__all__ = ["functional"]
