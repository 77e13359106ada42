"""PyTorch's ``F.*_with_indices`` pooling names: the max poolings, always returning
``(output, indices)``; their ``return_indices`` argument is accepted and ignored, as there."""
from __future__ import annotations

import functools

from ._pooling import adaptive_max_pool1d, adaptive_max_pool2d, max_pool1d, max_pool2d
from ._pooling3d import adaptive_max_pool3d, max_pool3d

__all__ = ["max_pool1d_with_indices", "max_pool2d_with_indices", "max_pool3d_with_indices",
           "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices", "adaptive_max_pool3d_with_indices"]


def _with_indices(pool, arguments_before_flag: int):
    """``pool`` with ``return_indices=True`` forced; a flag given by position (after the
    ``arguments_before_flag`` others) is dropped like a keyword one."""

    @functools.wraps(pool)
    def with_indices(*args, **kwargs):
        kwargs.pop("return_indices", None)
        return pool(*args[:arguments_before_flag], return_indices=True, **kwargs)

    with_indices.__name__ = with_indices.__qualname__ = pool.__name__ + "_with_indices"
    return with_indices


max_pool1d_with_indices = _with_indices(max_pool1d, 6)
max_pool2d_with_indices = _with_indices(max_pool2d, 6)
max_pool3d_with_indices = _with_indices(max_pool3d, 6)
adaptive_max_pool1d_with_indices = _with_indices(adaptive_max_pool1d, 2)
adaptive_max_pool2d_with_indices = _with_indices(adaptive_max_pool2d, 2)
adaptive_max_pool3d_with_indices = _with_indices(adaptive_max_pool3d, 2)
