"""The collectives (torch.distributed's names and semantics) on the MPI engine.

Every collective is non-blocking underneath (MPI's I-variants): ``async_op=True`` returns the
``Work`` handle, otherwise the call waits on it. Before the data moves, the ranks agree on what
they are doing (which collective, root, reduction, dtype, element count and shape) in one small
all-reduce: a rank that passes a different shape or dtype gets a clear error on every rank,
never a hang or garbage.
"""
from __future__ import annotations

import enum
import warnings

import numpy as np

from ..frontend import dtypes as _dt
from ..frontend.tensor import Tensor
from ..futures import Future
from . import _group
from ._buffers import empty_host, host_buffer

__all__ = [
    "ReduceOp", "Work", "all_reduce", "broadcast", "reduce", "all_gather", "all_gather_into_tensor",
    "reduce_scatter_tensor", "barrier", "send", "recv", "isend", "irecv", "all_gather_object",
    "broadcast_object_list", "all_gather_single", "reduce_scatter_single", "monitored_barrier", "P2POp",
    "batch_isend_irecv",
]


class ReduceOp(enum.Enum):
    SUM = "sum"
    AVG = "avg"
    PRODUCT = "product"
    MIN = "min"
    MAX = "max"
    BAND = "band"
    BOR = "bor"
    BXOR = "bxor"


_OPS = list(ReduceOp)
_COLLECTIVES = ["all_reduce", "broadcast", "reduce", "all_gather", "all_gather_into_tensor", "reduce_scatter_tensor",
                "barrier", "gather", "scatter", "all_to_all_single", "all_to_all"]
_DTYPES = [_dt.bool, _dt.uint8, _dt.int8, _dt.int16, _dt.int32, _dt.int64, _dt.float16, _dt.bfloat16, _dt.float32,
           _dt.float64]


class Work:
    """A collective in flight: ``wait()`` blocks until it is done (and the result is in place),
    ``is_completed()`` asks without blocking."""

    def __init__(self, group: _group.ProcessGroup, request, what: str, finish=(), outputs=()):
        self._group = group
        self._outputs = list(outputs)  # what get_future() gives
        self._request = request
        self._what = what
        self._finish = list(finish)
        self._done = False
        self._status = None

    def _complete(self) -> None:
        self._done = True
        for step in self._finish:
            step(self._status)
        self._finish = []

    def wait(self, timeout=None) -> bool:
        if not self._done:
            MPI = _group.mpi()
            try:
                self._status = self._group.wait(self._request, self._what, timeout)
            except MPI.Exception as exc:
                raise RuntimeError(f"{self._what}: the MPI engine failed: {exc}") from None
            self._complete()
        return True

    def is_completed(self) -> bool:
        if not self._done:
            MPI = _group.mpi()
            status = MPI.Status()
            if self._request.Test(status):
                self._status = status
                self._complete()
        return self._done

    def is_success(self) -> bool:
        return self.is_completed()

    def get_future(self) -> Future:
        """A ``tp.futures.Future`` of the tensors this collective writes (``[tensor]`` for an
        all-reduce), as PyTorch's ``Work.get_future``; waiting on it waits for the collective."""
        future = Future()

        def complete() -> None:
            if not future._done:
                future.set_result(list(self._outputs))

        def drive() -> None:
            self.wait()
            complete()

        def poll() -> None:
            if self.is_completed():
                complete()

        return future._driven_by(drive, poll)

    def __repr__(self) -> str:
        return f"Work({self._what}, {'done' if self._done else 'in flight'})"


def _finish_buffer(buf):
    return lambda status: buf.finish()


def _check_tensor(what: str, t) -> None:
    if not isinstance(t, Tensor):
        raise TypeError(f"{what}: expected a tensor, got {type(t).__name__}")
    if t.dtype not in _DTYPES:
        raise TypeError(f"{what}: dtype {t.dtype} is not supported")


