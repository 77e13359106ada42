"""PyTorch's deprecated resizing shorthands ``upsample_nearest`` and ``upsample_bilinear``: they
warn as PyTorch does and call ``interpolate`` (bilinear with ``align_corners=True``, their old
behaviour)."""
from __future__ import annotations

import warnings

from ._pooling import interpolate

__all__ = ["upsample_nearest", "upsample_bilinear"]


def upsample_nearest(input, size=None, scale_factor=None):
    """``interpolate(input, size, scale_factor, mode="nearest")``, with a deprecation warning."""
    warnings.warn("`nn.functional.upsample_nearest` is deprecated. Use `nn.functional.interpolate` instead.",
                  UserWarning, stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    """``interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)``, with a
    deprecation warning."""
    warnings.warn("`nn.functional.upsample_bilinear` is deprecated. Use `nn.functional.interpolate` instead.",
                  UserWarning, stacklevel=2)
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)
