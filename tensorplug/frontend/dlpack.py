"""DLPack: sharing tensors with other array libraries without copies (``tp.from_dlpack``,
``Tensor.__dlpack__``, ``Tensor.__dlpack_device__``).

CPU tensors go through NumPy, which speaks DLPack: a tensor exports a NumPy view of its own
memory (so NumPy, SciPy or PyTorch's CPU tensors read it in place), and ``from_dlpack`` wraps
whatever NumPy can import. Tensors of other devices have no DLPack device of their own here and
must be moved to the CPU first (a clear BufferError says so).
"""
from __future__ import annotations

import numpy as np

from .tensor import Tensor

__all__ = ["from_dlpack", "attach"]

_KDL_CPU = 1


def _dlpack_device(self: Tensor) -> tuple:
    if self._device.type != "cpu":
        raise BufferError(f"__dlpack_device__: tensors on {self._device} cannot be shared through DLPack; "
                          "move them to the CPU first (t.cpu())")
    return (_KDL_CPU, 0)


def _dlpack(self: Tensor, *, stream=None, max_version=None, dl_device=None, copy=None):
    _dlpack_device(self)
    if self.requires_grad:
        raise BufferError("__dlpack__: a tensor that requires grad cannot be shared; call detach() first "
                          "(as in PyTorch)")
    if self._dtype.name == "bfloat16" or self._dtype.name.startswith("float8"):
        raise BufferError(f"__dlpack__: NumPy cannot exchange {self._dtype.name} through DLPack; convert with .float() "
                          "first")
    array = self.numpy()  # a view of the tensor's memory
    kwargs = {} if max_version is None else {"max_version": max_version}
    if copy is not None:
        kwargs["copy"] = copy
    return array.__dlpack__(**kwargs)


def from_dlpack(ext_tensor, *, device=None, copy=None) -> Tensor:
    """A tensor sharing the memory of ``ext_tensor`` (any object with ``__dlpack__``, or a
    DLPack capsule's owner), without copying; ``device=`` moves it (a copy when the device
    differs), ``copy=True`` always copies, ``copy=False`` refuses any copy (the array API's rule,
    PyTorch's too)."""
    if copy is not None and not isinstance(copy, bool):
        raise TypeError(f"from_dlpack(): argument 'copy' must be bool or None, not {type(copy).__name__}")
    shared = _import_shared(ext_tensor, allow_copy=copy is not False)
    moved = shared if device is None else shared.to(device)
    if moved is not shared and copy is False:
        raise BufferError(f"from_dlpack(): copy=False, but the tensor is on {shared.device} and device={device} "
                          f"asks for a copy")
    if copy and moved is shared:
        moved = shared.clone()
    return moved


def _import_shared(ext_tensor, *, allow_copy: bool) -> Tensor:
    """``ext_tensor`` as a CPU tensor on its own memory; a read-only export is copied (it cannot
    back a tensor that may be written) when ``allow_copy``."""
    from .factories import from_numpy

    if isinstance(ext_tensor, Tensor):
        return ext_tensor
    if hasattr(ext_tensor, "__dlpack_device__"):
        device_type, _ = ext_tensor.__dlpack_device__()
        if int(device_type) != _KDL_CPU:
            raise BufferError(f"from_dlpack: the tensor lives on DLPack device type {int(device_type)}; tensorplug "
                              "imports CPU memory only")
    array = np.from_dlpack(ext_tensor)
    if not array.flags.writeable:
        if not allow_copy:
            raise BufferError("from_dlpack(): copy=False, but the export is read-only and tensorplug's tensors are "
                              "writable: a copy is needed")
        array = array.copy()
    return from_numpy(array)


def attach() -> None:
    Tensor.__dlpack__ = _dlpack
    Tensor.__dlpack_device__ = _dlpack_device
