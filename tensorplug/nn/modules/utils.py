"""``tp.nn.modules.utils``: the argument helpers custom layers import from PyTorch's
``torch.nn.modules.utils`` (``_pair(3) == (3, 3)``), and
``consume_prefix_in_state_dict_if_present``, which strips DataParallel's ``module.`` prefix from
a checkpoint's keys."""
from __future__ import annotations

import collections.abc
from typing import Any, Callable

__all__ = ["consume_prefix_in_state_dict_if_present", "_ntuple", "_single", "_pair", "_triple", "_quadruple",
           "_reverse_repeat_tuple", "_list_with_default"]


def _ntuple(n: int, name: str = "parse") -> Callable[[Any], tuple]:
    """A converter: an iterable becomes a tuple of its items, anything else ``n`` copies of it."""

    def to_tuple(value):
        if isinstance(value, collections.abc.Iterable):
            return tuple(value)
        return (value,) * n

    to_tuple.__name__ = name
    return to_tuple


_single = _ntuple(1, "_single")
_pair = _ntuple(2, "_pair")
_triple = _ntuple(3, "_triple")
_quadruple = _ntuple(4, "_quadruple")


def _reverse_repeat_tuple(values, n: int) -> tuple:
    """Each value repeated ``n`` times, last value first: per-dim padding as ``F.pad`` lists it
    (``(1, 2)`` with ``n=2`` gives ``(2, 2, 1, 1)``)."""
    return tuple(value for value in reversed(values) for _ in range(n))


def _list_with_default(out_size, defaults) -> list:
    """``out_size`` (an int, or a list whose ``None`` entries take the trailing sizes of
    ``defaults``), as adaptive pooling reads it."""
    if isinstance(out_size, int):
        return out_size
    if len(defaults) <= len(out_size):
        raise ValueError(f"Input dimension should be at least {len(out_size) + 1}")
    trailing = defaults[len(defaults) - len(out_size):]
    return [default if size is None else size for size, default in zip(out_size, trailing)]


def consume_prefix_in_state_dict_if_present(state_dict: dict, prefix: str) -> None:
    """Strip ``prefix`` from every key of ``state_dict`` that has it, in place (and from the keys
    of its ``_metadata``, where the module itself is stored under the prefix without its dot)."""
    for key in [key for key in state_dict if key.startswith(prefix)]:
        state_dict[key[len(prefix):]] = state_dict.pop(key)
    metadata = getattr(state_dict, "_metadata", None)
    if metadata is None:
        return
    bare = prefix[:-1] if prefix.endswith(".") else prefix
    for key in list(metadata):
        if key and (key == bare or key.startswith(prefix)):
            metadata[key[len(prefix):]] = metadata.pop(key)
