"""Joining tensors: cat and stack (composite: copies into slices of one output)."""
from __future__ import annotations

from .. import dtypes as _dt
from ..shapes import normalize_dim
from ..tensor import Tensor, empty_tensor
from ..views import slice_dim, unsqueeze
from ._common import check_same_device
from ._numpy_names import axis_as_dim
from .copying import copy_

__all__ = ["cat", "stack"]


def cat(tensors, dim=0, *, out=None, axis=None) -> Tensor:
    if axis is not None:
        dim = axis_as_dim("cat", dim, axis, 0)
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("cat(): expected a non-empty list of Tensors")
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"cat(): expected Tensor as element {i} in argument 0, but got {type(t).__name__}")
    check_same_device("cat", *tensors)
    # Like PyTorch, 1-D empty tensors are skipped whatever the other shapes are.
    joined = [t for t in tensors if not (t.ndim == 1 and t._shape[0] == 0)]
    if joined:
        ref = joined[0]
        if ref.ndim == 0:
            raise RuntimeError("cat(): zero-dimensional tensor (at position 0) cannot be concatenated")
        d = normalize_dim("cat", dim, ref.ndim)
    else:  # every tensor is 1-D and empty: PyTorch gives an empty 1-D tensor whatever dim is
        joined, ref, d = tensors[:1], tensors[0], 0
    for i, t in enumerate(joined):
        if t.ndim != ref.ndim or any(a != b for k, (a, b) in enumerate(zip(t._shape, ref._shape)) if k != d):
            raise RuntimeError(
                f"cat(): Sizes of tensors must match except in dimension {d}. Expected size "
                f"{list(ref._shape)} but got size {list(t._shape)} for tensor number {i} in the list."
            )
    # Skipped empty tensors still take part in type promotion (float32 with an empty float64
    # gives float64).
    dtype = tensors[0]._dtype
    for t in tensors[1:]:
        dtype = _dt.promote_types(dtype, t._dtype)
    shape = ref._shape[:d] + (sum(t._shape[d] for t in joined),) + ref._shape[d + 1:]
    if out is not None:
        from ._common import check_out, refuse_out_under_autograd

        refuse_out_under_autograd("cat", out, *tensors)
        check_out("cat", out, shape, dtype, ref._device)
    result = empty_tensor(shape, dtype, ref._device) if out is None else out
    start = 0
    for t in joined:
        size = t._shape[d]
        copy_(slice_dim(result, d, start, start + size, 1), t)
        start += size
    return result


def stack(tensors, dim=0, *, out=None, axis=None) -> Tensor:
    if axis is not None:
        dim = axis_as_dim("stack", dim, axis, 0)
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("stack(): expects a non-empty TensorList")
    shape = tensors[0]._shape
    for i, t in enumerate(tensors):
        if t._shape != shape:
            raise RuntimeError(f"stack(): expects each tensor to be equal size, but got {list(shape)} at entry 0 and {list(t._shape)} at entry {i}")
    d = normalize_dim("stack", dim, len(shape) + 1)
    return cat([unsqueeze(t, d) for t in tensors], d, out=out)
