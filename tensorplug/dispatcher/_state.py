"""Thread-local dispatch state: which keys are forced on or off for the current thread.

``no_grad`` excludes the Autograd key; autograd kernels exclude it while they run the forward
below themselves. The state is one pair of ints per thread, read on every call.
"""
from __future__ import annotations

import threading

__all__ = ["local_state", "ExcludeKeys"]


class _LocalDispatchState(threading.local):
    # Class attributes are the defaults every new thread starts from.
    include: int = 0
    mask: int = -1  # all keys allowed; excluding a key clears its bit


local_state = _LocalDispatchState()


class ExcludeKeys:
    """Context manager that removes ``keys`` (a key set) from every call in this thread."""

    __slots__ = ("keys", "_saved")

    def __init__(self, keys: int):
        self.keys = keys

    def __enter__(self):
        self._saved = local_state.mask
        local_state.mask = self._saved & ~self.keys
        return self

    def __exit__(self, *exc_info):
        local_state.mask = self._saved
        return False
