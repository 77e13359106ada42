"""NumPy's spellings of the reduction arguments: ``axis`` for ``dim`` and ``keepdims`` for ``keepdim``.

PyTorch's argument parser accepts these two NumPy names as keywords wherever a native function
has a ``dim`` or ``keepdim`` parameter, so code written with NumPy habits runs there unchanged:
``counts / counts.sum(1, keepdims=True)`` (Karpathy's makemore lectures), ``x.mean(axis=0)``.
The reductions here take them as keyword-only parameters (so their common calls pay no extra
frame) and translate them with :func:`dim_keywords` before doing anything else.
"""
from __future__ import annotations

from typing import Any

__all__ = ["dim_keywords"]


def dim_keywords(op: str, dim: Any, axis: Any, keepdim: Any, keepdims: Any, dim_default: Any = None) -> tuple:
    """``(dim, keepdim)`` with the NumPy spellings ``axis``/``keepdims`` (None when not given) folded in.

    Giving both spellings of one argument is refused, as PyTorch refuses it; a ``dim`` equal to
    its default cannot be told apart from no ``dim``, so only a ``dim`` that differs from
    ``dim_default`` (or a true ``keepdim``) counts as given.
    """
    if axis is not None:
        # A tensor `dim` (max(input, other)) is an argument given, whatever its values.
        if dim is not dim_default and not (type(dim) is type(dim_default) and dim == dim_default):
            raise TypeError(f"{op}(): got both 'dim' and 'axis', NumPy's name for it; give one of them")
        dim = axis
    if keepdims is not None:
        if keepdim:
            raise TypeError(f"{op}(): got both 'keepdim' and 'keepdims', NumPy's name for it; give one of them")
        keepdim = keepdims
    return dim, keepdim
