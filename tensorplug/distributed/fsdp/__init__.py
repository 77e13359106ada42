"""``torch.distributed.fsdp``' module path: ``FullyShardedDataParallel`` (parameters, gradients
and optimizer state sharded over the ranks, on MPI) and its option types."""
from .api import BackwardPrefetch, CPUOffload, MixedPrecision, ShardingStrategy, StateDictType
from .fully_sharded_data_parallel import FullyShardedDataParallel

__all__ = ["FullyShardedDataParallel", "ShardingStrategy", "BackwardPrefetch", "CPUOffload", "MixedPrecision",
           "StateDictType"]
