"""Matrix products: the batched ``matmul`` primitive and PyTorch's matmul/mm/bmm/dot rules."""
from __future__ import annotations

from ...dispatcher import AUTOGRAD, Operator, local_state
from .. import dtypes as _dt
from ..shapes import broadcast_shapes, contiguous_strides, numel_of
from ..tensor import Tensor, empty_tensor, make_tensor
from ..views import expand, reshape, squeeze, unsqueeze
from .. import autocast_hook
from ..autocast_hook import AUTOCAST_MASK, autocast_function
from ._common import check_same_device, keyset, write_out
from .widened_products import widen_for_out_dtype
from .out_rehearsal import rehearse_out

__all__ = ["matmul", "mm", "bmm", "dot", "mv"]

MATMUL = Operator("matmul")
_AUTOGRAD_MASK = AUTOGRAD.mask


def _check(op: str, a, b) -> _dt.dtype:
    for name, x in (("input", a), ("other", b)):
        if not isinstance(x, Tensor):
            raise TypeError(f"{op}(): argument '{name}' must be Tensor, not {type(x).__name__}")
    check_same_device(op, a, b)
    if a._dtype is not b._dtype:
        raise RuntimeError(f"{op}(): expected both operands to have the same dtype, but got {a._dtype.name} and {b._dtype.name}")
    if a._dtype is _dt.bool:
        raise RuntimeError(f"{op}(): not implemented for bool tensors")
    return a._dtype


def _batched(a3: Tensor, b3: Tensor) -> Tensor:
    """(B, M, K) @ (B, K, N) -> (B, M, N) through the primitive."""
    batch, m, k = a3._shape
    n = b3._shape[2]
    out = empty_tensor((batch, m, n), a3._dtype, a3._device)
    MATMUL.lookup(keyset(a3, b3))(out, a3, b3)
    return out


def _as_batch(t: Tensor) -> Tensor:
    """The matrix ``t`` as a batch of one, ``unsqueeze(t, 0)`` without its checks or graph."""
    base = t._base if t._base is not None else t
    return make_tensor(t._storage, (1,) + t._shape, (t._shape[0] * t._stride[0],) + t._stride, t._offset, t._dtype,
                       t._device, t._version_ref, base)


def _matrix_product(a: Tensor, b: Tensor) -> Tensor:
    """``a @ b`` of two matrices when no gradient is recorded (below a derivative, under no_grad,
    in backward): the primitive gets batch-of-one views, and the result is its output seen as a
    matrix. Two views, a squeeze and their checks fewer than the general path (issue 14)."""
    m, n = a._shape[0], b._shape[1]
    batch = empty_tensor((1, m, n), a._dtype, a._device)
    keys = (a._keys | b._keys | local_state.include) & local_state.mask
    (MATMUL.table.get(keys) or MATMUL.lookup(keys))(batch, _as_batch(a), _as_batch(b))
    return make_tensor(batch._storage, (m, n), contiguous_strides((m, n)), 0, batch._dtype, batch._device,
                       batch._version_ref)


def _either_sparse(a, b) -> bool:
    return getattr(a, "is_sparse", False) is True or getattr(b, "is_sparse", False) is True


def _sparse_product(op: str, a, b, out) -> Tensor:
    """``mm``/``matmul`` with a sparse COO operand (a GCN's ``torch.mm(adj, x)``): tp.sparse's
    composite product, which the dense path's type check would refuse."""
    from ...sparse import matmul as sparse_matmul

    return write_out(op, out, sparse_matmul(a, b, op), exact_dtype=True)


def _broadcast(t: Tensor, shape: tuple) -> Tensor:
    # Without batch dims to stretch, skip the expand: under autograd each view is a graph node.
    return t if t._shape == shape else expand(t, shape)


def _shape_error(op: str, a: Tensor, b: Tensor) -> RuntimeError:
    sa = "x".join(map(str, a._shape[-2:] if a.ndim > 1 else (1,) + a._shape))
    sb = "x".join(map(str, b._shape[-2:] if b.ndim > 1 else b._shape + (1,)))
    return RuntimeError(f"{op}(): mat1 and mat2 shapes cannot be multiplied ({sa} and {sb})")


