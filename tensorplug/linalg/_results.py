"""The named tuples tp.linalg's functions return, with PyTorch's type and field names
(torch.return_types.linalg_qr, ...), so that ``Q, R = ...`` and ``result.Q`` both work."""
from __future__ import annotations

from typing import NamedTuple

from ..frontend.tensor import Tensor

__all__ = ["linalg_qr", "linalg_svd", "linalg_eigh", "linalg_eig", "linalg_slogdet", "linalg_lstsq", "svd", "slogdet",
           "linalg_lu_factor", "linalg_lu_factor_ex", "linalg_lu", "geqrf"]


class linalg_qr(NamedTuple):
    Q: Tensor
    R: Tensor


class linalg_svd(NamedTuple):
    U: Tensor
    S: Tensor
    Vh: Tensor


class linalg_eigh(NamedTuple):
    eigenvalues: Tensor
    eigenvectors: Tensor


class linalg_eig(NamedTuple):
    eigenvalues: Tensor
    eigenvectors: Tensor


class linalg_slogdet(NamedTuple):
    sign: Tensor
    logabsdet: Tensor


class linalg_lstsq(NamedTuple):
    solution: Tensor
    residuals: Tensor
    rank: Tensor
    singular_values: Tensor


class svd(NamedTuple):
    """torch.svd's result: V, not its transpose."""

    U: Tensor
    S: Tensor
    V: Tensor


class slogdet(NamedTuple):
    sign: Tensor
    logabsdet: Tensor


class linalg_lu_factor(NamedTuple):
    LU: Tensor
    pivots: Tensor


class linalg_lu_factor_ex(NamedTuple):
    LU: Tensor
    pivots: Tensor
    info: Tensor


class linalg_lu(NamedTuple):
    P: Tensor
    L: Tensor
    U: Tensor


class geqrf(NamedTuple):
    """torch.geqrf's result: R on and above ``a``'s diagonal, the Householder vectors below; ``tau``."""

    a: Tensor
    tau: Tensor
