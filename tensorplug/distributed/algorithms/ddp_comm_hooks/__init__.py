"""``torch.distributed.algorithms.ddp_comm_hooks``' module path: the built-in DDP communication
hooks (``default_hooks``, ``powerSGD_hook``)."""
from . import default_hooks, powerSGD_hook

__all__ = ["default_hooks", "powerSGD_hook"]
