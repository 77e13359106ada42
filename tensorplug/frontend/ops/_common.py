"""Pieces every op module uses: key sets with thread-local state, scalar checks, out= handling."""
from __future__ import annotations

import contextlib
import numbers
import threading
import warnings

import numpy as np

from ...dispatcher import local_state
from .. import dtypes as _dt
from ..meta_device import has_values
from ..tensor import Tensor
from ._index_extremes import index_extremes

__all__ = [
    "keyset", "is_number", "check_same_device", "check_out", "refuse_out_under_autograd", "check_exact_dtype", "bump_version", "check_no_internal_overlap", "write_out",
    "write_inplace", "check_cast", "resize_out", "check_index_range", "trusted_indices", "check_no_overlap", "warn_if_expanded",
    "on_common_device",
]

_Number = (bool, int, float, np.bool_)  # np.bool_ is no numbers.Number, yet PyTorch takes it


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


def on_common_device(op: str, *operands):
    """``operands`` with every 0-d CPU tensor moved to the device of the other tensors, as
    PyTorch lets a CPU scalar tensor join a computation on any device; then one device is
    checked. The move is ``to()``'s, so a gradient flows back to the CPU tensor."""
    devices = {x._device for x in operands if isinstance(x, Tensor) and (x._shape or x._device.type != "cpu")}
    if len(devices) == 1:
        (target,) = devices
        operands = tuple(x.to(target) if isinstance(x, Tensor) and x._device is not target else x
                         for x in operands)
    check_same_device(op, *[x for x in operands if isinstance(x, Tensor)])
    return operands


def can_cast(from_dtype: _dt.dtype, to_dtype: _dt.dtype) -> bool:
    """PyTorch's rule for writing a result into an out= tensor: no category downgrade."""
    return from_dtype.category <= to_dtype.category


def check_cast(op: str, result_dtype: _dt.dtype, target_dtype: _dt.dtype) -> None:
    """Refuse to write a result into a tensor of a lower category (float into int, int into bool)."""
    if not can_cast(result_dtype, target_dtype):
        raise RuntimeError(f"{op}(): result type {result_dtype.name} can't be cast to the desired output type {target_dtype.name}")


def check_out(op: str, out: Tensor, shape: tuple, result_dtype: _dt.dtype, dev, *, resize: bool = True) -> None:
    """Check an out= tensor (or, with ``resize=False``, the self of an in-place op) before
    anything is computed into it. An out= tensor of another shape is resized, as PyTorch does."""
    if not isinstance(out, Tensor):
        raise TypeError(f"{op}(): argument 'out' must be Tensor, not {type(out).__name__}")
    if out._device is not dev:
        raise RuntimeError(f"{op}(): Expected out tensor to be on {dev} but got {out._device}")
    check_cast(op, result_dtype, out._dtype)
    if out._shape != shape:
        if not resize:
            raise RuntimeError(f"{op}(): output with shape {list(out._shape)} doesn't match the broadcast shape {list(shape)}")
        resize_out(op, out, shape)
    check_no_internal_overlap(op, out)


def resize_out(op: str, out: Tensor, shape: tuple, *, warn: bool = True) -> None:
    """Give ``out`` the shape ``shape`` in new contiguous memory (PyTorch warns when an out=
    tensor that held elements is resized: that usage is deprecated there; ``warn=False`` for the
    ops it resizes silently)."""
    from ..tensor import empty_tensor

    shape = tuple(shape)
    if out._shape == shape:
        return
    if warn and out.numel() != 0:
        warnings.warn(
            f"{op}(): An output with one or more elements was resized since it had shape {list(out._shape)}, which does "
            f"not match the required output shape {list(shape)}. Resize it to the right shape (or to zero elements) "
            f"before passing it as out=.",
            UserWarning,
            stacklevel=4,
        )
    fresh = empty_tensor(shape, out._dtype, out._device)
    out._storage, out._shape, out._stride, out._offset = fresh._storage, fresh._shape, fresh._stride, 0
    bump_version(out)


def check_exact_dtype(op: str, out, dtype: _dt.dtype) -> None:
    """Refuse an out= tensor of any dtype but ``dtype``: PyTorch's rule for ops that keep their
    input's dtype (abs, clamp, where, nan_to_num, ...) and for the matrix products."""
    if isinstance(out, Tensor) and out._dtype is not dtype:
        raise RuntimeError(f"{op}(): Expected out tensor to have dtype {dtype.name}, but got {out._dtype.name} instead")


def refuse_out_under_autograd(op: str, out, *tensors: Tensor) -> None:
    """PyTorch records no graph through an out= tensor: with grad mode on, a result that would
    need one (``tensors``: the result, or the inputs of an op whose result is detached) or an
    out= that requires grad is an error, not a silent CopyBackward into ``out``."""
    from ..autograd.grad_mode import is_grad_enabled

    if not is_grad_enabled():
        return
    if any(isinstance(t, Tensor) and t.requires_grad for t in (out, *tensors)):
        raise RuntimeError(
            f"{op}(): functions with out=... arguments don't support automatic differentiation, but one of the "
            f"arguments requires grad."
        )


