"""The standard's ``linalg`` extension.

Matrix products, norms, ``cross``, ``diagonal``, ``outer``, ``trace`` and ``matrix_power`` are
tp ops and run on the array's device. The decompositions and solvers (``cholesky``, ``det``,
``eigh``, ``eigvalsh``, ``inv``, ``matrix_rank``, ``pinv``, ``qr``, ``slogdet``, ``solve``,
``svd``, ``svdvals``) run on the host through NumPy's LAPACK and come back to the array's device;
they take part in no autograd graph (``tp.linalg`` has the differentiable ones). Complex arrays
are taken everywhere: eigenvalues of Hermitian matrices, singular values, ``logabsdet`` and the
norms are real (the matching real dtype), as the standard says.
"""
from __future__ import annotations

import builtins
import math
import operator
from typing import NamedTuple

import numpy as np

from ..frontend import dtypes as _d
from ..frontend.factories import tensor as _tensor
from ..frontend.ops import reductions as _r
from ..frontend.ops.elementwise import UNARY as _U
from ..frontend.tensor import Tensor
from ..frontend import views as _v
from . import _dtypes as d
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
    check_array(x)
    if x.ndim < 2:
        raise ValueError(f"{name} needs at least two dimensions, got shape {x.shape}")
    if square and x.shape[-1] != x.shape[-2]:
        raise ValueError(f"{name} needs square matrices, got shape {x.shape}")
    if x.dtype.category < 2:
        raise TypeError(f"{name} needs a real or complex floating-point array, got {x.dtype!r}")
    return x


def _host(x: Tensor) -> np.ndarray:
    return x.detach().cpu().numpy()


def _back(value, like: Tensor, real: builtins.bool = False) -> Tensor:
    """A host result as an array on ``like``'s device, of ``like``'s dtype (or its real
    counterpart: eigenvalues of Hermitian matrices, singular values, logabsdet)."""
    dtype = like.dtype.to_real() if real else like.dtype
    return _tensor(np.array(value, dtype=_d.numpy_dtype(dtype), order="C"), dtype=dtype, device=like.device)


def cholesky(x: Tensor, /, *, upper: builtins.bool = False) -> Tensor:
    """The Cholesky factor L (x = L L^T), or U = L^T when ``upper``."""
    _float_matrix(x, "cholesky", square=True)
    lower = np.linalg.cholesky(_host(x))
    return _back(np.swapaxes(lower, -1, -2) if upper else lower, x)


def det(x: Tensor, /) -> Tensor:
    """Determinants of the square matrices in x."""
    _float_matrix(x, "det", square=True)
    return _back(np.linalg.det(_host(x)), x)


def slogdet(x: Tensor, /) -> SlogdetResult:
    """Sign and log of the absolute value of the determinants."""
    _float_matrix(x, "slogdet", square=True)
    sign, logabs = np.linalg.slogdet(_host(x))
    return SlogdetResult(_back(sign, x), _back(logabs, x, real=True))


def eigh(x: Tensor, /) -> EighResult:
    """Eigenvalues (ascending) and eigenvectors of symmetric matrices."""
    _float_matrix(x, "eigh", square=True)
    w, v = np.linalg.eigh(_host(x))
    return EighResult(_back(w, x, real=True), _back(v, x))


def eigvalsh(x: Tensor, /) -> Tensor:
    """Eigenvalues (ascending) of symmetric matrices."""
    _float_matrix(x, "eigvalsh", square=True)
    return _back(np.linalg.eigvalsh(_host(x)), x, real=True)


def inv(x: Tensor, /) -> Tensor:
    """Inverses of the square matrices in x."""
    _float_matrix(x, "inv", square=True)
    return _back(np.linalg.inv(_host(x)), x)


def pinv(x: Tensor, /, *, rtol=None) -> Tensor:
    """Moore-Penrose pseudo-inverses; singular values below rtol * largest count as zero
    (default rtol: machine epsilon times max(M, N))."""
    _float_matrix(x, "pinv")
    if rtol is None:
        rtol = d.finfo(x.dtype).eps * builtins.max(x.shape[-2:])
    rcond = _host(rtol) if isinstance(rtol, Tensor) else rtol
    return _back(np.linalg.pinv(_host(x), rtol=rcond), x)


def matrix_rank(x: Tensor, /, *, rtol=None) -> Tensor:
    """Number of singular values above rtol * largest (default rtol: eps times max(M, N))."""
    _float_matrix(x, "matrix_rank")
    s = np.linalg.svd(_host(x), compute_uv=False)
    if rtol is None:
        rtol = d.finfo(x.dtype).eps * builtins.max(x.shape[-2:])
    tol = (_host(rtol) if isinstance(rtol, Tensor) else rtol)
    tol = np.asarray(tol)[..., None] * s.max(axis=-1, keepdims=True, initial=0)
    rank = (s > tol).sum(axis=-1)
    return _tensor(np.asarray(rank, dtype=np.int64), dtype=d.DEFAULT_INT, device=x.device)


def qr(x: Tensor, /, *, mode: str = "reduced") -> QRResult:
    """QR decomposition; ``mode`` 'reduced' (K = min(M, N) columns of Q) or 'complete'."""
    _float_matrix(x, "qr")
    if mode not in ("reduced", "complete"):
        raise ValueError(f"mode must be 'reduced' or 'complete', got {mode!r}")
    q, r = np.linalg.qr(_host(x), mode=mode)
    return QRResult(_back(q, x), _back(r, x))


def solve(x1: Tensor, x2: Tensor, /) -> Tensor:
    """The solution X of x1 @ X = x2 (x2 a vector when it is 1-D)."""
    a, b = promote_operands(check_array(x1, "x1"), check_array(x2, "x2"))
    _float_matrix(a, "solve", square=True)
    return _back(np.linalg.solve(_host(a), _host(b)), a)


def svd(x: Tensor, /, *, full_matrices: builtins.bool = True) -> SVDResult:
    """Singular value decomposition x = U diag(S) Vh, singular values descending."""
    _float_matrix(x, "svd")
    u, s, vh = np.linalg.svd(_host(x), full_matrices=full_matrices)
    return SVDResult(_back(u, x), _back(s, x, real=True), _back(vh, x))


def svdvals(x: Tensor, /) -> Tensor:
    """Singular values, descending."""
    _float_matrix(x, "svdvals")
    return _back(np.linalg.svd(_host(x), compute_uv=False), x, real=True)


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
