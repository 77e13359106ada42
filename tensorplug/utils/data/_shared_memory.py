"""Batches from DataLoader workers travel through shared memory, as in PyTorch.

A worker collates each large tensor of a batch straight into a *block*: a file in /dev/shm
(tmpfs) that it creates and maps. Only the batch's structure and, per tensor, a small record
(block, offset, shape, strides, dtype) go through the result queue as a pickle. The main process
maps the block, unlinks its file at once (the mapping outlives the name, so nothing is left in
/dev/shm), and wraps the mapping as a CPU tensor without copying.

Blocks are then reused, which is what makes this fast: fresh shared memory costs a page fault
and a page zeroing per 4 KiB, in the worker and again in the main process. When the main process
has dropped every tensor (and NumPy array) over a block, it hands the block's id back to the
worker with the worker's next task; the worker then collates a later batch into the same,
already mapped pages. Each side keeps its mapping until the block is retired (beyond
``MAX_FREE_BLOCKS`` idle blocks per worker) or the loader shuts down.

Files exist only between a worker creating a block and the main process mapping it. Every name
starts with the loader's prefix, so shutdown (normal, after ``break``, after a worker crash, at
interpreter exit) removes whatever is left with one glob, and a worker whose parent died removes
its own.
"""
from __future__ import annotations

import collections
import glob
import io
import itertools
import math
import mmap
import os
import pickle
import tempfile
import uuid
import weakref

import numpy as np

from ...frontend import dtypes as _dt
from ...frontend.shapes import contiguous_strides
from ...frontend.tensor import Tensor, make_tensor, resolve_device

#: Tensors smaller than this (bytes) travel inside the pickle: a block per small tensor (labels,
#: scalars) would cost more in file operations than the copy it saves.
INLINE_LIMIT = 64 * 1024

#: Idle blocks a worker keeps for reuse; more are unmapped (on both sides) so that memory is
#: returned when the main process held many batches at once and then let them go.
MAX_FREE_BLOCKS = 4

_RECORD_TAG = "tensorplug-shm-block"
_cpu = None


def _cpu_device():
    global _cpu
    if _cpu is None:
        _cpu = resolve_device("cpu")
    return _cpu


def shm_directory() -> str:
    """/dev/shm where it exists (Linux: memory-backed), else the temporary directory."""
    if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK):
        return "/dev/shm"
    return tempfile.gettempdir()


def new_prefix() -> str:
    """A path prefix unique to one DataLoader iterator: every block file it uses starts with it."""
    return os.path.join(shm_directory(), f"tensorplug_dl_{os.getpid()}_{uuid.uuid4().hex[:12]}_")


def remove_files(prefix: str) -> None:
    """Unlink every file whose path starts with ``prefix`` (blocks not yet mapped by the main
    process: in flight at shutdown, or left by a worker that died)."""
    for path in glob.glob(glob.escape(prefix) + "*"):
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass


def _map_file(path: str, nbytes: int, create: bool) -> mmap.mmap:
    fd = os.open(path, os.O_RDWR | (os.O_CREAT | os.O_EXCL if create else 0), 0o600)
    try:
        if create:
            _reserve(fd, path, nbytes)
        return mmap.mmap(fd, nbytes)
    finally:
        os.close(fd)  # the mapping keeps the memory; the descriptor is not needed


def _reserve(fd: int, path: str, nbytes: int) -> None:
    """Give the block its memory now. A file that is only truncated to size gets its pages
    when they are first written, and a full /dev/shm then kills the worker with SIGBUS; here it
    becomes an error that says what to do."""
    try:
        if hasattr(os, "posix_fallocate"):
            os.posix_fallocate(fd, 0, nbytes)
        else:
            os.ftruncate(fd, nbytes)
    except OSError as exc:
        _unlink_quietly(path)
        raise RuntimeError(
            f"DataLoader worker could not allocate {nbytes} bytes of shared memory in {os.path.dirname(path)} "
            f"({exc.strerror}). It may be too small: Docker gives containers 64 MB by default (run with "
            "--shm-size=2g or --ipc=host); or lower batch_size, prefetch_factor or num_workers, or use num_workers=0."
        ) from None


def _storage_over(mapping: mmap.mmap):
    """A CPU storage sharing ``mapping``'s memory and keeping the mapping alive."""
    return _cpu_device()._backend.wrap_host(np.frombuffer(mapping, dtype=np.uint8))


