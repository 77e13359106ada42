"""The Kronecker product ``kron``, composite: a broadcast product of interleaved views, reshaped
(gradients for free)."""
from __future__ import annotations

from ..tensor import Tensor
from ._common import check_same_device, write_out
from ._composite import composite
from .out_rehearsal import rehearse_out

__all__ = ["kron"]


@composite("kron")
def _kron(input: Tensor, other: Tensor) -> Tensor:
    ndim = max(input.ndim, other.ndim)
    a_shape = (1,) * (ndim - input.ndim) + input._shape
    b_shape = (1,) * (ndim - other.ndim) + other._shape
    # input as (a0, 1, a1, 1, ...) times other as (1, b0, 1, b1, ...): element [i0, j0, i1, j1, ...]
    # is input[i] * other[j], which the reshape lays out at index i * b + j on each dim.
    a = input.reshape(tuple(s for size in a_shape for s in (size, 1)))
    b = other.reshape(tuple(s for size in b_shape for s in (1, size)))
    return (a * b).reshape(tuple(x * y for x, y in zip(a_shape, b_shape)))


def kron(input: Tensor, other: Tensor, *, out=None) -> Tensor:
    """The Kronecker product: block ``[i]`` of the result is ``input[i] * other`` (the shorter
    shape is padded with leading ones; dtypes promote as in multiplication).

    >>> tp.kron(tp.tensor([1, 2]), tp.tensor([1, 10])).tolist()
    [1, 10, 2, 20]
    """
    if out is not None:
        rehearse_out(kron, locals())
    for name, value in (("input", input), ("other", other)):
        if not isinstance(value, Tensor):
            raise TypeError(f"kron(): argument '{name}' must be Tensor, not {type(value).__name__}")
    check_same_device("kron", input, other)
    return write_out("kron", out, _kron(input, other))


#: Tensor methods this module provides: name -> function (attached by frontend.methods).
TENSOR_METHODS: dict = {"kron": kron}
