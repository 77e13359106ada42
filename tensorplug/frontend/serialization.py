"""``tp.save`` / ``tp.load`` in the safetensors format.

A file is an 8-byte little-endian header length, a JSON header mapping tensor names to
``{"dtype", "shape", "data_offsets"}`` (plus ``__metadata__``, a map of strings), then the raw
little-endian bytes of every tensor. Any container of tensors and plain values (dicts, lists,
tuples, numbers, strings, bools, None) is flattened to that map; the container's shape is kept as
JSON in the metadata key ``tensorplug.structure``, so ``tp.load`` rebuilds it. A flat dict of
string keys to tensors (a state dict) uses its keys as the tensor names, so other safetensors
readers see the usual names; files written by other tools load as a dict of tensors.

Loading never runs code (there is no pickle), and every length and offset in the header is
checked against the file before anything is allocated. Views are saved as their own data:
two tensors sharing memory load as two independent tensors (the same tensor object saved twice
loads as one object).

A meta tensor (shape and dtype, no values) is not a safetensors entry, which would need bytes: it
is a node of the structure metadata holding its dtype and shape, and loads as a meta tensor again
wherever ``map_location`` sends the others, as in PyTorch. Other safetensors readers do not see it.

Loading reads each tensor straight into its own memory (no second copy of the file), or with
``mmap=True`` wraps the file's copy-on-write mapping without reading it. Tensors bound for
another device are copied there from the mapping one at a time. Every device a file names is
checked before any tensor data is read.
"""
from __future__ import annotations

import io
import json
import math
import mmap as _mmap
import os
import stat
import struct
import sys
from collections import Counter, OrderedDict

import numpy as np

from . import dtypes as _dt
from .device import device as _device_type
from .shapes import contiguous_layout
from .tensor import Tensor, empty_tensor, make_tensor, resolve_device

__all__ = ["save", "load"]

#: safetensors dtype names, both ways.
_DTYPE_NAMES = {
    _dt.bool: "BOOL", _dt.uint8: "U8", _dt.int8: "I8", _dt.int16: "I16", _dt.int32: "I32", _dt.int64: "I64",
    _dt.float16: "F16", _dt.bfloat16: "BF16", _dt.float32: "F32", _dt.float64: "F64",
    _dt.uint16: "U16", _dt.uint32: "U32", _dt.uint64: "U64",
    _dt.float8_e4m3fn: "F8_E4M3", _dt.float8_e5m2: "F8_E5M2",
    _dt.float8_e4m3fnuz: "F8_E4M3FNUZ", _dt.float8_e5m2fnuz: "F8_E5M2FNUZ",
}
_DTYPES = {name: d for d, name in _DTYPE_NAMES.items()}

#: A header larger than this is refused before it is read (the official reader's limit).
MAX_HEADER_BYTES = 100_000_000
STRUCTURE_KEY = "tensorplug.structure"
FORMAT_KEY = "format"

_PT_ADVICE = (
    "tensorplug reads only the safetensors format and never unpickles files (unpickling can run arbitrary "
    "code). Convert the checkpoint once with PyTorch:\n"
    "    import torch, safetensors.torch\n"
    "    state = torch.load('model.pt', weights_only=True)\n"
    "    safetensors.torch.save_file({k: v.contiguous() for k, v in state.items()}, 'model.safetensors')\n"
    "then load it with tp.load('model.safetensors'). (save_file takes a flat dict of tensors; flatten nested "
    "checkpoints first.)"
)


