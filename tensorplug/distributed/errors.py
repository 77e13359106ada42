"""The exception types of ``torch.distributed`` (``DistError`` and its kinds), so that code which
catches a store timeout or a network failure by type ports unchanged."""
from __future__ import annotations

__all__ = ["DistError", "DistStoreError", "DistNetworkError", "DistBackendError", "QueueEmptyError"]


class DistError(RuntimeError):
    """A failure of the distributed package (a RuntimeError, as in PyTorch)."""


class DistStoreError(DistError):
    """A key-value store operation failed, most often a wait that ran past the store's timeout."""


class DistNetworkError(DistError):
    """A store or process group could not reach its peer (connect, send or receive failed)."""


class DistBackendError(DistError):
    """The communication engine failed."""


class QueueEmptyError(DistStoreError):
    """``queue_pop(key, block=False)`` found the queue empty."""
