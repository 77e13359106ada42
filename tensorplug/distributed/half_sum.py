"""An all-reduce SUM that moves 16-bit floats as 16 bits, for the compressing DDP hooks.

The general collectives reduce float16/bfloat16 by staging them as float32 (MPI has no 16-bit
float arithmetic), which doubles the bytes on the wire. A compressing hook wants the opposite:
here the elements travel as their raw 16 bits and a user-defined MPI reduction adds each pair in
float32 and rounds the sum back to 16 bits at every step of the reduction, as a 16-bit engine
(NCCL's fp16 all-reduce) does.
"""
from __future__ import annotations

import numpy as np

from ..frontend import dtypes as _dt
from ..frontend.tensor import Tensor
from . import _group
from ._buffers import host_buffer
from .collectives import Work

__all__ = ["start_sum16"]

_ops: dict = {}


def _float16_sum(incoming, inout, datatype) -> None:
    a = np.frombuffer(incoming, dtype=np.float16)
    b = np.frombuffer(inout, dtype=np.float16)
    b[...] = (a.astype(np.float32) + b.astype(np.float32)).astype(np.float16)


def _bfloat16_to_float32(bits: np.ndarray) -> np.ndarray:
    return (bits.astype(np.uint32) << 16).view(np.float32)


def _float32_to_bfloat16(values: np.ndarray) -> np.ndarray:
    bits = values.view(np.uint32)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)  # to nearest, ties to even
    return np.where(np.isnan(values), np.uint16(0x7FC0), rounded)


def _bfloat16_sum(incoming, inout, datatype) -> None:
    a = np.frombuffer(incoming, dtype=np.uint16)
    b = np.frombuffer(inout, dtype=np.uint16)
    b[...] = _float32_to_bfloat16(_bfloat16_to_float32(a) + _bfloat16_to_float32(b))


def _sum_op(dtype):
    if dtype not in _ops:
        MPI = _group.mpi()
        _ops[dtype] = MPI.Op.Create(_float16_sum if dtype is _dt.float16 else _bfloat16_sum, commute=True)
    return _ops[dtype]


def start_sum16(group, tensor: Tensor, what: str = "all_reduce") -> Work:
    """Starts an in-place all-reduce SUM of a float16/bfloat16 ``tensor`` over ``group`` (None:
    the world) that sends 2 bytes per element; its Work's future gives ``[tensor]``."""
    if not isinstance(tensor, Tensor) or tensor.dtype not in (_dt.float16, _dt.bfloat16):
        raise TypeError(f"{what}: a 16-bit sum needs a float16 or bfloat16 tensor, got "
                        f"{getattr(tensor, 'dtype', type(tensor).__name__)}")
    g = _group.resolve_group(group, what)
    MPI = _group.mpi()
    buf = host_buffer(tensor, arithmetic=False)  # raw 16-bit words; staged only off the CPU
    request = g.comm.Iallreduce(MPI.IN_PLACE, buf.array, _sum_op(tensor.dtype))
    return Work(g, request, what, [lambda status: buf.finish()], outputs=[tensor])
