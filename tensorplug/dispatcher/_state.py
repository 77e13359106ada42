"""Thread-local dispatch state: which keys are forced on or off for the current thread.

``no_grad`` excludes the Autograd key; autograd kernels exclude it while they run the forward
below themselves. The state is one pair of ints per thread, read on every call.
"""
from __future__ import annotations

import threading

__all__ = ["local_state", "ExcludeKeys", "IncludeKeys"]


class _LocalDispatchState(threading.local):
    # Class attributes are the defaults every new thread starts from.
    include: int = 0
    mask: int = -1  # all keys allowed; excluding a key clears its bit

    def __init__(self):
        # Masks saved by nested context managers of this thread (grad modes, ExcludeKeys).
        self.saved_masks: list[int] = []


local_state = _LocalDispatchState()


class ExcludeKeys:
    """Context manager that removes ``keys`` (a key set) from every call in this thread.

    The previous mask is kept on a per-thread stack, so one instance may be entered from
    several threads or nested.
    """

    __slots__ = ("keys",)

    def __init__(self, keys: int):
        self.keys = keys

    def __enter__(self):
        state = local_state
        state.saved_masks.append(state.mask)
        state.mask &= ~self.keys
        return self

    def __exit__(self, *exc_info):
        state = local_state
        state.mask = state.saved_masks.pop()
        return False


class IncludeKeys(ExcludeKeys):
    """Context manager that allows ``keys`` again (e.g. enable_grad inside no_grad)."""

    __slots__ = ()

    def __enter__(self):
        state = local_state
        state.saved_masks.append(state.mask)
        state.mask |= self.keys
        return self
