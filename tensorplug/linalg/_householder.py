"""Householder reflectors ``H_i = I - tau_i v_i v_i^H``, ``v_i`` column i of ``A`` below the
diagonal with a 1 on it, as LAPACK stores a QR decomposition (issue 13):

- ``geqrf``: A's reflectors and R in one matrix, and ``tau`` (LAPACK's geqrf, on the host route);
- ``linalg.householder_product``: the first n columns of ``H_1 H_2 ... H_k`` (orgqr/ungqr);
- ``ormqr``: the full ``Q = H_1 ... H_k`` (or its conjugate transpose) times another matrix.

The last two are composites: the reflectors are applied one at a time with matmuls, so they run
on every device and autograd differentiates them (k small steps).
"""
from __future__ import annotations

import numpy as np

from ..frontend.ops._common import check_same_device, write_out
from ..frontend.ops.elementwise import COMPARE, where
from ..frontend.tensor import Tensor
from . import _results
from ._checks import check_float, check_tensor, scalar_type_name
from ._host import to_device, to_host
from ._op import linalg_op
from ..frontend.ops.out_rehearsal import rehearse_out

__all__ = ["geqrf", "householder_product", "ormqr"]


def _geqrf_backward(grads, inputs, outputs, needs):
    raise RuntimeError("the derivative for 'geqrf' is not implemented.")


@linalg_op("geqrf", derivative=_geqrf_backward)
def _geqrf(A):
    m, n = A._shape[-2:]
    if m == 0 or n == 0:  # LAPACK has nothing to do; NumPy refuses empty matrices
        return A.clone(), A.new_empty(A._shape[:-2] + (0,))
    # NumPy's 'raw' mode is LAPACK's geqrf, its matrix in Fortran order (transposed here).
    reflectors, tau = np.linalg.qr(to_host(A), mode="raw")
    return to_device(np.swapaxes(reflectors, -1, -2), A), to_device(tau, A)


def geqrf(input, *, out=None) -> _results.geqrf:
    """LAPACK's QR decomposition of ``input`` (``(*, m, n)``) in its compact form: ``a`` holds R on
    and above the diagonal and the Householder vectors below it, ``tau`` their scales; use
    ``linalg.householder_product(a, tau)`` for Q. Not differentiable (as in PyTorch)."""
    if out is not None:
        rehearse_out(geqrf, locals())
    op = "torch.geqrf"
    check_tensor(op, input)
    if input.ndim < 2:
        raise RuntimeError(f"{op}: input must have at least 2 dimensions.")
    check_float(op, input)
    a, tau = _geqrf(input)
    if out is not None:
        a, tau = (write_out(op, o, r) for o, r in zip(out, (a, tau)))
    return _results.geqrf(a, tau)


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


def ormqr(input, tau, other, left=True, transpose=False, *, out=None) -> Tensor:
    """``Q @ other`` (``other @ Q`` when not ``left``; ``Q^H`` when ``transpose``), where
    ``Q = H_1 ... H_k`` is the full m x m product of the reflectors that ``geqrf`` left in
    ``input`` (``(*, m, n)``) and ``tau`` (``(*, k)``, ``k <= n``)."""
    if out is not None:
        rehearse_out(ormqr, locals())
    op = "torch.ormqr"
    check_tensor(op, input, "input")
    check_tensor(op, tau, "tau")
    check_tensor(op, other, "other")
    if input.ndim < 2 or other.ndim < 2:
        raise RuntimeError(f"{op}: input and other must have at least 2 dimensions; got {input.ndim} and {other.ndim}")
    m = input._shape[-2]
    side = other._shape[-2] if left else other._shape[-1]
    if side != m:
        which = "other.shape[-2]" if left else "other.shape[-1]"
        raise RuntimeError(f"{op}: {which} must be equal to input.shape[-2] when left={left}; got {side} and {m}")
    if tau._shape[-1:] and tau._shape[-1] > input._shape[-1]:
        raise RuntimeError(f"{op}: tau.shape[-1] must be less than or equal to input.shape[-1]; got "
                           f"{tau._shape[-1]} and {input._shape[-1]}")
    if tau.ndim != input.ndim - 1 or tau._shape[:-1] != input._shape[:-2] or other._shape[:-2] != input._shape[:-2]:
        raise RuntimeError(f"{op}: the batch dimensions of input {list(input._shape)}, tau {list(tau._shape)} and other "
                           f"{list(other._shape)} must be equal")
    check_float(op, input)
    for name, t in (("tau", tau), ("other", other)):
        if t._dtype is not input._dtype:
            raise RuntimeError(f"{op}: Expected input and {name} to have the same dtype, but input has dtype "
                               f"{scalar_type_name(input._dtype)} and {name} has dtype {scalar_type_name(t._dtype)}")
    check_same_device(op, input, tau, other)
    from ..frontend.factories import arange

    rows = arange(m, device=input._device)
    k = tau._shape[-1]
    # Q C applies H_k first; Q^H C applies H_1^H first; C Q applies H_1 first; C Q^H applies H_k^H first.
    order = range(k) if left == transpose else reversed(range(k))
    result = other
    for i in order:
        v = where(COMPARE["gt"](rows, i), input[..., :, i], COMPARE["eq"](rows, i).to(input._dtype)).unsqueeze(-1)
        scale = tau[..., i:i + 1].unsqueeze(-1)
        if transpose:
            scale = scale.conj()
        if left:
            result = result - scale * (v @ (v.mH @ result))
        else:
            result = result - scale * ((result @ v) @ v.mH)
    return write_out(op, out, result)
