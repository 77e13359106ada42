"""``tp.nn.parallel``: DataParallel on one device, DistributedDataParallel across processes."""
from .data_parallel import DataParallel, data_parallel
from .distributed import DistributedDataParallel

__all__ = ["DataParallel", "data_parallel", "DistributedDataParallel"]