def matmul(input, other, *, out=None) -> Tensor:
    """Matrix product with PyTorch's rules for 1-D operands and broadcast batch dims."""
    if out is not None:
        rehearse_out(matmul, locals())
    if local_state.include & local_state.mask & AUTOCAST_MASK:
        # Autocast casts here, before the dtype check and the output's allocation (inline, not
        # as a decorator: matmul is on every linear layer's path).
        return autocast_hook.apply("matmul", matmul, (input, other), {"out": out})
    if not (isinstance(input, Tensor) and isinstance(other, Tensor)) and _either_sparse(input, other):
        return _sparse_product("matmul", input, other, out)
    _check("matmul", input, other)
    if input.ndim == 0 or other.ndim == 0:
        raise RuntimeError(f"matmul(): both arguments to matmul need to be at least 1D, but they are {input.ndim}D and {other.ndim}D")
    if input.ndim == 2 and other.ndim == 2:
        # The common case (linear layers and their backward): a batch of one, nothing to broadcast.
        if input._shape[1] != other._shape[0]:
            raise _shape_error("matmul", input, other)
        if out is None and not (input._keys | other._keys) & local_state.mask & _AUTOGRAD_MASK:
            return _matrix_product(input, other)
        return write_out("matmul", out, squeeze(_batched(unsqueeze(input, 0), unsqueeze(other, 0)), 0), exact_dtype=True)
    a = unsqueeze(input, 0) if input.ndim == 1 else input
    b = unsqueeze(other, -1) if other.ndim == 1 else other
    if a._shape[-1] != b._shape[-2]:
        raise _shape_error("matmul", input, other)
    m, k, n = a._shape[-2], a._shape[-1], b._shape[-1]
    batch_shape = broadcast_shapes(a._shape[:-2], b._shape[:-2], op="matmul")
    batch = numel_of(batch_shape)
    a3 = reshape(_broadcast(a, batch_shape + (m, k)), (batch, m, k))
    b3 = reshape(_broadcast(b, batch_shape + (k, n)), (batch, k, n))
    result = reshape(_batched(a3, b3), batch_shape + (m, n))
    if input.ndim == 1:
        result = squeeze(result, -2)
    if other.ndim == 1:
        result = squeeze(result, -1)
    return write_out("matmul", out, result, exact_dtype=True)


@autocast_function("mm")
def mm(input, mat2, out_dtype=None, *, out=None) -> Tensor:
    """The product of two matrices; ``out_dtype=float32`` multiplies float16/bfloat16 ones in
    float32 (frontend/ops/widened_products.py)."""
    if out is not None:
        rehearse_out(mm, locals())
    if out_dtype is not None:
        return mm(*widen_for_out_dtype("mm", out_dtype, input, mat2), out=out)
    if not (isinstance(input, Tensor) and isinstance(mat2, Tensor)) and _either_sparse(input, mat2):
        return _sparse_product("mm", input, mat2, out)
    _check("mm", input, mat2)
    if input.ndim != 2 or mat2.ndim != 2:
        raise RuntimeError(f"mm(): expected 2D tensors, but got {input.ndim}D and {mat2.ndim}D")
    if input._shape[1] != mat2._shape[0]:
        raise _shape_error("mm", input, mat2)
    return matmul(input, mat2, out=out)


@autocast_function("bmm")
def bmm(input, mat2, out_dtype=None, *, out=None) -> Tensor:
    """The products of two batches of matrices; ``out_dtype`` as :func:`mm`'s."""
    if out is not None:
        rehearse_out(bmm, locals())
    if out_dtype is not None:
        return bmm(*widen_for_out_dtype("bmm", out_dtype, input, mat2), out=out)
    _check("bmm", input, mat2)
    if input.ndim != 3 or mat2.ndim != 3:
        raise RuntimeError(f"bmm(): batch1 must be a 3D tensor and batch2 must be a 3D tensor, got {input.ndim}D and {mat2.ndim}D")
    if input._shape[0] != mat2._shape[0] or input._shape[2] != mat2._shape[1]:
        raise RuntimeError(
            f"bmm(): Expected size for first two dimensions of batch2 tensor to be: "
            f"[{input._shape[0]}, {input._shape[2]}] but got: [{mat2._shape[0]}, {mat2._shape[1]}]."
        )
    return matmul(input, mat2, out=out)


@autocast_function("dot")
def dot(input, tensor, *, out=None) -> Tensor:
    """The inner product of two 1-D tensors (the second is ``tensor``, PyTorch's name)."""
    if out is not None:
        rehearse_out(dot, locals())
    other = tensor
    _check("dot", input, other)
    if input.ndim != 1 or other.ndim != 1:
        raise RuntimeError(f"dot(): 1D tensors expected, but got {input.ndim}D and {other.ndim}D tensors")
    if input._shape != other._shape:
        raise RuntimeError(
            f"dot(): inconsistent tensor size, expected tensor [{input._shape[0]}] and src [{other._shape[0]}] "
            f"to have the same number of elements, but got {input._shape[0]} and {other._shape[0]} elements respectively"
        )
    return write_out("dot", out, matmul(input, other), exact_dtype=True)


@autocast_function("mv")
def mv(input, vec, *, out=None) -> Tensor:
    """The product of a matrix and a vector."""
    if out is not None:
        rehearse_out(mv, locals())
    _check("mv", input, vec)
    if input.ndim != 2 or vec.ndim != 1:
        raise RuntimeError(f"mv(): expected a 2D matrix and a 1D vector, got {input.ndim}D and {vec.ndim}D")
    return write_out("mv", out, matmul(input, vec), exact_dtype=True)


