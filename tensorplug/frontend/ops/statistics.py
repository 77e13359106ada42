"""Covariance, correlation, ``aminmax`` and ``dist``: composites over reductions and matmul.
"""
from __future__ import annotations

import warnings
from collections import namedtuple

from ..autocast_hook import autocast_function
from ..tensor import Tensor
from ._common import check_same_device, write_out
from ._numpy_names import dim_keywords
from ._pointwise_args import check_tensor, float_operand
from .elementwise import UNARY
from .out_rehearsal import rehearse_out

__all__ = ["cov", "corrcoef", "aminmax", "dist"]

aminmax_result = namedtuple("aminmax", ["min", "max"])


def _check_weights(name: str, weights, x: Tensor, integral: bool) -> None:
    observations = x._shape[1]
    check_tensor("cov", weights, name)
    if weights.ndim > 1:
        raise RuntimeError(f"cov(): expected {name} to have one or fewer dimensions but got {name} with {weights.ndim} "
                           f"dimensions")
    if weights.numel() != observations:
        raise RuntimeError(f"cov(): expected {name} to have the same numel as there are observations in the input but "
                           f"got {weights.numel()} != {observations}")
    if integral and weights._dtype.category != 1:
        raise RuntimeError(f"cov(): expected fweights to have integral dtype but got fweights with {weights._dtype.name} "
                           f"dtype")
    if not integral and not weights._dtype.is_floating_point:
        raise RuntimeError(f"cov(): expected aweights to have floating point dtype but got aweights with "
                           f"{weights._dtype.name} dtype")
    check_same_device("cov", x, weights)
    if weights.numel() and (weights < 0).any().item():
        raise RuntimeError(f"cov(): {name} cannot be negative")


def cov(input, *, correction=1, fweights=None, aweights=None) -> Tensor:
    """The covariance matrix of the variables in the rows of ``input`` (a 1-D input is one
    variable: a 0-d result), with observations in the columns, optionally weighted by frequency
    (``fweights``, integers) and importance (``aweights``); ``correction=1`` is Bessel's.

    >>> tp.cov(tp.tensor([[0.0, 1.0, 2.0], [2.0, 1.0, 0.0]])).tolist()
    [[1.0, -1.0], [-1.0, 1.0]]
    """
    check_tensor("cov", input)
    if input.ndim > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an input with {input.ndim} "
                           f"dimensions")
    x = input.reshape(1, -1) if input.ndim < 2 else input
    x = x if x._dtype.is_complex else float_operand("cov", x)
    observations = x._shape[1]
    weights = None
    if fweights is not None:
        _check_weights("fweights", fweights, x, True)
        weights = fweights.to(x._dtype)
    if aweights is not None:
        _check_weights("aweights", aweights, x, False)
        weights = aweights.to(x._dtype) if weights is None else weights * aweights.to(x._dtype)
    if weights is None:
        total = float(observations)
        mean = x.mean(1, keepdim=True)
        normalizer = total - correction
    else:
        weights = weights.reshape(-1)
        total_t = weights.sum()
        mean = (x * weights).sum(1, keepdim=True) / total_t
        total = total_t.item()
        if aweights is None:
            normalizer = total - correction
        else:
            normalizer = total - correction * (weights * aweights.to(x._dtype).reshape(-1)).sum().item() / total
    if normalizer <= 0:
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less than the number of "
                      "observations.", UserWarning, stacklevel=2)
        normalizer = 0.0
    centered = x - mean
    weighted = centered if weights is None else centered * weights
    from ..complex import conj

    result = (weighted @ conj(centered).transpose(0, 1)) / normalizer
    return result.reshape(()) if input.ndim < 2 else result


def corrcoef(input) -> Tensor:
    """Pearson's correlation coefficients of the variables in the rows of ``input``: the
    covariance scaled by the standard deviations, clipped to [-1, 1].

    >>> tp.corrcoef(tp.tensor([[0.0, 1.0, 2.0], [2.0, 1.0, 0.0]])).tolist()
    [[1.0, -1.0], [-1.0, 1.0]]
    """
    c = cov(input)
    if c.ndim == 0:
        return c / c
    deviations = UNARY["sqrt"](c.diagonal().real if c._dtype.is_complex else c.diagonal())
    c = c / deviations.unsqueeze(1) / deviations.unsqueeze(0)
    return c if c._dtype.is_complex else c.clamp(-1, 1)


def aminmax(input, *, dim=None, keepdim=False, out=None, axis=None, keepdims=None):
    """``(min, max)`` of ``input``, over ``dim`` or over every element.

    >>> tp.aminmax(tp.tensor([[1, 5], [-2, 3]]), dim=1)
    aminmax(min=tensor([ 1, -2]), max=tensor([5, 3]))
    """
    if out is not None:
        rehearse_out(aminmax, locals())
    if axis is not None or keepdims is not None:
        dim, keepdim = dim_keywords("aminmax", dim, axis, keepdim, keepdims)
    from .reductions import amax, amin

    check_tensor("aminmax", input)
    if dim is None:
        if input.numel() == 0:
            raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the operation has no "
                               "identity.")
        low, high = amin(input), amax(input)
        if keepdim:
            shape = (1,) * input.ndim
            low, high = low.reshape(shape), high.reshape(shape)
    else:
        if input.ndim and input._shape[dim] == 0:
            raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the operation has no "
                               "identity.")
        low, high = amin(input, dim, keepdim), amax(input, dim, keepdim)
    if out is not None:
        low = write_out("aminmax", out[0], low, exact_dtype=True)
        high = write_out("aminmax", out[1], high, exact_dtype=True)
    return aminmax_result(low, high)


@autocast_function("dist")
def dist(input, other, p=2) -> Tensor:
    """The p-norm of ``input - other`` (broadcast), over every element.

    >>> tp.dist(tp.tensor([0.0, 0.0]), tp.tensor([3.0, 4.0])).item()
    5.0
    """
    from .math_ops import norm

    check_tensor("dist", input)
    check_tensor("dist", other, "other")
    return norm(input - other, p)


#: Tensor methods this module provides: name -> function (attached by frontend.methods).
TENSOR_METHODS: dict = {name: globals()[name] for name in __all__}
