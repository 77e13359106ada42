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


def skip_init(module_cls: type, *args: Any, **kwargs: Any) -> Module:
    """Instantiate ``module_cls(*args, **kwargs)`` with uninitialized parameters and buffers."""
    if not (isinstance(module_cls, type) and issubclass(module_cls, Module)):
        raise TypeError(f"skip_init(): module_cls must be a subclass of nn.Module, got {module_cls!r}")
    # The module is built on meta through its own device argument, so one without it would
    # allocate and initialize for real.
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    target = kwargs.pop("device", "cpu")
    return module_cls(*args, device="meta", **kwargs).to_empty(device=target)
