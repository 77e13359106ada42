"""Shrinkage activations: ``hardshrink`` (zero inside [-lambd, lambd]) and ``softshrink`` (also
moves the rest towards zero by lambd). Composites over where, so every backend has them."""
from __future__ import annotations

from ..frontend.ops.elementwise import UNARY, where
from ._activations import check_floating

__all__ = ["hardshrink", "softshrink"]


def hardshrink(input, lambd=0.5):
    """``x`` where ``|x| > lambd``, else 0.

    >>> F.hardshrink(tp.tensor([0.5, -0.6]), 0.5).tolist()
    [0.0, -0.6000000238418579]
    """
    check_floating("hardshrink", input)
    return where(UNARY["abs"](input) > lambd, input, 0.0)


def softshrink(input, lambd=0.5):
    """``x - lambd`` above lambd, ``x + lambd`` below -lambd, else 0 (lambd >= 0)."""
    check_floating("softshrink", input)
    if not lambd >= 0:
        raise RuntimeError(f"lambda must be in range [0, 3.40282e+38] for input dtype {input._dtype.name}, but found {lambd}")
    return where(input > lambd, input - lambd, where(input < -lambd, input + lambd, 0.0))
