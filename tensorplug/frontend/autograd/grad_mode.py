"""Grad modes: no_grad, enable_grad, set_grad_enabled, inference_mode.

Grad mode is the Autograd dispatch key being allowed in this thread: ``no_grad`` excludes it, so
calls skip the autograd kernels entirely (no graph, no overhead). Every mode works as a context
manager and as a decorator, and is thread-local.
"""
from __future__ import annotations

import functools
import threading

from ...dispatcher import AUTOGRAD, ExcludeKeys, IncludeKeys, local_state

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "is_grad_enabled", "is_inference_mode_enabled"]

_AUTOGRAD_MASK = AUTOGRAD.mask


def is_grad_enabled() -> bool:
    return local_state.mask & _AUTOGRAD_MASK != 0


class _GradMode:
    """Base of the grad-mode context managers: enter switches the mode, exit restores it."""

    _switch: type = ExcludeKeys

    def __new__(cls, *args, **kwargs):
        # Allow the bare decorator form ``@tp.no_grad`` as well as ``@tp.no_grad()``.
        if len(args) == 1 and callable(args[0]) and not kwargs and cls is not set_grad_enabled:
            return cls()(args[0])
        return super().__new__(cls)

    def __enter__(self):
        self._switch(_AUTOGRAD_MASK).__enter__()
        return self

    def __exit__(self, *exc_info):
        local_state.mask = local_state.saved_masks.pop()
        return False

    def __call__(self, func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with self.clone():
                return func(*args, **kwargs)

        return wrapper

    def clone(self):
        return type(self)()


class no_grad(_GradMode):
    """Run without recording operations for autograd: ``with tp.no_grad(): ...``."""


class enable_grad(_GradMode):
    """Record operations again inside a ``no_grad`` region."""

    _switch = IncludeKeys


class _InferenceState(threading.local):
    # Whether this thread is inside inference_mode(True), apart from grad mode: no_grad alone
    # is not inference mode (is_inference_mode_enabled() is False there, as in PyTorch).
    enabled = False


_inference_state = _InferenceState()


class inference_mode(_GradMode):
    """Like ``no_grad`` (tensorplug has no separate inference tensors; see docs/deviations.md)."""

    def __init__(self, mode: bool = True):
        self.mode = bool(mode)
        self._switch = ExcludeKeys if mode else IncludeKeys
        self._previous: list[bool] = []

    def __enter__(self):
        self._previous.append(_inference_state.enabled)
        _inference_state.enabled = self.mode
        return super().__enter__()

    def __exit__(self, *exc_info):
        _inference_state.enabled = self._previous.pop()
        return super().__exit__(*exc_info)

    def clone(self):
        return inference_mode(self.mode)


class set_grad_enabled(_GradMode):
    """Set grad mode; works as a function call, a context manager and a decorator."""

    def __init__(self, mode: bool):
        self.mode = bool(mode)
        self._previous = is_grad_enabled()
        if self.mode:
            local_state.mask |= _AUTOGRAD_MASK
        else:
            local_state.mask &= ~_AUTOGRAD_MASK

    def __enter__(self):
        local_state.saved_masks.append((local_state.mask & ~_AUTOGRAD_MASK) | (_AUTOGRAD_MASK if self._previous else 0))
        return self

    def __call__(self, func):
        mode = self.mode
        # Construction already switched the mode; a decorator must not change it now.
        local_state.mask = (local_state.mask & ~_AUTOGRAD_MASK) | (_AUTOGRAD_MASK if self._previous else 0)

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with set_grad_enabled(mode):
                return func(*args, **kwargs)

        return wrapper

    def clone(self):
        return set_grad_enabled(self.mode)


def is_inference_mode_enabled() -> bool:
    """Whether this thread runs inside ``inference_mode()`` (``no_grad`` alone is not inference mode)."""
    return _inference_state.enabled
