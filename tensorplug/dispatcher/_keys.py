"""Dispatch keys and key sets.

A key set is a plain ``int`` bit mask: the dispatcher's hot path is one ``|``, one ``&`` and one
dict lookup per call, so key sets must be as cheap as Python allows. A higher bit is a higher
priority, so the key that handles a call is the highest set bit of the call's key set.

Fixed keys take the top bits. Autocast sits above everything, at bit 31, and Profiler below it at
bit 30: each is only ever in a key set while an autocast region or a profiler is active in the
thread (they join through the thread's include set), so ordinary calls keep their single-digit
ints. Autocast is above Complex and Autograd because its kernels cast their inputs with ordinary
ops (recorded by autograd like any other) and then call the op again below themselves; complex
tensors are never cast. Complex sits above Autograd: every tensor of a complex dtype
carries it, and its kernels rewrite a complex op as real ops on ``view_as_real`` views, which
record their own autograd nodes below it (docs/complex.md). Backend keys are handed out from bit 1 upwards when a backend
registers, which lets any number of backends coexist in one process.
"""
from __future__ import annotations

__all__ = [
    "DispatchKey",
    "AUTOCAST",
    "PROFILER",
    "COMPLEX",
    "AUTOGRAD",
    "INPLACE_OR_VIEW",
    "allocate_backend_key",
    "backend_keys",
    "keys_in",
    "highest_key",
]

# Bits below 2**30 keep key sets in CPython's single-digit ints, whose arithmetic is fastest.
_AUTOCAST_BIT = 31
_PROFILER_BIT = 30
_COMPLEX_BIT = 29
_AUTOGRAD_BIT = 28
_INPLACE_OR_VIEW_BIT = 27
_MAX_BACKEND_BIT = 26


class DispatchKey:
    """One dispatch key: a name and the bit it owns in key sets."""

    __slots__ = ("name", "bit", "mask", "is_backend")

    def __init__(self, name: str, bit: int, is_backend: bool):
        self.name = name
        self.bit = bit
        self.mask = 1 << bit
        self.is_backend = is_backend

    def __repr__(self) -> str:
        return f"DispatchKey.{self.name}"


AUTOCAST = DispatchKey("Autocast", _AUTOCAST_BIT, is_backend=False)
PROFILER = DispatchKey("Profiler", _PROFILER_BIT, is_backend=False)
COMPLEX = DispatchKey("Complex", _COMPLEX_BIT, is_backend=False)
AUTOGRAD = DispatchKey("Autograd", _AUTOGRAD_BIT, is_backend=False)
INPLACE_OR_VIEW = DispatchKey("InplaceOrView", _INPLACE_OR_VIEW_BIT, is_backend=False)

_keys_by_bit: dict[int, DispatchKey] = {
    AUTOCAST.bit: AUTOCAST,
    PROFILER.bit: PROFILER,
    COMPLEX.bit: COMPLEX,
    AUTOGRAD.bit: AUTOGRAD,
    INPLACE_OR_VIEW.bit: INPLACE_OR_VIEW,
}
_backend_keys: dict[str, DispatchKey] = {}


def allocate_backend_key(device_type: str) -> DispatchKey:
    """Return the backend key of ``device_type``, allocating a new bit on first use.

    Keys are allocated in registration order, so a backend registered later has a higher
    priority; only mixed-device calls (which the ops reject) could observe the order.
    """
    key = _backend_keys.get(device_type)
    if key is not None:
        return key
    bit = len(_backend_keys) + 1
    if bit > _MAX_BACKEND_BIT:
        raise RuntimeError(
            f"cannot register backend {device_type!r}: all {_MAX_BACKEND_BIT} backend keys are in use"
        )
    key = DispatchKey(device_type, bit, is_backend=True)
    _backend_keys[device_type] = key
    _keys_by_bit[bit] = key
    return key


def backend_keys() -> dict[str, DispatchKey]:
    """The backend keys allocated so far, by device type."""
    return dict(_backend_keys)


def keys_in(keyset: int) -> list[DispatchKey]:
    """The keys of ``keyset``, highest priority first."""
    found = []
    while keyset:
        bit = keyset.bit_length() - 1
        key = _keys_by_bit.get(bit)
        if key is not None:
            found.append(key)
        keyset &= ~(1 << bit)
    return found


def highest_key(keyset: int) -> DispatchKey | None:
    """The key that handles a call with this key set, or None for an empty set."""
    keys = keys_in(keyset)
    return keys[0] if keys else None