def write_out(op: str, out: Tensor | None, result: Tensor, *, exact_dtype: bool = False, resize_warns: bool = True,
              refuse_autograd: bool = True) -> Tensor:
    """``result``, or, given out=, ``result`` written into ``out`` (checked, resized) and ``out``.

    ``exact_dtype``: ``out`` must have the result's dtype (see :func:`check_exact_dtype`).
    ``resize_warns=False``: the few ops PyTorch resizes silently (narrow_copy, bernoulli).
    ``refuse_autograd=False``: the ops whose out= PyTorch lets a graph through (conj_physical)."""
    if out is None:
        return result
    from .copying import copy_

    if refuse_autograd:
        refuse_out_under_autograd(op, out, result)
    if exact_dtype:
        check_exact_dtype(op, out, result._dtype)
    if not resize_warns and isinstance(out, Tensor) and out._device is result._device and can_cast(result._dtype, out._dtype):
        resize_out(op, out, result._shape, warn=False)
    check_out(op, out, result._shape, result._dtype, result._device)
    return copy_(out, result)


def write_inplace(op: str, self: Tensor, result: Tensor) -> Tensor:
    """The end of an in-place op computed out of place: ``result`` must have ``self``'s shape
    and a dtype that casts to ``self``'s without a category change."""
    from .copying import copy_

    check_out(op, self, result._shape, result._dtype, self._device, resize=False)
    return copy_(self, result)


def check_no_internal_overlap(op: str, t: Tensor) -> None:
    if 0 in t._shape:
        return  # nothing is written
    for size, stride in zip(t._shape, t._stride):
        if stride == 0 and size > 1:
            raise RuntimeError(
                f"{op}(): unsupported operation: more than one element of the written-to tensor refers to a "
                f"single memory location. Please clone() the tensor before performing the operation."
            )


def _dense_span(t: Tensor):
    """``(first, end)`` element offsets of the memory ``t`` covers when its elements fill that span
    once each (PyTorch's "non-overlapping and dense"; any order of dims), else None."""
    expected = 1
    for stride, size in sorted((stride, size) for size, stride in zip(t._shape, t._stride) if size != 1):
        if stride != expected:
            return None
        expected *= size
    return t._offset, t._offset + expected


def _layout(t: Tensor) -> tuple:
    return tuple((size, stride) for size, stride in zip(t._shape, t._stride) if size != 1)


def check_no_overlap(op: str, target: Tensor, source: Tensor, *, allow_same: bool = False) -> None:
    """Refuse an input ``source`` that shares memory with the written-to ``target``, before any
    kernel runs, by PyTorch's rule (issue 16): it can only tell when both fill their memory densely
    (a broadcast or strided one passes); ``allow_same`` lets an input that is the target element
    for element pass (what copy_ allows, index_put_ does not)."""
    if source._storage is not target._storage or 0 in target._shape or 0 in source._shape:
        return
    a, b = _dense_span(target), _dense_span(source)
    if a is None or b is None or a[1] <= b[0] or b[1] <= a[0]:
        return
    if allow_same and a == b and _layout(target) == _layout(source):
        return
    raise RuntimeError(
        f"{op}(): unsupported operation: some elements of the input tensor and the written-to tensor refer to a "
        f"single memory location. Please clone() the tensor before performing the operation."
    )


def warn_if_expanded(op: str, t: Tensor, stacklevel: int, example: str = "tensor[indices] = tensor") -> bool:
    """PyTorch's deprecation warning for index_put_ and masked_fill_ into a tensor with repeated
    elements (they still write, the last write to a location winning); whether it warned.
    ``stacklevel`` counts from the caller."""
    if any(stride == 0 and size > 1 for size, stride in zip(t._shape, t._stride)):
        warnings.warn(
            f"Use of {op} on expanded tensors is deprecated. Please clone() the tensor before performing this "
            f"operation. This also applies to advanced indexing e.g. {example}",
            UserWarning,
            stacklevel=stacklevel + 1,
        )
        return True
    return False


def bump_version(t: Tensor) -> None:
    """Record an in-place change (the counter is shared by every view of the storage)."""
    t._version_ref[0] += 1


def check_index_range(op: str, index: Tensor, size: int, dim: int, *, ignore=None, error=IndexError) -> None:
    """Refuse index values outside ``[0, size)`` (``ignore`` excepted) before a kernel runs.

    The ops that use this (index_select, index_add, gather, scatter, nll_loss) take no negative
    indices in PyTorch; checking here gives every backend the same error, and an asynchronous
    device no chance to read out of bounds. It reads the two extremes (the op index_extremes, one
    kernel where the backend fuses it) back from the device in one host read (a synchronization
    on an asynchronous device). Inside ``trusted_indices()`` it
    checks nothing: the losses check their target once and then gather and scatter indices
    derived from it (the kernels still record anything out of range). A meta index has no values
    to check (frontend/meta_device.py).
    """
    if index.numel() == 0 or getattr(_TRUST, "on", False) or not has_values(index):
        return
    low, high = (int(v) for v in index_extremes(index, ignore).tolist())
    bad = low if low < 0 else high if high >= size else None
    if bad is not None:
        raise error(f"{op}(): index {bad} is out of bounds for dimension {dim} with size {size} (index shape {list(index._shape)})")


_TRUST = threading.local()


@contextlib.contextmanager
def trusted_indices():
    """Within this block (this thread), check_index_range trusts its callers: for ops built from
    gather/scatter on indices that were range-checked already (one host read, not three)."""
    previous = getattr(_TRUST, "on", False)
    _TRUST.on = True
    try:
        yield
    finally:
        _TRUST.on = previous
