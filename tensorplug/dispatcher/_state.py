"""Thread-local dispatch state: which keys are forced on or off for the current thread.

``no_grad`` excludes the Autograd key; autograd kernels exclude it while they run the forward
below themselves. The state is one pair of ints per thread, read on every call:
``local_state.include`` (keys forced on) and ``local_state.mask`` (keys allowed; excluding a key
clears its bit), plus ``local_state.saved_masks``, the thread's stack of masks that nested
context managers restore. The object is the compiled core's (tensorplug/csrc/hotpath.cpp), which
keeps the two ints in C++ thread-local storage: its elementwise fast path reads them with no
Python attribute lookup, and Python reads them faster than a ``threading.local``'s. A new thread
starts with ``include == 0`` and ``mask == -1``.
"""
from __future__ import annotations

from .. import _hotpath

__all__ = ["local_state", "MaskKeys", "ExcludeKeys", "IncludeKeys"]

local_state = _hotpath.local_state


class MaskKeys:
    """Context manager that allows the keys ``allow`` and removes the keys ``deny`` (key sets)
    for every call in this thread: ``mask = (mask | allow) & ~deny``.

    The previous mask is kept on a per-thread stack, so one instance may be entered from
    several threads or nested.
    """

    __slots__ = ("allow", "deny")

    def __init__(self, allow: int = 0, deny: int = 0):
        self.allow = allow
        self.deny = deny

    def __enter__(self):
        state = local_state
        state.saved_masks.append(state.mask)
        state.mask = (state.mask | self.allow) & ~self.deny
        return self

    def __exit__(self, *exc_info):
        state = local_state
        state.mask = state.saved_masks.pop()
        return False


class ExcludeKeys(MaskKeys):
    """Removes ``keys`` (a key set) from every call in this thread (``no_grad``)."""

    __slots__ = ()

    def __init__(self, keys: int):
        super().__init__(deny=keys)


class IncludeKeys(MaskKeys):
    """Allows ``keys`` again (``enable_grad`` inside ``no_grad``)."""

    __slots__ = ()

    def __init__(self, keys: int):
        super().__init__(allow=keys)
