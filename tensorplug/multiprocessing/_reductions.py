"""How ``multiprocessing`` pickles tensors: shared CPU tensors by descriptor, others by value.

``register()`` adds a reducer for ``Tensor`` to ``multiprocessing.reduction.ForkingPickler``,
the pickler behind ``Process`` arguments (spawn and forkserver), ``Queue`` and ``Pipe``; plain
``pickle``, ``copy.deepcopy`` and ``tp.save`` keep pickling values. ``Parameter`` pickles as
its ``detach()`` tensor, so a shared parameter arrives as a Parameter on the same memory.

The receiver gets the memory file's descriptor as ``multiprocessing.reduction.DupFd``: a
starting child inherits it; otherwise the sender's resource sharer thread holds a duplicate until
the receiver fetches it over a Unix socket, so a tensor put in a queue may be dropped by its
sender right away. Both sharing strategies send descriptors: tensorplug's memory files have no
name another process could open (see ``tp.multiprocessing.get_sharing_strategy``).
"""
from __future__ import annotations

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
    fd, nbytes = handle
    layout = (t._offset, t._shape, t._stride, t._dtype.name, t.requires_grad)
    return _rebuild_shared, (_dup_fd(fd), nbytes, layout)


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


def _rebuild_shared(handle, nbytes: int, layout: tuple) -> Tensor:
    storage = shared_memory.open_shared(handle.detach(), nbytes)
    return shared_memory.rebuild(storage, *layout)


def register() -> None:
    """Make ``multiprocessing`` send tensors through ``reduce_tensor`` (done on import)."""
    reduction.ForkingPickler.register(Tensor, reduce_tensor)
