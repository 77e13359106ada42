"""NumPy-style joining and splitting: ``hstack``, ``vstack`` (``row_stack``), ``dstack``,
``column_stack``, ``concat``/``concatenate`` (cat's aliases) and ``tensor_split``, ``hsplit``,
``vsplit``, ``dsplit``. Joins are ``cat`` after PyTorch's reshapes; splits return views.
"""
from __future__ import annotations

import operator

from .. import dtypes as _dt
from ..shapes import normalize_dim
from ..meta_device import refuse_data_dependent
from ..tensor import Tensor
from ..views import slice_dim
from .joining import cat
from ._numpy_names import axis_as_dim
from .shaping import atleast_1d, atleast_2d, atleast_3d

__all__ = [
    "hstack", "vstack", "row_stack", "dstack", "column_stack", "concat", "concatenate", "tensor_split", "hsplit",
    "vsplit", "dsplit",
]


def _tensor_list(op: str, tensors) -> list:
    if isinstance(tensors, Tensor) or not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{op}(): argument 'tensors' (position 1) must be tuple of Tensors, not {type(tensors).__name__}")
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError(f"{op} expects a non-empty TensorList")
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}(): expected Tensor as element {i} in argument 0, but got {type(t).__name__}")
    return tensors


def _at_least(lift, tensors: list) -> list:
    lifted = lift(*tensors)
    return list(lifted) if isinstance(lifted, (list, tuple)) else [lifted]


def hstack(tensors, *, out=None) -> Tensor:
    """Join along the second dim (the first for 1-D tensors); 0-d tensors count as 1-D.

    >>> tp.hstack([tp.tensor([1, 2]), tp.tensor([3])]).tolist()
    [1, 2, 3]
    """
    parts = _at_least(atleast_1d, _tensor_list("hstack", tensors))
    return cat(parts, 0 if parts[0].ndim == 1 else 1, out=out)


def vstack(tensors, *, out=None) -> Tensor:
    """Join along the first dim after making every tensor at least 2-D (a vector is a row).

    >>> tp.vstack([tp.tensor([1, 2]), tp.tensor([3, 4])]).tolist()
    [[1, 2], [3, 4]]
    """
    return cat(_at_least(atleast_2d, _tensor_list("vstack", tensors)), 0, out=out)


def row_stack(tensors, *, out=None) -> Tensor:
    """Alias of :func:`vstack`."""
    return cat(_at_least(atleast_2d, _tensor_list("row_stack", tensors)), 0, out=out)


def dstack(tensors, *, out=None) -> Tensor:
    """Join along the third dim after making every tensor at least 3-D."""
    return cat(_at_least(atleast_3d, _tensor_list("dstack", tensors)), 2, out=out)


def column_stack(tensors, *, out=None) -> Tensor:
    """Join along the second dim, vectors and scalars becoming columns.

    >>> tp.column_stack([tp.tensor([1, 2]), tp.tensor([3, 4])]).tolist()
    [[1, 3], [2, 4]]
    """
    parts = [t.reshape(t.numel(), 1) if t.ndim <= 1 else t for t in _tensor_list("column_stack", tensors)]
    return cat(parts, 1, out=out)


def concat(tensors, dim=0, *, out=None, axis=None) -> Tensor:
    """Alias of :func:`cat`."""
    if axis is not None:
        dim = axis_as_dim("concat", dim, axis, 0)
    return cat(tensors, dim, out=out)


def concatenate(tensors, axis=0, out=None, *, dim=None) -> Tensor:
    """Alias of :func:`cat` with NumPy's argument name ``axis`` (PyTorch's ``dim`` is accepted too)."""
    if dim is not None:
        axis = axis_as_dim("concatenate", axis, dim, 0)
    return cat(tensors, axis, out=out)


def _split_points(op: str, indices_or_sections, size: int):
    """The sections count (an int) or the list of split indices from tensor_split's argument."""
    if isinstance(indices_or_sections, Tensor):
        t = indices_or_sections
        if t._dtype is not _dt.int64:
            raise RuntimeError(f"{op} expected tensor_indices_or_sections to have dtype of long, but got {t._dtype.name}")
        if t.ndim > 1:
            raise RuntimeError(f"{op} expected tensor_indices_or_sections to be a zero-dimensional or one-dimensional "
                               f"tensor, but got a tensor with {t.ndim} dims")
        refuse_data_dependent(f"{op}() with a tensor of split points", t)
        return t.item() if t.ndim == 0 else [int(i) for i in t.tolist()]
    if isinstance(indices_or_sections, (list, tuple)):
        return [operator.index(i) for i in indices_or_sections]
    return operator.index(indices_or_sections)


