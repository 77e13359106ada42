"""How ``Module`` stores its hooks: ordered tables keyed by handle id, option bits per id, and
which kind of backward hook (full or legacy) an owner has committed to.

Every ``register_*hook`` method of ``Module`` goes through :func:`add_hook`; the hook itself is
stored as given (libraries read ``module._forward_hooks`` and the like), and what PyTorch keeps in
side tables or function attributes (``with_kwargs``, ``always_call``, a state-dict post-hook that
must return None) is a bit in the owner's options table under the same id, so that removing the
handle forgets both.

The hooks for every module (``register_module_*_hook``) live in the same tables on one owner,
``EVERY_MODULE``, so that a module call reads both owners the same way.
"""
from __future__ import annotations

import itertools
import weakref
from collections import OrderedDict
from typing import Callable

__all__ = [
    "RemovableHandle", "add_hook", "WITH_KWARGS", "ALWAYS_CALL", "MUST_RETURN_NONE", "FULL", "LEGACY", "PRE",
    "add_backward_hook", "backward_hooks_for_call", "EVERY_MODULE", "call_hooks_active", "add_every_module_forward_hook",
    "remember_public_post_hook", "was_public_post_hook",
]

#: Option bits (an owner's ``_hook_options[id]``).
WITH_KWARGS = 1  # a forward (pre-)hook that also receives forward's keyword arguments
ALWAYS_CALL = 2  # a forward hook that runs even when forward (or an earlier hook) raises
MUST_RETURN_NONE = 4  # a state_dict post-hook from the public API: edits in place, returns None

#: The kinds of backward hook: full and legacy (register_backward_hook) ones exclude each other
#: on one owner; pre-hooks (register_full_backward_pre_hook) go with either.
FULL = "full"
LEGACY = "legacy"
PRE = "pre"

#: ``call_hooks_active[0]`` turns True once any backward hook was registered anywhere, or any
#: forward hook for every module: until then a module call looks at its own forward hook tables
#: only (a list, read without a global statement). It stays True when the hooks are removed.
call_hooks_active = [False]


class RemovableHandle:
    """What ``register_*_hook`` returns: ``handle.remove()`` unregisters the hook (also a
    context manager that removes it on exit)."""

    _ids = itertools.count()

    def __init__(self, *tables: dict):
        self.id = next(RemovableHandle._ids)
        self._tables = tables

    def remove(self) -> None:
        """Forget the hook (and its options); removing twice is harmless."""
        for table in self._tables:
            table.pop(self.id, None)

    def __enter__(self) -> "RemovableHandle":
        return self

    def __exit__(self, *exc_info) -> None:
        self.remove()


def add_hook(table: OrderedDict, hook: Callable, *, first: bool = False, options: int = 0,
             options_table: dict | None = None) -> RemovableHandle:
    """Store ``hook`` in ``table`` under a new handle's id, ahead of the others when ``first``,
    with its ``options`` bits in ``options_table``."""
    handle = RemovableHandle(table) if options_table is None else RemovableHandle(table, options_table)
    table[handle.id] = hook
    if first:
        table.move_to_end(handle.id, last=False)
    if options:
        options_table[handle.id] = options
    return handle


def add_backward_hook(owner, hook: Callable, kind: str, *, first: bool = False) -> RemovableHandle:
    """Register a backward hook of ``kind`` (FULL, LEGACY or PRE) on ``owner``: a module, or
    EVERY_MODULE. An owner holding full hooks takes no legacy ones, and the reverse (PyTorch's
    error); pre-hooks go with either."""
    if kind == PRE:
        table = owner._backward_pre_hooks
    else:
        held = owner._backward_hook_kind
        if held is not None and held != kind:
            where = "as a global Module hook" if owner is EVERY_MODULE else "on a single Module"
            raise RuntimeError(
                f"Cannot use both regular backward hooks and full backward hooks {where}. Please use only one of them."
            )
        owner._backward_hook_kind = kind
        table = owner._backward_hooks
    call_hooks_active[0] = True
    return add_hook(table, hook, first=first)


def add_every_module_forward_hook(table: OrderedDict, hook: Callable, *, options: int = 0) -> RemovableHandle:
    """Register a forward hook or pre-hook (``table`` is EVERY_MODULE's) that every module call
    runs before its own."""
    call_hooks_active[0] = True
    return add_hook(table, hook, options=options, options_table=EVERY_MODULE._hook_options)


_NO_BACKWARD_HOOKS: tuple = ((), (), ())


def backward_hooks_for_call(module) -> tuple[list, list, list]:
    """The (full hooks, legacy hooks, pre-hooks) one call of ``module`` runs: those for every
    module first, then its own."""
    if not (module._backward_hooks or module._backward_pre_hooks or EVERY_MODULE._backward_hooks
            or EVERY_MODULE._backward_pre_hooks):
        return _NO_BACKWARD_HOOKS  # the common case once any module anywhere has a backward hook
    full: list = []
    legacy: list = []
    pre: list = []
    for owner in (EVERY_MODULE, module):
        pre.extend(owner._backward_pre_hooks.values())
        if owner._backward_hooks:
            kind = owner._backward_hook_kind
            if kind == FULL:
                full.extend(owner._backward_hooks.values())
            elif kind == LEGACY:
                legacy.extend(owner._backward_hooks.values())
    return full, legacy, pre


class _EveryModule:
    """The hooks that apply to every module (``register_module_*_hook``): forward and backward
    hooks under a module's attribute names, so that one code path serves both, and the hooks run
    when a module registers a parameter, buffer or child module."""

    def __init__(self):
        self._forward_pre_hooks: OrderedDict = OrderedDict()
        self._forward_hooks: OrderedDict = OrderedDict()
        self._hook_options: dict = {}
        self._backward_hooks: OrderedDict = OrderedDict()
        self._backward_pre_hooks: OrderedDict = OrderedDict()
        self._backward_hook_kind: str | None = None
        self._parameter_registration_hooks: OrderedDict = OrderedDict()
        self._buffer_registration_hooks: OrderedDict = OrderedDict()
        self._module_registration_hooks: OrderedDict = OrderedDict()


EVERY_MODULE = _EveryModule()

# Functions once registered through register_state_dict_post_hook. PyTorch refuses to register
# such a function through the private _register_state_dict_hook afterwards (its returned dict
# would be used by one form and forbidden by the other); weak, so the record never keeps a hook alive.
_public_post_hooks: weakref.WeakSet = weakref.WeakSet()


def remember_public_post_hook(hook: Callable) -> None:
    """Note that ``hook`` was registered through ``register_state_dict_post_hook``."""
    try:
        _public_post_hooks.add(hook)
    except TypeError:  # not weak-referenceable (a builtin): nothing to remember it by
        pass


def was_public_post_hook(hook: Callable) -> bool:
    """Whether ``hook`` was ever registered through ``register_state_dict_post_hook``."""
    try:
        return hook in _public_post_hooks
    except TypeError:
        return False
