"""Storages as PyTorch shows them: ``tp.UntypedStorage`` (the bytes a tensor views) and the
deprecated ``tp.TypedStorage`` (the same bytes read as elements of one dtype).

A tensor keeps the storage object its backend allocated (``Backend.allocate``; kernels read it
with ``backends.api.backend_storage``). ``Tensor.untyped_storage()`` wraps that object, and keeps
the wrapper while anything holds it, so that every view of one tensor gives the same
``UntypedStorage`` (``is`` and ``==`` hold, as in PyTorch) and the same ``data_ptr()``; a clone
has another. Bytes and elements are read and written through a 1-D tensor over the whole
storage, so every accessor works on every device.
"""
from __future__ import annotations

import operator
import warnings
import weakref
from typing import Any, Iterator

from . import dtypes as _dt
from .device import device as Device
from .tensor import Tensor, make_tensor, resolve_device

__all__ = ["UntypedStorage", "TypedStorage", "storage_address", "untyped_storage", "typed_storage", "data_ptr"]

_TYPED_STORAGE_DEPRECATED = (
    "TypedStorage is deprecated. It will be removed in the future and UntypedStorage will be the only storage class. "
    "This should only matter to you if you are using storages directly.  To access UntypedStorage directly, use "
    "tensor.untyped_storage() instead of tensor.storage()"
)


def storage_address(backend_storage: Any) -> int:
    """The address of a backend storage's first byte (0 when it holds none).

    A storage may show it as a ``data_ptr`` attribute (CPU) or method (CUDA). Memory whose address
    a backend does not show (OpenCL buffers, plugins) gets a number unique to the storage while it
    lives, which is all that comparing addresses needs.
    """
    if not backend_storage.nbytes:
        return 0
    address = getattr(backend_storage, "data_ptr", None)
    if callable(address):
        address = address()
    return address if isinstance(address, int) else id(backend_storage)


def _index(kind: str, index: Any, size: int) -> int:
    """``index`` as a position in ``[0, size)``, with PyTorch's errors."""
    if isinstance(index, slice):
        # PyTorch slices an UntypedStorage into a storage view; a tensorplug storage is one whole
        # backend allocation, so a part of one is a tensor (its view).
        raise RuntimeError(f"{kind}: slices are not supported; index a tensor over the storage instead")
    try:
        position = operator.index(index)
    except TypeError:
        raise TypeError(f"can't index a {kind} with {type(index).__name__}") from None
    if not -size <= position < size:
        raise IndexError(f"index {position} out of range for storage of size {size}")
    return position % size if size else position


