"""``Tensor.cuda()`` and ``Tensor.is_cuda``: PyTorch's CUDA spellings of ``to("cuda")`` and a device check.

Moving goes through ``Tensor.to``, so without CUDA the error is the registry's, which says why
(``tp.cuda`` registers the reason for the ``cuda`` device type).
"""
from __future__ import annotations

from ..frontend.tensor import Tensor

__all__ = ["attach"]


def _cuda(self: Tensor, device=None, non_blocking: bool = False, memory_format=None) -> Tensor:
    target = "cuda" if device is None else (f"cuda:{device}" if isinstance(device, int) else device)
    return self.to(target, non_blocking=non_blocking)


def attach() -> None:
    Tensor.cuda = _cuda
    Tensor.is_cuda = property(lambda self: self._device.type == "cuda")
