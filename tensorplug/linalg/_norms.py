"""Norms: vector_norm, matrix_norm and norm, as composites over existing ops.

The vector norms are the ``norm`` op of tensorplug.frontend.ops.math_ops (one implementation for
``tp.norm`` and ``tp.linalg.vector_norm``), so they run on every device with gradients from
autograd. Of the matrix norms, 'fro', 1, -1, inf and -inf are sums and maxima of absolute
values; 2, -2 and 'nuc' need the singular values (svdvals, host LAPACK off the CPU).
"""
from __future__ import annotations

import math
import numbers

from ..frontend import dtypes as _dt
from ..frontend.ops._common import write_out
from ..frontend.ops._numpy_names import dim_keywords
from ..frontend.ops.math_ops import _norm
from ..frontend.ops.reductions import amax, amin
from ..frontend.shapes import normalize_dims
from ..frontend.tensor import Tensor
from ._checks import check_tensor, scalar_type_name
from ._decompositions import _svdvals
from ..frontend.ops.out_rehearsal import rehearse_out

__all__ = ["vector_norm", "matrix_norm", "norm"]


def _with_dtype(op: str, x: Tensor, dtype) -> Tensor:
    if x._dtype.is_complex:
        if dtype is not None and not dtype.is_complex:
            raise RuntimeError(f"{op}: dtype should be complex for a complex input, but got {scalar_type_name(dtype)}")
        return x if dtype is None or dtype is x._dtype else x.to(_dt.promote_types(x._dtype, dtype))
    if not x._dtype.is_floating_point:
        raise RuntimeError(f"{op}: Expected a floating point or complex tensor as input. Got {scalar_type_name(x._dtype)}")
    if dtype is None or dtype is x._dtype:
        return x
    if not dtype.is_floating_point:
        raise RuntimeError(f"{op}: dtype should be floating point or complex, but got {scalar_type_name(dtype)}")
    if _dt.promote_types(x._dtype, dtype) is not dtype:
        raise RuntimeError(f"{op}: the dtype of the input ({scalar_type_name(x._dtype)}) should be convertible "
                           f"without narrowing to the specified dtype ({scalar_type_name(dtype)})")
    return x.to(dtype)


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None, out=None, axis=None, keepdims=None) -> Tensor:
    """The vector ``ord``-norm over ``dim`` (every element when None): any real ``ord``,
    including 0 (the count of non-zeros), inf and -inf.

    >>> import tensorplug as tp
    >>> tp.linalg.vector_norm(tp.tensor([3.0, 4.0])).item()
    5.0
    """
    if out is not None:
        rehearse_out(vector_norm, locals())
    op = "linalg.vector_norm"
    if axis is not None or keepdims is not None:
        dim, keepdim = dim_keywords(op, dim, axis, keepdim, keepdims)
    check_tensor(op, x, "x")
    if isinstance(ord, bool) or not isinstance(ord, numbers.Real):
        raise TypeError(f"linalg_vector_norm(): argument 'ord' must be Number, not {type(ord).__name__}")
    x = _with_dtype(op, x, dtype)
    dims = tuple(range(x.ndim)) if dim is None else normalize_dims(op, dim, x.ndim)
    if ord < 0 or ord == math.inf:
        empty = [d for d in dims if x._shape[d] == 0] if dim is not None else ([0] if x.numel() == 0 else [])
        if empty:
            where = f"on the dimension {empty[0]}because this dimension is empty" if dim is not None else \
                "on an empty tensor because"
            ending = " and the operation" if dim is not None else " the operation"
            raise RuntimeError(f"{op} cannot compute the {_format_ord(ord)} norm {where}{ending} does not have an identity")
    if x._dtype.is_complex:  # the norm of the moduli (real, as PyTorch's); |z|'s gradient at 0 is 0
        x = x.abs()
    if dim is None and not keepdim:
        x = x.reshape(-1)
        dims = (0,) if x.ndim else ()
    return write_out(op, out, _norm(x, float(ord), dims, bool(keepdim)))


def _format_ord(ord) -> str:
    return "inf" if ord == math.inf else "-inf" if ord == -math.inf else f"{ord:g}"


