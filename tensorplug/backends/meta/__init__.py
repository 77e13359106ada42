"""The ``meta`` device: tensors with a shape, a dtype and strides, and no values.

PyTorch's ``device="meta"`` builds a model without memory (``with tp.device("meta"): Net()``,
then ``Module.to_empty(device="cpu")`` and a state dict) and infers shapes without computing
(``f(tp.empty(8, 3, device="meta")).shape``). Here it is an ordinary backend of the plugin
architecture: the frontend checks every op and allocates its output with the right shape,
dtype and strides before it calls a kernel, so a backend whose storages hold no memory and whose
kernels do nothing gives every op, composite decompositions and autograd included, its correct
metadata for free. The few composite ops whose decomposition computes on host arrays (FFT, the
linalg factorizations) get kernels that only allocate their results (``composite_kernels.py``).

What a meta tensor cannot do is give values: ``to_host`` raises PyTorch's NotImplementedError.
The frontend skips the checks that read values (index bounds) on meta tensors and refuses the
ops whose output shape depends on values (``nonzero``, ``unique``, boolean masks) with a
NotImplementedError naming the op (``frontend/meta_device.py``). The device is no accelerator:
``tp.accelerator`` and the device modules skip it, and the conformance suite refuses it.
"""
from __future__ import annotations

from typing import Any, Callable

from ...plugins import hookimpl
from ..api import EXTRA_DTYPES, OPTIONAL_DTYPES, PRIMITIVES, REQUIRED_DTYPES, Backend

__all__ = ["MetaBackend", "MetaStorage", "NO_DATA_MESSAGE", "plugin"]

#: PyTorch's words when a meta tensor's values are asked for (``.cpu()``, ``.tolist()``).
NO_DATA_MESSAGE = "Cannot copy out of meta tensor; no data!"


class MetaStorage:
    """A storage of ``nbytes`` bytes that holds no memory; its address reads as 0, as PyTorch's."""

    __slots__ = ("nbytes", "__weakref__")
    data_ptr = 0

    def __init__(self, nbytes: int) -> None:
        self.nbytes = nbytes

    def __repr__(self) -> str:
        return f"MetaStorage(nbytes={self.nbytes})"


def _no_op(*args: Any) -> None:
    """Every primitive: the frontend already gave the output its shape, dtype and strides, and
    there are no values to write."""


def _refuse(op: Any, args: tuple, kwargs: dict) -> None:
    """An op without a meta kernel. The default fallback would copy the arguments to the CPU,
    which meta tensors cannot do; this says which op lacks its kernel instead."""
    raise NotImplementedError(f"{op.name}: no kernel for the meta device (it would need the values of its "
                              f"inputs, which meta tensors do not have)")


class MetaBackend(Backend):
    """Storage without memory and kernels without work, for every dtype the frontend knows."""

    device_type = "meta"
    dtypes = frozenset(REQUIRED_DTYPES + OPTIONAL_DTYPES + EXTRA_DTYPES)

    def device_count(self) -> int:
        """One meta device: it has no memory to tell apart (PyTorch's meta tensors carry no index)."""
        return 1

    def allocate(self, nbytes: int, device_index: Any) -> MetaStorage:
        """A storage that records its size and reserves nothing."""
        return MetaStorage(nbytes)

    def copy_from_host(self, dst: Any, array: Any) -> None:
        """Values moved to the meta device are dropped: only the metadata travels."""

    def to_host(self, src: Any) -> Any:
        """Refused with PyTorch's error: there are no values to copy out."""
        raise NotImplementedError(NO_DATA_MESSAGE)

    def kernels(self) -> dict[str, Callable[..., Any]]:
        """No-op primitives, and the composite ops whose decompositions need host values."""
        from .composite_kernels import composite_kernels

        return {**dict.fromkeys(PRIMITIVES, _no_op), **composite_kernels()}

    def fallback(self) -> Callable[..., Any]:
        """For an op with neither a kernel here nor a decomposition: refuse it by name."""
        return _refuse


class _MetaPlugin:
    @hookimpl
    def tensorplug_register_backends(self) -> list[Backend]:
        return [MetaBackend()]


plugin = _MetaPlugin()
