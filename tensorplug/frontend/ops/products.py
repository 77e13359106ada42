"""Scaled and generalized products: ``baddbmm``, ``addbmm``, ``addr``, ``tensordot`` and
``cross`` (``linalg.cross``), composites over matmul and elementwise ops.

The scaled ones share addmm's rules (math_ops.scaled_sum): beta = 0 ignores ``input`` (its NaN
too), alpha = 0 ignores the product; integer tensors refuse float alpha and beta.
"""
from __future__ import annotations

import math
import operator
import warnings

from .. import dtypes as _dt
from ..shapes import broadcast_shapes, normalize_dim
from ..tensor import Tensor
from ._common import check_same_device, is_number, write_out
from ._numpy_names import axis_as_dim
from ._pointwise_args import check_tensor, inplace_variant, result_dtype_of
from .linalg import matmul
from .math_ops import scaled_sum
from .widened_products import widen_for_out_dtype
from ..autocast_hook import autocast_function
from .out_rehearsal import rehearse_out

__all__ = ["baddbmm", "addbmm", "addr", "tensordot", "cross"]


def _check_same_dtype(op: str, *tensors: Tensor) -> None:
    for t in tensors[1:]:
        if t._dtype is not tensors[0]._dtype:
            raise RuntimeError(f"{op}(): expected scalar type {tensors[0]._dtype.name} but found {t._dtype.name}")


def _check_factors(op: str, dtype: _dt.dtype, beta, alpha) -> None:
    for name, factor in (("beta", beta), ("alpha", alpha)):
        if not is_number(factor):
            raise TypeError(f"{op}(): argument '{name}' must be Number, not {type(factor).__name__}")
        if isinstance(factor, float) and not dtype.is_floating_point and not dtype.is_complex:
            raise RuntimeError(f"{op}(): For integral input tensors, argument {name} must not be a floating point number.")


def _check_batches(op: str, input, batch1, batch2) -> None:
    for name, t in (("input", input), ("batch1", batch1), ("batch2", batch2)):
        check_tensor(op, t, name)
    check_same_device(op, input, batch1, batch2)
    _check_same_dtype(op, input, batch1, batch2)
    if batch1.ndim != 3 or batch2.ndim != 3:
        raise RuntimeError(f"{op}(): batch1 must be a 3D tensor, batch2 must be a 3D tensor (got {batch1.ndim}-D and "
                           f"{batch2.ndim}-D)")
    if batch1._shape[0] != batch2._shape[0]:
        raise RuntimeError(f"{op}(): batch1 and batch2 must have same number of batches, got {batch1._shape[0]} and "
                           f"{batch2._shape[0]}")
    if batch1._shape[2] != batch2._shape[1]:
        raise RuntimeError(f"{op}(): Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{batch1._shape[0]}, {batch1._shape[2]}] but got: [{batch2._shape[0]}, {batch2._shape[1]}].")


def _check_input_fits(op: str, input: Tensor, shape: tuple) -> None:
    if input.ndim > len(shape) or broadcast_shapes(input._shape, shape, op=op) != shape:
        raise RuntimeError(f"{op}(): input of shape {list(input._shape)} cannot be broadcast to the product's shape "
                           f"{list(shape)}")


@autocast_function("baddbmm")
def baddbmm(input, batch1, batch2, out_dtype=None, *, beta=1, alpha=1, out=None) -> Tensor:
    """``beta * input + alpha * (batch1 @ batch2)`` for batches of matrices (b, n, m) and
    (b, m, p); ``input`` broadcasts to (b, n, p). ``out_dtype`` as addmm's.

    >>> tp.baddbmm(tp.zeros(3, 5), tp.ones(2, 3, 4), tp.ones(2, 4, 5)).shape
    (2, 3, 5)
    """
    if out is not None:
        rehearse_out(baddbmm, locals())
    if out_dtype is not None:
        widened = widen_for_out_dtype("baddbmm", out_dtype, batch1, batch2, input)
        return baddbmm(*widened, beta=beta, alpha=alpha, out=out)
    _check_batches("baddbmm", input, batch1, batch2)
    _check_factors("baddbmm", input._dtype, beta, alpha)
    shape = (batch1._shape[0], batch1._shape[1], batch2._shape[2])
    _check_input_fits("baddbmm", input, shape)
    return write_out("baddbmm", out, scaled_sum(input, matmul(batch1, batch2), beta, alpha), exact_dtype=True)


