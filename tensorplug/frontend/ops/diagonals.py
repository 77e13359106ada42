"""Matrix diagonals: ``diag`` (a vector into a diagonal matrix, or a matrix's diagonal out as a
vector) and ``trace``, composite over views, ``cat`` and ``sum`` (gradients for free).
"""
from __future__ import annotations

import operator

from .. import dtypes as _dt
from ..tensor import Tensor
from ._common import write_out
from ._composite import composite
from .out_rehearsal import rehearse_out

__all__ = ["diag", "trace"]


def _diagonal_matrix(vector: Tensor, offset: int) -> Tensor:
    """The square matrix of size ``n + |offset|`` with ``vector`` on diagonal ``offset``.

    Built without writing into a tensor, so autograd sees only differentiable ops: the rows of
    ``[v, 0 ... 0]`` (``size`` zeros each), laid end to end, are a flattened matrix whose main
    diagonal holds ``v``; zero rows and columns then shift it off the main diagonal.
    """
    from .joining import cat

    n = vector._shape[0]
    size = n + abs(offset)
    if n == 0:
        return vector.new_zeros((size, size))
    padded = cat([vector.unsqueeze(1), vector.new_zeros((n, n))], 1).reshape(-1)[: n * n].reshape(n, n)
    if offset > 0:
        padded = cat([vector.new_zeros((n, offset)), padded], 1)
        return cat([padded, vector.new_zeros((offset, size))], 0)
    if offset < 0:
        padded = cat([padded, vector.new_zeros((n, -offset))], 1)
        return cat([vector.new_zeros((-offset, size)), padded], 0)
    return padded


@composite("diag")
def _diag(input: Tensor, diagonal: int) -> Tensor:
    if input.ndim == 1:
        return _diagonal_matrix(input, diagonal)
    rows, cols = input._shape
    if diagonal >= cols or -diagonal >= rows:
        return input.new_zeros((0,))
    return input.diagonal(diagonal).clone()  # a copy, as PyTorch's diag returns


def diag(input, diagonal=0, *, out=None) -> Tensor:
    """For a 1-D ``input``: the square matrix with ``input`` on diagonal ``diagonal`` (above the
    main one when positive). For a 2-D ``input``: a copy of that diagonal, as a vector.

    >>> tp.diag(tp.tensor([1, 2])).tolist()
    [[1, 0], [0, 2]]
    """
    if out is not None:
        rehearse_out(diag, locals())
    if not isinstance(input, Tensor):
        raise TypeError(f"diag(): argument 'input' must be Tensor, not {type(input).__name__}")
    if input.ndim not in (1, 2):
        raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {input.ndim}D")
    return write_out("diag", out, _diag(input, operator.index(diagonal)))


@composite("trace")
def _trace(input: Tensor) -> Tensor:
    return input.diagonal().sum()


def trace(input) -> Tensor:
    """The sum of the main diagonal of a 2-D ``input`` (integers sum to int64).

    >>> tp.trace(tp.tensor([[1, 2], [3, 4]])).item()
    5
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"trace(): argument 'input' must be Tensor, not {type(input).__name__}")
    if input.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input.ndim}")
    if input._dtype is _dt.bool:
        raise RuntimeError("trace(): not implemented for 'bool'")
    return _trace(input)


#: Tensor methods this module provides: name -> function (attached by frontend.methods).
TENSOR_METHODS: dict = {"diag": diag, "trace": trace}
