"""The collectives that move different data to different ranks: ``gather``/``scatter`` (and their
object forms) through one root, ``all_to_all``/``all_to_all_single`` between every pair, and
``reduce_scatter`` over a list of blocks; PyTorch's names and arguments on the MPI engine.

They share collectives.py's agreement step and host staging, so a rank that passes a different
shape or dtype gets a clear error on every rank, never a hang.
"""
from __future__ import annotations

import numpy as np

from . import _group
from .collectives import ReduceOp, _agree, _check_tensor, _run, reduce_scatter_single
from ._buffers import empty_host, host_buffer

__all__ = ["gather", "scatter", "gather_object", "scatter_object_list", "all_to_all", "all_to_all_single",
           "reduce_scatter"]


def _root(g, what: str, global_rank, group_rank) -> int:
    """The root's rank inside ``g``, from PyTorch's ``dst``/``src`` (global) or ``group_dst``/``group_src``."""
    if global_rank is not None and group_rank is not None:
        raise ValueError(f"{what}: give the root as a global rank or a group rank, not both")
    if group_rank is not None:
        return int(group_rank)
    return g.group_rank(0 if global_rank is None else int(global_rank), what)


def _check_list(what: str, name: str, tensors, count: int, like) -> None:
    if not isinstance(tensors, (list, tuple)) or len(tensors) != count:
        raise ValueError(f"{what}: {name} must be a list of {count} tensors (one per rank)")
    for i, t in enumerate(tensors):
        _check_tensor(what, t)
        if t.shape != like.shape or t.dtype != like.dtype:
            raise ValueError(f"{what}: {name}[{i}] has shape {list(t.shape)} and dtype {t.dtype}; expected shape "
                             f"{list(like.shape)} and dtype {like.dtype}")


def gather(tensor, gather_list=None, dst=None, group=None, async_op=False, group_dst=None):
    """The root's ``gather_list[r]`` becomes rank r's ``tensor``; other ranks pass no list."""
    g = _group.resolve_group(group, "gather")
    if g is None:
        return None
    _check_tensor("gather", tensor)
    root = _root(g, "gather", dst, group_dst)
    is_root = g.rank() == root
    if is_root:
        _check_list("gather", "gather_list", gather_list, g.size(), tensor)
    elif gather_list:
        raise ValueError("gather: gather_list must be given on the destination rank only")
    _agree(g, "gather", tensor, root=root)
    send = host_buffer(tensor, arithmetic=False, write=False)
    n = tensor.numel()
    gathered, array = empty_host((g.size() * n,) if is_root else (0,), tensor.dtype, arithmetic=False)
    request = g.comm.Igather(send.array, array if is_root else None, root=root)

    def place(status):
        for r, out in enumerate(gather_list if is_root else ()):
            out.copy_(gathered[r * n:(r + 1) * n].reshape(tensor.shape))

    return _run(g, request, "gather", [place], async_op)


def scatter(tensor, scatter_list=None, src=None, group=None, async_op=False, group_src=None):
    """Rank r's ``tensor`` becomes the root's ``scatter_list[r]``; other ranks pass no list."""
    from ..frontend.ops.joining import stack

    g = _group.resolve_group(group, "scatter")
    if g is None:
        return None
    _check_tensor("scatter", tensor)
    root = _root(g, "scatter", src, group_src)
    is_root = g.rank() == root
    if is_root:
        _check_list("scatter", "scatter_list", scatter_list, g.size(), tensor)
    elif scatter_list:
        raise ValueError("scatter: scatter_list must be given on the source rank only")
    _agree(g, "scatter", tensor, root=root)
    send = host_buffer(stack(list(scatter_list)), arithmetic=False, write=False) if is_root else None
    recv = host_buffer(tensor, arithmetic=False)
    request = g.comm.Iscatter(send.array if is_root else None, recv.array, root=root)
    return _run(g, request, "scatter", [lambda status, _keep=send: recv.finish()], async_op)


def gather_object(obj, object_gather_list=None, dst=None, group=None, group_dst=None) -> None:
    """The root's ``object_gather_list[r]`` becomes rank r's picklable ``obj``."""
    g = _group.resolve_group(group, "gather_object")
    if g is None:
        return
    root = _root(g, "gather_object", dst, group_dst)
    if g.rank() == root and (object_gather_list is None or len(object_gather_list) != g.size()):
        raise ValueError(f"gather_object: object_gather_list must have {g.size()} entries on the destination rank")
    gathered = g.comm.gather(obj, root=root)
    if g.rank() == root:
        object_gather_list[:] = gathered


