"""CPU tensors in memory shared between processes: ``Tensor.share_memory_()`` and ``is_shared()``.

A shared storage is an anonymous memory file (Linux ``memfd_create``; elsewhere a temporary file
unlinked at once) mapped with ``MAP_SHARED`` and wrapped as a CPU storage without copying. The
file never has a name in /dev/shm, so nothing can be left behind: the kernel frees the memory
when the last process closes its descriptor and unmaps it. Each process keeps one descriptor per
shared storage (closed when the storage is collected) so that it can send the storage on; before
Python 3.13 its ``mmap`` holds a second one.

``tp.multiprocessing`` pickles a shared tensor as (descriptor, layout): the receiver maps the same
file, so in-place updates made by any process are seen by all (Hogwild training). A forked child
inherits the mappings themselves. Python's ``multiprocessing.shared_memory`` is not used: its
resource tracker unlinks a block when a process that attached it exits, and warns about
blocks it thinks leaked.
"""
from __future__ import annotations

import gc
import mmap
import os
import sys
import tempfile
import weakref

import numpy as np

from . import dtypes as _dt
from .tensor import Tensor, make_tensor, resolve_device

__all__ = ["share_memory_", "is_shared", "share_tensors", "shared_handle", "open_shared"]


class _Block:
    """One shared storage of this process: its descriptor and the file's identity."""

    __slots__ = ("storage_ref", "fd", "key")

    def __init__(self, storage, fd: int, key: tuple) -> None:
        self.storage_ref = weakref.ref(storage)
        self.fd = fd
        self.key = key


# id(storage) -> _Block, and (st_dev, st_ino) -> _Block: a file received twice (two tensors over
# one storage, or a tensor coming back to the process that shared it) maps to one storage.
_blocks: dict[int, _Block] = {}
_by_file: dict[tuple, _Block] = {}


def _forget(storage_id: int, block: _Block) -> None:
    if _blocks.get(storage_id) is block:
        del _blocks[storage_id]
    if _by_file.get(block.key) is block:
        del _by_file[block.key]
    try:
        os.close(block.fd)
    except OSError:
        pass


def _new_file(nbytes: int) -> int:
    """A descriptor of a new anonymous memory file of ``nbytes`` bytes, its memory reserved."""
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("tensorplug_shared")
    else:
        directory = "/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir()
        fd, path = tempfile.mkstemp(prefix="tensorplug_shared_", dir=directory)
        os.unlink(path)  # only the descriptors keep it: nothing can be left behind
    try:
        # Reserved now: a file only truncated gets its pages when first written, and a full
        # memory file system then kills the process with SIGBUS instead of raising here.
        if hasattr(os, "posix_fallocate"):
            os.posix_fallocate(fd, 0, nbytes)
        else:
            os.ftruncate(fd, nbytes)
    except OSError as exc:
        os.close(fd)
        raise RuntimeError(f"share_memory_(): cannot allocate {nbytes} bytes of shared memory ({exc.strerror})") from None
    return fd


def _register(fd: int, nbytes: int):
    """A CPU storage of ``nbytes`` over the memory file ``fd``, which this process now owns."""
    info = os.fstat(fd)
    key = (info.st_dev, info.st_ino)
    # mmap cannot map zero bytes: an empty storage maps one byte and shows none of it. Before
    # Python 3.13 the mapping holds a second descriptor of its own (trackfd).
    if sys.version_info >= (3, 13):
        mapping = mmap.mmap(fd, max(nbytes, 1), trackfd=False)
    else:
        mapping = mmap.mmap(fd, max(nbytes, 1))
    array = np.frombuffer(mapping, dtype=np.uint8)[:nbytes]
    storage = resolve_device("cpu")._backend.wrap_host(array)
    block = _Block(storage, fd, key)
    _blocks[id(storage)] = block
    _by_file[key] = block
    weakref.finalize(storage, _forget, id(storage), block)
    return storage


def _block_of(storage) -> _Block | None:
    block = _blocks.get(id(storage))
    return block if block is not None and block.storage_ref() is storage else None


