"""The option types of ``torch.distributed.fsdp`` that FullyShardedDataParallel takes."""
from __future__ import annotations

import dataclasses
import enum

from ...nn.layers import _BatchNorm

__all__ = ["ShardingStrategy", "BackwardPrefetch", "CPUOffload", "MixedPrecision", "StateDictType"]


class ShardingStrategy(enum.Enum):
    """What stays sharded: FULL_SHARD (parameters, gradients, optimizer state; parameters are
    gathered again for backward), SHARD_GRAD_OP (gathered parameters kept from forward to
    backward), NO_SHARD (DDP-like); the hybrid ones need a second process-group level."""

    FULL_SHARD = enum.auto()
    SHARD_GRAD_OP = enum.auto()
    NO_SHARD = enum.auto()
    HYBRID_SHARD = enum.auto()
    _HYBRID_SHARD_ZERO2 = enum.auto()


class BackwardPrefetch(enum.Enum):
    """When backward gathers the next parameters (one flat parameter here: no effect)."""

    BACKWARD_PRE = enum.auto()
    BACKWARD_POST = enum.auto()


class StateDictType(enum.Enum):
    """Which state dict ``state_dict()`` gives (here always the full one)."""

    FULL_STATE_DICT = enum.auto()
    LOCAL_STATE_DICT = enum.auto()
    SHARDED_STATE_DICT = enum.auto()


@dataclasses.dataclass
class CPUOffload:
    """Keep the parameter shards in host memory (CPU tensors already live there)."""

    offload_params: bool = False


@dataclasses.dataclass
class MixedPrecision:
    """Dtypes for the gathered parameters (forward and backward compute in ``param_dtype``), the
    gradient reduction (``reduce_dtype``, default ``param_dtype``) and buffers (``buffer_dtype``);
    None keeps the parameters' own dtype."""

    param_dtype: object = None
    reduce_dtype: object = None
    buffer_dtype: object = None
    keep_low_precision_grads: bool = False
    cast_forward_inputs: bool = False
    cast_root_forward_inputs: bool = True
    # PyTorch wraps these modules apart, in full precision, under its auto-wrap policies; one
    # flat parameter here has no such split, so the field is accepted and not used.
    _module_classes_to_ignore: tuple = (_BatchNorm,)
