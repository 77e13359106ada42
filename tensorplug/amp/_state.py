"""Autocast's per-thread state, and the Autocast key in the thread's include set.

As in PyTorch, autocast state belongs to a thread: a region entered in one thread casts nothing
in another. ``current`` is that state; :func:`sync_key` puts the Autocast dispatch key in the
thread's include set exactly while some device type is enabled, which is all it takes for the
casting kernels (amp/_casting.py) to see the thread's calls.
"""
from __future__ import annotations

import threading

from ..dispatcher import AUTOCAST, MaskKeys, local_state
from ..frontend import dtypes as _dt

__all__ = ["current", "sync_key", "Snapshot", "DEFAULT_DTYPES"]

#: PyTorch's default autocast dtypes (autocast_mode.get_autocast_dtype picks the default of others).
DEFAULT_DTYPES = {"cpu": _dt.bfloat16, "cuda": _dt.float16, "mps": _dt.float16, "xpu": _dt.bfloat16}


class _ThreadState(threading.local):
    def __init__(self) -> None:
        self.enabled: dict[str, bool] = {}
        self.dtypes: dict[str, _dt.dtype] = {}
        self.cache_enabled = True
        self.nesting = 0
        #: id(weight) -> (weight, its version when cast, the cast): see _casting._cast_to_lower.
        self.cache: dict[int, tuple] = {}


current = _ThreadState()
# A region re-allows the key the autograd engine denies while backward runs.
_ALLOW_AUTOCAST = MaskKeys(allow=AUTOCAST.mask)


def sync_key() -> None:
    """The Autocast key is in this thread's include set iff some device type is enabled."""
    if any(current.enabled.values()):
        local_state.include |= AUTOCAST.mask
    else:
        local_state.include &= ~AUTOCAST.mask


class Snapshot:
    """The thread's autocast state at one moment, to run code under it later: how a checkpointed
    function is recomputed in backward with the autocast state of its first run, and how
    ``custom_bwd`` runs a backward under its forward's state.

    Entering also allows the Autocast key in the thread's mask, which the autograd engine denies
    while backward runs (backward ops never autocast on their own).
    """

    __slots__ = ("enabled", "dtypes", "cache_enabled", "_saved")

    def __init__(self, enabled: dict[str, bool] | None = None, dtypes: dict[str, _dt.dtype] | None = None,
                 cache_enabled: bool | None = None) -> None:
        self.enabled = dict(current.enabled if enabled is None else enabled)
        self.dtypes = dict(current.dtypes if dtypes is None else dtypes)
        self.cache_enabled = current.cache_enabled if cache_enabled is None else cache_enabled
        self._saved: list[tuple] = []

    def __enter__(self):
        state = current
        self._saved.append((state.enabled, state.dtypes, state.cache_enabled))
        state.enabled, state.dtypes, state.cache_enabled = dict(self.enabled), dict(self.dtypes), self.cache_enabled
        state.nesting += 1
        _ALLOW_AUTOCAST.__enter__()
        sync_key()
        return self

    def __exit__(self, *exc_info):
        state = current
        state.enabled, state.dtypes, state.cache_enabled = self._saved.pop()
        _ALLOW_AUTOCAST.__exit__(*exc_info)
        state.nesting -= 1
        if state.nesting == 0:
            state.cache.clear()  # PyTorch drops the cast weights when the outermost region exits
        sync_key()
        return False
