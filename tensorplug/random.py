"""``tp.random``: ``torch.random``'s names (issue 13).

The seeding and state functions are the ones tensorplug already publishes at top level
(``frontend/random.py``); this module adds ``fork_rng``, which saves the default generators'
states on entry and puts them back on exit, so code inside may draw numbers without disturbing
the caller's stream.
"""
from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator

from .frontend.device import canonical_device
from .frontend.random import default_generator, get_rng_state, initial_seed, manual_seed, seed, set_rng_state
from .frontend import random as _generators

__all__ = ["manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state", "fork_rng"]


def _devices_to_fork(devices, device_type: str) -> list:
    """The canonical devices whose generators are saved besides the CPU's.

    ``None`` means every device whose default generator already exists: a generator made later
    starts from the global seed, so nothing drawn inside can leak into it through its state.
    Plain integers are indices of ``device_type`` devices, as in PyTorch.
    """
    if devices is None:
        return [dev for dev in list(_generators._default_generators) if dev != canonical_device("cpu")]
    if isinstance(devices, (str, int)) or not isinstance(devices, Iterable):
        raise TypeError(f"fork_rng(): devices must be an iterable of devices or device indices, not "
                        f"{type(devices).__name__}")
    chosen = []
    for spec in devices:
        dev = canonical_device(f"{device_type}:{spec}" if isinstance(spec, int) else spec)
        if dev != canonical_device("cpu") and dev not in chosen:
            chosen.append(dev)
    return chosen


@contextlib.contextmanager
def fork_rng(devices=None, enabled: bool = True, device_type: str = "cuda") -> Iterator[None]:
    """Run the block with the CPU (and ``devices``') random states restored when it exits."""
    if not enabled:
        yield
        return
    forked = _devices_to_fork(devices, device_type)
    cpu_state = get_rng_state()
    device_states = [(dev, default_generator(dev).get_state()) for dev in forked]
    try:
        yield
    finally:
        set_rng_state(cpu_state)
        for dev, state in device_states:
            default_generator(dev).set_state(state)