def _shared_copy(storage):
    """A shared storage holding ``storage``'s bytes."""
    nbytes = storage.nbytes
    fd = _new_file(max(nbytes, 1))
    try:
        shared = _register(fd, nbytes)
    except BaseException:
        os.close(fd)
        raise
    if nbytes:
        np.frombuffer(shared, dtype=np.uint8)[:] = np.frombuffer(storage, dtype=np.uint8)
    return shared


def _check_device(t: Tensor, name: str) -> None:
    if t._device.type != "cpu":
        # As PyTorch for devices without inter-process memory (MPS, meta): a clear error rather
        # than a tensor that other processes would silently receive as a copy.
        raise RuntimeError(f"{name}: only available on CPU; a {t._device.type} tensor is not shared between processes "
                           "by tensorplug (move it to the CPU first, see docs/deviations.md)")


def share_tensors(tensors) -> None:
    """Move the storages of the CPU ``tensors`` into shared memory (each copied once; shared
    ones are left as they are). Every tensor over a moved storage, views included, follows it."""
    tensors = list(tensors)
    for t in tensors:
        _check_device(t, "share_memory_()")
    moved = {}  # id(old storage) -> (old, new)
    for t in tensors:
        old = t._storage
        if id(old) not in moved and _block_of(old) is None:
            moved[id(old)] = (old, _shared_copy(old))
    if not moved:
        return
    for t in tensors:
        entry = moved.get(id(t._storage))
        if entry is not None:
            t._storage = entry[1]
    # Other tensors over a moved storage (views, .data, a parameter's earlier aliases) follow it,
    # as in PyTorch where the storage itself moves. One collector pass finds them; it is skipped
    # when no object but the tensors just updated refers to the old storages.
    olds = [old for old, _ in moved.values()]
    # Each old storage is still referred to by `olds`, by `moved`, by `old` and by getrefcount's
    # argument; any other reference may be a tensor.
    others = 0
    for old in olds:
        others += sys.getrefcount(old) - 4
    del old
    if others == 0:
        return
    for referrer in gc.get_referrers(*olds):
        if isinstance(referrer, Tensor):
            entry = moved.get(id(referrer._storage))
            if entry is not None and referrer._storage is entry[0]:
                referrer._storage = entry[1]


def share_memory_(self: Tensor) -> Tensor:
    """Move this CPU tensor's storage into memory shared between processes (a no-op if it is
    already there) and return ``self``. A shared tensor sent to another process through
    ``tp.multiprocessing`` arrives on the same memory, so in-place updates are seen by both.

    >>> import tensorplug as tp
    >>> t = tp.zeros(3).share_memory_()
    >>> t.is_shared()
    True
    """
    share_tensors([self])
    return self


def is_shared(self: Tensor) -> bool:
    """True when this tensor's storage is in shared memory (``share_memory_()``, or received
    from another process that shared it)."""
    return _block_of(self._storage) is not None


def shared_handle(t: Tensor):
    """``(fd, nbytes)`` of ``t``'s shared storage, or None when it is not shared. The descriptor
    stays owned by this module."""
    block = _block_of(t._storage)
    if block is None:
        return None
    return block.fd, t._storage.nbytes


def open_shared(fd: int, nbytes: int):
    """The storage over the memory file ``fd`` received from another process (``fd`` is then
    kept or closed here): the storage this process already has over that file, else a new
    mapping."""
    info = os.fstat(fd)
    block = _by_file.get((info.st_dev, info.st_ino))
    storage = block.storage_ref() if block is not None else None
    if storage is not None:
        if fd != block.fd:  # a child started with spawn gets one descriptor for several tensors
            os.close(fd)
        return storage
    try:
        return _register(fd, nbytes)
    except BaseException:
        os.close(fd)
        raise


def rebuild(storage, offset: int, shape: tuple, stride: tuple, dtype_name: str, requires_grad: bool) -> Tensor:
    """A CPU tensor with this layout over ``storage``."""
    dtype = getattr(_dt, dtype_name)
    t = make_tensor(storage, tuple(shape), tuple(stride), offset, dtype, resolve_device("cpu"))
    return t.requires_grad_() if requires_grad else t
