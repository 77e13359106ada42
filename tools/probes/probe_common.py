"""Inputs shared by the probe batches: the same NumPy draws turned into either library's tensors."""
from __future__ import annotations

import numpy as np


def data(torch, *shape: int, seed: int = 0, dtype: str = "float32", requires_grad: bool = False):
    """A tensor of standard-normal values from NumPy's generator ``seed``, in ``dtype``."""
    values = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    return torch.tensor(values, requires_grad=requires_grad)


def image_uint8(torch, height: int = 8, width: int = 6, seed: int = 0):
    """An HWC uint8 image, as a decoded PNG arrives in a script."""
    return torch.from_numpy(np.random.default_rng(seed).integers(0, 256, (height, width, 3), dtype=np.uint8))


def linear_weights(torch, model, seed: int = 1):
    """Overwrites every parameter of ``model`` with NumPy draws so both libraries start equal."""
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.tensor(rng.standard_normal(tuple(p.shape)).astype("float32") * 0.3))
    return model
