"""Pieces every op module uses: key sets with thread-local state, scalar checks, out= handling."""
from __future__ import annotations

import numbers

from ...dispatcher import local_state
from .. import dtypes as _dt
from ..tensor import Tensor

__all__ = ["keyset", "is_number", "check_same_device", "check_out", "bump_version", "check_no_internal_overlap"]

_Number = (bool, int, float)


def keyset(*tensors: Tensor) -> int:
    """The dispatch key set of a call on ``tensors``, with this thread's include/exclude."""
    keys = local_state.include
    for t in tensors:
        keys |= t._keys
    return keys & local_state.mask


def is_number(value) -> bool:
    return isinstance(value, _Number) or (isinstance(value, numbers.Number) and not isinstance(value, complex))


def check_same_device(op: str, *tensors: Tensor) -> None:
    first = tensors[0]._device
    for t in tensors[1:]:
        if t._device is not first:
            raise RuntimeError(
                f"Expected all tensors to be on the same device, but found at least two devices, "
                f"{first} and {t._device}! (when checking arguments for {op})"
            )


def can_cast(from_dtype: _dt.dtype, to_dtype: _dt.dtype) -> bool:
    """PyTorch's rule for writing a result into an out= tensor: no category downgrade."""
    return from_dtype.category <= to_dtype.category


def check_out(op: str, out: Tensor, shape: tuple, result_dtype: _dt.dtype, dev) -> None:
    if not isinstance(out, Tensor):
        raise TypeError(f"{op}(): argument 'out' must be Tensor, not {type(out).__name__}")
    if out._device is not dev:
        raise RuntimeError(f"{op}(): Expected out tensor to be on {dev} but got {out._device}")
    if out._shape != shape:
        raise RuntimeError(f"{op}(): output with shape {list(out._shape)} doesn't match the broadcast shape {list(shape)}")
    if not can_cast(result_dtype, out._dtype):
        raise RuntimeError(f"{op}(): result type {result_dtype.name} can't be cast to the desired output type {out._dtype.name}")
    check_no_internal_overlap(op, out)


def check_no_internal_overlap(op: str, t: Tensor) -> None:
    for size, stride in zip(t._shape, t._stride):
        if stride == 0 and size > 1:
            raise RuntimeError(
                f"{op}(): unsupported operation: more than one element of the written-to tensor refers to a "
                f"single memory location. Please clone() the tensor before performing the operation."
            )


def bump_version(t: Tensor) -> None:
    """Record an in-place change (the counter is shared by every view of the storage)."""
    t._version_ref[0] += 1
