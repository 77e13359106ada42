"""Modules of named flags that refuse unknown names, for ``tp._dynamo.config`` and
``tp._inductor.config``.

Scripts tune PyTorch's compiler by assigning module attributes
(``torch._dynamo.config.cache_size_limit = 64``). tensorplug has no compiler to tune, but a
misspelt flag should still fail as in PyTorch rather than be silently kept, and ``patch`` must
restore what it changed.
"""
from __future__ import annotations

import contextlib
import sys
import types


class FlagNamespace:
    """A group of flags (``config.triton.cudagraphs``) that refuses names it does not have."""

    def __init__(self, qualified_name: str, defaults: dict) -> None:
        object.__setattr__(self, "_qualified_name", qualified_name)
        object.__setattr__(self, "_values", dict(defaults))

    def __getattr__(self, name: str):
        values = object.__getattribute__(self, "_values")
        if name in values:
            return values[name]
        raise AttributeError(f"{object.__getattribute__(self, '_qualified_name')}.{name} does not exist")

    def __setattr__(self, name: str, value) -> None:
        if name not in self._values or isinstance(self._values[name], FlagNamespace):
            raise AttributeError(f"{self._qualified_name}.{name} does not exist")
        self._values[name] = value


class FlagModule(types.ModuleType):
    """A config module: only its declared flags may be set; ``patch`` changes them for a block."""

    def __setattr__(self, name: str, value) -> None:
        if name.startswith("_") or name in ("patch",):
            return super().__setattr__(name, value)
        if name not in self.__dict__.get("_flag_names", ()):
            raise AttributeError(f"{self.__name__}.{name} does not exist")
        super().__setattr__(name, value)

    def __getattr__(self, name: str):
        raise AttributeError(f"{self.__name__}.{name} does not exist")


def install_flags(module_name: str, flags: dict) -> None:
    """Makes ``module_name`` a FlagModule whose flags are ``flags`` (nested dicts become namespaces)."""
    module = sys.modules[module_name]
    for name, default in flags.items():
        value = FlagNamespace(f"{module_name}.{name}", default) if isinstance(default, dict) else default
        module.__dict__[name] = value
    module.__dict__["_flag_names"] = frozenset(flags)
    module.__dict__["patch"] = _patcher(module)
    module.__class__ = FlagModule


def _patcher(module: types.ModuleType):
    def patch(changes: str | dict | None = None, value=None, **more) -> contextlib.AbstractContextManager:
        """Set flags for a ``with`` block or a decorated function: ``patch("name", value)``,
        ``patch({"name": value})`` or ``patch(name=value)``; a dotted name reaches a group."""
        if isinstance(changes, str):
            updates = {changes: value}
        else:
            updates = dict(changes or {})
        updates.update(more)
        return _Patch(module, updates)

    return patch


class _Patch(contextlib.ContextDecorator):
    def __init__(self, module, updates: dict) -> None:
        self._module, self._updates, self._saved = module, updates, []

    @staticmethod
    def _owner(module, dotted: str):
        *groups, leaf = dotted.split(".")
        owner = module
        for group in groups:
            owner = getattr(owner, group)
        return owner, leaf

    def __enter__(self):
        for dotted, value in self._updates.items():
            owner, leaf = self._owner(self._module, dotted)
            previous = getattr(owner, leaf)
            setattr(owner, leaf, value)
            self._saved.append((owner, leaf, previous))
        return self

    def __exit__(self, *exc_info) -> bool:
        while self._saved:
            owner, leaf, previous = self._saved.pop()
            setattr(owner, leaf, previous)
        return False