class UntypedStorage:
    """The bytes a tensor views (PyTorch's ``torch.UntypedStorage``), over its backend's storage object."""

    __slots__ = ("_backend_storage", "_device", "__weakref__")

    def __init__(self, *args: Any, device: Any = None) -> None:
        """``UntypedStorage(nbytes)`` or ``UntypedStorage(sequence_of_byte_values)`` on ``device`` (default CPU)."""
        from .factories import empty, tensor

        if len(args) > 1:
            raise TypeError(f"UntypedStorage() takes at most 1 positional argument ({len(args)} given)")
        source = args[0] if args else 0
        dev = resolve_device("cpu" if device is None else device)
        if isinstance(source, int) and not isinstance(source, bool):
            if source < 0:
                raise RuntimeError(f"UntypedStorage(): the size must be non-negative, got {source}")
            data = empty(source, dtype=_dt.uint8, device=dev)
        elif isinstance(source, (list, tuple, range)):
            data = tensor(list(source), dtype=_dt.uint8, device=dev) if len(source) else empty(0, dtype=_dt.uint8, device=dev)
        else:
            raise TypeError(f"UntypedStorage(): expected a size (int) or a sequence of byte values, got {type(source).__name__}")
        self._backend_storage = data._storage
        self._device = data._device

    @classmethod
    def _over(cls, backend_storage: Any, device: Device) -> UntypedStorage:
        storage = object.__new__(cls)
        storage._backend_storage = backend_storage
        storage._device = device
        return storage

    def _bytes(self) -> Tensor:
        """A uint8 tensor over every byte of the storage."""
        return make_tensor(self._backend_storage, (self.nbytes(),), (1,), 0, _dt.uint8, self._device)

    # --- what PyTorch scripts read ------------------------------------------------------------
    @property
    def device(self) -> Device:
        """The device the bytes are on."""
        return self._device

    @property
    def is_cuda(self) -> bool:
        """Whether the bytes are on a CUDA device."""
        return self._device.type == "cuda"

    def get_device(self) -> int:
        """The device index, -1 on the CPU (PyTorch's convention)."""
        return -1 if self._device.type == "cpu" else (self._device.index or 0)

    def nbytes(self) -> int:
        """The storage's size in bytes."""
        return self._backend_storage.nbytes

    def size(self) -> int:
        """The storage's size in bytes (elements of one byte)."""
        return self._backend_storage.nbytes

    def __len__(self) -> int:
        return self._backend_storage.nbytes

    def element_size(self) -> int:
        """1: an untyped storage counts bytes."""
        return 1

    def data_ptr(self) -> int:
        """The address of the first byte; views of one tensor share it (see :func:`storage_address`)."""
        return storage_address(self._backend_storage)

    def untyped(self) -> UntypedStorage:
        """This storage."""
        return self

    def tolist(self) -> list[int]:
        """The byte values, as a list of ints."""
        return self._bytes().tolist()

    def __iter__(self) -> Iterator[int]:
        return iter(self.tolist())

    def __getitem__(self, index: Any) -> int:
        position = _index("tensorplug.UntypedStorage", index, self.nbytes())
        return self._bytes()[position].item()

    def __setitem__(self, index: Any, value: int) -> None:
        position = _index("tensorplug.UntypedStorage", index, self.nbytes())
        self._bytes()[position] = value

    def fill_(self, value: int) -> UntypedStorage:
        """Set every byte to ``value``."""
        self._bytes().fill_(value)
        return self

    # --- copies -------------------------------------------------------------------------------
    def clone(self) -> UntypedStorage:
        """A new storage on the same device holding a copy of the bytes."""
        copy = self._bytes().clone()
        return UntypedStorage._over(copy._storage, copy._device)

    def cpu(self) -> UntypedStorage:
        """This storage if it is on the CPU, else a CPU copy."""
        if self._device.type == "cpu":
            return self
        copy = self._bytes().cpu()
        return UntypedStorage._over(copy._storage, copy._device)

    def to(self, *, device: Any = None, non_blocking: bool = False) -> UntypedStorage:
        """This storage if it is on ``device``, else a copy there."""
        target = resolve_device(device)
        if target == self._device:
            return self
        copy = self._bytes().to(target, non_blocking=non_blocking)
        return UntypedStorage._over(copy._storage, copy._device)

    def resize_(self, size: int) -> UntypedStorage:
        """Only the current size is accepted: a backend allocates each block once, at its size."""
        size = operator.index(size)
        if size != self.nbytes():
            raise RuntimeError(
                f"UntypedStorage.resize_: tensorplug storages keep the size they were allocated with ({self.nbytes()} "
                f"bytes on {self._device}); resizing to {size} bytes is not supported. Allocate a new tensor instead"
            )
        return self

    # --- the backend's own object ---------------------------------------------------------------
    def __getattr__(self, name: str) -> Any:
        # A backend's own attributes (``.buffer``, ...) stay readable through untyped_storage(),
        # as backends written before backends.api.backend_storage read them.
        if name.startswith("__") or name in UntypedStorage.__slots__:
            raise AttributeError(name)
        return getattr(self._backend_storage, name)

    def __repr__(self) -> str:
        # A meta storage has no values: PyTorch prints "..." in their place.
        values = "...\n" if self._device.type == "meta" else "".join(f" {v}\n" for v in self.tolist())
        return f"{values}[tensorplug.UntypedStorage(device={self._device}) of size {self.nbytes()}]"


def data_ptr(self: Tensor) -> int:
    """The address of the first element: the storage's plus the offset in bytes (views of one tensor agree)."""
    return storage_address(self._storage) + self._offset * self._dtype.itemsize


# Backend storage id -> its UntypedStorage while the latter is in use (it holds the backend
# storage, so the id cannot be reused meanwhile).
_wrappers: weakref.WeakValueDictionary = weakref.WeakValueDictionary()


def untyped_storage(self: Tensor) -> UntypedStorage:
    """The memory this tensor views, as a ``tp.UntypedStorage`` (one object for all its views while in use)."""
    backend_storage = self._storage
    found = _wrappers.get(id(backend_storage))
    if found is None:
        found = UntypedStorage._over(backend_storage, self._device)
        _wrappers[id(backend_storage)] = found
    return found


