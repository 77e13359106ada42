"""``tp.amp``: automatic mixed precision names, as ``torch.amp``.

``GradScaler`` scales losses for real (on any device where it is enabled); ``autocast`` records
its state but does not cast ops (see autocast_mode and docs/deviations.md).
"""
from .autocast_mode import (
    autocast, custom_bwd, custom_fwd, get_autocast_dtype, is_autocast_available, is_autocast_enabled,
    set_autocast_dtype,
)
from .grad_scaler import GradScaler

__all__ = ["GradScaler", "autocast", "custom_fwd", "custom_bwd", "get_autocast_dtype", "is_autocast_available",
           "is_autocast_enabled", "set_autocast_dtype"]
