"""The standard's ``linalg`` extension, over ``tp.linalg``.

Every function runs on the array's device and differentiates: matrix products, norms, ``cross``,
``diagonal``, ``outer``, ``trace`` and ``matrix_power`` are tp ops, and the decompositions and
solvers (``cholesky``, ``det``, ``eigh``, ``eigvalsh``, ``inv``, ``matrix_rank``, ``pinv``,
``qr``, ``slogdet``, ``solve``, ``svd``, ``svdvals``) are ``tp.linalg``'s, with their
derivatives (docs/linalg.md says where LAPACK runs). Where the standard and PyTorch differ the
standard wins: results are this module's named tuples, ``pinv`` and ``matrix_rank`` take only
``rtol``, and ``solve`` reads a right-hand side as a vector only when it is 1-D (PyTorch also
reads a ``(..., M)`` batch of vectors as one). Complex arrays are taken everywhere: eigenvalues
of Hermitian matrices, singular values, ``logabsdet`` and the norms are real (the matching real
dtype), as the standard says.
"""
from __future__ import annotations

import builtins
import math
import operator
from typing import NamedTuple

from .. import linalg as _linalg
from ..frontend.ops import reductions as _r
from ..frontend.ops.elementwise import UNARY as _U
from ..frontend.shapes import broadcast_shapes
from ..frontend.tensor import Tensor
from ..frontend import views as _v
from ._helpers import check_array, normalize_axes, normalize_axis, promote_operands
from ._linear_algebra import matmul, matrix_transpose, tensordot, vecdot  # noqa: F401  (the extension repeats them)

__all__ = [
    "cholesky", "cross", "det", "diagonal", "eigh", "eigvalsh", "inv", "matmul", "matrix_norm", "matrix_power",
    "matrix_rank", "matrix_transpose", "outer", "pinv", "qr", "slogdet", "solve", "svd", "svdvals", "tensordot",
    "trace", "vecdot", "vector_norm",
]


class EighResult(NamedTuple):
    eigenvalues: Tensor
    eigenvectors: Tensor


class QRResult(NamedTuple):
    Q: Tensor
    R: Tensor


class SlogdetResult(NamedTuple):
    sign: Tensor
    logabsdet: Tensor


class SVDResult(NamedTuple):
    U: Tensor
    S: Tensor
    Vh: Tensor


def _float_matrix(x: Tensor, name: str, square: builtins.bool = False) -> Tensor:
    """The standard's checks (ValueError for shapes, TypeError for dtypes) before tp.linalg's."""
    check_array(x)
    if x.ndim < 2:
        raise ValueError(f"{name} needs at least two dimensions, got shape {x.shape}")
    if square and x.shape[-1] != x.shape[-2]:
        raise ValueError(f"{name} needs square matrices, got shape {x.shape}")
    if x.dtype.category < 2:
        raise TypeError(f"{name} needs a real or complex floating-point array, got {x.dtype!r}")
    return x


def cholesky(x: Tensor, /, *, upper: builtins.bool = False) -> Tensor:
    """The Cholesky factor L (x = L L^H), or U = L^H when ``upper``."""
    return _linalg.cholesky(_float_matrix(x, "cholesky", square=True), upper=upper)


def det(x: Tensor, /) -> Tensor:
    """Determinants of the square matrices in x."""
    return _linalg.det(_float_matrix(x, "det", square=True))


def slogdet(x: Tensor, /) -> SlogdetResult:
    """Sign and log of the absolute value of the determinants (sign 0, logabsdet -inf where
    singular)."""
    return SlogdetResult(*_linalg.slogdet(_float_matrix(x, "slogdet", square=True)))


def eigh(x: Tensor, /) -> EighResult:
    """Eigenvalues (ascending) and eigenvectors of symmetric (Hermitian) matrices."""
    return EighResult(*_linalg.eigh(_float_matrix(x, "eigh", square=True)))


def eigvalsh(x: Tensor, /) -> Tensor:
    """Eigenvalues (ascending) of symmetric (Hermitian) matrices."""
    return _linalg.eigvalsh(_float_matrix(x, "eigvalsh", square=True))


