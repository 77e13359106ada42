"""``tp.distributed``: data-parallel training across processes and machines, on MPI.

PyTorch's names and semantics (process groups, collectives, work handles) over an engine that
clusters already run: MPI through mpi4py (``pip install tensorplug[distributed]`` brings mpi4py
and the mpich library). CPU tensors go to MPI without copies; tensors of any other device, a
third-party plugin's included, are staged through host memory. Launch with
``mpiexec -n 2 python train.py`` or ``python -m tensorplug.distributed.run -n 2 train.py``.
See docs/distributed.md.
"""
from __future__ import annotations

import datetime
import importlib.util
import sys

import os

from . import _group, constants
from ._group import GroupMember, ProcessGroup
from .backend_names import Backend
from .collectives import (
    P2POp, ReduceOp, Work, all_gather, all_gather_into_tensor, all_gather_object, all_gather_single, all_reduce,
    barrier, batch_isend_irecv, broadcast, broadcast_object_list, irecv, isend, monitored_barrier, recv, reduce,
    reduce_scatter_single, reduce_scatter_tensor, send,
)
from .grad_bucket import GradBucket
from .errors import DistBackendError, DistError, DistNetworkError, DistStoreError, QueueEmptyError
from .stores import FileStore, HashStore, PrefixStore, Store, TCPStore
from .rooted_and_exchange import (
    all_to_all, all_to_all_single, gather, gather_object, reduce_scatter, scatter, scatter_object_list,
)

__all__ = [
    "init_process_group", "destroy_process_group", "is_initialized", "is_available", "is_mpi_available",
    "is_nccl_available", "get_rank", "get_world_size", "get_backend", "new_group", "ReduceOp", "Work", "GroupMember",
    "ProcessGroup", "all_reduce", "broadcast", "reduce", "all_gather", "all_gather_into_tensor",
    "reduce_scatter_tensor", "barrier", "send", "recv", "isend", "irecv", "all_gather_object", "broadcast_object_list",
    "all_gather_single", "reduce_scatter_single", "reduce_scatter", "gather", "scatter", "gather_object",
    "scatter_object_list", "all_to_all", "all_to_all_single", "monitored_barrier", "P2POp", "batch_isend_irecv",
    "Backend", "group", "constants", "is_gloo_available", "is_torchelastic_launched", "get_global_rank",
    "get_process_group_ranks", "get_node_local_rank", "Store", "HashStore", "FileStore", "TCPStore", "PrefixStore",
    "DistError", "DistStoreError", "DistNetworkError", "DistBackendError", "QueueEmptyError", "get_group_rank",
    "is_backend_available", "is_ucc_available", "is_xccl_available", "supports_complex", "default_pg_timeout",
    "GradBucket", "new_subgroups_by_enumeration", "DeviceMesh", "init_device_mesh",
]

#: PyTorch's default process-group timeout (30 minutes), also at this level as PyTorch has it.
default_pg_timeout = constants.default_pg_timeout

# ``dist.group.WORLD``: PyTorch's second spelling of ``GroupMember.WORLD`` (the default group).
group = GroupMember

# "gloo" is PyTorch's CPU engine; scripts that ask for it get MPI, which carries every device here.
_MPI_NAMES = ("mpi", "gloo")


def is_available() -> bool:
    """True: the distributed package is part of every tensorplug install (the engines are extras)."""
    return True


def is_mpi_available() -> bool:
    return importlib.util.find_spec("mpi4py") is not None


def is_gloo_available() -> bool:
    """Whether ``backend="gloo"`` works: it runs on MPI here, so when mpi4py is installed."""
    return is_mpi_available()


def is_torchelastic_launched() -> bool:
    """Whether torchrun (torchelastic) started this process: it sets TORCHELASTIC_RUN_ID."""
    return os.getenv("TORCHELASTIC_RUN_ID") is not None


def is_ucc_available() -> bool:
    """False: tensorplug has no UCC engine."""
    return False


def is_xccl_available() -> bool:
    """False: tensorplug has no XCCL engine."""
    return False


def is_backend_available(backend: str) -> bool:
    """Whether ``init_process_group(backend)`` can work in this install."""
    name = str(backend).lower()
    if name in _MPI_NAMES:
        return is_mpi_available()
    return name == "nccl" and is_nccl_available()


def supports_complex(reduceOp) -> bool:
    """Whether ``reduceOp`` is defined on complex tensors (ordering ops are not)."""
    return reduceOp not in (ReduceOp.MAX, ReduceOp.MIN, ReduceOp.PRODUCT, ReduceOp.BAND, ReduceOp.BOR, ReduceOp.BXOR)


def is_nccl_available() -> bool:
    """NCCL comes with the CUDA backend (through CuPy), which this build does not have yet."""
    return False


def is_initialized() -> bool:
    return _group.world() is not None


def _timeout(value) -> datetime.timedelta:
    if value is None:
        return _group.DEFAULT_TIMEOUT
    if isinstance(value, (int, float)):
        return datetime.timedelta(seconds=value)
    if not isinstance(value, datetime.timedelta):
        raise TypeError(f"timeout must be a datetime.timedelta, got {type(value).__name__}")
    return value


