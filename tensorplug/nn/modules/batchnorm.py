"""``tp.nn.modules.batchnorm``: PyTorch's import path for the batch-norm classes and their bases.

Training code tests ``isinstance(m, nn.modules.batchnorm._BatchNorm)`` to freeze or convert every
batch norm (instance norms are not among them) and ``_NormBase`` for any normalization layer with
running statistics. The classes live in ``tensorplug.nn``.
"""
from ..layers import BatchNorm1d, BatchNorm2d, BatchNorm3d, _BatchNorm, _NormBase
from ..lazy import LazyBatchNorm1d, LazyBatchNorm2d, LazyBatchNorm3d
from .._sync_batchnorm import SyncBatchNorm

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d",
           "SyncBatchNorm", "_BatchNorm", "_NormBase"]