def inv(x: Tensor, /) -> Tensor:
    """Inverses of the square matrices in x."""
    return _linalg.inv(_float_matrix(x, "inv", square=True))


def pinv(x: Tensor, /, *, rtol=None) -> Tensor:
    """Moore-Penrose pseudo-inverses; singular values at most rtol * largest count as zero
    (default rtol: machine epsilon times max(M, N); an array rtol broadcasts against the batch)."""
    return _linalg.pinv(_float_matrix(x, "pinv"), rtol=rtol)


def matrix_rank(x: Tensor, /, *, rtol=None) -> Tensor:
    """Number of singular values above rtol * largest (default rtol: eps times max(M, N)), in
    the default integer dtype."""
    return _linalg.matrix_rank(_float_matrix(x, "matrix_rank"), rtol=rtol)


def qr(x: Tensor, /, *, mode: str = "reduced") -> QRResult:
    """QR decomposition; ``mode`` 'reduced' (K = min(M, N) columns of Q) or 'complete'."""
    _float_matrix(x, "qr")
    if mode not in ("reduced", "complete"):
        raise ValueError(f"mode must be 'reduced' or 'complete', got {mode!r}")
    return QRResult(*_linalg.qr(x, mode=mode))


def solve(x1: Tensor, x2: Tensor, /) -> Tensor:
    """The solution X of x1 @ X = x2: x2 of shape (M,) is one vector (the result has shape
    ``x1.shape[:-1]``), any other x2 is a (batch of) (M, K) matrices broadcast against x1's batch."""
    a, b = promote_operands(check_array(x1, "x1"), check_array(x2, "x2"))
    _float_matrix(a, "solve", square=True)
    if b.ndim == 1:
        if b.shape[0] != a.shape[-1]:
            raise ValueError(f"solve: x2 of shape {b.shape} does not fit x1 of shape {a.shape}")
        return _linalg.solve(a, b)
    if b.ndim < 2 or b.shape[-2] != a.shape[-1]:
        raise ValueError(f"solve: x2 of shape {b.shape} does not fit x1 of shape {a.shape}")
    # Both with the broadcast batch dims: tp.linalg.solve, as PyTorch, would read an x2 of x1's
    # batch dims and M as a batch of vectors, which the standard does not.
    batch = broadcast_shapes(a.shape[:-2], b.shape[:-2], op="solve")
    return _linalg.solve(a.expand(*batch, *a.shape[-2:]), b.expand(*batch, *b.shape[-2:]))


def svd(x: Tensor, /, *, full_matrices: builtins.bool = True) -> SVDResult:
    """Singular value decomposition x = U diag(S) Vh, singular values descending."""
    return SVDResult(*_linalg.svd(_float_matrix(x, "svd"), full_matrices=full_matrices))


def svdvals(x: Tensor, /) -> Tensor:
    """Singular values, descending."""
    return _linalg.svdvals(_float_matrix(x, "svdvals"))


def cross(x1: Tensor, x2: Tensor, /, *, axis: int = -1) -> Tensor:
    """Cross products of the 3-vectors along ``axis``."""
    a, b = promote_operands(check_array(x1, "x1"), check_array(x2, "x2"))
    a, b = _v.broadcast_tensors(a, b)
    axis = normalize_axis(axis, a.ndim)
    if a.shape[axis] != 3:
        raise ValueError(f"cross needs vectors of 3 elements along axis {axis}, got shape {a.shape}")
    a0, a1, a2 = a.unbind(axis)
    b0, b1, b2 = b.unbind(axis)
    from ..frontend.ops.joining import stack

    return stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], dim=axis)


def diagonal(x: Tensor, /, *, offset: int = 0) -> Tensor:
    """The ``offset`` diagonal of the last two axes (a view)."""
    check_array(x)
    if x.ndim < 2:
        raise ValueError(f"diagonal needs at least two dimensions, got shape {x.shape}")
    return _v.diagonal(x, offset, -2, -1)


def trace(x: Tensor, /, *, offset: int = 0, dtype=None) -> Tensor:
    """Sums of the ``offset`` diagonals of the last two axes (sum's dtype rules)."""
    from ._statistical import sum as _sum

    diag = diagonal(x, offset=offset)
    return _sum(diag, axis=-1, dtype=dtype)


