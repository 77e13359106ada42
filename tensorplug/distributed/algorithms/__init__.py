"""``torch.distributed.algorithms``' module path: uneven inputs (``Join``, ``Joinable``,
``JoinHook``) and DDP communication hooks (``ddp_comm_hooks``)."""
from . import ddp_comm_hooks, join
from .join import Join, JoinHook, Joinable

__all__ = ["Join", "Joinable", "JoinHook", "ddp_comm_hooks", "join"]