@autocast_function("addbmm")
def addbmm(input, batch1, batch2, *, beta=1, alpha=1, out=None) -> Tensor:
    """``beta * input + alpha * sum_b(batch1[b] @ batch2[b])``: the products of a batch summed
    into one (n, p) matrix, to which ``input`` broadcasts.

    >>> tp.addbmm(tp.zeros(3, 5), tp.ones(2, 3, 4), tp.ones(2, 4, 5))[0, 0].item()
    8.0
    """
    if out is not None:
        rehearse_out(addbmm, locals())
    _check_batches("addbmm", input, batch1, batch2)
    _check_factors("addbmm", input._dtype, beta, alpha)
    count, rows, inner = batch1._shape
    columns = batch2._shape[2]
    _check_input_fits("addbmm", input, (rows, columns))
    # One (n, b*m) @ (b*m, p) product sums over the batch inside the matrix product.
    left = batch1.permute(1, 0, 2).reshape(rows, count * inner)
    right = batch2.reshape(count * inner, columns)
    return write_out("addbmm", out, scaled_sum(input, matmul(left, right), beta, alpha), exact_dtype=True)


@autocast_function("addr")
def addr(input, vec1, vec2, *, beta=1, alpha=1, out=None) -> Tensor:
    """``beta * input + alpha * outer(vec1, vec2)``, in the three tensors' promoted dtype; bool
    tensors combine with ``and``/``or``, as in PyTorch.

    >>> tp.addr(tp.zeros(2, 2), tp.tensor([1.0, 2.0]), tp.tensor([3.0, 4.0])).tolist()
    [[3.0, 4.0], [6.0, 8.0]]
    """
    if out is not None:
        rehearse_out(addr, locals())
    for name, t in (("input", input), ("vec1", vec1), ("vec2", vec2)):
        check_tensor("addr", t, name)
    check_same_device("addr", input, vec1, vec2)
    if vec1.ndim != 1 or vec2.ndim != 1:
        raise RuntimeError(f"addr(): expected 1-D argument vec1 and vec2, but got {vec1.ndim}-D and {vec2.ndim}-D")
    dtype = result_dtype_of(input, vec1, vec2)
    shape = (vec1._shape[0], vec2._shape[0])
    _check_input_fits("addr", input, shape)
    a, v1, v2 = (t.to(dtype) for t in (input, vec1, vec2))
    outer = v1.unsqueeze(1) * v2.unsqueeze(0)
    if dtype is _dt.bool:
        for name, factor in (("beta", beta), ("alpha", alpha)):
            if not isinstance(factor, (bool, int)) or isinstance(factor, float):
                raise RuntimeError(f"addr(): Boolean {name} only supported for Boolean results.")
        result = (outer if alpha else outer & False) | (a & bool(beta))
        return write_out("addr", out, result.expand(*shape) if result._shape != shape else result)
    _check_factors("addr", dtype, beta, alpha)
    return write_out("addr", out, scaled_sum(a, outer, beta, alpha))


def _tensordot_dims(a: Tensor, b: Tensor, dims) -> tuple:
    """(a's contracted dims, b's contracted dims) from tensordot's ``dims`` argument."""
    if isinstance(dims, Tensor):
        dims = dims.item() if dims.ndim == 0 else dims.tolist()
    if isinstance(dims, (list, tuple)):
        if len(dims) != 2:
            raise RuntimeError(f"tensordot expects dims to be a pair of lists of dims, got {dims!r}")
        first, second = ([d] if isinstance(d, int) else list(d) for d in dims)
        if len(first) != len(second):
            raise RuntimeError(f"both dimension lists should have same length (got {len(first)} and {len(second)})")
        return ([normalize_dim("tensordot", d, a.ndim) for d in first],
                [normalize_dim("tensordot", d, b.ndim) for d in second])
    count = operator.index(dims)
    if count < 0:
        raise RuntimeError(f"tensordot expects dims >= 0, but got dims={count}")
    if count > min(a.ndim, b.ndim):
        raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={count}")
    return list(range(a.ndim - count, a.ndim)), list(range(count))


