"""PyTorch's ``torch.nn.modules`` path, for programs that spell it: ``tp.nn.modules.module``
holds ``Module`` and the global module hooks (``register_module_full_backward_hook``, ...).
The layers themselves live in ``tp.nn``."""
from . import module
from .module import Module

__all__ = ["Module", "module"]
