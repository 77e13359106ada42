"""``tp.utils``: data loading (``tp.utils.data``) and activation checkpointing
(``tp.utils.checkpoint``)."""
from . import checkpoint, data

__all__ = ["checkpoint", "data"]
