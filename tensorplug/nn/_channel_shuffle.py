"""``channel_shuffle`` (ShuffleNet): interleave the channels of ``groups`` groups; a reshape, a
transpose and a reshape, so every backend has it."""
from __future__ import annotations

import operator

from ._activations import check_tensor

__all__ = ["channel_shuffle", "native_channel_shuffle"]


def channel_shuffle(input, groups):
    """Channels (dim 1) split into ``groups`` groups and interleaved: channel ``g * k + i``
    moves to ``i * groups + g``.

    >>> F.channel_shuffle(tp.arange(6.0).reshape(1, 6, 1), 2).flatten().tolist()
    [0.0, 3.0, 1.0, 4.0, 2.0, 5.0]
    """
    check_tensor("channel_shuffle", input)
    groups = operator.index(groups)
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of groups:{groups}")
    if input.ndim < 3:
        raise RuntimeError(f"channel_shuffle expects input to have at least 3 dimensions, but got input with "
                           f"{input.ndim} dimension(s)")
    channels = input._shape[1]
    if channels % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {channels} channels and {groups} groups.")
    batch, rest = input._shape[0], input._shape[2:]
    grouped = input.reshape(batch, groups, channels // groups, *rest)
    return grouped.transpose(1, 2).reshape(input._shape)


native_channel_shuffle = channel_shuffle
