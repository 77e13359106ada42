"""Random number generators: (seed, offset) state per device, consumed by the random primitives.

Every backend implements the same counter-based generator (Philox4x32-10) with the same mapping
from counters to values, so one seed gives the same uniform numbers on every device. A call
that fills n elements consumes a whole number of 4-word Philox blocks and advances the offset
by that many blocks.
"""
from __future__ import annotations

import threading

from .device import canonical_device

__all__ = [
    "Generator", "manual_seed", "seed", "initial_seed", "default_generator", "blocks_for", "get_rng_state",
    "set_rng_state",
]

DEFAULT_SEED = 67280421310721
_MASK64 = (1 << 64) - 1
#: A state is the seed and the offset, each a little-endian unsigned 64-bit integer.
STATE_BYTES = 16


class Generator:
    """A random number generator for one device: ``tp.Generator(device="cpu").manual_seed(0)``."""

    __slots__ = ("device", "_seed", "_offset", "_lock")

    def __init__(self, device="cpu"):
        self.device = canonical_device(device)
        self._seed = DEFAULT_SEED
        self._offset = 0
        self._lock = threading.Lock()

    def manual_seed(self, seed: int) -> "Generator":
        seed = int(seed)
        if not -(1 << 63) <= seed <= _MASK64:
            raise RuntimeError(f"manual_seed(): seed must be within [-2**63, 2**64), got {seed}")
        self._seed = seed & _MASK64
        self._offset = 0
        return self

    def seed(self) -> int:
        """Re-seed from a non-deterministic source and return the new seed."""
        import os

        self.manual_seed(int.from_bytes(os.urandom(8), "little") >> 1)
        return self._seed

    def initial_seed(self) -> int:
        return self._seed

    def get_state(self):
        """This generator's state as a uint8 CPU tensor (``torch.ByteTensor``-like): the seed and
        the Philox offset, everything needed to replay its future numbers."""
        return pack_state(self._seed, self._offset)

    def set_state(self, new_state) -> "Generator":
        """Restore a state from :meth:`get_state` (or a ``(seed, offset)`` pair)."""
        if isinstance(new_state, tuple) and len(new_state) == 2:
            seed, offset = (int(v) for v in new_state)
        else:
            seed, offset = unpack_state("set_state", new_state)
        self._seed, self._offset = seed & _MASK64, offset
        return self

    def take(self, blocks: int) -> tuple[int, int]:
        """Reserve ``blocks`` Philox blocks; return (seed, first block's offset)."""
        with self._lock:
            offset = self._offset
            self._offset = offset + blocks
        return self._seed, offset


_default_generators: dict = {}
# The last global seed: a device's default generator created later starts from it too, so
# manual_seed(s) seeds devices that have not been used yet (as in PyTorch).
_global_seed = DEFAULT_SEED


def default_generator(device) -> Generator:
    dev = canonical_device(device)
    gen = _default_generators.get(dev)
    if gen is None:
        gen = _default_generators.setdefault(dev, Generator(dev).manual_seed(_global_seed))
    return gen


def manual_seed(seed: int) -> Generator:
    """Seed the default generator of every device, present and future; returns the CPU one."""
    global _global_seed
    cpu = default_generator("cpu").manual_seed(seed)
    _global_seed = cpu.initial_seed()
    for gen in _default_generators.values():
        gen.manual_seed(seed)
    return cpu


def seed() -> int:
    new = default_generator("cpu").seed()
    manual_seed(new)
    return new


def initial_seed() -> int:
    return default_generator("cpu").initial_seed()


def blocks_for(count: int, values_per_block: int) -> int:
    return (count + values_per_block - 1) // values_per_block


def pack_state(seed: int, offset: int):
    """(seed, offset) as the uint8 CPU tensor that ``get_state``/``get_rng_state`` return."""
    import numpy as np

    from .factories import from_numpy

    raw = seed.to_bytes(8, "little") + (offset & _MASK64).to_bytes(8, "little")
    return from_numpy(np.frombuffer(raw, dtype=np.uint8).copy())


def unpack_state(op: str, state) -> tuple[int, int]:
    """(seed, offset) from a state tensor, refusing anything ``pack_state`` cannot have made."""
    from . import dtypes as _dt
    from .tensor import Tensor

    if not isinstance(state, Tensor):
        raise TypeError(f"{op}(): expected a uint8 tensor (torch.ByteTensor), but got {type(state).__name__}")
    if state.dtype is not _dt.uint8:
        raise TypeError(f"{op}(): RNG state must be a uint8 tensor (torch.ByteTensor), got {state.dtype.name}")
    if state.shape != (STATE_BYTES,):
        raise RuntimeError(f"{op}(): expected an RNG state of {STATE_BYTES} bytes (seed and Philox offset), but found "
                           f"shape {list(state.shape)}")
    raw = bytes(state.detach().cpu().numpy().tobytes())
    return int.from_bytes(raw[:8], "little"), int.from_bytes(raw[8:], "little")


def get_rng_state():
    """The CPU default generator's state, a uint8 tensor: ``set_rng_state`` of it makes the same
    numbers come out again.

    >>> state = tp.get_rng_state()
    >>> a = tp.rand(2)
    >>> tp.set_rng_state(state)
    >>> bool((tp.rand(2) == a).all())
    True
    """
    return default_generator("cpu").get_state()


def set_rng_state(new_state) -> None:
    """Restore the CPU default generator's state from :func:`get_rng_state`."""
    default_generator("cpu").set_state(unpack_state("set_rng_state", new_state))
