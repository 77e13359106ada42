"""Chained products and the matrix exponential, composites over matmul (gradients for free, every
device): ``linalg.multi_dot``, ``chain_matmul`` (PyTorch's deprecated spelling) and
``linalg.matrix_exp``.

``matrix_exp`` scales each matrix by ``2**-s`` until its 1-norm is at most 1, sums the Taylor
series to degree 18 (float64, complex128; truncation below 1e-17 relative) or 10 (float32,
complex64; below 3e-8), then squares the result ``s`` times. ``s`` is chosen per matrix of a
batch from values taken without gradient, so the derivative is the series' own, which matches
exp's to the same precision.
"""
from __future__ import annotations

import warnings

from ..frontend import dtypes as _dt
from ..frontend.factories import eye
from ..frontend.ops._common import write_out
from ..frontend.meta_device import has_values
from ..frontend.tensor import Tensor
from ._checks import check_float, check_square, check_tensor
from ..frontend.ops.out_rehearsal import rehearse_out

__all__ = ["multi_dot", "chain_matmul", "matrix_exp"]

# PyTorch names dtypes by their C++ type names in multi_dot's message.
_CPP_TYPE_NAMES = {
    "float32": "float", "float64": "double", "float16": "c10::Half", "bfloat16": "c10::BFloat16", "int64": "long int",
    "int32": "int", "int16": "short int", "int8": "signed char", "uint8": "unsigned char", "bool": "bool",
    "complex64": "c10::complex<float>", "complex128": "c10::complex<double>",
}


def multi_dot(tensors, *, out=None) -> Tensor:
    """The product of two or more matrices, ``tensors[0] @ tensors[1] @ ...``; the first may be
    a row vector and the last a column vector given as 1-D tensors (the result drops those dims).
    The products run left to right (PyTorch picks the cheapest order; the values agree up to
    rounding).

    >>> tp.linalg.multi_dot([tp.ones(3), tp.ones(3, 2), tp.ones(2)]).item()
    6.0
    """
    if out is not None:
        rehearse_out(multi_dot, locals())
    if isinstance(tensors, Tensor) or not isinstance(tensors, (list, tuple)):
        raise TypeError(f"linalg_multi_dot(): argument 'tensors' (position 1) must be tuple of Tensors, "
                        f"not {type(tensors).__name__}")
    count = len(tensors)
    if count < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {count}")
    for i, t in enumerate(tensors):
        check_tensor("linalg_multi_dot", t, "tensors")
        if 0 < i < count - 1 and t.ndim != 2:
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D but got {t.ndim}D")
    first, last = tensors[0], tensors[-1]
    if first.ndim not in (1, 2):
        raise RuntimeError(f"multi_dot(): the first tensor must be 1D or 2D but got {first.ndim}D")
    if last.ndim not in (1, 2):
        raise RuntimeError(f"multi_dot(): the last tensor must be 1D or 2D but got {last.ndim}D")
    for i, t in enumerate(tensors[1:], 1):
        if t._dtype is not first._dtype:
            raise RuntimeError(f"multi_dot(): all tensors must have be the same dtype but tensor 0 is "
                               f"{_CPP_TYPE_NAMES.get(first._dtype.name, first._dtype.name)} and tensor {i} "
                               f"{_CPP_TYPE_NAMES.get(t._dtype.name, t._dtype.name)}")
    matrices = list(tensors)
    if first.ndim == 1:
        matrices[0] = first.unsqueeze(0)
    if last.ndim == 1:
        matrices[-1] = last.unsqueeze(-1)
    for i in range(count - 1):
        a, b = matrices[i], matrices[i + 1]
        if a._shape[1] != b._shape[0]:
            raise RuntimeError(f"multi_dot(): tensors {i} and {i + 1} with shapes {list(tensors[i]._shape)} and "
                               f"{list(tensors[i + 1]._shape)} cannot be multiplied")
    result = matrices[0]
    for matrix in matrices[1:]:
        result = result @ matrix
    if first.ndim == 1:
        result = result.squeeze(0)
    if last.ndim == 1:
        result = result.squeeze(-1)
    return write_out("linalg.multi_dot", out, result)


def chain_matmul(*matrices, out=None) -> Tensor:
    """The product of the given 2-D matrices (deprecated in PyTorch, with a warning: use
    :func:`tp.linalg.multi_dot`, which takes a list)."""
    if out is not None:
        rehearse_out(chain_matmul, locals())
    warnings.warn(
        "torch.chain_matmul is deprecated and will be removed in a future PyTorch release. Use torch.linalg.multi_dot "
        "instead, which accepts a list of two or more tensors rather than multiple parameters.",
        UserWarning,
        stacklevel=2,
    )
    if not matrices:
        raise RuntimeError("chain_matmul(): Expected one or more matrices")
    for t in matrices:
        check_tensor("chain_matmul", t, "matrices")
        if t.ndim != 2:
            raise RuntimeError(f"Tensor dimension is {t.ndim}, expected 2 instead.")
    if len(matrices) == 1:
        return write_out("chain_matmul", out, matrices[0].clone())
    return write_out("chain_matmul", out, multi_dot(list(matrices)))


def _taylor_degree(dtype) -> int:
    return 18 if dtype in (_dt.float64, _dt.complex128) else 10


def matrix_exp(A, *, out=None) -> Tensor:
    """The matrix exponential ``sum_k A^k / k!`` of each square matrix in ``A`` (batches
    allowed; float32, float64 and complex), by scaling and squaring a Taylor polynomial.

    >>> tp.linalg.matrix_exp(tp.zeros(2, 2)).tolist()
    [[1.0, 0.0], [0.0, 1.0]]
    """
    if out is not None:
        rehearse_out(matrix_exp, locals())
    op = "linalg.matrix_exp"
    check_tensor("linalg_matrix_exp", A)
    check_square(op, A)
    check_float(op, A)
    n = A._shape[-1]
    if A.numel() == 0:
        return write_out(op, out, A.clone())
    # s per matrix: the smallest s >= 0 with ||A / 2**s||_1 <= 1 (from values without gradient).
    norms = A.detach().abs().sum(-2).amax(-1)
    steps = norms.log2().ceil().clamp_min(0)
    # A meta tensor has no norm: its result's metadata is the Taylor polynomial's, unsquared.
    squarings = int(steps.max().item()) if has_values(A) else 0
    scale = (-steps).exp2().to(A.real.dtype if A._dtype.is_complex else A._dtype)
    scaled = A * scale.unsqueeze(-1).unsqueeze(-1)
    identity = eye(n, dtype=A._dtype, device=A._device)
    # Horner: I + X (I + X/2 (I + X/3 (... (I + X/m)))).
    degree = _taylor_degree(A._dtype)
    result = identity + scaled * (1.0 / degree)
    for k in range(degree - 1, 0, -1):
        result = identity + (scaled @ result) * (1.0 / k)
    for step in range(squarings):
        # Only the matrices scaled by more than `step` halvings are squared again.
        squared = result @ result
        more = (steps > step).unsqueeze(-1).unsqueeze(-1)
        result = squared if bool(more.all().item()) else squared.where(more, result)
    return write_out(op, out, result)
