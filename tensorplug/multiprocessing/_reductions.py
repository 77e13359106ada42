"""How ``multiprocessing`` pickles tensors: shared CPU tensors by descriptor, others by value.

``register()`` adds a reducer for ``Tensor`` to ``multiprocessing.reduction.ForkingPickler``,
the pickler behind ``Process`` arguments (spawn and forkserver), ``Queue`` and ``Pipe``; plain
``pickle``, ``copy.deepcopy`` and ``tp.save`` keep pickling values. ``Parameter`` pickles as
its ``detach()`` tensor, so a shared parameter arrives as a Parameter on the same memory.

The sharing strategy chooses how the receiver gets the memory file:

- ``file_descriptor``: the descriptor itself, passed as ``multiprocessing.reduction.DupFd``
  (inherited by a starting child; otherwise sent over a Unix socket by the sender's resource
  sharer thread);
- ``file_system``: the path ``/proc/<pid>/fd/<n>`` of the sender's descriptor, opened by the
  receiver (Linux; elsewhere the descriptor is passed).

Either way the sender must keep the tensor alive until it is received, as in PyTorch; the file
carries its identity (device, inode), so a freed one is reported instead of mapping another.
"""
from __future__ import annotations

import os
import weakref
from multiprocessing import context, reduction

from ..frontend import shared_memory
from ..frontend.tensor import Tensor

__all__ = ["register", "reduce_tensor"]


def reduce_tensor(t: Tensor):
    """The pickle reduction of ``t``: by descriptor when its storage is shared, else by value."""
    handle = shared_memory.shared_handle(t) if t._device.type == "cpu" else None
    if handle is None:
        return t.__reduce_ex__(4)  # values through host memory, any device
    fd, nbytes, key = handle
    from . import get_sharing_strategy

    if get_sharing_strategy() == "file_system" and os.path.isdir("/proc/self/fd"):
        source = f"/proc/{os.getpid()}/fd/{fd}"
    else:
        source = _dup_fd(fd)
    layout = (t._offset, t._shape, t._stride, t._dtype.name, t.requires_grad)
    return _rebuild_shared, (source, nbytes, key, layout)


# Per starting process, one DupFd per descriptor: a child starting with spawn inherits the
# descriptors listed once each (a repeated one fails the start), and tensors over one storage
# then share one pickled handle.
_handles_for_child: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _dup_fd(fd: int):
    popen = context.get_spawning_popen()
    if popen is None:
        return reduction.DupFd(fd)
    handles = _handles_for_child.setdefault(popen, {})
    if fd not in handles:
        handles[fd] = reduction.DupFd(fd)
    return handles[fd]


def _rebuild_shared(source, nbytes: int, key: tuple, layout: tuple) -> Tensor:
    if isinstance(source, str):
        fd = os.open(source, os.O_RDWR)
    else:
        fd = source.detach()
    storage = shared_memory.open_shared(fd, nbytes, key, owned=True)
    return shared_memory.rebuild(storage, *layout)


def register() -> None:
    """Make ``multiprocessing`` send tensors through ``reduce_tensor`` (done on import)."""
    reduction.ForkingPickler.register(Tensor, reduce_tensor)
