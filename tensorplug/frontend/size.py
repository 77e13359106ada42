"""``tp.Size``: PyTorch's tuple of dimension sizes.

A ``Size`` is a ``tuple`` subclass, so it compares equal to (and hashes like) the plain tuple of
the same sizes, and slicing, ``+`` and ``*`` give a ``Size`` again. ``Tensor.shape`` stays a plain
tuple (docs/deviations.md says why); code that builds a ``Size`` itself, or passes one to a
factory or a legacy constructor, works as with PyTorch.
"""
from __future__ import annotations

import operator

__all__ = ["Size"]


class Size(tuple):
    """Sizes of a tensor's dimensions: ``tp.Size([2, 3])``.

    >>> tp.Size([2, 3]).numel()
    6
    """

    __slots__ = ()

    def __new__(cls, sizes=()):
        values = []
        for i, item in enumerate(sizes):
            try:
                values.append(operator.index(item))
            except TypeError:
                raise TypeError(f"Size() takes an iterable of 'int' (item {i} is '{type(item).__name__}')") from None
        return tuple.__new__(cls, values)

    def numel(self) -> int:
        """The number of elements a tensor of this shape holds."""
        count = 1
        for size in self:
            count *= size
        return count

    def __getitem__(self, index):
        result = tuple.__getitem__(self, index)
        return tuple.__new__(Size, result) if isinstance(index, slice) else result

    def __add__(self, other):
        if not isinstance(other, tuple):
            return NotImplemented
        return tuple.__new__(Size, tuple.__add__(self, other))

    def __radd__(self, other):
        if not isinstance(other, tuple):
            return NotImplemented
        return tuple.__new__(Size, tuple.__add__(other, self))

    def __mul__(self, count):
        return tuple.__new__(Size, tuple.__mul__(self, count))

    __rmul__ = __mul__

    def __repr__(self) -> str:
        return f"tensorplug.Size({list(self)})"

    def __reduce__(self):
        return (Size, (tuple(self),))
