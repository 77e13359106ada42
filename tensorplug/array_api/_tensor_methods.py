"""The standard's array-object methods that ``tp.Tensor`` lacks: ``__array_namespace__`` and
``to_device`` (plus the reflected shifts ``__rlshift__``/``__rrshift__`` when tp has none).

Attached when ``import tensorplug`` imports this module; the namespace itself is imported on the first
``__array_namespace__`` call, so ``import tensorplug`` does not pay for it.
"""
from __future__ import annotations

import importlib

from ..frontend.tensor import Tensor

__all__ = ["attach"]

# Versions of the standard whose functions this namespace provides (each later one extends the
# earlier ones, so the 2024.12 namespace serves a caller asking for any of them).
SUPPORTED_VERSIONS = ("2021.12", "2022.12", "2023.12", "2024.12")


def _array_namespace(self: Tensor, /, *, api_version=None):
    if api_version is not None and api_version not in SUPPORTED_VERSIONS:
        raise ValueError(
            f"unsupported array API version {api_version!r}; tensorplug.array_api implements "
            f"{', '.join(SUPPORTED_VERSIONS)}"
        )
    return importlib.import_module("tensorplug.array_api")


def _to_device(self: Tensor, device, /, *, stream=None) -> Tensor:
    if stream is not None:
        raise ValueError("tensorplug has no streams: stream must be None")
    return self.to(device)


def _rlshift(self: Tensor, other) -> Tensor:
    from ..frontend.ops.elementwise import BINARY

    return BINARY["bitwise_left_shift"](other, self)


def _rrshift(self: Tensor, other) -> Tensor:
    from ..frontend.ops.elementwise import BINARY

    return BINARY["bitwise_right_shift"](other, self)


def attach() -> None:
    Tensor.__array_namespace__ = _array_namespace
    Tensor.to_device = _to_device
    # only where tp has no version of its own: its operators keep PyTorch's behaviour
    if "__rlshift__" not in vars(Tensor):
        Tensor.__rlshift__ = _rlshift
    if "__rrshift__" not in vars(Tensor):
        Tensor.__rrshift__ = _rrshift


attach()
