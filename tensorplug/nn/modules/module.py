"""``tp.nn.modules.module``: ``Module`` and the hooks for every module (forward, backward and
registration hooks), re-exported from ``tensorplug.nn.module`` under PyTorch's import path."""
from ..module import (
    Module,
    RemovableHandle,
    register_module_backward_hook,
    register_module_buffer_registration_hook,
    register_module_forward_hook,
    register_module_forward_pre_hook,
    register_module_full_backward_hook,
    register_module_full_backward_pre_hook,
    register_module_module_registration_hook,
    register_module_parameter_registration_hook,
)

__all__ = [
    "Module", "RemovableHandle", "register_module_forward_pre_hook", "register_module_forward_hook",
    "register_module_full_backward_hook", "register_module_full_backward_pre_hook", "register_module_backward_hook",
    "register_module_parameter_registration_hook", "register_module_buffer_registration_hook",
    "register_module_module_registration_hook",
]
