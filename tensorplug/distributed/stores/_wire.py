"""A small self-describing binary encoding of the values a store passes around (None, bool, int,
float, str, bytes and lists of them), for TCPStore's messages and FileStore's file.

Not pickle: a store's port or file may be reachable by other users, and decoding must never run
code. Each value is a one-byte tag then its payload; lengths are 4-byte big-endian.
"""
from __future__ import annotations

import struct

__all__ = ["encode", "decode"]

_LEN = struct.Struct(">I")
_INT = struct.Struct(">q")
_FLOAT = struct.Struct(">d")


def encode(value) -> bytes:
    """The bytes of ``value``."""
    parts: list[bytes] = []
    _encode_into(value, parts)
    return b"".join(parts)


def _encode_into(value, parts: list) -> None:
    if value is None:
        parts.append(b"N")
    elif value is True or value is False:
        parts.append(b"T" if value else b"F")
    elif isinstance(value, int):
        parts.append(b"I" + _INT.pack(value))
    elif isinstance(value, float):
        parts.append(b"D" + _FLOAT.pack(value))
    elif isinstance(value, (bytes, bytearray)):
        parts.append(b"B" + _LEN.pack(len(value)) + bytes(value))
    elif isinstance(value, str):
        raw = value.encode()
        parts.append(b"S" + _LEN.pack(len(raw)) + raw)
    elif isinstance(value, (list, tuple)):
        parts.append(b"L" + _LEN.pack(len(value)))
        for item in value:
            _encode_into(item, parts)
    else:
        raise TypeError(f"store encoding: cannot encode {type(value).__name__}")


def decode(data: bytes):
    """The value ``encode`` turned into ``data``."""
    value, end = _decode_at(memoryview(data), 0)
    if end != len(data):
        raise ValueError(f"store encoding: {len(data) - end} stray bytes after the value")
    return value


def _decode_at(view: memoryview, at: int):
    tag = bytes(view[at:at + 1])
    at += 1
    if tag == b"N":
        return None, at
    if tag in (b"T", b"F"):
        return tag == b"T", at
    if tag == b"I":
        return _INT.unpack_from(view, at)[0], at + _INT.size
    if tag == b"D":
        return _FLOAT.unpack_from(view, at)[0], at + _FLOAT.size
    if tag in (b"B", b"S", b"L"):
        (n,) = _LEN.unpack_from(view, at)
        at += _LEN.size
        if tag == b"L":
            items = []
            for _ in range(n):
                item, at = _decode_at(view, at)
                items.append(item)
            return items, at
        raw = bytes(view[at:at + n])
        if len(raw) != n:
            raise ValueError("store encoding: truncated value")
        return (raw if tag == b"B" else raw.decode()), at + n
    raise ValueError(f"store encoding: unknown tag {tag!r}")
