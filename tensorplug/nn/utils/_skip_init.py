"""``skip_init``: build a module without initializing its parameters, for programs that overwrite
them right after (loading a checkpoint, a custom init).

PyTorch builds the module on its ``meta`` device, where nothing is computed, and then gives it
uninitialized storage with ``to_empty``. tensorplug has no meta device, so the module is built
on its real device with ``tp.nn.init``'s functions made no-ops for the duration: every built-in
layer initializes through them, so no random numbers are drawn and no fill runs; the parameters
hold whatever their freshly allocated storage holds. A custom module that fills its tensors
through other calls (``tp.randn``, ``Tensor.uniform_``) still does so. Either way the values are
unspecified, as with PyTorch: write every parameter before using it.

>>> import tensorplug as tp
>>> layer = skip_init(tp.nn.Linear, 4, 2)
>>> layer.weight.shape, layer.weight.requires_grad
((2, 4), True)
"""
from __future__ import annotations

import inspect

from .. import init
from ..module import Module

__all__ = ["skip_init"]


def skip_init(module_cls, *args, **kwargs) -> Module:
    """``module_cls(*args, **kwargs)`` with parameter initialization skipped (values unspecified);
    the class must take a ``device`` argument, as PyTorch requires."""
    if not (isinstance(module_cls, type) and issubclass(module_cls, Module)):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    # PyTorch's condition (it passes device="meta"); kept so that the same classes are accepted.
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    with init.fills_skipped():
        return module_cls(*args, **kwargs)
