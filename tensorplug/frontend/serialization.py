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
"""
from __future__ import annotations

import io
import json
import math
import os
import struct
from collections import OrderedDict

import numpy as np

from . import dtypes as _dt
from .device import device as _device_type
from .tensor import Tensor

__all__ = ["save", "load"]

#: safetensors dtype names, both ways.
_DTYPE_NAMES = {
    _dt.bool: "BOOL", _dt.uint8: "U8", _dt.int8: "I8", _dt.int16: "I16", _dt.int32: "I32", _dt.int64: "I64",
    _dt.float16: "F16", _dt.bfloat16: "BF16", _dt.float32: "F32", _dt.float64: "F64",
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

    def add_tensor(self, t: Tensor, name: str) -> dict:
        found = self._name_of.get(id(t))
        if found is None:
            found = name
            counter = 1
            while found in self.tensors:
                found = f"{name}~{counter}"
                counter += 1
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
            kind = "odict" if isinstance(obj, OrderedDict) else "dict"
            keys, values = [], []
            for key, value in obj.items():
                keys.append(_encode_key(key))
                values.append(self.walk(value, f"{path}.{key}" if path else str(key), depth + 1))
            return {"t": kind, "keys": keys, "values": values}
        if isinstance(obj, (list, tuple)):
            kind = "list" if isinstance(obj, list) else "tuple"
            items = [self.walk(v, f"{path}.{i}" if path else str(i), depth + 1) for i, v in enumerate(obj)]
            return {"t": kind, "items": items}
        raise TypeError(
            f"tp.save(): cannot save a value of type {type(obj).__name__} at {path or 'the top level'!r}; "
            "the safetensors format holds tensors, and dicts, lists and tuples of tensors, numbers, strings, "
            "bools and None"
        )


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
    simple = isinstance(obj, dict) and bool(obj) and all(isinstance(k, str) and isinstance(v, Tensor) for k, v in obj.items())
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


def _tensor_from_bytes(data: memoryview, dtype: _dt.dtype, shape: tuple) -> Tensor:
    from .factories import from_numpy

    if dtype is _dt.bfloat16:
        bits = np.frombuffer(data, dtype="<u2").astype(np.uint32) << 16
        return from_numpy(bits.view(np.float32).reshape(shape)).to(_dt.bfloat16)
    array = np.frombuffer(data, dtype=dtype.numpy.newbyteorder("<")).astype(dtype.numpy, copy=True)
    return from_numpy(array.reshape(shape))


def _resolve_location(map_location, tensor: Tensor, saved_device: str) -> Tensor:
    if map_location is None:
        target = saved_device
    elif isinstance(map_location, (str, _device_type)):
        target = map_location
    elif isinstance(map_location, dict):
        target = map_location.get(saved_device, saved_device)
    elif callable(map_location):
        result = map_location(tensor, saved_device)
        return tensor if result is None else result
    else:
        raise TypeError(f"tp.load(): map_location must be a device, a string, a dict or a callable, not {type(map_location).__name__}")
    return tensor.to(target) if str(target) != "cpu" else tensor


class _Rebuilder:
    def __init__(self, tensors: dict) -> None:
        self.tensors = tensors

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
        if kind in ("dict", "odict"):
            keys, values = node.get("keys"), node.get("values")
            if not isinstance(keys, list) or not isinstance(values, list) or len(keys) != len(values):
                raise ValueError("tp.load(): malformed dict in the structure metadata")
            result = OrderedDict() if kind == "odict" else {}
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
    device names to new ones, or a callable ``(tensor, saved_device) -> tensor``. Without it,
    tensors go back to the device they were saved from. Nothing in the file is ever executed,
    so ``weights_only`` is accepted for compatibility and has no effect. A PyTorch ``.pt``
    checkpoint is refused with instructions to convert it.
    """
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as stream:
            return _load_stream(stream, map_location, repr(os.fspath(f)))
    return _load_stream(f, map_location, "the file")


def _load_stream(stream, map_location, source: str):
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
    data = stream.read() or b""
    entries = _validate_entries(header, len(data))
    view = memoryview(data)
    tensors = {name: _tensor_from_bytes(view[begin:end], dtype, shape) for name, (dtype, shape, begin, end) in entries.items()}

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
    for name in tensors:
        t = _resolve_location(map_location, tensors[name], devices.get(name, "cpu"))
        if grad_flags.get(name):
            t.requires_grad_(True)
        tensors[name] = t
    if structure is None:
        return tensors
    try:
        return _Rebuilder(tensors).build(structure)
    except RecursionError:
        raise ValueError("tp.load(): the structure metadata nests too deeply") from None
