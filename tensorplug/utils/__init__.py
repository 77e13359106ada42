"""``tp.utils``: data loading (``tp.utils.data``), activation checkpointing
(``tp.utils.checkpoint``) and TensorBoard logging (``tp.utils.tensorboard``, imported on demand as
in PyTorch, since it needs the ``tensorboard`` package)."""
from . import checkpoint, data

__all__ = ["checkpoint", "data"]
