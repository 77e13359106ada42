"""Saved-tensor hooks: deciding what autograd keeps of a tensor it saves for backward.

While ``saved_tensors_hooks(pack_hook, unpack_hook)`` is active in a thread, every tensor a node
saves there (an op's input or output, ``ctx.save_for_backward``) is handed to ``pack_hook`` at
once and the node keeps only what that returned; ``unpack_hook`` turns it back into a tensor when
backward (or ``ctx.saved_tensors``) needs it. Contexts nest, the innermost pair applies, and they
belong to the thread that entered them, as in PyTorch. The packing itself is
``graph.SavedTensor``'s; this module keeps the per-thread stacks and the context managers.

Recording costs nothing more while no thread has hooks: SavedTensor reads one module-level count
(:data:`pushed`), and the compiled recording kernel one flag that this module sets, which sends
every recording to the Python kernels (where SavedTensor packs) while any pair is pushed.
"""
from __future__ import annotations

import functools
import threading
from typing import Any, Callable

from ... import _autograd_core

__all__ = ["saved_tensors_hooks", "save_on_cpu", "disable_saved_tensors_hooks", "current_hooks", "pushed"]


class _ThreadHooks(threading.local):
    def __init__(self):
        self.stack: list[tuple[Callable, Callable]] = []  # (pack_hook, unpack_hook), innermost last
        self.disabled: list[str] = []  # messages of the enclosing disable_saved_tensors_hooks, innermost last


_this_thread = _ThreadHooks()
_count_lock = threading.Lock()

#: How many hook pairs are pushed, over all threads. Zero is the common case: SavedTensor then
#: skips the per-thread lookup.
pushed = 0


def current_hooks() -> tuple[Callable, Callable] | None:
    """This thread's innermost ``(pack_hook, unpack_hook)``, or None."""
    stack = _this_thread.stack
    return stack[-1] if stack else None


def _push(pair: tuple[Callable, Callable]) -> None:
    global pushed
    disabled = _this_thread.disabled
    if disabled:
        raise RuntimeError(disabled[-1])
    _this_thread.stack.append(pair)
    with _count_lock:
        pushed += 1
        if pushed == 1:
            _autograd_core.set_saved_hooks_active(True)


def _pop() -> None:
    global pushed
    _this_thread.stack.pop()
    with _count_lock:
        pushed -= 1
        if pushed == 0:
            _autograd_core.set_saved_hooks_active(False)


class saved_tensors_hooks:
    """Context manager: tensors saved for backward go through ``pack_hook`` and come back through ``unpack_hook``."""

    def __init__(self, pack_hook: Callable[[Any], Any], unpack_hook: Callable[[Any], Any]) -> None:
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self) -> None:
        if not callable(self.pack_hook) or not callable(self.unpack_hook):
            raise TypeError(
                f"saved_tensors_hooks: pack_hook and unpack_hook must be callable, got "
                f"{type(self.pack_hook).__name__} and {type(self.unpack_hook).__name__}"
            )
        _push((self.pack_hook, self.unpack_hook))

    def __exit__(self, *exc_info) -> None:
        _pop()


def _device_module_available(device_type: str) -> bool:
    import tensorplug

    is_available = getattr(getattr(tensorplug, device_type, None), "is_available", None)
    return bool(is_available()) if callable(is_available) else False


class save_on_cpu(saved_tensors_hooks):
    """Context manager: tensors saved for backward are kept in CPU memory and copied back to their device for backward."""

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda") -> None:
        # As in PyTorch, pinning only happens when the accelerator it is for is there. Host memory
        # is never page-locked here (docs/deviations.md), so what pinning leaves observable is
        # that a pinned save is always a copy, while an unpinned one of a CPU tensor is the tensor.
        pin = bool(pin_memory) and _device_module_available(device_type)

        def to_cpu(t):
            return (t.device, t.to("cpu", copy=True) if pin else t.cpu())

        def back_to_device(packed):
            device, host = packed
            return host.to(device, non_blocking=pin)

        super().__init__(to_cpu, back_to_device)


class disable_saved_tensors_hooks:
    """Context manager (and decorator): registering saved-tensor hooks inside it raises ``RuntimeError(error_message)``."""

    def __init__(self, error_message: str) -> None:
        self.error_message = error_message

    def __enter__(self) -> None:
        if _this_thread.stack:
            raise RuntimeError(self.error_message)
        _this_thread.disabled.append(self.error_message)

    def __exit__(self, *exc_info) -> None:
        _this_thread.disabled.pop()

    def __call__(self, func: Callable) -> Callable:
        message = self.error_message

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with disable_saved_tensors_hooks(message):
                return func(*args, **kwargs)

        return wrapper
