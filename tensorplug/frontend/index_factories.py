"""Factories of index and power tables: ``tril_indices``, ``triu_indices``, ``unravel_index``
and ``vander``."""
from __future__ import annotations

import operator

import numpy as np

from . import dtypes as _dt
from .ops._pointwise_args import check_tensor
from .tensor import Tensor, resolve_device

__all__ = ["tril_indices", "triu_indices", "unravel_index", "vander"]


def _triangle_indices(op: str, row, col, offset, dtype, device, lower: bool) -> Tensor:
    from .ops.copying import copy_from_numpy

    row, col, offset = (operator.index(v) for v in (row, col, offset))
    if row < 0:
        raise RuntimeError(f"row must be non-negative, got{row}")
    if col < 0:
        raise RuntimeError(f"col must be non-negative, got{col}")
    dtype = _dt.int64 if dtype is None else dtype
    if dtype.category != 1:
        raise NotImplementedError(f"\"{op}\" not implemented for '{dtype.name}'")
    # The host computes the (small) table once; it is copied to the device as a 2 x N tensor.
    rows, columns = (np.tril_indices if lower else np.triu_indices)(row, offset, col)
    return copy_from_numpy(np.stack([rows, columns]).astype(np.int64).reshape(2, -1), dtype, resolve_device(device))


def tril_indices(row, col, offset=0, *, dtype=None, device=None, layout=None) -> Tensor:
    """The (2, N) coordinates of the lower triangle (diagonal ``offset`` included) of a
    ``row`` x ``col`` matrix, row by row.

    >>> tp.tril_indices(2, 2).tolist()
    [[0, 1, 1], [0, 0, 1]]
    """
    return _triangle_indices("tril_indices", row, col, offset, dtype, device, True)


def triu_indices(row, col, offset=0, *, dtype=None, device=None, layout=None) -> Tensor:
    """The (2, N) coordinates of the upper triangle (diagonal ``offset`` included) of a
    ``row`` x ``col`` matrix, row by row."""
    return _triangle_indices("triu_indices", row, col, offset, dtype, device, False)


def unravel_index(indices, shape) -> tuple:
    """The coordinates in a tensor of ``shape`` of the flat (row-major) ``indices``: one tensor
    per dim. Indices wrap around the tensor's size (``-1`` is the last element), as in PyTorch.

    >>> [t.tolist() for t in tp.unravel_index(tp.tensor([5, 7]), (2, 4))]
    [[1, 1], [1, 3]]
    """
    check_tensor("unravel_index", indices, "indices")
    if indices._dtype.category != 1 and indices._dtype is not _dt.bool:
        raise TypeError(f"expected 'indices' to be integer dtype, but got {indices._dtype!r}")
    shape = (operator.index(shape),) if not isinstance(shape, (tuple, list)) else tuple(operator.index(s) for s in shape)
    if any(s < 0 for s in shape):
        raise ValueError(f"'shape' cannot have negative values, but got {shape}")
    flat = indices.to(_dt.int64)
    coordinates = []
    stride = 1
    for size in reversed(shape):
        coordinates.append((flat // stride) % size if size else flat * 0)
        stride *= size
    return tuple(reversed(coordinates))


def vander(x, N=None, increasing=False) -> Tensor:
    """The Vandermonde matrix of the 1-D ``x``: column j holds ``x ** (N - 1 - j)`` (``x ** j``
    when ``increasing``); bools and integers give int64, as in PyTorch.

    >>> tp.vander(tp.tensor([1, 2, 3])).tolist()
    [[1, 1, 1], [4, 2, 1], [9, 3, 1]]
    """
    from .ops.joining import cat

    check_tensor("vander", x, "x")
    if x.ndim != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    count = x._shape[0] if N is None else operator.index(N)
    if count < 0:
        raise RuntimeError("N must be non-negative.")
    if x._dtype.category < 2:
        x = x.to(_dt.int64)
    if count == 0:
        return x.new_empty((x._shape[0], 0))
    ones = x.new_ones((x._shape[0], 1))
    # Powers by running product (PyTorch's way), so integer powers stay exact.
    powers = cat([ones, x.unsqueeze(1).expand(x._shape[0], count - 1).cumprod(1)], 1) if count > 1 else ones
    return powers if increasing else powers.flip(1)
