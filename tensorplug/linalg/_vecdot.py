"""``linalg.vecdot``: the dot product of batches of vectors along one dimension, conjugating the
first operand when complex (issue 13). A composite of ``conj``, ``mul`` and ``sum``, so it runs
on every device and autograd differentiates it.
"""
from __future__ import annotations

from ..frontend.ops._common import check_same_device, write_out
from ..frontend.shapes import broadcast_shapes, normalize_dim
from ..frontend.tensor import Tensor
from ._checks import check_same_dtype, check_tensor, scalar_type_name
from ..frontend.ops.out_rehearsal import rehearse_out

__all__ = ["vecdot"]


def vecdot(x, y, *, dim: int = -1, out=None) -> Tensor:
    """``sum(conj(x) * y, dim)`` with ``x`` and ``y`` broadcast together."""
    if out is not None:
        rehearse_out(vecdot, locals())
    op = "linalg.vecdot"
    check_tensor(op, x, "x")
    check_tensor(op, y, "y")
    check_same_dtype(op, x, y, ("x", "y"))
    if not (x._dtype.is_floating_point or x._dtype.is_complex):
        raise RuntimeError(f"{op}: Expected a floating point or complex tensor as input. Got "
                           f"{scalar_type_name(x._dtype)}")
    check_same_device(op, x, y)
    shape = broadcast_shapes(x._shape, y._shape, op=op)
    d = normalize_dim(op, dim, len(shape)) if shape else dim
    first = x.conj() if x._dtype.is_complex else x
    return write_out(op, out, (first * y).sum(d))