# --- saving -------------------------------------------------------------------------------------
class _Flattener:
    """Turns a container into a JSON-able structure plus a name -> tensor map."""

    def __init__(self) -> None:
        self.tensors: dict[str, Tensor] = {}
        self._name_of: dict[int, str] = {}  # id(tensor) -> name: one object saved twice is stored once
        self.meta_names: set[str] = set()  # names of meta tensors, which only the structure holds

    def _meta_node(self, t: Tensor, name: str) -> dict:
        found = self._name_of.get(id(t))
        if found is None:
            found = self._free_name(name)
            self.meta_names.add(found)
            self._name_of[id(t)] = found
        node = {"t": "meta", "name": found, "dtype": _DTYPE_NAMES[t.dtype], "shape": list(t.shape)}
        if t.requires_grad:
            node["requires_grad"] = True
        return node

    def _free_name(self, name: str) -> str:
        found, counter = name, 1
        while found in self.tensors or found in self.meta_names:
            found = f"{name}~{counter}"
            counter += 1
        return found

    def add_tensor(self, t: Tensor, name: str) -> dict:
        if t._device.type == "meta":
            return self._meta_node(t, name)
        found = self._name_of.get(id(t))
        if found is None:
            found = self._free_name(name)
            self.tensors[found] = t
            self._name_of[id(t)] = found
        node = {"t": "tensor", "name": found, "device": str(t.device)}
        if t.requires_grad:
            node["requires_grad"] = True
        return node

    def walk(self, obj, path: str, depth: int = 0) -> dict:
        if depth > 500:
            raise ValueError("tp.save(): containers nested more than 500 levels deep")
        if isinstance(obj, Tensor):
            return self.add_tensor(obj, path or "tensor")
        if obj is None or isinstance(obj, (bool, str)):
            return {"t": "value", "v": obj}
        if isinstance(obj, int):
            return {"t": "int", "v": str(obj)}  # as a string: JSON readers may round big ints
        if isinstance(obj, float):
            return {"t": "float", "v": repr(obj)}  # repr keeps nan, inf and every bit
        if isinstance(obj, dict):
            kind = _DICT_KINDS.get(type(obj), "dict")
            keys, values = [], []
            for key, value in obj.items():
                keys.append(_encode_key(key))
                values.append(self.walk(value, f"{path}.{key}" if path else str(key), depth + 1))
            return {"t": kind, "keys": keys, "values": values}
        if isinstance(obj, (list, tuple)):
            kind = "list" if isinstance(obj, list) else "tuple"
            items = [self.walk(v, f"{path}.{i}" if path else str(i), depth + 1) for i, v in enumerate(obj)]
            return {"t": kind, "items": items}
        if hasattr(obj, "state_dict") and callable(obj.state_dict):
            # torch.save(model) pickles the whole object; tensorplug never pickles (loading a
            # pickle can run arbitrary code), so say what to save instead (issue 13).
            raise TypeError(
                f"tp.save(): cannot save a whole {type(obj).__name__} object at {path or 'the top level'!r}: "
                "tensorplug saves tensors in the safetensors format and never pickles objects. Save its state "
                f"instead: tp.save(obj.state_dict(), path), then rebuild the {type(obj).__name__} in code and call "
                "obj.load_state_dict(tp.load(path))"
            )
        raise TypeError(
            f"tp.save(): cannot save a value of type {type(obj).__name__} at {path or 'the top level'!r}; "
            "the safetensors format holds tensors, and dicts, lists and tuples of tensors, numbers, strings, "
            "bools and None"
        )


# The dict classes a file keeps (torch.load(weights_only=True) rebuilds these too): a
# MultiStepLR's state holds its milestones as a Counter, which a plain dict breaks on load (a
# missing epoch must count 0, not raise KeyError). Other dict subclasses are saved as dicts.
_DICT_KINDS = {OrderedDict: "odict", Counter: "counter"}
_DICT_CLASSES = {"dict": dict, "odict": OrderedDict, "counter": Counter}


def _encode_key(key):
    if isinstance(key, bool) or key is None:
        return {"t": "value", "v": key}
    if isinstance(key, str):
        return {"t": "value", "v": key}
    if isinstance(key, int):
        return {"t": "int", "v": str(key)}
    if isinstance(key, float):
        return {"t": "float", "v": repr(key)}
    raise TypeError(f"tp.save(): dict keys must be strings, numbers, bools or None, not {type(key).__name__}")


def _tensor_bytes(t: Tensor) -> bytes:
    """The tensor's elements, C order, little-endian, as bytes (views are copied)."""
    t = t.detach()
    if t.numel() == 0:
        return b""
    if t.dtype is _dt.bfloat16:
        # Exact without ml_dtypes: a bfloat16 is the top half of the float32 with the same value.
        wide = np.ascontiguousarray(t.to(_dt.float32).cpu().numpy())
        return (wide.view(np.uint32) >> 16).astype("<u2").tobytes()
    if t.dtype.itemsize == 1 and t.dtype.is_floating_point:
        # A float8 type has no NumPy dtype without ml_dtypes; its bytes are the same read as uint8.
        return t.contiguous().view(_dt.uint8).cpu().numpy().tobytes()
    array = np.ascontiguousarray(t.cpu().numpy())
    return array.astype(array.dtype.newbyteorder("<"), copy=False).tobytes()


