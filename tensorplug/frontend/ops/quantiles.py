"""Quantiles: ``quantile`` and ``nanquantile``, composite over ``sort``, ``gather`` and ``lerp``
(so gradients flow to the input through the sort, as in PyTorch).

Each line is sorted (NaN last); quantile ``q`` sits at rank ``q * (n - 1)`` of the sorted line,
``n`` counting the non-NaN values for ``nanquantile``. The interpolation mode decides how a
fractional rank becomes a value. ``quantile`` of a line with NaN is NaN (its rank is moved to
the last element, a NaN); ``nanquantile`` of an all-NaN line is NaN.
"""
from __future__ import annotations

from .. import dtypes as _dt
from ..shapes import normalize_dim
from ..tensor import Tensor
from ._common import check_same_device, is_number, write_out
from ._composite import composite
from ._numpy_names import dim_keywords
from ..autocast_hook import autocast_function
from .out_rehearsal import rehearse_out

__all__ = ["quantile", "nanquantile"]

INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


@composite("quantile")
def _quantile(input: Tensor, q: Tensor, dim, keepdim: bool, interpolation: str, ignore_nan: bool) -> Tensor:
    from .elementwise import UNARY, where
    from .math_ops import lerp
    from .sorting import _sort

    if dim is None or input.ndim == 0:
        lines = input.reshape(-1)
        reduced = (1,) * input.ndim if keepdim else ()
    else:
        lines = input.unsqueeze(-1).transpose(dim, -1)
        reduced = tuple(1 if i == dim else s for i, s in enumerate(input._shape) if keepdim or i != dim)
    n = lines._shape[-1]
    ordered = _sort(lines, lines.ndim - 1, False, True)[0].reshape(reduced + (n,))
    quantiles = q.reshape(-1)
    nan = UNARY["isnan"](ordered)
    if ignore_nan:
        counted = (~nan).sum(-1, keepdim=True)
        ranks = quantiles * (counted - 1)
        ranks = where(ranks < 0, 0, ranks)  # an all-NaN line: rank 0 holds a NaN
    else:
        ranks = where(nan.any(-1, keepdim=True), n - 1, quantiles * (n - 1))
    if interpolation == "lower":
        ranks = ranks.floor()
    elif interpolation == "higher":
        ranks = ranks.ceil()
    elif interpolation == "nearest":
        ranks = ranks.round()  # half to even, as PyTorch's round_
    below = ranks.to(_dt.int64)
    values = ordered.gather(-1, below)
    if interpolation in ("linear", "midpoint"):
        weights = ranks.new_full(ranks._shape, 0.5) if interpolation == "midpoint" else ranks - below
        values = lerp(values, ordered.gather(-1, ranks.ceil().to(_dt.int64)), weights)
    if q.ndim == 0:
        return values.squeeze(-1)
    return values.movedim(-1, 0)


def _as_q(op: str, q, input: Tensor) -> Tensor:
    from ..factories import tensor

    if isinstance(q, Tensor):
        if q.ndim > 1:
            raise RuntimeError(f"{op}() q must be a scalar or 1D tensor (got shape {list(q._shape)})")
        if q._dtype is not input._dtype:
            raise RuntimeError(f"{op}() q tensor must be same dtype as the input tensor (input {input._dtype.name}, "
                               f"q {q._dtype.name})")
        check_same_device(op, input, q)
        if q.numel() and not bool(((q >= 0) & (q <= 1)).all().item()):
            raise RuntimeError(f"{op}() q values must be in the range [0, 1]")
        return q
    if not is_number(q):
        raise TypeError(f"{op}(): argument 'q' must be Tensor or float, not {type(q).__name__}")
    if not 0 <= q <= 1:
        raise RuntimeError(f"{op}() q must be in the range [0, 1] but got {q}")
    return tensor(float(q), dtype=input._dtype, device=input._device)


@autocast_function("quantile")
def _quantile_public(op: str, input, q, dim, keepdim, interpolation, out, ignore_nan: bool) -> Tensor:
    if out is not None:
        rehearse_out(_quantile_public, locals())
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(input).__name__}")
    if input._dtype not in (_dt.float32, _dt.float64):
        raise RuntimeError(f"{op}() input tensor must be either float or double dtype (got {input._dtype.name})")
    q = _as_q(op, q, input)
    if input.numel() == 0:
        raise RuntimeError(f"{op}() input tensor must be non-empty (got shape {list(input._shape)})")
    if interpolation not in INTERPOLATIONS:
        raise RuntimeError(f"{op}() interpolation must be one of linear, lower, higher, midpoint or nearest, but got "
                           f"{interpolation}")
    d = None if dim is None else normalize_dim(op, dim, input.ndim)
    return write_out(op, out, _quantile(input, q, d, bool(keepdim), interpolation, ignore_nan))


def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None, axis=None, keepdims=None) -> Tensor:
    """The ``q``-th quantiles of ``input`` (over everything, or along ``dim``); ``q`` is a number
    or a 1-D tensor in [0, 1] (then the quantiles stack along a new first dim). A line holding
    NaN gives NaN. ``interpolation``: linear, lower, higher, midpoint or nearest.

    >>> tp.quantile(tp.tensor([1.0, 2.0, 3.0, 4.0]), 0.5).item()
    2.5
    """
    if out is not None:
        rehearse_out(quantile, locals())
    if axis is not None or keepdims is not None:
        dim, keepdim = dim_keywords("quantile", dim, axis, keepdim, keepdims)
    return _quantile_public("quantile", input, q, dim, keepdim, interpolation, out, False)


def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None, axis=None, keepdims=None) -> Tensor:
    """As :func:`quantile`, ignoring NaN (NaN only for lines that are all NaN)."""
    if out is not None:
        rehearse_out(nanquantile, locals())
    if axis is not None or keepdims is not None:
        dim, keepdim = dim_keywords("nanquantile", dim, axis, keepdim, keepdims)
    return _quantile_public("nanquantile", input, q, dim, keepdim, interpolation, out, True)


def _quantile_method(self, q, dim=None, keepdim=False, *, interpolation="linear", axis=None, keepdims=None):
    return quantile(self, q, dim, keepdim, interpolation=interpolation, axis=axis, keepdims=keepdims)


def _nanquantile_method(self, q, dim=None, keepdim=False, *, interpolation="linear", axis=None, keepdims=None):
    return nanquantile(self, q, dim, keepdim, interpolation=interpolation, axis=axis, keepdims=keepdims)


#: Tensor methods this module provides: name -> function (attached by frontend.methods).
TENSOR_METHODS: dict = {"quantile": _quantile_method, "nanquantile": _nanquantile_method}
