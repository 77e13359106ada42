"""``tp.cpu.amp``: the older CPU spellings, deprecated in PyTorch in favour of ``tp.amp``.

They warn with PyTorch's ``FutureWarning`` and then behave as ``tp.amp.autocast("cpu", ...)``
(bfloat16 by default) and ``tp.amp.GradScaler("cpu", ...)``.
"""
from __future__ import annotations

import warnings

from ..amp import autocast_mode as _autocast_mode
from ..amp import grad_scaler as _grad_scaler
from ..frontend import dtypes as _dt

__all__ = ["GradScaler", "autocast"]


class autocast(_autocast_mode.autocast):
    def __init__(self, enabled: bool = True, dtype: _dt.dtype = _dt.bfloat16, cache_enabled: bool = True) -> None:
        warnings.warn("`torch.cpu.amp.autocast(args...)` is deprecated. Please use "
                      "`torch.amp.autocast('cpu', args...)` instead.", FutureWarning, stacklevel=2)
        super().__init__("cpu", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


class GradScaler(_grad_scaler.GradScaler):
    def __init__(self, init_scale: float = 2.0**16, growth_factor: float = 2.0, backoff_factor: float = 0.5,
                 growth_interval: int = 2000, enabled: bool = True) -> None:
        warnings.warn("`torch.cpu.amp.GradScaler(args...)` is deprecated. Please use "
                      "`torch.amp.GradScaler('cpu', args...)` instead.", FutureWarning, stacklevel=2)
        super().__init__("cpu", init_scale=init_scale, growth_factor=growth_factor, backoff_factor=backoff_factor,
                         growth_interval=growth_interval, enabled=enabled)
