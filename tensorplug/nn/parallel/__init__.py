"""``tp.nn.parallel``: DataParallel on one device.

DistributedDataParallel belongs with ``tp.distributed`` (process groups, all-reduce) and is not
defined here.
"""
from .data_parallel import DataParallel, data_parallel

__all__ = ["DataParallel", "data_parallel"]
