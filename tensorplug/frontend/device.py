"""``tp.device``: a device type and index, also usable as a default-device context manager."""
from __future__ import annotations

__all__ = ["device", "get_default_device", "set_default_device", "canonical_device", "current_device_index",
           "set_current_device_index", "UNINDEXED_DEVICE_TYPES"]


class device:
    """A device such as ``device("cpu")`` or ``device("opencl", 0)``.

    Devices are interned, so tensors compare devices with ``is``. ``with tp.device("opencl"):``
    makes factories create tensors there by default, as in PyTorch.
    """

    # _backend, _keymask and _dtypes cache the ready backend, its dispatch key bit and the dtypes
    # it declares (filled on first use).
    __slots__ = ("type", "index", "_saved_default", "_backend", "_keymask", "_dtypes")
    _interned: dict = {}

    def __new__(cls, type_or_spec, index=None):
        if isinstance(type_or_spec, device) and index is None:
            return type_or_spec
        key = (type_or_spec, index)
        found = cls._interned.get(key)
        if found is not None:
            return found
        device_type, device_index = _parse(type_or_spec, index)
        canonical_key = (device_type, device_index)
        found = cls._interned.get(canonical_key)
        if found is None:
            found = object.__new__(cls)
            found.type = device_type
            found.index = device_index
            found._saved_default = []
            found._backend = None
            found._keymask = 0
            found._dtypes = frozenset()
            cls._interned[canonical_key] = found
        cls._interned[key] = found
        return found

    def __repr__(self) -> str:
        if self.index is None:
            return f"device(type={self.type!r})"
        return f"device(type={self.type!r}, index={self.index})"

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __eq__(self, other):
        if isinstance(other, str):
            other = device(other)
        return isinstance(other, device) and other.type == self.type and other.index == self.index

    def __hash__(self):
        return hash((self.type, self.index))

    def __reduce__(self):
        return (device, (self.type, self.index))

    def __enter__(self):
        self._saved_default.append(get_default_device())
        set_default_device(self)
        return self

    def __exit__(self, *exc_info):
        set_default_device(self._saved_default.pop())
        return False


def _parse(spec, index):
    if isinstance(spec, int) and index is None:
        raise ValueError(f"a bare device index ({spec}) needs a device type, e.g. 'opencl:{spec}'")
    if not isinstance(spec, str):
        raise TypeError(f"device() expects a string such as 'cpu' or 'opencl:0', got {type(spec).__name__}")
    device_type, sep, index_text = spec.partition(":")
    if sep:
        if index is not None:
            raise ValueError(f"device index given twice: {spec!r} and {index}")
        if not index_text.isdigit():
            raise RuntimeError(f"Invalid device string: {spec!r}")
        index = int(index_text)
    if not device_type or not device_type.replace("_", "").isalnum():
        raise RuntimeError(f"Invalid device string: {spec!r}")
    if index is not None and (not isinstance(index, int) or index < 0):
        raise RuntimeError(f"Device index must not be negative, got {index}")
    return device_type, index


_default_device = device("cpu")


def get_default_device() -> device:
    return _default_device


# set_default_device's argument has PyTorch's name, ``device``, which hides the class inside it.
_device_class = device


def set_default_device(device) -> None:
    """Make factories create tensors on ``device`` when no ``device=`` is given."""
    global _default_device
    _default_device = _device_class("cpu") if device is None else _device_class(device)


#: Per device type, the index a bare device type means (``tp.accelerator.set_device_index``,
#: ``tp.cuda.set_device``); 0 for types never set.
_current_index: dict[str, int] = {}


def current_device_index(device_type: str) -> int:
    return _current_index.get(device_type, 0)


def set_current_device_index(device_type: str, index: int) -> None:
    """Make ``device(device_type)`` (no index) mean ``device(device_type, index)`` from now on."""
    _current_index[device_type] = index


#: Device types whose tensors carry no device index. A meta tensor has no memory anywhere, so
#: ``"meta:1"`` names the same (index-less) device as ``"meta"``, as in PyTorch.
UNINDEXED_DEVICE_TYPES = frozenset({"cpu", "meta"})


def canonical_device(d) -> device:
    """The device a tensor lives on: a device type gets its current index (0 unless set) unless it is
    cpu; any meta device is plain ``meta``."""
    d = _default_device if d is None else device(d)
    if d.index is None and d.type not in UNINDEXED_DEVICE_TYPES:
        return device(d.type, _current_index.get(d.type, 0))
    if d.type == "meta" and d.index is not None:
        return device("meta")
    return d
