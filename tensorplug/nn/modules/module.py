"""``tp.nn.modules.module``: ``Module`` and the global module backward hooks, re-exported from
``tensorplug.nn.module`` under PyTorch's import path."""
from ..module import (
    Module,
    RemovableHandle,
    register_module_backward_hook,
    register_module_full_backward_hook,
    register_module_full_backward_pre_hook,
)

__all__ = [
    "Module", "RemovableHandle", "register_module_full_backward_hook", "register_module_full_backward_pre_hook",
    "register_module_backward_hook",
]
