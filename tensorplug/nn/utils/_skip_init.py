"""``nn.utils.skip_init``: build a module without running its parameters' initialization.

The module is constructed on the meta device, where initializers (``nn.init``) have no values to
write and cost nothing, then given uninitialized memory on the device asked for
(``Module.to_empty``); the caller fills it, usually with ``load_state_dict``.

>>> import tensorplug as tp
>>> layer = skip_init(tp.nn.Linear, 5, 3)
>>> layer.weight.shape, layer.weight.device
((3, 5), device(type='cpu'))
"""
from __future__ import annotations

import inspect
from typing import Any

from ..module import Module

__all__ = ["skip_init"]


def _takes_a_device(module_cls: type) -> bool:
    """Whether ``module_cls``'s constructor has a ``device`` parameter to build it on meta with; a
    module without one would allocate and initialize for real."""
    return "device" in inspect.signature(module_cls).parameters


def skip_init(module_cls: type, *args: Any, **kwargs: Any) -> Module:
    """Instantiate ``module_cls(*args, **kwargs)`` with uninitialized parameters and buffers."""
    if not isinstance(module_cls, type):
        raise TypeError(f"skip_init(): module_cls must be a subclass of nn.Module, got {module_cls!r}")
    if not issubclass(module_cls, Module):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if not _takes_a_device(module_cls):
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    target = kwargs.pop("device", "cpu")
    without_memory = module_cls(*args, device="meta", **kwargs)
    return without_memory.to_empty(device=target)