def _mpi_op(what: str, op, dtype):
    MPI = _group.mpi()
    if not isinstance(op, ReduceOp):
        raise TypeError(f"{what}: op must be a ReduceOp, got {op!r}")
    if dtype is _dt.bool:
        # MPI reduces booleans only with logical ops: sum and max are "any", product and min "all".
        logical = {ReduceOp.SUM: MPI.LOR, ReduceOp.MAX: MPI.LOR, ReduceOp.BOR: MPI.LOR, ReduceOp.PRODUCT: MPI.LAND,
                   ReduceOp.MIN: MPI.LAND, ReduceOp.BAND: MPI.LAND, ReduceOp.BXOR: MPI.LXOR}
        if op not in logical:
            raise ValueError(f"{what}: {op.name} is not defined for bool tensors")
        return logical[op]
    if op is ReduceOp.AVG and not dtype.is_floating_point:
        raise ValueError(f"{what}: ReduceOp.AVG needs a floating-point tensor, got {dtype} (use SUM and divide)")
    if op in (ReduceOp.BAND, ReduceOp.BOR, ReduceOp.BXOR) and dtype.is_floating_point:
        raise ValueError(f"{what}: {op.name} needs an integer or bool tensor, got {dtype}")
    return {ReduceOp.SUM: MPI.SUM, ReduceOp.AVG: MPI.SUM, ReduceOp.PRODUCT: MPI.PROD, ReduceOp.MIN: MPI.MIN,
            ReduceOp.MAX: MPI.MAX, ReduceOp.BAND: MPI.BAND, ReduceOp.BOR: MPI.BOR, ReduceOp.BXOR: MPI.BXOR}[op]


def _shape_code(shape) -> int:
    return hash(tuple(shape)) & ((1 << 62) - 1)  # int tuples hash the same in every process


def _agree(group: _group.ProcessGroup, what: str, t: Tensor | None, op=None, root: int = -1) -> None:
    """Every rank of ``group`` checks that all ranks run the same collective on matching tensors."""
    MPI = _group.mpi()
    parts = [_COLLECTIVES.index(what), _OPS.index(op) if op is not None else -1, root,
             _DTYPES.index(t.dtype) if t is not None else -1, t.numel() if t is not None else -1,
             _shape_code(t.shape) if t is not None else -1]
    mine = np.array(parts + [-p for p in parts], dtype=np.int64)
    agreed = np.empty_like(mine)
    group.wait(group.comm.Iallreduce(mine, agreed, MPI.MAX), what)
    k = len(parts)
    if np.array_equal(agreed[:k], -agreed[k:]):
        return
    described = f"{what}(shape={list(t.shape)}, dtype={t.dtype}" if t is not None else f"{what}("
    described += f", op={op.name})" if op is not None else ")"
    described += f" with root {group.ranks[root]}" if root >= 0 else ""
    calls = group.comm.allgather(described)
    lines = "\n".join(f"  rank {group.ranks[r]}: {c}" for r, c in enumerate(calls))
    raise RuntimeError(f"{what}: the ranks of the group called different collectives or passed tensors of different "
                       f"shapes or dtypes:\n{lines}")


def _average(buf, size: int):
    def divide(status):
        buf.array /= size
    return divide


def _run(group, request, what: str, finish, async_op: bool, outputs=()):
    work = Work(group, request, what, finish, outputs)
    if async_op:
        return work
    work.wait()
    return None


def start_all_reduce(g: _group.ProcessGroup, tensor, op, what: str, check: bool = True) -> Work:
    """Starts an in-place all-reduce of ``tensor`` on ``g``. ``check=False`` skips the ranks'
    agreement (for callers that established it once, as DistributedDataParallel's buckets)."""
    _check_tensor(what, tensor)
    mpi_op = _mpi_op(what, op, tensor.dtype)
    if check:
        _agree(g, "all_reduce", tensor, op)
    MPI = _group.mpi()
    buf = host_buffer(tensor, arithmetic=True)
    request = g.comm.Iallreduce(MPI.IN_PLACE, buf.array, mpi_op)
    finish = ([_average(buf, g.size())] if op is ReduceOp.AVG else []) + [_finish_buffer(buf)]
    return Work(g, request, what, finish, outputs=[tensor])


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduces ``tensor`` over the group's ranks, in place on every rank."""
    g = _group.resolve_group(group, "all_reduce")
    if g is None:
        return None
    work = start_all_reduce(g, tensor, op, "all_reduce")
    if async_op:
        return work
    work.wait()
    return None


