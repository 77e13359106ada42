"""``tp._inductor``: holds ``config``, the TorchInductor flags scripts set (nothing compiles here)."""
from . import config

__all__ = ["config"]
