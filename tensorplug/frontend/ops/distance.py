"""Pairwise distances between two sets of row vectors: ``cdist``, composite with an explicit
derivative.

``cdist(x1, x2, p)[..., i, j]`` is the p-norm of ``x1[..., i, :] - x2[..., j, :]``. Euclidean
distances between many rows come from one matrix product (``|a|^2 - 2 a.b + |b|^2``, as
PyTorch's ``compute_mode`` chooses); every other case forms the differences. The derivative is
written out, as PyTorch's is, so that a zero distance gives a zero gradient rather than the
0/0 that differentiating ``sqrt`` or ``pow`` at zero would give.
"""
from __future__ import annotations

import math

from ..shapes import broadcast_shapes
from ..tensor import Tensor
from ._common import check_same_device, is_number
from ._composite import composite

__all__ = ["cdist"]

COMPUTE_MODES = ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist")


def _differences(x1: Tensor, x2: Tensor) -> Tensor:
    """(..., P, R, M): every row of x1 minus every row of x2."""
    return x1.unsqueeze(-2) - x2.unsqueeze(-3)


def _euclidean_by_product(x1: Tensor, x2: Tensor) -> Tensor:
    from ..factories import ones_like
    from .joining import cat

    norm1 = (x1 * x1).sum(-1, keepdim=True)
    norm2 = (x2 * x2).sum(-1, keepdim=True)
    # One product gives -2 a.b + |a|^2 + |b|^2: the norms ride along as two extra columns.
    left = cat([x1 * -2, norm1, ones_like(norm1)], -1)
    right = cat([x2, ones_like(norm2), norm2], -1)
    return (left @ right.transpose(-2, -1)).clamp_min(0).sqrt()


def _cdist_derivative(grad, args, output, kwargs, needs):
    from .elementwise import where

    x1, x2, p, use_product = args
    if p == 0:
        return (x1 * 0 if needs[0] else None, x2 * 0 if needs[1] else None)
    if p == 2:
        ratio = where(output == 0, 0.0, grad / output)
        g1 = x1 * ratio.sum(-1, keepdim=True) - ratio @ x2 if needs[0] else None
        g2 = x2 * ratio.sum(-2).unsqueeze(-1) - ratio.transpose(-2, -1) @ x1 if needs[1] else None
        return (g1, g2)
    diff = _differences(x1, x2)
    dist = output.unsqueeze(-1)
    if p == 1:
        slope = diff.sign()
    elif math.isinf(p):
        slope = diff.sign() * (diff.abs() == dist)
    else:
        # d|d|_p / d(d_k) = sign(d_k) |d_k|^(p-1) / |d|_p^(p-1); zero where d_k or |d|_p is zero.
        slope = where((diff == 0) | (dist == 0), 0.0, diff.sign() * (diff.abs() / dist).pow(p - 1))
    weighted = slope * grad.unsqueeze(-1)
    return (weighted.sum(-2) if needs[0] else None, -weighted.sum(-3) if needs[1] else None)


@composite("cdist", derivative=_cdist_derivative, differentiable=(0, 1), save_output=True)
def _cdist(x1: Tensor, x2: Tensor, p: float, use_product: bool) -> Tensor:
    if use_product:
        return _euclidean_by_product(x1, x2)
    if x1._shape[-1] == 0:
        return x1.new_zeros(x1._shape[:-1] + (x2._shape[-2],))
    diff = _differences(x1, x2)
    if p == 0:
        return (diff != 0).sum(-1).to(x1._dtype)
    if p == 1:
        return diff.abs().sum(-1)
    if p == 2:
        return (diff * diff).sum(-1).sqrt()
    if math.isinf(p):
        return diff.abs().amax(-1)
    return diff.abs().pow(p).sum(-1).pow(1.0 / p)


def _check_operand(name: str, x) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"cdist(): argument '{name.lower()}' must be Tensor, not {type(x).__name__}")
    if x.ndim < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, {name} got: {x.ndim}D")
    if not x._dtype.is_floating_point:
        raise RuntimeError(f"cdist only supports floating-point dtypes, {name} got: {x._dtype.name}")


def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary") -> Tensor:
    """The p-norm distance between each row of ``x1`` (..., P, M) and each row of ``x2``
    (..., R, M): a (..., P, R) tensor, batch dims broadcast. ``p`` may be 0 (the count of
    differing coordinates) or ``inf``. ``compute_mode`` chooses, as in PyTorch, whether
    Euclidean distances come from a matrix product: by default when P or R exceeds 25.

    >>> tp.cdist(tp.tensor([[0.0, 0.0]]), tp.tensor([[3.0, 4.0]])).item()
    5.0
    """
    _check_operand("X1", x1)
    _check_operand("X2", x2)
    if x1._shape[-1] != x2._shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {x1._shape[-1]} X2: {x2._shape[-1]}")
    if x1._dtype is not x2._dtype:
        raise RuntimeError(f"cdist(): X1 and X2 must have the same dtype, got {x1._dtype.name} and {x2._dtype.name}")
    check_same_device("cdist", x1, x2)
    if not is_number(p) or p < 0 or math.isnan(p):
        raise RuntimeError(f"cdist only supports non-negative p values (got {p})")
    if compute_mode not in COMPUTE_MODES:
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    batch = broadcast_shapes(x1._shape[:-2], x2._shape[:-2], op="cdist")
    rows1, rows2 = x1._shape[-2], x2._shape[-2]
    use_product = p == 2 and (compute_mode == "use_mm_for_euclid_dist"
                              or (compute_mode == COMPUTE_MODES[0] and (rows1 > 25 or rows2 > 25)))
    x1 = x1.expand(*batch, *x1._shape[-2:])
    x2 = x2.expand(*batch, *x2._shape[-2:])
    return _cdist(x1, x2, float(p), use_product)