def _nbytes(t: Tensor) -> int:
    return math.prod(t._shape) * t._dtype.itemsize


class _Block:
    __slots__ = ("id", "path", "nbytes", "mapping", "storage_ref", "in_main", "known_to_main")

    def __init__(self, block_id: int, path: str, nbytes: int) -> None:
        self.id = block_id
        self.path = path
        self.nbytes = nbytes
        self.mapping = _map_file(path, nbytes, create=True)
        self.storage_ref = None  # the worker's own storage over the block, while it lives
        self.in_main = False  # sent, and not yet handed back by the main process
        self.known_to_main = False  # the main process has mapped it (and unlinked its file)

    def reusable(self) -> bool:
        return not self.in_main and (self.storage_ref is None or self.storage_ref() is None)


class WorkerBlocks:
    """A worker's blocks: allocation for collate, and pickling of batches into block records."""

    def __init__(self, loader_prefix: str, worker_id: int) -> None:
        self.prefix = f"{loader_prefix}w{worker_id}_"
        self.worker_id = worker_id
        self._ids = itertools.count()
        self._blocks: dict[int, _Block] = {}
        self._by_storage: dict[int, tuple] = {}  # id(storage) -> (weakref to it, block)
        self._released: list[int] = []  # retired since the last message; the main process unmaps them

    def empty(self, shape: tuple, dtype: _dt.dtype) -> Tensor:
        """An uninitialized contiguous CPU tensor in a block (a reused one when one fits)."""
        nbytes = math.prod(shape) * dtype.itemsize
        block = self._take(nbytes)
        storage = _storage_over(block.mapping)
        key = id(storage)

        def forget(ref, key=key):
            entry = self._by_storage.get(key)
            if entry is not None and entry[0] is ref:
                del self._by_storage[key]

        ref = weakref.ref(storage, forget)
        self._by_storage[key] = (ref, block)
        block.storage_ref = ref
        return make_tensor(storage, tuple(shape), contiguous_strides(tuple(shape)), 0, dtype, _cpu_device())

    def _take(self, nbytes: int) -> _Block:
        fitting = [b for b in self._blocks.values() if b.nbytes >= nbytes and b.reusable()]
        if fitting:
            return min(fitting, key=lambda b: b.nbytes)
        size = max(mmap.PAGESIZE, -(-nbytes // mmap.PAGESIZE) * mmap.PAGESIZE)
        block_id = next(self._ids)
        block = _Block(block_id, f"{self.prefix}{block_id}", size)
        self._blocks[block_id] = block
        return block

    def give_back(self, block_ids) -> None:
        """The main process no longer uses these blocks; retire idle ones beyond the limit."""
        for block_id in block_ids:
            block = self._blocks.get(block_id)
            if block is not None:
                block.in_main = False
        idle = [b for b in self._blocks.values() if b.reusable()]
        for block in sorted(idle, key=lambda b: b.nbytes)[: max(0, len(idle) - MAX_FREE_BLOCKS)]:
            del self._blocks[block.id]  # the mapping goes with the last reference
            if block.known_to_main:
                self._released.append(block.id)
            else:
                _unlink_quietly(block.path)

    def dumps(self, idx, data) -> bytes:
        """Pickle ``(worker_id, idx, data, retired block ids)``, tensors as block records."""
        sent: dict[int, _Block] = {}
        buffer = io.BytesIO()
        pickler = _BatchPickler(buffer, self, sent)
        pickler.dump((self.worker_id, idx, data, self._released))
        # Only now, with the whole message pickled, do the blocks change hands.
        for block in sent.values():
            block.in_main = True
            block.known_to_main = True
        self._released = []
        return buffer.getvalue()

    def record(self, t: Tensor, sent: dict):
        """The record that stands for ``t`` in a message, or None to pickle ``t`` inline."""
        requires_grad = t.requires_grad
        device_name = str(t._device)
        t = t.detach()
        if t._device.type != "cpu":
            t = t.cpu()  # shared memory is host memory; the main process moves it back
        if _nbytes(t) < INLINE_LIMIT:
            return None
        entry = self._by_storage.get(id(t._storage))
        block = entry[1] if entry is not None and entry[0]() is t._storage else None
        if block is None or (block.in_main and block.id not in sent):
            # Not collated into a block (or the main process still holds that block from an
            # earlier message, e.g. a batch the dataset cached): copy into a fresh one.
            copy = self.empty(t._shape, t._dtype)
            copy.copy_(t)
            t = copy
            block = self._by_storage[id(t._storage)][1]
        sent[block.id] = block
        return (_RECORD_TAG, self.worker_id, block.id, None if block.known_to_main else block.path, block.nbytes,
                t._offset * t._dtype.itemsize, tuple(t._shape), tuple(t._stride), t._dtype.name, device_name,
                requires_grad)

    def remove_files(self) -> None:
        remove_files(self.prefix)


class _BatchPickler(pickle.Pickler):
    def __init__(self, file, blocks: WorkerBlocks, sent: dict) -> None:
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self._blocks = blocks
        self._sent = sent

    def persistent_id(self, obj):
        if isinstance(obj, Tensor):
            return self._blocks.record(obj, self._sent)
        return None


def _unlink_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


class MainBlocks:
    """The main process's side: maps blocks, wraps them as tensors, and notes which blocks the
    program has let go of so they can go back to their worker."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self._mappings: dict[tuple[int, int], mmap.mmap] = {}
        # Per worker, ids of blocks no tensor here uses any more. Finalizers append from
        # whichever thread drops a batch; deques make append and popleft safe without a lock.
        self._freed: dict[int, collections.deque] = {}

    def loads(self, payload: bytes):
        """Unpickle a worker's message; returns ``(idx, data)``."""
        unpickler = _BatchUnpickler(io.BytesIO(payload), self)
        worker_id, idx, data, released = unpickler.load()
        for block_id in released:
            self._mappings.pop((worker_id, block_id), None)
        return idx, data

    def take_freed(self, worker_id: int) -> list[int]:
        """Ids of ``worker_id``'s blocks that no tensor here uses any more (and forget them)."""
        freed = self._freed.get(worker_id)
        taken = []
        while freed:
            taken.append(freed.popleft())
        return taken

    def tensor(self, record: tuple, storages: dict) -> Tensor:
        (_, worker_id, block_id, path, nbytes, byte_offset, shape, strides, dtype_name, device_name, requires_grad) = record
        key = (worker_id, block_id)
        storage = storages.get(key)
        if storage is None:
            if path is not None:
                mapping = _map_file(path, nbytes, create=False)
                os.unlink(path)  # mapped: from here on nothing can leak in /dev/shm
                self._mappings[key] = mapping
            else:
                mapping = self._mappings.get(key)
                if mapping is None:
                    raise RuntimeError(f"DataLoader: worker {worker_id} sent shared-memory block {block_id}, "
                                       "which this process does not have mapped (a bug in tensorplug)")
            storage = _storage_over(mapping)
            freed = self._freed.setdefault(worker_id, collections.deque())
            weakref.finalize(storage, freed.append, block_id).atexit = False
            storages[key] = storage
        dtype = getattr(_dt, dtype_name)
        t = make_tensor(storage, tuple(shape), tuple(strides), byte_offset // dtype.itemsize, dtype, _cpu_device())
        if device_name != "cpu":
            t = t.to(device_name)
        return t.requires_grad_() if requires_grad else t

    def close(self) -> None:
        """Remove unmapped block files and drop this side's mappings (tensors still in use keep
        theirs)."""
        remove_files(self.prefix)
        self._mappings.clear()
        self._freed.clear()


class _BatchUnpickler(pickle.Unpickler):
    def __init__(self, file, blocks: MainBlocks) -> None:
        super().__init__(file)
        self._blocks = blocks
        self._storages: dict = {}  # one storage per block per message: views share it

    def persistent_load(self, pid):
        if not (isinstance(pid, tuple) and pid and pid[0] == _RECORD_TAG):
            raise pickle.UnpicklingError(f"DataLoader: unexpected persistent id {pid!r}")
        return self._blocks.tensor(pid, self._storages)


_worker_blocks: WorkerBlocks | None = None


def worker_blocks() -> WorkerBlocks | None:
    """This worker process's blocks; None in the main process."""
    return _worker_blocks


def set_worker_blocks(blocks: WorkerBlocks | None) -> None:
    global _worker_blocks
    _worker_blocks = blocks
