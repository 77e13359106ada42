"""``tp.amp``: automatic mixed precision names, as ``torch.amp``.

``GradScaler`` scales losses (on any device where it is enabled); ``autocast`` runs ops in the
dtypes PyTorch's autocast chooses (autocast_mode, and the Autocast key's kernels in _casting).
"""
from .autocast_mode import (
    autocast, clear_autocast_cache, custom_bwd, custom_fwd, get_autocast_dtype, is_autocast_available,
    is_autocast_cache_enabled, is_autocast_enabled, set_autocast_cache_enabled, set_autocast_dtype,
    set_autocast_enabled,
)
from .grad_scaler import GradScaler

__all__ = ["GradScaler", "autocast", "custom_fwd", "custom_bwd", "get_autocast_dtype", "is_autocast_available",
           "is_autocast_enabled", "set_autocast_dtype", "set_autocast_enabled", "is_autocast_cache_enabled",
           "set_autocast_cache_enabled", "clear_autocast_cache"]
