"""``linalg.householder_product``: the first n columns of ``H_1 H_2 ... H_k``, where
``H_i = I - tau_i v_i v_i^H`` and ``v_i`` is column i of ``A`` below the diagonal with a 1 on
it (LAPACK's orgqr/ungqr, issue 13).

A composite: the reflectors are applied to the first n columns of the identity, last one first,
with matmuls, so it runs on every device and autograd differentiates it (k small steps).
"""
from __future__ import annotations

from ..frontend.ops._common import check_same_device, write_out
from ..frontend.ops.elementwise import COMPARE, where
from ..frontend.tensor import Tensor
from ._checks import check_float, check_tensor, scalar_type_name
from ..frontend.ops.out_rehearsal import rehearse_out

__all__ = ["householder_product"]


def _check(op: str, A, tau) -> None:
    check_tensor(op, A, "input")
    check_tensor(op, tau, "tau")
    if A.ndim < 2:
        raise RuntimeError(f"{op}: input must have at least 2 dimensions.")
    if tau.ndim != A.ndim - 1 or tau._shape[:-1] != A._shape[:-2]:
        raise RuntimeError(f"{op}: Expected batch dimensions of tau to be equal to input.shape[:-2], but got "
                           f"{list(tau._shape[:-1])}")
    m, n = A._shape[-2:]
    if m < n:
        raise RuntimeError(f"{op}: input.shape[-2] must be greater than or equal to input.shape[-1]")
    if tau._shape[-1] > n:
        raise RuntimeError(f"{op}: input.shape[-1] must be greater than or equal to tau.shape[-1]")
    check_float(op, A)
    if tau._dtype is not A._dtype:
        raise RuntimeError(f"{op}: tau dtype {scalar_type_name(tau._dtype)} does not match input dtype "
                           f"{scalar_type_name(A._dtype)}")
    check_same_device(op, A, tau)


def householder_product(A, tau, *, out=None) -> Tensor:
    """The first ``n`` columns of the product of the Householder reflectors stored in ``A``
    (below its diagonal) and ``tau``, as ``geqrf`` leaves them."""
    if out is not None:
        rehearse_out(householder_product, locals())
    from ..frontend.factories import arange, eye

    op = "torch.linalg.householder_product"
    _check(op, A, tau)
    m, n = A._shape[-2:]
    Q = eye(m, n, dtype=A._dtype, device=A._device).expand(*A._shape)
    rows = arange(m, device=A._device)
    for i in reversed(range(tau._shape[-1])):
        # v_i: zeros above row i, 1 at row i, A's column i below.
        v = where(COMPARE["gt"](rows, i), A[..., :, i], COMPARE["eq"](rows, i).to(A._dtype)).unsqueeze(-1)
        Q = Q - tau[..., i:i + 1].unsqueeze(-1) * (v @ (v.mH @ Q))
    return write_out(op, out, Q)
