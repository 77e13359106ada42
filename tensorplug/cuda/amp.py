"""``tp.cuda.amp``: the older CUDA-only spellings, deprecated in PyTorch in favour of ``tp.amp``.

They warn with PyTorch's ``FutureWarning`` and then behave as ``tp.amp.GradScaler("cuda", ...)`` and
``tp.amp.autocast("cuda", ...)``: without CUDA, both disable themselves (with PyTorch's warning).
"""
from __future__ import annotations

import warnings

from ..amp import autocast_mode as _autocast_mode
from ..amp import grad_scaler as _grad_scaler
from ..frontend import dtypes as _dt

__all__ = ["GradScaler", "autocast", "custom_fwd", "custom_bwd"]


class GradScaler(_grad_scaler.GradScaler):
    def __init__(self, init_scale: float = 2.0**16, growth_factor: float = 2.0, backoff_factor: float = 0.5,
                 growth_interval: int = 2000, enabled: bool = True) -> None:
        warnings.warn("`torch.cuda.amp.GradScaler(args...)` is deprecated. Please use "
                      "`torch.amp.GradScaler('cuda', args...)` instead.", FutureWarning, stacklevel=2)
        super().__init__("cuda", init_scale=init_scale, growth_factor=growth_factor, backoff_factor=backoff_factor,
                         growth_interval=growth_interval, enabled=enabled)


class autocast(_autocast_mode.autocast):
    def __init__(self, enabled: bool = True, dtype: _dt.dtype = _dt.float16, cache_enabled: bool = True) -> None:
        warnings.warn("`torch.cuda.amp.autocast(args...)` is deprecated. Please use "
                      "`torch.amp.autocast('cuda', args...)` instead.", FutureWarning, stacklevel=2)
        super().__init__("cuda", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


def custom_fwd(fwd=None, *, cast_inputs=None):
    return _autocast_mode.custom_fwd(fwd, device_type="cuda", cast_inputs=cast_inputs)


def custom_bwd(bwd=None):
    return _autocast_mode.custom_bwd(bwd, device_type="cuda")
