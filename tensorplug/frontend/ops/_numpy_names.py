"""NumPy's spellings of the dim arguments: ``axis`` for ``dim`` and ``keepdims`` for ``keepdim``.

PyTorch's argument parser accepts these two NumPy names as keywords wherever a native function
has a ``dim`` or ``keepdim`` parameter, so code written with NumPy habits runs there unchanged:
``counts / counts.sum(1, keepdims=True)`` (Karpathy's makemore lectures), ``x.mean(axis=0)``,
``torch.cat(parts, axis=1)``, ``x.softmax(axis=-1)``. The ops here take them as extra
parameters with a None default and translate them with the functions below before doing
anything else, so their common calls pay no extra frame, only a test of ``axis``. Where an op
already has keyword-only parameters (``out=``, ``dtype=``) the NumPy names join them; where it
has none (``unsqueeze``, ``chunk``, ``Tensor.softmax``), ``axis`` is its last ordinary parameter
instead, because CPython's specialized call of a function without keyword-only parameters is
lost with the first one (measured: ``x.unsqueeze(1)`` 60 ns slower, against 10 ns this way).
Functions PyTorch writes in Python (``F.softmax``, ``torch.split``, ``torch.norm``,
``torch.unique``) do not take them there, nor here.
"""
from __future__ import annotations

from typing import Any

__all__ = ["dim_keywords", "axis_as_dim", "required_dim"]


def _both_given(op: str, name: str, numpy_name: str) -> TypeError:
    return TypeError(f"{op}(): got both '{name}' and '{numpy_name}', NumPy's name for it; give one of them")


def _dim_given(dim: Any, dim_default: Any) -> bool:
    """Whether ``dim`` was passed: a ``dim`` equal to its default cannot be told apart from no
    ``dim``, so only one that differs counts (a tensor ``dim``, as max(input, other), always does)."""
    return dim is not dim_default and not (type(dim) is type(dim_default) and dim == dim_default)


def dim_keywords(op: str, dim: Any, axis: Any, keepdim: Any, keepdims: Any, dim_default: Any = None) -> tuple:
    """``(dim, keepdim)`` with the NumPy spellings ``axis``/``keepdims`` (None when not given) folded in.

    Giving both spellings of one argument is refused, as PyTorch refuses it; only a ``dim`` that
    differs from ``dim_default`` (or a true ``keepdim``) counts as given.
    """
    if axis is not None:
        dim = axis_as_dim(op, dim, axis, dim_default)
    if keepdims is not None:
        if keepdim:
            raise _both_given(op, "keepdim", "keepdims")
        keepdim = keepdims
    return dim, keepdim


def axis_as_dim(op: str, dim: Any, axis: Any, dim_default: Any = None) -> Any:
    """The dim of an op whose ``dim`` has a default, called with ``axis`` (not None): ``axis``,
    unless a ``dim`` other than ``dim_default`` was given too, which is refused."""
    if _dim_given(dim, dim_default):
        raise _both_given(op, "dim", "axis")
    return axis


def required_dim(op: str, dim: Any, axis: Any) -> Any:
    """The dim of an op whose ``dim`` is required (None is never one): given as ``dim`` or as
    ``axis``, exactly one of them."""
    if axis is None:
        if dim is None:
            raise TypeError(f"{op}(): argument 'dim' (an int; NumPy's name 'axis' is accepted too) is required, "
                            "and None is not a dim")
        return dim
    if dim is not None:
        raise _both_given(op, "dim", "axis")
    return axis
