"""Memory formats: which order a dense tensor's elements lie in memory (PyTorch's
``torch.memory_format``).

A channels-last tensor is an ordinary strided tensor whose strides put the channel dim innermost
(NHWC for 4-d, NDHWC for 5-d) while its shape stays NCHW; kernels read any strides, so every op
accepts it. Ops other than ``clone``, ``contiguous``, ``to`` and the ``*_like`` factories return
contiguous results (docs/deviations.md).
"""
from __future__ import annotations

from .shapes import contiguous_strides

__all__ = [
    "memory_format", "contiguous_format", "channels_last", "channels_last_3d", "preserve_format",
    "check_memory_format", "format_strides", "is_contiguous_as", "suggest_format",
]


class memory_format:
    """One of ``tp.contiguous_format``, ``tp.channels_last``, ``tp.channels_last_3d``,
    ``tp.preserve_format``; compared by identity."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"tensorplug.{self.name}"

    def __reduce__(self):
        return self.name  # pickles as the module-level singleton


contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")
preserve_format = memory_format("preserve_format")

# The dim order of each channels-last format, innermost first (1 = channels).
_ORDER = {channels_last: (1, 3, 2, 0), channels_last_3d: (1, 4, 3, 2, 0)}


def check_memory_format(op: str, fmt) -> memory_format:
    """``fmt`` itself when it is a memory format (None means preserve_format), else TypeError."""
    if fmt is None:
        return preserve_format
    if not isinstance(fmt, memory_format):
        raise TypeError(f"{op}(): argument 'memory_format' must be tensorplug.memory_format, not {type(fmt).__name__}")
    return fmt


def _check_rank(fmt: memory_format, ndim: int) -> None:
    rank = len(_ORDER[fmt])
    if ndim != rank:
        raise RuntimeError(f"required rank {rank} tensor to use {fmt.name} format")


def format_strides(shape: tuple, fmt: memory_format) -> tuple:
    """The strides of a dense tensor of ``shape`` laid out in ``fmt`` (contiguous or channels-last)."""
    if fmt is contiguous_format:
        return contiguous_strides(shape)
    _check_rank(fmt, len(shape))
    strides = [0] * len(shape)
    expected = 1
    for d in _ORDER[fmt]:
        strides[d] = expected
        expected *= shape[d]  # PyTorch's channels-last strides: an empty dim zeroes the outer ones
    return tuple(strides)


def is_contiguous_as(shape: tuple, stride: tuple, fmt: memory_format) -> bool:
    """Whether ``shape``/``stride`` is dense in ``fmt``'s order; size-1 dims may have any stride.
    A channels-last format on a tensor of another rank answers False, as PyTorch does."""
    if fmt is contiguous_format or fmt is preserve_format:
        order = tuple(reversed(range(len(shape))))
    elif len(shape) != len(_ORDER[fmt]):
        return False
    else:
        order = _ORDER[fmt]
    expected = 1
    for d in order:
        if shape[d] != 1:
            if stride[d] != expected:
                return False
            expected *= shape[d]
    return True


def suggest_format(shape: tuple, stride: tuple) -> memory_format:
    """What ``preserve_format`` keeps: a channels-last layout that is not also contiguous, else
    contiguous (PyTorch keeps any dense permutation; we keep only these two, docs/deviations.md)."""
    rank = len(shape)
    if rank == 4 or rank == 5:
        fmt = channels_last if rank == 4 else channels_last_3d
        if is_contiguous_as(shape, stride, fmt) and not is_contiguous_as(shape, stride, contiguous_format):
            return fmt
    return contiguous_format