def scatter_object_list(scatter_object_output_list, scatter_object_input_list=None, src=None, group=None,
                        group_src=None) -> None:
    """``scatter_object_output_list[0]`` becomes the root's ``scatter_object_input_list[r]`` on rank r."""
    g = _group.resolve_group(group, "scatter_object_list")
    if g is None:
        return
    if not isinstance(scatter_object_output_list, list) or len(scatter_object_output_list) < 1:
        raise ValueError("Expected argument scatter_object_output_list to be a list of size at least 1.")
    root = _root(g, "scatter_object_list", src, group_src)
    if g.rank() == root and (scatter_object_input_list is None or len(scatter_object_input_list) != g.size()):
        raise ValueError(f"scatter_object_list: scatter_object_input_list must have {g.size()} entries on the source rank")
    scatter_object_output_list[0] = g.comm.scatter(list(scatter_object_input_list) if g.rank() == root else None,
                                                   root=root)


def _row_counts(what: str, name: str, splits, rows: int, size: int) -> list[int]:
    """Rows sent to (or received from) each rank: equal shares when ``splits`` is None."""
    if splits is None:
        if rows % size:
            raise ValueError(f"{what}: dim 0 of the tensor ({rows}) must divide evenly among {size} ranks when "
                             f"{name} is not given")
        return [rows // size] * size
    counts = [int(s) for s in splits]
    if len(counts) != size or sum(counts) != rows or min(counts) < 0:
        raise ValueError(f"{what}: {name} must be {size} non-negative sizes adding up to dim 0 of the tensor ({rows}); "
                         f"got {list(splits)}")
    return counts


def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None, group=None, async_op=False):
    """Rank r sends its ``input`` block j (rows along dim 0) to rank j, which keeps it as its
    ``output`` block r; the split sizes default to equal blocks."""
    g = _group.resolve_group(group, "all_to_all_single")
    if g is None:
        return None
    for t in (output, input):
        _check_tensor("all_to_all_single", t)
    if output.dtype != input.dtype or output.shape[1:] != input.shape[1:]:
        raise ValueError(f"all_to_all_single: output (shape {list(output.shape)}, {output.dtype}) and input (shape "
                         f"{list(input.shape)}, {input.dtype}) must share the dtype and every dim but the first")
    size = g.size()
    rows_in, rows_out = (input.shape[0] if input.ndim else 1), (output.shape[0] if output.ndim else 1)
    row = int(np.prod(input.shape[1:], dtype=np.int64)) if input.ndim else 1
    send_counts = [c * row for c in _row_counts("all_to_all_single", "input_split_sizes", input_split_sizes, rows_in, size)]
    recv_counts = [c * row for c in _row_counts("all_to_all_single", "output_split_sizes", output_split_sizes, rows_out, size)]
    _agree(g, "all_to_all_single", None)
    send = host_buffer(input, arithmetic=False, write=False)
    recv = host_buffer(output, arithmetic=False)
    request = g.comm.Ialltoallv([send.array, (send_counts, list(np.cumsum([0] + send_counts[:-1])))],
                                [recv.array, (recv_counts, list(np.cumsum([0] + recv_counts[:-1])))])
    return _run(g, request, "all_to_all_single", [lambda status: recv.finish()], async_op)


def all_to_all(output_tensor_list, input_tensor_list, group=None, async_op=False):
    """Rank r's ``input_tensor_list[j]`` becomes rank j's ``output_tensor_list[r]``."""
    from ..frontend.ops.joining import cat

    g = _group.resolve_group(group, "all_to_all")
    if g is None:
        return None
    size = g.size()
    for name, tensors in (("output_tensor_list", output_tensor_list), ("input_tensor_list", input_tensor_list)):
        if not isinstance(tensors, (list, tuple)) or len(tensors) != size:
            raise ValueError(f"all_to_all: {name} must be a list of {size} tensors (one per rank)")
        for t in tensors:
            _check_tensor("all_to_all", t)
    dtypes = {t.dtype for t in (*output_tensor_list, *input_tensor_list)}
    if len(dtypes) != 1:
        raise ValueError(f"all_to_all: every tensor must have one dtype; got {sorted(map(str, dtypes))}")
    _agree(g, "all_to_all", None)
    send = host_buffer(cat([t.reshape(-1) for t in input_tensor_list]), arithmetic=False, write=False)
    send_counts = [t.numel() for t in input_tensor_list]
    recv_counts = [t.numel() for t in output_tensor_list]
    received, array = empty_host((sum(recv_counts),), output_tensor_list[0].dtype, arithmetic=False)
    request = g.comm.Ialltoallv([send.array, (send_counts, list(np.cumsum([0] + send_counts[:-1])))],
                                [array, (recv_counts, list(np.cumsum([0] + recv_counts[:-1])))])

    def place(status, _keep=send):
        start = 0
        for out, n in zip(output_tensor_list, recv_counts):
            out.copy_(received[start:start + n].reshape(out.shape))
            start += n

    return _run(g, request, "all_to_all", [place], async_op)


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduces ``input_list[r]`` over the ranks into rank r's ``output``."""
    from ..frontend.ops.joining import stack

    g = _group.resolve_group(group, "reduce_scatter")
    if g is None:
        return None
    _check_tensor("reduce_scatter", output)
    _check_list("reduce_scatter", "input_list", input_list, g.size(), output)
    return reduce_scatter_single(output, stack(list(input_list)), op=op, group=group, async_op=async_op)
