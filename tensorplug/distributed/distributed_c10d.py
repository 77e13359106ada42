"""``torch.distributed.distributed_c10d``'s module path: the process-group API that
``tp.distributed`` itself exposes, for programs that import it from here
(``from torch.distributed.distributed_c10d import ProcessGroup``). As in PyTorch, the store
kinds other than ``Store`` and ``PrefixStore`` live only in ``tp.distributed``."""
from __future__ import annotations

from . import (
    Backend, GroupMember, P2POp, PrefixStore, ProcessGroup, ReduceOp, Store, Work,
    all_gather, all_gather_into_tensor, all_gather_object, all_gather_single, all_reduce, all_to_all,
    all_to_all_single, barrier, batch_isend_irecv, broadcast, broadcast_object_list, default_pg_timeout,
    destroy_process_group, gather, gather_object, get_backend, get_global_rank, get_group_rank,
    get_node_local_rank, get_process_group_ranks, get_rank, get_world_size, group, init_process_group, irecv,
    is_backend_available, is_gloo_available, is_initialized, is_mpi_available, is_nccl_available,
    is_torchelastic_launched, is_ucc_available, is_xccl_available, isend, monitored_barrier, new_group, recv, reduce,
    reduce_scatter, reduce_scatter_single, reduce_scatter_tensor, scatter, scatter_object_list, send,
    supports_complex,
)

__all__ = [
    "Backend", "GroupMember", "P2POp", "PrefixStore", "ProcessGroup", "ReduceOp", "Store", "Work", "all_gather", "all_gather_into_tensor", "all_gather_object", "all_gather_single",
    "all_reduce", "all_to_all", "all_to_all_single", "barrier", "batch_isend_irecv", "broadcast",
    "broadcast_object_list", "default_pg_timeout", "destroy_process_group", "gather", "gather_object", "get_backend",
    "get_global_rank", "get_group_rank", "get_node_local_rank", "get_process_group_ranks", "get_rank",
    "get_world_size", "group", "init_process_group", "irecv", "is_backend_available", "is_gloo_available",
    "is_initialized", "is_mpi_available", "is_nccl_available", "is_torchelastic_launched", "is_ucc_available",
    "is_xccl_available", "isend", "monitored_barrier", "new_group", "recv", "reduce", "reduce_scatter",
    "reduce_scatter_single", "reduce_scatter_tensor", "scatter", "scatter_object_list", "send", "supports_complex",
]
