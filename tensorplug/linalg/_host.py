"""The host route of the decompositions: NumPy's LAPACK (numpy.linalg) on host arrays.

CPU tensors live in host memory, so :func:`to_host` hands LAPACK a view of them (no copy; NumPy
copies a non-contiguous view into LAPACK's column-major layout itself, as any LAPACK caller
must). Every other device goes through the host fallback: its operands are copied to the host,
computed there, and the results copied back to the device (docs/linalg.md says what that costs).
NumPy runs the float32 routines for float32 input and the float64 ones for float64, the dtypes
PyTorch computes in.

A backend that has a native solver (cuSOLVER, a vendor library) registers its own kernel for the
op (``linalg_inv``, ``linalg_qr``, ...) and the host route is no longer taken on its device.
"""
from __future__ import annotations

import numpy as np

from ..frontend import dtypes as _dt
from ..frontend.factories import from_numpy
from ..frontend.ops.copying import copy_from_numpy, to_numpy
from ..frontend.tensor import Tensor

__all__ = ["to_host", "to_device", "first_zero_pivot", "first_non_positive_minor"]


def to_host(t: Tensor) -> np.ndarray:
    """``t``'s values as an array: a view for host-memory devices, else a copy."""
    return to_numpy(t)


def to_device(array, like: Tensor, dtype: _dt.dtype | None = None) -> Tensor:
    """A tensor on ``like``'s device holding ``array`` as ``dtype`` (``like``'s by default)."""
    dtype = like._dtype if dtype is None else dtype
    shape = np.shape(array)
    array = np.ascontiguousarray(array, dtype=_dt.numpy_dtype(dtype)).reshape(shape)
    if like._device.type == "cpu":
        return from_numpy(array)  # LAPACK's fresh result becomes the tensor's memory: no copy
    return copy_from_numpy(array, dtype, like._device)


def first_zero_pivot(a: np.ndarray) -> int | None:
    """The 1-based index of the first exactly-zero pivot of LU with partial pivoting (LAPACK
    getrf's ``info``), or None; only called once a solver has failed, to name the culprit."""
    u = np.array(a, dtype=a.dtype, copy=True)
    n = u.shape[-1]
    first = None
    for k in range(n):
        p = k + int(np.argmax(np.abs(u[k:, k])))
        if u[p, k] == 0:
            first = k + 1 if first is None else first
            continue
        u[[k, p]] = u[[p, k]]
        u[k + 1:, k:] -= np.outer(u[k + 1:, k] / u[k, k], u[k, k:])
    return first


def first_non_positive_minor(a: np.ndarray, upper: bool) -> int:
    """The order of the first leading minor that is not positive-definite (LAPACK potrf's
    ``info``), reading the lower triangle (the upper one with ``upper``)."""
    lower = np.tril(a.T if upper else a).astype(np.float64)
    n = lower.shape[-1]
    factor = np.zeros_like(lower)
    for j in range(n):
        pivot = lower[j, j] - factor[j, :j] @ factor[j, :j]
        if not pivot > 0:  # also catches NaN
            return j + 1
        factor[j, j] = np.sqrt(pivot)
        factor[j + 1:, j] = (lower[j + 1:, j] - factor[j + 1:, :j] @ factor[j, :j]) / factor[j, j]
    return n