def init_process_group(backend=None, init_method=None, timeout=None, world_size=-1, rank=-1, store=None,
                       group_name="", pg_options=None, device_id=None) -> None:
    """Joins this process to the default group of every process the launcher started.

    ``backend``: "mpi" (the default; "gloo" is accepted as a synonym) or "nccl" (CUDA tensors
    through NCCL, once the CUDA backend exists). Ranks and world size come from the launcher
    (``mpiexec -n N``); ``world_size``/``rank``, when given, must match it. ``store``, when given
    (with ``world_size`` and ``rank``), is used to check that every rank reached the same store
    with the same world size; MPI carries the data.
    """
    if _group.world() is not None:
        raise ValueError("trying to initialize the default process group twice")
    name = (backend or "mpi").lower()
    if name == "nccl" or "cuda:nccl" in name:
        raise RuntimeError("backend='nccl' carries CUDA tensors through NCCL, which needs the CUDA backend; it is not "
                           "available in this build. Use backend='mpi', which carries tensors of every device.")
    if name not in _MPI_NAMES and not name.startswith("cpu:"):
        raise ValueError(f"init_process_group: unknown backend {backend!r}; tensorplug has 'mpi' (alias 'gloo')")
    if init_method not in (None, "env://") and not str(init_method).startswith(("tcp://", "file://")):
        raise ValueError(f"init_process_group: unsupported init_method {init_method!r}")
    if store is not None:
        if not isinstance(store, Store):
            raise TypeError(f"init_process_group: store must be a tensorplug.distributed Store (HashStore, FileStore, "
                            f"TCPStore, PrefixStore), got {type(store).__name__}")
        if world_size in (-1, None) or world_size <= 0:
            raise ValueError("init_process_group: world_size must be positive if using store")
        if rank in (-1, None) or rank < 0:
            raise ValueError("init_process_group: rank must be non-negative if using store")
    MPI = _group.mpi()
    comm = MPI.COMM_WORLD
    size, me = comm.Get_size(), comm.Get_rank()
    announced = _group.launcher_env_size()
    if size == 1 and announced and announced > 1:
        raise RuntimeError(f"the environment announces {announced} processes (WORLD_SIZE), but MPI started only this one: "
                           f"launch with mpiexec -n {announced} python ... (or python -m tensorplug.distributed.run "
                           f"-n {announced} ...); torchrun's rendezvous is not used by tensorplug")
    if world_size not in (-1, None) and world_size != size:
        raise ValueError(f"init_process_group: world_size={world_size}, but the launcher started {size} processes "
                         f"(mpiexec -n {size})")
    if rank not in (-1, None) and rank != me:
        raise ValueError(f"init_process_group: rank={rank}, but MPI gave this process rank {me}")
    if store is not None:
        _check_store_agrees(store, me, size)
    # The group answers get_backend() with the name the script asked for ("gloo" runs on MPI).
    _group.set_world(ProcessGroup(comm.Dup(), list(range(size)), _timeout(timeout), name if name in _MPI_NAMES else "mpi"))
    if size > 1:
        _abort_all_on_uncaught_exception(MPI, me, size)


def _check_store_agrees(store: Store, rank: int, size: int) -> None:
    """MPI, not the store, connects the ranks; the store is used to check that every rank the
    launcher started reached the same store with the same world size, so a script whose ranks
    were given different stores (or sizes) fails here, clearly, after the store's timeout."""
    store.set(f"tensorplug/init_process_group/rank{rank}", str(size))
    keys = [f"tensorplug/init_process_group/rank{r}" for r in range(size)]
    try:
        sizes = store.multi_get(keys)
    except DistStoreError as exc:
        missing = [k.rsplit("rank", 1)[1] for k in keys if not store.check([k])]
        raise DistStoreError(f"init_process_group: ranks {', '.join(missing)} did not register in the store given as "
                             f"store= (do all ranks use the same store?): {exc}") from None
    other = [(r, int(v)) for r, v in enumerate(sizes) if int(v) != size]
    if other:
        raise ValueError(f"init_process_group: this rank sees world size {size}, but the store says rank {other[0][0]} "
                         f"saw {other[0][1]}")


def _abort_all_on_uncaught_exception(MPI, rank: int, size: int) -> None:
    """A rank that dies of an exception takes the job down at once (as torchrun stops every worker
    when one fails). Without this, its MPI_Finalize at exit and the other ranks' next collective
    would wait on each other until the group's timeout."""
    previous = sys.excepthook

    def excepthook(kind, value, traceback):
        previous(kind, value, traceback)
        if not issubclass(kind, KeyboardInterrupt):
            print(f"tensorplug.distributed: rank {rank} of {size} raised {kind.__name__}; aborting every rank",
                  file=sys.stderr, flush=True)
        sys.stderr.flush()
        MPI.COMM_WORLD.Abort(1)

    sys.excepthook = excepthook