def tensor_split(input, indices_or_sections=None, dim=0, axis=None, *, sections=None, indices=None) -> tuple:
    """Views of ``input`` split along ``dim``: into that many nearly equal parts (the first
    ``size % n`` one longer), or at the listed indices (slice semantics: out-of-range indices
    give empty parts, negative ones count from the end).

    >>> [p.tolist() for p in tp.tensor_split(tp.arange(7), 3)]
    [[0, 1, 2], [3, 4], [5, 6]]
    """
    if sections is not None or indices is not None or indices_or_sections is None:
        indices_or_sections = _sections_or_indices("tensor_split", indices_or_sections, sections, indices)
    if axis is not None:
        dim = axis_as_dim("tensor_split", dim, axis, 0)
    if not isinstance(input, Tensor):
        raise TypeError(f"tensor_split(): argument 'input' must be Tensor, not {type(input).__name__}")
    if input.ndim == 0:
        raise RuntimeError("tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims")
    d = normalize_dim("tensor_split", dim, input.ndim)
    size = input._shape[d]
    points = _split_points("tensor_split", indices_or_sections, size)
    if isinstance(points, int):
        if points <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {points}")
        base, extra = divmod(size, points)
        bounds, start = [], 0
        for i in range(points):
            end = start + base + (1 if i < extra else 0)
            bounds.append((start, end))
            start = end
    else:
        edges = [0, *points, size]
        bounds = []
        for start, end in zip(edges[:-1], edges[1:]):
            first, last, _ = slice(start, end).indices(size)
            bounds.append((first, max(first, last)))
    return tuple(slice_dim(input, d, start, end, 1) for start, end in bounds)


def _numpy_split(op: str, input, indices_or_sections, dim: int, min_dims: int) -> tuple:
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(input).__name__}")
    if input.ndim < min_dims:
        raise RuntimeError(f"torch.{op} requires a tensor with at least {min_dims} dimension, but got a tensor with "
                           f"{input.ndim} dimensions!")
    if not isinstance(indices_or_sections, (list, tuple, Tensor)):
        sections = operator.index(indices_or_sections)
        size = input._shape[dim]
        if sections == 0 or size % sections != 0:
            raise RuntimeError(f"torch.{op} attempted to split along dimension {dim}, but the size of the dimension "
                               f"{size} is not divisible by the split_size {sections}!")
    return tensor_split(input, indices_or_sections, dim)


def _sections_or_indices(op: str, indices_or_sections, sections, indices):
    """The one split argument, from the positional or PyTorch's keywords ``sections=`` (a count)
    and ``indices=`` (split points)."""
    given = [v for v in (indices_or_sections, sections, indices) if v is not None]
    if len(given) != 1:
        raise TypeError(f"{op}(): give exactly one of a sections count (sections=) or split indices (indices=)")
    return given[0]


def hsplit(input, indices_or_sections=None, *, sections=None, indices=None) -> tuple:
    """:func:`tensor_split` along the second dim (the first of a 1-D tensor); a sections count
    must divide that dim."""
    dim = 1 if isinstance(input, Tensor) and input.ndim > 1 else 0
    split = _sections_or_indices("hsplit", indices_or_sections, sections, indices)
    return _numpy_split("hsplit", input, split, dim, 1)


def vsplit(input, indices_or_sections=None, *, sections=None, indices=None) -> tuple:
    """:func:`tensor_split` along the first dim of a tensor of at least 2 dims."""
    split = _sections_or_indices("vsplit", indices_or_sections, sections, indices)
    return _numpy_split("vsplit", input, split, 0, 2)


def dsplit(input, indices_or_sections=None, *, sections=None, indices=None) -> tuple:
    """:func:`tensor_split` along the third dim of a tensor of at least 3 dims."""
    split = _sections_or_indices("dsplit", indices_or_sections, sections, indices)
    return _numpy_split("dsplit", input, split, 2, 3)


#: Tensor methods this module provides: name -> function (attached by frontend.methods).
TENSOR_METHODS: dict = {name: globals()[name] for name in ("tensor_split", "hsplit", "vsplit", "dsplit")}
