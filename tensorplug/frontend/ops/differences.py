"""Finite differences along a dim: ``diff``, composite over slicing (gradients for free)."""
from __future__ import annotations

import operator

from .. import dtypes as _dt
from ..shapes import normalize_dim
from ..tensor import Tensor
from ..views import slice_dim
from ._composite import composite
from ._numpy_names import axis_as_dim

__all__ = ["diff"]


@composite("diff")
def _diff(input: Tensor, n: int, dim: int) -> Tensor:
    from .elementwise import BINARY

    result = input
    for _ in range(n):
        length = result._shape[dim]
        if length == 0:
            break
        later, earlier = slice_dim(result, dim, 1, length, 1), slice_dim(result, dim, 0, length - 1, 1)
        # Bool has no subtraction: PyTorch's diff of bools tells where neighbours differ.
        result = BINARY["logical_xor"](later, earlier) if result._dtype is _dt.bool else later - earlier
    return result


def _check_edge(name: str, edge, input: Tensor, dim: int) -> None:
    if not isinstance(edge, Tensor):
        raise TypeError(f"diff(): argument '{name}' must be Tensor, not {type(edge).__name__}")
    if edge.ndim != input.ndim:
        raise RuntimeError(f"diff expects prepend or append to be the same dimension as input (input {input.ndim}-d, "
                           f"{name} {edge.ndim}-d)")
    for i, (a, b) in enumerate(zip(input._shape, edge._shape)):
        if i != dim and a != b:
            raise RuntimeError(f"diff expects the shape of tensor to prepend or append to match that of input except "
                               f"along the differencing dimension; input.size({i}) = {a}, but got tensor.size({i}) = {b}")


def diff(input, n=1, dim=-1, prepend=None, append=None, axis=None) -> Tensor:
    """The ``n``-th forward difference along ``dim`` (``out[i] = input[i + 1] - input[i]``,
    applied ``n`` times), after joining ``prepend`` and ``append`` to either end.

    >>> tp.diff(tp.tensor([1, 3, 6])).tolist()
    [2, 3]
    """
    if axis is not None:
        dim = axis_as_dim("diff", dim, axis, -1)
    if not isinstance(input, Tensor):
        raise TypeError(f"diff(): argument 'input' must be Tensor, not {type(input).__name__}")
    if input.ndim == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    n = operator.index(n)
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    d = normalize_dim("diff", dim, input.ndim)
    if n == 0:
        return input.clone()  # PyTorch ignores prepend and append when there is nothing to difference
    if prepend is not None or append is not None:
        from .joining import cat

        parts = []
        for name, edge in (("prepend", prepend), ("input", input), ("append", append)):
            if edge is not None:
                if edge is not input:
                    _check_edge(name, edge, input, d)
                parts.append(edge)
        input = cat(parts, d)
    return _diff(input, n, d)


#: Tensor methods this module provides: name -> function (attached by frontend.methods).
TENSOR_METHODS: dict = {"diff": diff}