def save(obj, f) -> None:
    """Save a tensor, a state dict, or a nested dict/list/tuple of tensors and plain values.

    ``f`` is a path or a binary file object. The file is in the safetensors format::

        tp.save(model.state_dict(), "model.safetensors")
        state = tp.load("model.safetensors")

    Views are saved as their own data (memory shared between tensors is not preserved).
    """
    flat = _Flattener()
    structure = flat.walk(obj, "")
    # A flat dict of tensors is a "pt" file other readers load whole; not when meta tensors, which
    # only the structure holds, would be missing from what they see.
    simple = (isinstance(obj, dict) and bool(obj) and not flat.meta_names
              and all(isinstance(k, str) and isinstance(v, Tensor) for k, v in obj.items()))
    header: dict = {}
    chunks = []
    offset = 0
    for name, t in flat.tensors.items():
        data = _tensor_bytes(t)
        header[name] = {"dtype": _DTYPE_NAMES[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        chunks.append(data)
        offset += len(data)
    metadata = {FORMAT_KEY: "pt" if simple else "tensorplug", STRUCTURE_KEY: json.dumps(structure, separators=(",", ":"))}
    header = {"__metadata__": metadata, **header}
    encoded = json.dumps(header, separators=(",", ":")).encode("utf-8")
    encoded += b" " * (-len(encoded) % 8)  # the format pads the header to 8-byte alignment
    if isinstance(f, (str, os.PathLike)):
        with open(f, "wb") as stream:
            _write(stream, encoded, chunks)
    else:
        _write(f, encoded, chunks)


def _write(stream, encoded: bytes, chunks: list) -> None:
    stream.write(struct.pack("<Q", len(encoded)))
    stream.write(encoded)
    for chunk in chunks:
        stream.write(chunk)


# --- loading ------------------------------------------------------------------------------------
def _pytorch_kind(prefix: bytes):
    """'zip' or 'legacy pickle' when the first bytes look like torch.save's output, else None."""
    if prefix.startswith(b"PK\x03\x04") or prefix.startswith(b"PK\x05\x06"):
        return "zip"
    if len(prefix) >= 2 and prefix[0] == 0x80 and 2 <= prefix[1] <= 5:
        return "legacy pickle"
    return None


def _pytorch_error(kind: str, source: str) -> ValueError:
    return ValueError(f"tp.load(): {source} is a PyTorch checkpoint (torch.save's {kind} format), not a safetensors file. {_PT_ADVICE}")


def _read_exact(stream, count: int, what: str) -> bytes:
    data = stream.read(count)
    if data is None or len(data) != count:
        got = 0 if data is None else len(data)
        raise ValueError(f"tp.load(): the file is truncated: expected {count} bytes of {what}, found {got}")
    return data


def _remaining_size(stream):
    """Bytes left after the current position, when the stream can seek; else None."""
    try:
        here = stream.tell()
        end = stream.seek(0, io.SEEK_END)
        stream.seek(here)
        return end - here
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        return None


def _parse_header(raw: bytes) -> dict:
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise ValueError(f"tp.load(): the safetensors header is not valid UTF-8 JSON ({exc})") from None
    except RecursionError:
        raise ValueError("tp.load(): the safetensors header nests too deeply") from None
    if not isinstance(header, dict):
        raise ValueError(f"tp.load(): the safetensors header must be a JSON object, got {type(header).__name__}")
    return header


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _validate_entries(header: dict, data_size: int) -> dict:
    """Check every tensor entry against the data size; return name -> (dtype, shape, begin, end)."""
    entries = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if not isinstance(info, dict):
            raise ValueError(f"tp.load(): header entry {name!r} must be an object")
        dtype_name, shape, offsets = info.get("dtype"), info.get("shape"), info.get("data_offsets")
        if not isinstance(dtype_name, str) or dtype_name not in _DTYPES:
            raise ValueError(
                f"tp.load(): tensor {name!r} has dtype {dtype_name!r}, which tensorplug does not support "
                f"(supported: {', '.join(sorted(_DTYPES))})"
            )
        if not isinstance(shape, list) or not all(_is_int(s) and s >= 0 for s in shape):
            raise ValueError(f"tp.load(): tensor {name!r} has an invalid shape {shape!r}")
        if (not isinstance(offsets, list) or len(offsets) != 2 or not all(_is_int(o) for o in offsets)
                or not 0 <= offsets[0] <= offsets[1]):
            raise ValueError(f"tp.load(): tensor {name!r} has invalid data_offsets {offsets!r}")
        begin, end = offsets
        if end > data_size:
            raise ValueError(
                f"tp.load(): tensor {name!r} has data_offsets [{begin}, {end}] beyond the {data_size} bytes of data "
                "(the file is truncated or corrupt)"
            )
        dtype = _DTYPES[dtype_name]
        expected = math.prod(shape) * dtype.itemsize
        if expected != end - begin:
            raise ValueError(
                f"tp.load(): tensor {name!r} of shape {shape} and dtype {dtype_name} needs {expected} bytes, "
                f"but its data_offsets span {end - begin}"
            )
        entries[name] = (dtype, tuple(shape), begin, end)
    spans = sorted((begin, end, name) for name, (_, _, begin, end) in entries.items() if end > begin)
    for (_, prev_end, prev_name), (begin, _, name) in zip(spans, spans[1:]):
        if begin < prev_end:
            raise ValueError(f"tp.load(): tensors {prev_name!r} and {name!r} have overlapping data_offsets")
    return entries


def _read_metadata(header: dict) -> dict:
    metadata = header.get("__metadata__", {})
    if not isinstance(metadata, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()):
        raise ValueError("tp.load(): __metadata__ must be an object mapping strings to strings")
    return metadata


# --- the data section: read out, or viewed through a private mapping -----------------------------
def _map_file(fd: int):
    """A copy-on-write mapping of the whole file: writes through it stay in this process's memory
    and never reach the file (mmap.ACCESS_COPY, MAP_PRIVATE)."""
    # Python >= 3.13 can map without keeping a duplicate of the descriptor open for the mapping's life.
    extra = {"trackfd": False} if sys.version_info >= (3, 13) else {}
    return _mmap.mmap(fd, 0, access=_mmap.ACCESS_COPY, **extra)


def _regular_file_descriptor(stream):
    """The stream's file descriptor when it is an open regular file (mappable), else None."""
    try:
        fd = stream.fileno()
        return fd if stat.S_ISREG(os.fstat(fd).st_mode) else None
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        return None


class _DataSection:
    """The tensor bytes after the header, ``size`` bytes from absolute position ``start`` of a
    seekable stream: tensors are copied out with readinto, or, for regular files, viewed through
    a copy-on-write mapping of the file."""

    def __init__(self, stream, start: int, size: int, fd, source: str) -> None:
        self.stream, self.start, self.size, self.fd, self.source = stream, start, size, fd, source
        self._mapping = None
        self._mapping_failed = False

    def read_into(self, begin: int, dest: memoryview) -> None:
        """Fill ``dest`` with the bytes at ``begin`` (a data offset), straight from the stream."""
        self.stream.seek(self.start + begin)
        done = 0
        while done < len(dest):  # readinto may stop short of the end (raw files, big reads)
            got = self.stream.readinto(dest[done:])
            if not got:
                raise ValueError(
                    f"tp.load(): {self.source} is truncated: it ended {len(dest) - done} bytes early while reading "
                    "tensor data (was it changed while loading?)"
                )
            done += got

    def mapping(self, required: bool = False):
        """The file's mapping (made on first use); None when the stream cannot be mapped, unless
        ``required``, where that is an error."""
        if self._mapping is None and not self._mapping_failed:
            if self.fd is not None:
                try:
                    self._mapping = _map_file(self.fd)
                except (OSError, ValueError) as exc:
                    if required:
                        raise ValueError(f"tp.load(): cannot memory-map {self.source} ({exc}); use mmap=False") from None
            self._mapping_failed = self._mapping is None
        if self._mapping is None and required:
            raise ValueError(f"tp.load(): cannot memory-map {self.source}")
        if self._mapping is not None and len(self._mapping) < self.start + self.size:
            raise ValueError(f"tp.load(): {self.source} shrank while loading")
        return self._mapping

    def view(self, begin: int, end: int) -> np.ndarray:
        """The bytes [begin, end) as a uint8 array over the mapping (no copy; keeps it alive)."""
        return np.frombuffer(self._mapping, dtype=np.uint8, count=end - begin, offset=self.start + begin)

    def release(self, begin: int, end: int) -> None:
        """Drop the mapped pages that lie wholly inside [begin, end) from this process's memory,
        so copying a file tensor by tensor never holds more than one tensor's pages. Only for
        ranges no tensor views: unwritten private pages come back from the file if touched again."""
        advise = getattr(self._mapping, "madvise", None)
        if advise is None or not hasattr(_mmap, "MADV_DONTNEED"):
            return
        page = _mmap.PAGESIZE
        low = -(-(self.start + begin) // page) * page
        high = (self.start + end) // page * page
        if high > low:
            advise(_mmap.MADV_DONTNEED, low, high - low)

    def close_unless_shared(self) -> None:
        """Unmap now when no tensor views the mapping; otherwise the last view unmaps it."""
        if self._mapping is not None:
            try:
                self._mapping.close()
            except BufferError:  # tensors share it (mmap=True): it lives as long as they do
                pass
            self._mapping = None


def _wrap_bytes(buffer: np.ndarray, dtype: _dt.dtype, shape: tuple) -> Tensor:
    """A CPU tensor over the uint8 array ``buffer`` without copying; its storage keeps it alive."""
    cpu = resolve_device("cpu")
    # The same two steps as tp.from_numpy, over raw bytes so that every dtype (bfloat16 too) works.
    storage = cpu._backend.wrap_host(buffer)
    stride, _ = contiguous_layout(shape)
    return make_tensor(storage, shape, stride, 0, dtype, cpu)


_ALIGNMENT = 64
_SMALL_BUFFER = 1 << 20
_POPULATE = getattr(_mmap, "MAP_POPULATE", 0)


def _host_buffer(nbytes: int) -> np.ndarray:
    """``nbytes`` of fresh memory, at least 64-byte aligned like the caching allocator's blocks.

    Loaded tensors do not take their memory from the caching allocator: a loaded state dict is
    typically copied into a model and dropped, and this memory then goes back to the system
    instead of staying cached. A copying load is mostly first-touch page faults, so large
    buffers are anonymous mappings populated in one system call (MAP_POPULATE), with the
    system's default page policy rather than the huge pages the allocator and NumPy ask for:
    fresh huge pages measured two to four times slower to fault in on this project's virtual
    machines (benchmarks/bench_load.py)."""
    if nbytes >= _SMALL_BUFFER and hasattr(_mmap, "MAP_PRIVATE"):  # (not on Windows)
        return np.frombuffer(_mmap.mmap(-1, nbytes, flags=_mmap.MAP_PRIVATE | _POPULATE), dtype=np.uint8)
    raw = np.empty(nbytes + _ALIGNMENT, dtype=np.uint8)
    skip = -raw.ctypes.data % _ALIGNMENT
    return raw[skip:skip + nbytes]


def _copied_tensor(data: _DataSection, dtype: _dt.dtype, shape: tuple, begin: int, end: int) -> Tensor:
    """A new CPU tensor holding the bytes [begin, end), read straight into its memory."""
    if end == begin:
        return empty_tensor(shape, dtype, resolve_device("cpu"))
    buffer = _host_buffer(end - begin)
    data.read_into(begin, memoryview(buffer))
    if sys.byteorder != "little" and dtype.itemsize > 1:  # the format is little-endian
        buffer.view(f"u{dtype.itemsize}").byteswap(inplace=True)
    return _wrap_bytes(buffer, dtype, shape)


def _mapped_tensor(data: _DataSection, dtype: _dt.dtype, shape: tuple, begin: int, end: int) -> Tensor:
    """A CPU tensor over the mapped bytes [begin, end) without copying (the caller checked that
    they are aligned for ``dtype``); its storage keeps the mapping alive."""
    if end == begin:
        return empty_tensor(shape, dtype, resolve_device("cpu"))
    return _wrap_bytes(data.view(begin, end), dtype, shape)


def _can_share(data: _DataSection, dtype: _dt.dtype, begin: int) -> bool:
    # The mapping starts on a page boundary, so the file offset decides alignment. Unaligned
    # elements would be undefined behaviour for the kernels; those tensors are copied instead.
    return sys.byteorder == "little" and (data.start + begin) % dtype.itemsize == 0


# --- where tensors go -----------------------------------------------------------------------------
def _check_map_location(map_location) -> None:
    if map_location is None or isinstance(map_location, (str, _device_type, dict)) or callable(map_location):
        return
    raise TypeError(
        f"tp.load(): map_location must be a device, a string, a dict or a callable, not {type(map_location).__name__}"
    )


def _saved_device_target(map_location, saved: str):
    """(device spec, True when map_location chose it) for a tensor saved on ``saved``; not for callables."""
    if map_location is None:
        return saved, False
    if isinstance(map_location, dict):
        return (map_location[saved], True) if saved in map_location else (saved, False)
    return map_location, True


def _resolve_target(spec, chosen_by_map_location: bool, name: str, saved: str, source: str) -> _device_type:
    try:
        return resolve_device(spec)
    except (RuntimeError, TypeError, ValueError) as exc:
        if chosen_by_map_location:
            message = (f"tp.load(): map_location sends tensor {name!r} of {source} to device {str(spec)!r}, "
                       f"which is not available here ({exc})")
        else:
            message = (f"tp.load(): tensor {name!r} of {source} was saved on device {saved!r}, which is not "
                       f"available here ({exc}). Pass map_location='cpu' to load it onto the CPU, or a dict or "
                       "callable to choose a device per saved device")
        raise RuntimeError(message) from None


def _plan_targets(map_location, entries: dict, devices: dict, source: str) -> dict:
    """name -> the ready device each tensor goes to (None: a callable map_location decides).

    Every device is checked here, before any tensor data is read, so a checkpoint saved on a
    device this machine lacks fails at once instead of after reading gigabytes."""
    if callable(map_location):
        return dict.fromkeys(entries)
    targets = {}
    for name in entries:
        saved = devices.get(name, "cpu")
        spec, chosen = _saved_device_target(map_location, saved)
        targets[name] = _resolve_target(spec, chosen, name, saved, source)
    return targets


# --- building tensors -----------------------------------------------------------------------------
class _TensorBuilder:
    """Makes each tensor of one file on its target device.

    ``share`` (mmap=True): CPU tensors view the file's copy-on-write mapping. Otherwise CPU
    tensors are independent copies read straight into their own memory. Tensors bound for
    another device are copied there from the mapping one at a time, and their pages are dropped
    again, so host memory never holds more than one of them."""

    def __init__(self, data: _DataSection, share: bool, map_location, devices: dict) -> None:
        self.data, self.share, self.map_location, self.devices = data, share, map_location, devices

    def cpu_tensor(self, dtype, shape, begin, end) -> Tensor:
        if self.share and _can_share(self.data, dtype, begin):
            return _mapped_tensor(self.data, dtype, shape, begin, end)
        return _copied_tensor(self.data, dtype, shape, begin, end)

    def device_tensor(self, target, dtype, shape, begin, end) -> Tensor:
        if end > begin and self.data.mapping() is not None and _can_share(self.data, dtype, begin):
            staged = _mapped_tensor(self.data, dtype, shape, begin, end)
            moved = staged.to(target)
            del staged  # its view of the pages goes before the pages do
            self.data.release(begin, end)
            return moved
        return _copied_tensor(self.data, dtype, shape, begin, end).to(target)

    def mapped_by_callable(self, name, dtype, shape, begin, end, source: str) -> Tensor:
        saved = self.devices.get(name, "cpu")
        t = self.cpu_tensor(dtype, shape, begin, end)
        result = self.map_location(t, saved)
        if result is None:  # as in PyTorch: None means "where it was saved"
            return t.to(_resolve_target(saved, False, name, saved, source))
        if not isinstance(result, Tensor):
            raise TypeError(
                f"tp.load(): map_location returned {type(result).__name__} for tensor {name!r}; it must return a "
                "tensor or None"
            )
        return result

    def build(self, name, target, dtype, shape, begin, end, source: str) -> Tensor:
        if target is None:
            return self.mapped_by_callable(name, dtype, shape, begin, end, source)
        if target.type == "cpu":
            return self.cpu_tensor(dtype, shape, begin, end)
        return self.device_tensor(target, dtype, shape, begin, end)


class _Rebuilder:
    def __init__(self, tensors: dict) -> None:
        self.tensors = tensors
        self.meta_tensors: dict[str, Tensor] = {}  # one meta tensor saved twice loads as one object

    def meta_tensor(self, node: dict) -> Tensor:
        name, dtype, shape = node.get("name"), _DTYPES.get(node.get("dtype")), node.get("shape")
        if not isinstance(name, str) or dtype is None or not isinstance(shape, list) or not all(
                _is_int(size) and size >= 0 for size in shape):
            raise ValueError(f"tp.load(): malformed meta tensor in the structure metadata: {str(node)[:80]!r}")
        found = self.meta_tensors.get(name)
        if found is None:
            found = empty_tensor(tuple(shape), dtype, resolve_device("meta"))
            if node.get("requires_grad") is True:
                found.requires_grad_(True)
            self.meta_tensors[name] = found
        return found

    def build(self, node, depth: int = 0):
        if depth > 500:
            raise ValueError("tp.load(): the structure metadata nests more than 500 levels deep")
        if not isinstance(node, dict) or "t" not in node:
            raise ValueError(f"tp.load(): malformed structure metadata node {str(node)[:80]!r}")
        kind = node["t"]
        if kind == "tensor":
            name = node.get("name")
            if name not in self.tensors:
                raise ValueError(f"tp.load(): the structure metadata refers to tensor {name!r}, which the file does not contain")
            return self.tensors[name]
        if kind == "meta":
            return self.meta_tensor(node)
        if kind == "value":
            value = node.get("v")
            if value is not None and not isinstance(value, (bool, str)):
                raise ValueError(f"tp.load(): malformed structure metadata value {value!r}")
            return value
        if kind in ("int", "float"):
            try:
                return int(node["v"]) if kind == "int" else float(node["v"])
            except (KeyError, TypeError, ValueError):
                raise ValueError(f"tp.load(): malformed {kind} in the structure metadata: {str(node)[:80]!r}") from None
        if kind in _DICT_CLASSES:
            keys, values = node.get("keys"), node.get("values")
            if not isinstance(keys, list) or not isinstance(values, list) or len(keys) != len(values):
                raise ValueError("tp.load(): malformed dict in the structure metadata")
            result = _DICT_CLASSES[kind]()
            for key, value in zip(keys, values):
                key = self.build(key, depth + 1)
                if isinstance(key, Tensor):
                    raise ValueError("tp.load(): a dict key in the structure metadata is a tensor")
                result[key] = self.build(value, depth + 1)
            return result
        if kind in ("list", "tuple"):
            items = node.get("items")
            if not isinstance(items, list):
                raise ValueError(f"tp.load(): malformed {kind} in the structure metadata")
            built = [self.build(item, depth + 1) for item in items]
            return built if kind == "list" else tuple(built)
        raise ValueError(f"tp.load(): unknown node type {kind!r} in the structure metadata")


def _collect_devices(node, devices: dict, flags: dict) -> None:
    """Saved device and requires_grad of every tensor named in the structure (iteratively)."""
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if item.get("t") == "tensor" and isinstance(item.get("name"), str):
                if isinstance(item.get("device"), str):
                    devices[item["name"]] = item["device"]
                if item.get("requires_grad") is True:
                    flags[item["name"]] = True
            stack.extend(v for v in item.values() if isinstance(v, (dict, list)))
        elif isinstance(item, list):
            stack.extend(item)


def load(f, map_location=None, weights_only: bool = True, *, mmap=None):
    """Load what ``tp.save`` wrote (or any safetensors file) from a path or binary file object.

    ``map_location`` moves tensors: a device or string for all of them, a dict mapping saved
    device names to new ones, or a callable ``(tensor, saved_device) -> tensor`` (returning None
    keeps the saved device). Without it, tensors go back to the device they were saved from; a
    device this machine lacks is an error that suggests ``map_location="cpu"``.

    ``mmap=True`` (a path or an open regular file) maps the file instead of reading it: CPU
    tensors view the mapping and read from the file only when touched. The mapping is
    copy-on-write, so writing to such a tensor changes this process's copy, never the file.
    By default (``mmap=None`` or ``False``) every CPU tensor is an independent copy. Either way
    the file may be closed or deleted once ``load`` returns, but it must not be truncated or
    rewritten in place while mapped tensors are alive.

    Nothing in the file is ever executed, so ``weights_only`` is accepted for compatibility and
    has no effect. A PyTorch ``.pt`` checkpoint is refused with instructions to convert it.
    """
    _check_map_location(map_location)
    share = bool(mmap)  # None is PyTorch's default, which means False
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as stream:
            return _load_stream(stream, map_location, repr(os.fspath(f)), share)
    return _load_stream(f, map_location, "the file", share)


def _load_stream(stream, map_location, source: str, share: bool):
    fd = _regular_file_descriptor(stream)
    if share and fd is None:
        raise ValueError(
            f"tp.load(): mmap=True needs a file path or an open regular file, and {source} ({type(stream).__name__}) "
            "has no file descriptor to map; use mmap=False"
        )
    size = _remaining_size(stream)
    prefix = stream.read(8) or b""
    # A pickle's first two bytes could also start a valid header length, so a pickle-looking file
    # is called a PyTorch checkpoint only when it is not a plausible safetensors file.
    pytorch = _pytorch_kind(prefix)
    if pytorch == "zip":
        raise _pytorch_error(pytorch, source)
    if len(prefix) < 8:
        raise ValueError(f"tp.load(): {source} is truncated: {len(prefix)} bytes, shorter than the 8-byte header length")
    (header_len,) = struct.unpack("<Q", prefix)
    if header_len > MAX_HEADER_BYTES or (size is not None and header_len > size - 8):
        if pytorch is not None:
            raise _pytorch_error(pytorch, source)
        if header_len > MAX_HEADER_BYTES:
            raise ValueError(
                f"tp.load(): {source} declares a {header_len}-byte header, more than the {MAX_HEADER_BYTES}-byte "
                "limit: not a valid safetensors file"
            )
        raise ValueError(
            f"tp.load(): {source} declares a {header_len}-byte header but has only {size - 8} bytes after the "
            "length: truncated or not a safetensors file"
        )
    raw = _read_exact(stream, header_len, "header")
    if pytorch is not None and not raw.startswith(b"{"):
        raise _pytorch_error(pytorch, source)
    header = _parse_header(raw)
    metadata = _read_metadata(header)
    if size is None:
        # A stream that cannot seek cannot say how long it is: read the rest, so that every offset is
        # checked against bytes that exist before any tensor is allocated.
        stream = io.BytesIO(stream.read() or b"")
        data_start, data_size, fd = 0, len(stream.getbuffer()), None
    else:
        data_start, data_size = stream.tell(), size - 8 - header_len
    entries = _validate_entries(header, data_size)

    structure = None
    if STRUCTURE_KEY in metadata:
        try:
            structure = json.loads(metadata[STRUCTURE_KEY])
        except (ValueError, RecursionError) as exc:
            raise ValueError(f"tp.load(): the structure metadata is not valid JSON ({exc})") from None
    devices: dict = {}
    grad_flags: dict = {}
    if structure is not None:
        _collect_devices(structure, devices, grad_flags)
    targets = _plan_targets(map_location, entries, devices, source)

    data = _DataSection(stream, data_start, data_size, fd, source)
    if share:
        data.mapping(required=True)
    builder = _TensorBuilder(data, share, map_location, devices)
    built = {}
    try:
        # In file order: reads go forward through the file, which read-ahead rewards.
        for name, (dtype, shape, begin, end) in sorted(entries.items(), key=lambda item: item[1][2]):
            t = builder.build(name, targets[name], dtype, shape, begin, end, source)
            if grad_flags.get(name):
                t.requires_grad_(True)
            built[name] = t
    finally:
        data.close_unless_shared()
    tensors = {name: built[name] for name in entries}  # the header's order, as other readers give
    if structure is None:
        return tensors
    try:
        return _Rebuilder(tensors).build(structure)
    except RecursionError:
        raise ValueError("tp.load(): the structure metadata nests too deeply") from None