def destroy_process_group(group=None) -> None:
    """Frees ``group`` (the default group and every sub-group when None)."""
    world = _group.world()
    if group is None:
        if world is not None:
            world.comm.Free()
        _group.set_world(None)
        return
    if isinstance(group, ProcessGroup):
        group.comm.Free()


def _world(what: str) -> ProcessGroup:
    return _group.require_world(what)


def get_rank(group=None) -> int:
    """This process's rank in ``group`` (-1 when it is not a member)."""
    _world("get_rank")
    g = _group.resolve_group(group, "get_rank")
    return -1 if g is None else g.rank()


def get_world_size(group=None) -> int:
    _world("get_world_size")
    g = _group.resolve_group(group, "get_world_size")
    return -1 if g is None else g.size()


def get_global_rank(group, group_rank: int) -> int:
    """The global rank of ``group``'s member ``group_rank``."""
    g = _group.resolve_group(group, "get_global_rank")
    if g is None or not 0 <= group_rank < len(g.ranks):
        raise ValueError(f"Group rank {group_rank} is not part of group {group}")
    return g.ranks[group_rank]


def get_group_rank(group, global_rank: int) -> int:
    """The rank inside ``group`` of the process with global rank ``global_rank``."""
    g = _group.resolve_group(group, "get_group_rank")
    if g is None or global_rank not in g.ranks:
        raise ValueError(f"Global rank {global_rank} is not part of group {group}")
    return g.ranks.index(global_rank)


def get_process_group_ranks(group) -> list[int]:
    """The global ranks of ``group``'s members, in group-rank order (the world's for None)."""
    g = _group.resolve_group(group, "get_process_group_ranks")
    return [] if g is None else list(g.ranks)


def get_node_local_rank(fallback_rank: int | None = None) -> int:
    """This process's rank on its machine: LOCAL_RANK from the launcher, else ``fallback_rank``."""
    if "LOCAL_RANK" in os.environ:
        return int(os.environ["LOCAL_RANK"])
    if fallback_rank is not None:
        return int(fallback_rank)
    raise RuntimeError("LOCAL_RANK is not in the environment. Consider passing fallback_rank to allow "
                       "`get_node_local_rank` to work, assuming you are not running in a multi-device context and "
                       "want the code to run locally instead.")


def get_backend(group=None) -> str:
    g = _group.resolve_group(group, "get_backend")
    return "mpi" if g is None else g.backend


def new_group(ranks=None, timeout=None, backend=None, pg_options=None, use_local_synchronization=False):
    """A group of the given global ranks (all of them when None). Every rank of the world must
    call it, members or not, in the same order; non-members get ``GroupMember.NON_GROUP_MEMBER``."""
    world = _world("new_group")
    members = list(range(world.size())) if ranks is None else ranks
    return _split_world("new_group", [members], timeout)[0]


def new_subgroups_by_enumeration(ranks_per_subgroup_list, timeout=None, backend=None, pg_options=None,
                                 group_desc=None):
    """``(this rank's subgroup, every subgroup)`` for disjoint lists of global ranks, made in one
    collective that every rank of the world calls; a subgroup this rank is not in is
    ``GroupMember.NON_GROUP_MEMBER`` in the list, and so is the first item on a rank in none."""
    if not ranks_per_subgroup_list:
        raise ValueError("new_subgroups_by_enumeration: the argument `ranks_per_subgroup_list` cannot be empty")
    groups = _split_world("new_subgroups_by_enumeration", ranks_per_subgroup_list, timeout)
    mine = next((g for g in groups if g is not GroupMember.NON_GROUP_MEMBER), GroupMember.NON_GROUP_MEMBER)
    return mine, groups


def _split_world(what: str, rank_lists, timeout) -> list:
    """One group per list of global ranks (disjoint lists) through one MPI split of the world:
    this rank's group where it is a member, ``GroupMember.NON_GROUP_MEMBER`` elsewhere."""
    world = _world(what)
    lists, seen = [], {}
    for index, ranks in enumerate(rank_lists):
        members = sorted(int(r) for r in ranks)
        for r in members:
            if not 0 <= r < world.size():
                raise ValueError(f"{what}: ranks must be ranks of the world (0..{world.size() - 1}), got {list(ranks)}")
            if r in seen:
                where = "twice in one group" if seen[r] == index else f"in groups {seen[r]} and {index}"
                raise ValueError(f"{what}: rank {r} appears {where}; the groups must be disjoint")
            seen[r] = index
        lists.append(members)
    MPI = _group.mpi()
    me = world.rank()
    color = seen.get(me, MPI.UNDEFINED)
    comm = world.comm.Split(color, lists[color].index(me) if me in seen else 0)
    groups = [GroupMember.NON_GROUP_MEMBER] * len(lists)
    if comm != MPI.COMM_NULL:
        groups[color] = ProcessGroup(comm, lists[color], _timeout(timeout) if timeout is not None else world.timeout,
                                     world.backend)
    return groups


from .device_mesh import DeviceMesh, init_device_mesh  # noqa: E402  (it builds on the names above)
