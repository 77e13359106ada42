"""Tensors as the host buffers an engine reads and writes.

MPI reads host memory through the buffer protocol. A contiguous CPU tensor is handed over as a
NumPy view of its own storage: no copy either way. Anything else (a tensor on another device, a
non-contiguous view, a 16-bit float that MPI cannot reduce) is staged: copied into a contiguous
host tensor before the collective and copied back into the original afterwards. This is what
lets every backend, a third party's included, take part in distributed training without a line
of communication code of its own.
"""
from __future__ import annotations

import numpy as np

from ..frontend import dtypes as _dt
from ..frontend.autograd.grad_mode import no_grad
from ..frontend.tensor import Tensor

__all__ = ["HostBuffer", "host_buffer", "empty_host"]

# 16-bit floats move as raw bits, but MPI has no arithmetic for them: reductions stage them as
# float32 (which also accumulates more precisely) and round once on the way back.
_HALF = (_dt.float16, _dt.bfloat16)
_RAW = {_dt.bfloat16: np.uint16, _dt.float16: np.uint16}


def _numpy_dtype(dtype: _dt.dtype) -> np.dtype:
    raw = _RAW.get(dtype)
    return np.dtype(raw) if raw is not None else np.dtype(dtype.name)


class HostBuffer:
    """``array`` is a contiguous 1-d NumPy array of the tensor's elements that the engine may read
    and write; ``finish()`` writes the result back where it was staged."""

    __slots__ = ("tensor", "array", "staged")

    def __init__(self, tensor: Tensor, array: np.ndarray, staged: Tensor | None):
        self.tensor = tensor
        self.array = array
        self.staged = staged

    def finish(self) -> None:
        if self.staged is not None:
            with no_grad():
                self.tensor.copy_(self.staged.reshape(self.tensor.shape))


def _view(t: Tensor) -> np.ndarray:
    """The elements of a contiguous CPU tensor as a NumPy array sharing its memory."""
    dtype = _numpy_dtype(t.dtype)
    n = t.numel()
    if n == 0:
        return np.empty(0, dtype=dtype)
    return np.frombuffer(t._storage, dtype=dtype, count=n, offset=t.storage_offset() * dtype.itemsize)


def host_buffer(t: Tensor, *, arithmetic: bool, write: bool = True) -> HostBuffer:
    """A host buffer for ``t``. ``arithmetic``: the engine will reduce it (16-bit floats are then
    staged as float32); ``write``: the engine writes it (else nothing is copied back)."""
    if not isinstance(t, Tensor):
        raise TypeError(f"expected a tensor, got {type(t).__name__}")
    half = t.dtype in _HALF and arithmetic
    if t.device.type == "cpu" and t.is_contiguous() and not half:
        return HostBuffer(t, _view(t), None)
    with no_grad():
        staged = t.detach().to("cpu", dtype=_dt.float32 if half else t.dtype).contiguous()
        if staged is t:  # to() and contiguous() may return the tensor itself
            staged = staged.clone()
    return HostBuffer(t, _view(staged), staged if write else None)


def empty_host(shape, dtype: _dt.dtype, *, arithmetic: bool) -> tuple[Tensor, np.ndarray]:
    """A new contiguous CPU tensor (float32 for 16-bit floats when ``arithmetic``) and its view."""
    from ..frontend.factories import empty

    t = empty(*shape, dtype=_dt.float32 if arithmetic and dtype in _HALF else dtype)
    return t, _view(t)
