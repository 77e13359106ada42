"""default_collate and default_convert: how samples become batches, as in PyTorch."""
from __future__ import annotations

import collections.abc
import math
import re

import numpy as np

from ...frontend import dtypes as _dt
from ...frontend.tensor import Tensor

__all__ = ["default_collate", "default_convert"]

_NUMPY_UNSUPPORTED = re.compile(r"[SaUO]")
_ERROR = "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}"


def _rebuild_mapping(elem, values: dict):
    if isinstance(elem, collections.abc.MutableMapping):
        try:
            clone = elem.copy() if hasattr(elem, "copy") else type(elem)()
            clone.update(values)
            return clone
        except TypeError:
            return values
    try:
        return type(elem)(values)
    except TypeError:
        return values


def _shared_output(batch):
    """In a DataLoader worker, a shared-memory tensor to stack a large batch into, so that it
    reaches the main process without another copy (PyTorch does the same); else None."""
    from ._shared_memory import INLINE_LIMIT, worker_blocks

    blocks = worker_blocks()
    if blocks is None:
        return None
    elem = batch[0]
    shape, dtype = elem._shape, elem._dtype
    if elem._device.type != "cpu" or len(batch) * math.prod(shape) * dtype.itemsize < INLINE_LIMIT:
        return None
    for t in batch:
        # stack(out=) neither records autograd nor promotes dtypes: leave those to plain stack.
        if not isinstance(t, Tensor) or t._shape != shape or t._dtype is not dtype or t._device != elem._device or t.requires_grad:
            return None
    return blocks.empty((len(batch), *shape), dtype)


def default_collate(batch):
    """Stack a list of samples into a batch: tensors and NumPy arrays are stacked on a new first
    dimension, numbers become a tensor (floats as float64, ints as int64), strings stay a list,
    and dicts, namedtuples, tuples and lists are collated field by field (tuples give lists)."""
    from ...frontend.factories import as_tensor, from_numpy, tensor
    from ...frontend.ops.joining import stack

    elem = batch[0]
    if isinstance(elem, Tensor):
        out = _shared_output(batch)
        return stack(list(batch), 0, out=out)
    if isinstance(elem, np.ndarray) and not isinstance(elem, np.str_):
        if _NUMPY_UNSUPPORTED.search(elem.dtype.str) is not None:
            raise TypeError(_ERROR.format(elem.dtype))
        return default_collate([from_numpy(np.ascontiguousarray(b)) for b in batch])
    if isinstance(elem, np.generic) and not isinstance(elem, (np.str_, np.bytes_)):
        return as_tensor(np.array(batch))
    if isinstance(elem, bool):
        return tensor(batch)
    if isinstance(elem, float):
        return tensor(batch, dtype=_dt.float64)
    if isinstance(elem, int):
        return tensor(batch)
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, collections.abc.Mapping):
        return _rebuild_mapping(elem, {key: default_collate([d[key] for d in batch]) for key in elem})
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # namedtuple
        return type(elem)(*(default_collate(samples) for samples in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        it = iter(batch)
        size = len(next(it))
        if not all(len(e) == size for e in it):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = list(zip(*batch))
        if isinstance(elem, tuple):
            return [default_collate(samples) for samples in transposed]
        try:
            return type(elem)([default_collate(samples) for samples in transposed])
        except TypeError:
            return [default_collate(samples) for samples in transposed]
    raise TypeError(_ERROR.format(type(elem)))


def default_convert(data):
    """Convert NumPy arrays (and arrays inside containers) to tensors; used without batching."""
    from ...frontend.factories import as_tensor, from_numpy

    if isinstance(data, Tensor):
        return data
    if isinstance(data, np.ndarray):
        if _NUMPY_UNSUPPORTED.search(data.dtype.str) is not None:
            return data
        return from_numpy(np.ascontiguousarray(data))
    if isinstance(data, np.generic) and not isinstance(data, (np.str_, np.bytes_)):
        return as_tensor(np.array(data))
    if isinstance(data, collections.abc.Mapping):
        return _rebuild_mapping(data, {key: default_convert(data[key]) for key in data})
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        try:
            return type(data)([default_convert(d) for d in data])
        except TypeError:
            return [default_convert(d) for d in data]
    return data