def broadcast(tensor, src, group=None, async_op=False):
    """Copies ``tensor`` of global rank ``src`` into ``tensor`` on every other rank."""
    g = _group.resolve_group(group, "broadcast")
    if g is None:
        return None
    _check_tensor("broadcast", tensor)
    root = g.group_rank(src, "broadcast")
    _agree(g, "broadcast", tensor, root=root)
    buf = host_buffer(tensor, arithmetic=False, write=g.rank() != root)
    request = g.comm.Ibcast(buf.array, root=root)
    return _run(g, request, "broadcast", [_finish_buffer(buf)], async_op, [tensor])


def reduce(tensor, dst, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduces ``tensor`` over the ranks into ``tensor`` on global rank ``dst`` (the others' are
    left as they were)."""
    g = _group.resolve_group(group, "reduce")
    if g is None:
        return None
    _check_tensor("reduce", tensor)
    mpi_op = _mpi_op("reduce", op, tensor.dtype)
    root = g.group_rank(dst, "reduce")
    _agree(g, "reduce", tensor, op, root=root)
    MPI = _group.mpi()
    is_root = g.rank() == root
    buf = host_buffer(tensor, arithmetic=True, write=is_root)
    if is_root:
        request = g.comm.Ireduce(MPI.IN_PLACE, buf.array, mpi_op, root=root)
        finish = ([_average(buf, g.size())] if op is ReduceOp.AVG else []) + [_finish_buffer(buf)]
    else:
        request = g.comm.Ireduce(buf.array, None, mpi_op, root=root)
        finish = []
    return _run(g, request, "reduce", finish, async_op, [tensor])


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """``tensor_list[r]`` becomes rank r's ``tensor``, on every rank."""
    g = _group.resolve_group(group, "all_gather")
    if g is None:
        return None
    _check_tensor("all_gather", tensor)
    if not isinstance(tensor_list, (list, tuple)) or len(tensor_list) != g.size():
        raise ValueError(f"all_gather: tensor_list must be a list of {g.size()} tensors (one per rank)")
    for i, out in enumerate(tensor_list):
        _check_tensor("all_gather", out)
        if out.shape != tensor.shape or out.dtype != tensor.dtype:
            raise ValueError(f"all_gather: tensor_list[{i}] has shape {list(out.shape)} and dtype {out.dtype}; the "
                             f"input has shape {list(tensor.shape)} and dtype {tensor.dtype}")
    _agree(g, "all_gather", tensor)
    send = host_buffer(tensor, arithmetic=False, write=False)
    n = tensor.numel()
    gathered, array = empty_host((g.size() * n,), tensor.dtype, arithmetic=False)
    request = g.comm.Iallgather(send.array, array)

    def scatter_back(status):
        for r, out in enumerate(tensor_list):
            out.copy_(gathered[r * n:(r + 1) * n].reshape(tensor.shape))

    return _run(g, request, "all_gather", [scatter_back], async_op)


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    """Deprecated in PyTorch 2.13 for ``all_gather_single`` (the same collective)."""
    warnings.warn("`torch.distributed.all_gather_into_tensor` is deprecated. Please use "
                  "`torch.distributed.all_gather_single` instead.", FutureWarning, stacklevel=2)
    return all_gather_single(output_tensor, input_tensor, group=group, async_op=async_op)


def all_gather_single(output_tensor, input_tensor, group=None, async_op=False):
    """``output_tensor`` (size x the input's elements) holds every rank's input, in rank order."""
    g = _group.resolve_group(group, "all_gather_into_tensor")
    if g is None:
        return None
    for t in (output_tensor, input_tensor):
        _check_tensor("all_gather_into_tensor", t)
    if output_tensor.dtype != input_tensor.dtype or output_tensor.numel() != g.size() * input_tensor.numel():
        raise ValueError(f"all_gather_into_tensor: the output must hold {g.size()} x {input_tensor.numel()} elements "
                         f"of {input_tensor.dtype}; got shape {list(output_tensor.shape)} and dtype {output_tensor.dtype}")
    _agree(g, "all_gather_into_tensor", input_tensor)
    send = host_buffer(input_tensor, arithmetic=False, write=False)
    recv = host_buffer(output_tensor, arithmetic=False)
    request = g.comm.Iallgather(send.array, recv.array)
    return _run(g, request, "all_gather_into_tensor", [_finish_buffer(recv)], async_op, [output_tensor])


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    """Deprecated in PyTorch 2.13 for ``reduce_scatter_single`` (the same collective)."""
    warnings.warn("`torch.distributed.reduce_scatter_tensor` is deprecated. Please use "
                  "`torch.distributed.reduce_scatter_single` instead.", FutureWarning, stacklevel=2)
    return reduce_scatter_single(output, input, op=op, group=group, async_op=async_op)


def reduce_scatter_single(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduces ``input`` (size x the output's elements) over the ranks; rank r keeps block r."""
    g = _group.resolve_group(group, "reduce_scatter_tensor")
    if g is None:
        return None
    for t in (output, input):
        _check_tensor("reduce_scatter_tensor", t)
    if output.dtype != input.dtype or input.numel() != g.size() * output.numel():
        raise ValueError(f"reduce_scatter_tensor: the input must hold {g.size()} x {output.numel()} elements of "
                         f"{output.dtype}; got shape {list(input.shape)} and dtype {input.dtype}")
    mpi_op = _mpi_op("reduce_scatter_tensor", op, input.dtype)
    _agree(g, "reduce_scatter_tensor", input, op)
    send = host_buffer(input, arithmetic=True, write=False)
    recv = host_buffer(output, arithmetic=True)
    request = g.comm.Ireduce_scatter_block(send.array, recv.array, mpi_op)
    finish = ([_average(recv, g.size())] if op is ReduceOp.AVG else []) + [_finish_buffer(recv)]
    return _run(g, request, "reduce_scatter_tensor", finish, async_op, [output])


def barrier(group=None, async_op=False, device_ids=None):
    """Returns once every rank of the group has called it."""
    g = _group.resolve_group(group, "barrier")
    if g is None:
        return None
    _agree(g, "barrier", None)
    return _run(g, g.comm.Ibarrier(), "barrier", [], async_op)


def monitored_barrier(group=None, timeout=None, wait_all_ranks=False) -> None:
    """A barrier that fails after ``timeout`` (a timedelta; the group's by default), naming the
    group, when a rank does not arrive (every barrier here is bounded so)."""
    g = _group.resolve_group(group, "monitored_barrier")
    if g is None:
        return
    _agree(g, "barrier", None)
    g.wait(g.comm.Ibarrier(), "monitored_barrier", timeout)


def _point_to_point(what: str, tensor, peer, group, tag: int):
    g = _group.resolve_group(group, what)
    _check_tensor(what, tensor)
    if g is None:
        raise ValueError(f"{what}: this rank is not part of the group")
    if not isinstance(tag, int):
        raise TypeError(f"{what}: tag must be an int, got {type(tag).__name__}")
    return g, (None if peer is None else g.group_rank(peer, what))


def isend(tensor, dst, group=None, tag=0):
    """Starts sending ``tensor`` to global rank ``dst``; returns a Work handle."""
    g, peer = _point_to_point("isend", tensor, dst, group, tag)
    buf = host_buffer(tensor, arithmetic=False, write=False)
    # The Work keeps ``buf`` (and any staged copy) alive until the message has left.
    return Work(g, g.comm.Isend(buf.array, dest=peer, tag=tag), f"send to rank {dst}", [lambda s, _keep=buf: None])


def irecv(tensor, src=None, group=None, tag=0):
    """Starts receiving into ``tensor`` from global rank ``src`` (any rank when None)."""
    MPI = _group.mpi()
    g, peer = _point_to_point("irecv", tensor, src, group, tag)
    buf = host_buffer(tensor, arithmetic=False)
    request = g.comm.Irecv(buf.array, source=MPI.ANY_SOURCE if peer is None else peer, tag=tag)
    expected = buf.array.nbytes

    def check(status):
        got = status.Get_count(MPI.BYTE)
        if got != expected:
            raise RuntimeError(f"recv: rank {g.ranks[status.Get_source()]} sent {got} bytes, but the receiving tensor "
                               f"(shape {list(tensor.shape)}, dtype {tensor.dtype}) holds {expected}")
        buf.finish()

    return Work(g, request, "recv", [check])


def send(tensor, dst, group=None, tag=0) -> None:
    """Sends ``tensor`` to global rank ``dst`` and waits until it has left."""
    isend(tensor, dst, group, tag).wait()


def recv(tensor, src=None, group=None, tag=0) -> int:
    """Receives into ``tensor`` from global rank ``src`` (any when None); returns the sender."""
    work = irecv(tensor, src, group, tag)
    try:
        work.wait()
    except RuntimeError as exc:
        if "Message truncated" in str(exc) or "MPI_ERR_TRUNCATE" in str(exc):
            raise RuntimeError(f"recv: the message is larger than the receiving tensor (shape {list(tensor.shape)}, "
                               f"dtype {tensor.dtype})") from None
        raise
    return work._group.ranks[work._status.Get_source()]


def all_gather_object(object_list, obj, group=None) -> None:
    """``object_list[r]`` becomes rank r's picklable ``obj``, on every rank."""
    g = _group.resolve_group(group, "all_gather_object")
    if g is None:
        return
    if len(object_list) != g.size():
        raise ValueError(f"all_gather_object: object_list must have {g.size()} entries (one per rank)")
    object_list[:] = g.comm.allgather(obj)


def broadcast_object_list(object_list, src=0, group=None, device=None) -> None:
    """Every rank's ``object_list`` becomes global rank ``src``'s (picklable objects)."""
    g = _group.resolve_group(group, "broadcast_object_list")
    if g is None:
        return
    root = g.group_rank(src, "broadcast_object_list")
    object_list[:] = g.comm.bcast(list(object_list) if g.rank() == root else None, root=root)


class P2POp:
    """One send or receive for ``batch_isend_irecv``: ``P2POp(dist.isend, tensor, peer)``."""

    def __init__(self, op, tensor, peer=None, group=None, tag=0, group_peer=None):
        if op not in (isend, irecv):
            raise ValueError("Invalid ``op``. Expected ``op`` to be of type ``torch.distributed.isend`` or "
                             "``torch.distributed.irecv``.")
        _check_tensor("P2POp", tensor)
        if peer is None and group_peer is None:
            raise ValueError("P2POp: give the peer as peer (a global rank) or group_peer")
        self.op, self.tensor, self.group, self.tag = op, tensor, group, tag
        if peer is None:
            g = _group.resolve_group(group, "P2POp")
            peer = g.ranks[group_peer]
        self.peer = peer


def batch_isend_irecv(p2p_op_list) -> list:
    """Starts every send and receive of the list; returns their Work handles, in order."""
    if not p2p_op_list or not all(isinstance(p, P2POp) for p in p2p_op_list):
        raise ValueError("Invalid ``p2p_op_list``. Each op is expected to to be of type ``torch.distributed.P2POp``.")
    return [p.op(p.tensor, p.peer, p.group, p.tag) for p in p2p_op_list]