def outer(x1: Tensor, x2: Tensor, /) -> Tensor:
    """The outer product of two 1-D arrays."""
    a, b = promote_operands(check_array(x1, "x1"), check_array(x2, "x2"))
    if a.ndim != 1 or b.ndim != 1:
        raise ValueError(f"outer needs 1-D arrays, got shapes {a.shape} and {b.shape}")
    return a.reshape(-1, 1) * b.reshape(1, -1)


def matrix_power(x: Tensor, n: int, /) -> Tensor:
    """x raised to the integer power n by repeated squaring (n < 0 inverts first)."""
    check_array(x)
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise ValueError(f"matrix_power needs square matrices, got shape {x.shape}")
    n = operator.index(n)
    if n < 0:
        x, n = inv(x), -n
    from ..frontend.factories import eye as _eye

    result = _eye(x.shape[-1], dtype=x.dtype, device=x.device).expand(*x.shape).clone()
    base = x
    while n:
        if n & 1:
            result = matmul(result, base)
        n >>= 1
        if n:
            base = matmul(base, base)
    return result


def vector_norm(x: Tensor, /, *, axis=None, keepdims: builtins.bool = False, ord=2) -> Tensor:
    """The ``ord``-norm of the vectors along ``axis`` (all elements when None): any real p,
    inf, -inf, or 0 (the count of nonzeros)."""
    check_array(x)
    if x.dtype.category < 2:
        raise TypeError(f"vector_norm needs a real or complex floating-point array, got {x.dtype!r}")
    axes = normalize_axes(axis, x.ndim)
    a = _U["abs"](x)  # real for complex x: the norms are real
    if not axes:
        # norm over no axes: each element's own norm
        return a if ord != 0 else (a != 0).to(a.dtype)
    if ord == math.inf:
        return _r.amax(a, dim=axes, keepdim=keepdims)
    if ord == -math.inf:
        return _r.amin(a, dim=axes, keepdim=keepdims)
    if ord == 0:
        return _r.sum((a != 0).to(a.dtype), dim=axes, keepdim=keepdims)
    if ord == 1:
        return _r.sum(a, dim=axes, keepdim=keepdims)
    if ord == 2:
        # scale by the largest magnitude so that squares neither overflow nor underflow
        scale = _r.amax(a, dim=axes, keepdim=True) if a.numel() else None
        if scale is None:
            return _r.sum(a, dim=axes, keepdim=keepdims)
        safe = scale.masked_fill(~_U["isfinite"](scale) | (scale == 0), 1.0)
        scaled = a / safe
        out = _r.sum(scaled * scaled, dim=axes, keepdim=True).sqrt() * safe
        # infinities and NaNs: inf if any element is inf, else NaN propagates through the sum
        out = out.masked_fill(_U["isinf"](scale), math.inf)
        return out if keepdims else out.reshape(*[n for i, n in enumerate(out.shape) if i not in axes])
    return _r.sum(a ** ord, dim=axes, keepdim=keepdims) ** (1.0 / ord)


def matrix_norm(x: Tensor, /, *, keepdims: builtins.bool = False, ord="fro") -> Tensor:
    """The norm of the matrices in the last two axes: 'fro', 'nuc', 1, -1, 2, -2, inf, -inf."""
    _float_matrix(x, "matrix_norm")
    if ord == "fro":
        return vector_norm(x, axis=(-2, -1), keepdims=keepdims)
    if ord in ("nuc", 2, -2):
        s = svdvals(x)
        out = _r.sum(s, dim=-1) if ord == "nuc" else (_r.amax(s, dim=-1) if ord == 2 else _r.amin(s, dim=-1))
    elif ord in (1, -1):
        col = _r.sum(_U["abs"](x), dim=-2)
        out = _r.amax(col, dim=-1) if ord == 1 else _r.amin(col, dim=-1)
    elif ord in (math.inf, -math.inf):
        row = _r.sum(_U["abs"](x), dim=-1)
        out = _r.amax(row, dim=-1) if ord == math.inf else _r.amin(row, dim=-1)
    else:
        raise ValueError(f"unsupported matrix norm order {ord!r}")
    return out.reshape(*out.shape, 1, 1) if keepdims else out
