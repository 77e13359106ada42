"""``linalg.tensorinv``, ``linalg.tensorsolve`` (inv and solve of tensors read as matrices, as
NumPy's) and ``linalg.vander`` (the Vandermonde matrix of powers): composites over the
existing ops, so they run on every device and autograd differentiates them."""
from __future__ import annotations

import math

from ..frontend.ops._common import write_out
from ..frontend.tensor import Tensor
from ..frontend.ops.out_rehearsal import rehearse_out
from ._checks import check_tensor
from ._solvers import inv, solve

__all__ = ["tensorinv", "tensorsolve", "vander"]


def tensorinv(A, ind=2, *, out=None) -> Tensor:
    """The inverse of ``A`` read as a matrix of its first ``ind`` dims by the rest (whose
    products must be equal), shaped ``A.shape[ind:] + A.shape[:ind]``."""
    if out is not None:
        rehearse_out(tensorinv, locals())
    check_tensor("linalg.tensorinv", A)
    if ind <= 0:
        raise RuntimeError(f"linalg.tensorinv: Expected a strictly positive integer for 'ind', but got {ind}")
    rows, cols = A._shape[:ind], A._shape[ind:]
    if math.prod(rows) != math.prod(cols):
        raise RuntimeError(f"linalg.tensorinv: Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                           f"prod(self.shape[:ind]), but got {math.prod(cols)} != {math.prod(rows)}")
    return write_out("linalg.tensorinv", out, inv(A.reshape(math.prod(rows), math.prod(cols))).reshape(cols + rows))


def tensorsolve(A, B, dims=None, *, out=None) -> Tensor:
    """X with ``tensordot(A, X, X.ndim) == B``: ``A`` read as a matrix of B's dims by the rest
    (``dims`` of A moved to the end first)."""
    if out is not None:
        rehearse_out(tensorsolve, locals())
    check_tensor("linalg.tensorsolve", A)
    check_tensor("linalg.tensorsolve", B, "B")
    if dims is not None:
        moved = [d % A.ndim for d in dims]
        A = A.permute(*[d for d in range(A.ndim) if d not in moved], *moved)
    rhs, unknowns = A._shape[:B.ndim], A._shape[B.ndim:]
    if rhs != B._shape or math.prod(rhs) != math.prod(unknowns):
        raise RuntimeError(f"linalg.tensorsolve: Expected self to satisfy the requirement prod(self.shape[other.ndim:]) "
                           f"== prod(self.shape[:other.ndim]) with self.shape[:other.ndim] == other.shape; got self of "
                           f"shape {list(A._shape)} and other of shape {list(B._shape)}")
    return write_out("linalg.tensorsolve", out,
                     solve(A.reshape(math.prod(rhs), math.prod(unknowns)), B.reshape(-1)).reshape(unknowns))


def vander(x, *, N=None) -> Tensor:
    """The matrices ``[1, x, x**2, ..., x**(N-1)]`` (powers increasing along the last dim) of each
    vector in ``x``; ``N`` defaults to x's last dim."""
    from ..frontend.factories import arange

    check_tensor("linalg.vander", x, "x")
    if x.ndim < 1:
        raise RuntimeError("linalg.vander: x must have at least one dimension.")
    N = x._shape[-1] if N is None else int(N)
    if N <= 1:
        raise RuntimeError(f"linalg.vander: N must be greater than 1; got {N}")
    powers = arange(N, device=x.device)
    if x.dtype.is_floating_point or x.dtype.is_complex:
        powers = powers.to(x.dtype)
    return x.unsqueeze(-1) ** powers