def tensordot(a, b, dims=2, out=None) -> Tensor:
    """The sum of products over the last ``dims`` dims of ``a`` and the first of ``b``, or over
    the dims paired in ``dims = (a_dims, b_dims)``: one matrix product.

    >>> tp.tensordot(tp.ones(2, 3, 4), tp.ones(3, 4, 5)).shape
    (2, 5)
    """
    if out is not None:
        rehearse_out(tensordot, locals())
    check_tensor("tensordot", a, "a")
    check_tensor("tensordot", b, "b")
    check_same_device("tensordot", a, b)
    if a._dtype is not b._dtype:
        raise RuntimeError("both inputs should have same dtype")
    dims_a, dims_b = _tensordot_dims(a, b, dims)
    for i, j in zip(dims_a, dims_b):
        if a._shape[i] != b._shape[j]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size {a._shape[i]} in dim {i} and "
                               f"second has size {b._shape[j]} in dim {j}")
    return write_out("tensordot", out, contract(a, b, dims_a, dims_b))


def contract(a: Tensor, b: Tensor, dims_a: list, dims_b: list) -> Tensor:
    """The sum of products of ``a`` and ``b`` over the paired (checked) dims: one (free_a,
    contracted) @ (contracted, free_b) matrix product (tensordot, and the array API's)."""
    free_a = [i for i in range(a.ndim) if i not in dims_a]
    free_b = [j for j in range(b.ndim) if j not in dims_b]
    size = 1
    for i in dims_a:
        size *= a._shape[i]
    rows, columns = math.prod(a._shape[i] for i in free_a), math.prod(b._shape[j] for j in free_b)
    shape = tuple(a._shape[i] for i in free_a) + tuple(b._shape[j] for j in free_b)
    # Explicit sizes, not -1: a reshape cannot infer a dim next to a zero-sized one.
    left = a.permute(*free_a, *dims_a).reshape(rows, size)
    right = b.permute(*dims_b, *free_b).reshape(size, columns)
    return matmul(left, right).reshape(shape)


def _cross(op: str, input, other, dim) -> Tensor:
    check_tensor(op, input)
    check_tensor(op, other, "other")
    check_same_device(op, input, other)
    if input._dtype is not other._dtype:
        raise RuntimeError(f"{op}(): expected scalar type {input._dtype.name} but found {other._dtype.name}")
    if input.ndim != other.ndim:
        raise RuntimeError(f"linalg.cross: inputs must have the same number of dimensions (got {input.ndim} and "
                           f"{other.ndim})")
    shape = broadcast_shapes(input._shape, other._shape, op=op)
    d = normalize_dim(op, dim, len(shape))
    if input._shape[d] != 3 or other._shape[d] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got {input._shape[d]} and "
                           f"{other._shape[d]}")
    a, b = input.expand(*shape), other.expand(*shape)
    a0, a1, a2 = a.unbind(d)
    b0, b1, b2 = b.unbind(d)
    from .joining import stack

    return stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], d)


def cross(input, other, dim=None, *, out=None, axis=None) -> Tensor:
    """The cross product of the 3-vectors along ``dim`` (broadcast). Without ``dim``, the first
    dim of size 3, with PyTorch's deprecation warning (``tp.linalg.cross`` uses the last).

    >>> tp.cross(tp.tensor([1.0, 0.0, 0.0]), tp.tensor([0.0, 1.0, 0.0]), dim=0).tolist()
    [0.0, 0.0, 1.0]
    """
    if out is not None:
        rehearse_out(cross, locals())
    if axis is not None:
        dim = axis_as_dim("cross", dim, axis, None)
    if dim is None:
        check_tensor("cross", input)
        check_tensor("cross", other, "other")
        warnings.warn(
            "Using torch.cross without specifying the dim arg is deprecated.\nPlease either pass the dim explicitly or "
            "simply use torch.linalg.cross.\nThe default value of dim will change to agree with that of linalg.cross in "
            "a future release.", UserWarning, stacklevel=2)
        shape = broadcast_shapes(input._shape, other._shape, op="cross")
        dim = next((i for i, size in enumerate(shape) if size == 3), -1)
    return write_out("cross", out, _cross("cross", input, other, dim))


def linalg_cross(input, other, *, dim=-1, out=None, axis=None) -> Tensor:
    """tp.linalg.cross: the cross product of the 3-vectors along ``dim`` (the last by default)."""
    if out is not None:
        rehearse_out(linalg_cross, locals())
    if axis is not None:
        dim = axis_as_dim("linalg.cross", dim, axis, -1)
    return write_out("linalg.cross", out, _cross("linalg.cross", input, other, dim))


#: Tensor methods this module provides: name -> function (attached by frontend.methods).
TENSOR_METHODS: dict = {
    "baddbmm": baddbmm, "addbmm": addbmm, "addr": addr, "cross": cross,
    "baddbmm_": inplace_variant(baddbmm), "addbmm_": inplace_variant(addbmm), "addr_": inplace_variant(addr),
}