class TypedStorage:
    """A storage read as elements of one dtype (PyTorch's deprecated ``torch.TypedStorage``)."""

    __slots__ = ("_untyped", "dtype")
    is_sparse = False

    def __init__(self, *args: Any, dtype: _dt.dtype | None = None, device: Any = None,
                 wrap_storage: UntypedStorage | None = None) -> None:
        """``TypedStorage(size)``, ``TypedStorage(sequence)`` or ``TypedStorage(wrap_storage=untyped)``, with ``dtype`` (default: the default dtype)."""
        warnings.warn(_TYPED_STORAGE_DEPRECATED, UserWarning, stacklevel=2)
        from .factories import tensor

        dtype = _dt.get_default_dtype() if dtype is None else dtype
        if not isinstance(dtype, _dt.dtype):
            raise TypeError(f"TypedStorage(): dtype must be a tensorplug dtype, got {type(dtype).__name__}")
        if wrap_storage is not None:
            if args or device is not None:
                raise RuntimeError("TypedStorage(): wrap_storage takes no size, data or device")
            if not isinstance(wrap_storage, UntypedStorage):
                raise TypeError(f"TypedStorage(): wrap_storage must be an UntypedStorage, got {type(wrap_storage).__name__}")
            untyped = wrap_storage
        elif len(args) > 1:
            raise TypeError(f"TypedStorage() takes at most 1 positional argument ({len(args)} given)")
        elif args and not isinstance(args[0], int):
            values = tensor(list(args[0]), dtype=dtype, device=resolve_device("cpu" if device is None else device))
            untyped = untyped_storage(values)
        else:
            size = args[0] if args else 0
            if size < 0:
                raise RuntimeError(f"TypedStorage(): the size must be non-negative, got {size}")
            untyped = UntypedStorage(size * dtype.itemsize, device=device)
        self._untyped = untyped
        self.dtype = dtype

    @classmethod
    def _over(cls, untyped: UntypedStorage, dtype: _dt.dtype) -> TypedStorage:
        storage = object.__new__(cls)
        storage._untyped = untyped
        storage.dtype = dtype
        return storage

    def _elements(self) -> Tensor:
        """A 1-D tensor of this dtype over the whole storage."""
        untyped = self._untyped
        return make_tensor(untyped._backend_storage, (self.size(),), (1,), 0, self.dtype, untyped._device)

    @property
    def device(self) -> Device:
        """The device the elements are on."""
        return self._untyped._device

    @property
    def is_cuda(self) -> bool:
        """Whether the elements are on a CUDA device."""
        return self._untyped.is_cuda

    def get_device(self) -> int:
        """The device index, -1 on the CPU."""
        return self._untyped.get_device()

    def untyped(self) -> UntypedStorage:
        """The bytes under the elements."""
        return self._untyped

    def size(self) -> int:
        """The number of elements."""
        return self._untyped.nbytes() // self.dtype.itemsize

    def __len__(self) -> int:
        return self.size()

    def nbytes(self) -> int:
        """The size in bytes."""
        return self._untyped.nbytes()

    def element_size(self) -> int:
        """The size of one element in bytes."""
        return self.dtype.itemsize

    def data_ptr(self) -> int:
        """The address of the first element (the storage's, whatever a tensor's offset in it)."""
        return self._untyped.data_ptr()

    def tolist(self) -> list:
        """The elements as Python numbers."""
        return self._elements().tolist()

    def __iter__(self) -> Iterator:
        return iter(self.tolist())

    def __getitem__(self, index: Any):
        position = _index("tensorplug.TypedStorage", index, self.size())
        return self._elements()[position].item()

    def __setitem__(self, index: Any, value) -> None:
        position = _index("tensorplug.TypedStorage", index, self.size())
        self._elements()[position] = value

    def fill_(self, value) -> TypedStorage:
        """Set every element to ``value``."""
        self._elements().fill_(value)
        return self

    def clone(self) -> TypedStorage:
        """A copy on the same device."""
        return TypedStorage._over(self._untyped.clone(), self.dtype)

    def cpu(self) -> TypedStorage:
        """This storage if it is on the CPU, else a CPU copy."""
        untyped = self._untyped.cpu()
        return self if untyped is self._untyped else TypedStorage._over(untyped, self.dtype)

    def resize_(self, size: int) -> TypedStorage:
        """Only the current size is accepted (see :meth:`UntypedStorage.resize_`)."""
        self._untyped.resize_(operator.index(size) * self.dtype.itemsize)
        return self

    def __repr__(self) -> str:
        values = "...\n" if self.device.type == "meta" else "".join(f" {v}\n" for v in self.tolist())
        return f"{values}[tensorplug.TypedStorage(dtype={self.dtype}, device={self.device}) of size {self.size()}]"


def typed_storage(self: Tensor) -> TypedStorage:
    """The storage read as elements of this tensor's dtype, a TypedStorage (deprecated: PyTorch's warning)."""
    warnings.warn(_TYPED_STORAGE_DEPRECATED, UserWarning, stacklevel=2)
    return TypedStorage._over(untyped_storage(self), self._dtype)
