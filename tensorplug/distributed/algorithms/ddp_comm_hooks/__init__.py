"""``torch.distributed.algorithms.ddp_comm_hooks``' module path: the built-in DDP communication
hooks (``default_hooks``)."""
from . import default_hooks

__all__ = ["default_hooks"]