def _matrix_dims(op: str, dim, ndim: int) -> tuple:
    if not isinstance(dim, (tuple, list)) or len(dim) != 2:
        shown = " ".join(map(str, dim)) if isinstance(dim, (tuple, list)) else str(dim)
        raise RuntimeError(f"{op}: dim must be a 2-tuple. Got {shown}")
    dims = tuple(_wrap_dim(d, ndim) for d in dim)
    if dims[0] == dims[1]:
        raise RuntimeError(f"{op}: dims must be different. Got ({dim[0]}, {dim[1]})")
    return dims


def _wrap_dim(d: int, ndim: int) -> int:
    if not -ndim <= d < ndim:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-ndim}, {ndim - 1}], but got {d})")
    return d % ndim


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None, out=None, axis=None,
                keepdims=None) -> Tensor:
    """The matrix norm over the two dims ``dim``: 'fro', 'nuc' (sum of singular values), inf and
    -inf (max / min absolute row sum), 1 and -1 (column sums), 2 and -2 (largest / smallest
    singular value)."""
    if out is not None:
        rehearse_out(matrix_norm, locals())
    op = "linalg.matrix_norm"
    if axis is not None or keepdims is not None:
        dim, keepdim = dim_keywords(op, dim, axis, keepdim, keepdims, dim_default=(-2, -1))
    check_tensor(op, A)
    if A.ndim < 2:
        raise RuntimeError(f"{op}: The input tensor A must have at least 2 dimensions.")
    A = _with_dtype(op, A, dtype)
    rows, cols = _matrix_dims(op, dim, A.ndim)
    if ord == "fro":
        return write_out(op, out, _norm(A.abs() if A._dtype.is_complex else A, 2.0, (rows, cols), bool(keepdim)))
    if ord in ("nuc", 2, -2):
        moved = A.movedim((rows, cols), (-2, -1))
        values = _svdvals(moved)
        if ord == "nuc":
            result = values.sum(-1)
        else:
            if values._shape[-1] == 0:
                reduction = "amax" if ord == 2 else "amin"
                raise IndexError(f"{reduction}(): Expected reduction dim -1 to have non-zero size.")
            result = values.amax(-1) if ord == 2 else values.amin(-1)
        if keepdim:
            for d in sorted((rows, cols)):
                result = result.unsqueeze(d)
        return write_out(op, out, result)
    if ord not in (1, -1, math.inf, -math.inf) or isinstance(ord, (str, bool)):
        raise RuntimeError(f"{op}: Order {ord} not supported.")
    if A.numel() == 0:  # no row or column to take a maximum over: PyTorch gives zeros
        return write_out(op, out, A.abs().sum((rows, cols), keepdim=bool(keepdim)))
    summed, reduced = (rows, cols) if ord in (1, -1) else (cols, rows)  # 1: column sums; inf: row sums
    sums = A.abs().sum(summed, keepdim=True)
    result = amax(sums, reduced, keepdim=True) if ord > 0 else amin(sums, reduced, keepdim=True)
    return write_out(op, out, result if keepdim else result.squeeze((rows, cols)))


def norm(A, ord=None, dim=None, keepdim=False, *, out=None, dtype=None, axis=None, keepdims=None) -> Tensor:
    """A vector or matrix norm, as PyTorch chooses: an int ``dim`` (or one dim) gives a vector
    norm, two dims a matrix norm; without ``dim``, a 1-D or 2-D input by its dimensions (any
    input with ``ord=None``, flattened, 2-norm)."""
    if out is not None:
        rehearse_out(norm, locals())
    op = "linalg.norm"
    if axis is not None or keepdims is not None:
        dim, keepdim = dim_keywords(op, dim, axis, keepdim, keepdims)
    check_tensor(op, A)
    if dim is not None:
        dims = (dim,) if isinstance(dim, int) else tuple(dim)
        if len(dims) == 1:
            return vector_norm(A, 2 if ord is None else ord, dims, keepdim, dtype=dtype, out=out)
        return matrix_norm(A, "fro" if ord is None else ord, dims, keepdim, dtype=dtype, out=out)
    if ord is None:
        return vector_norm(A, 2, None, keepdim, dtype=dtype, out=out)
    if A.ndim not in (1, 2):
        raise RuntimeError(f"{op}: If dim is not specified but ord is, the input must be 1D or 2D. Got {A.ndim}D.")
    if A.ndim == 1:
        return vector_norm(A, ord, None, keepdim, dtype=dtype, out=out)
    return matrix_norm(A, ord, (-2, -1), keepdim, dtype=dtype, out=out)
