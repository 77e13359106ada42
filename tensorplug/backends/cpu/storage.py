"""CPU storage: blocks from the C++ caching allocator, and copies to and from NumPy."""
from __future__ import annotations

import numpy as np

from ..api import backend_storage, host_numpy_dtype
from ._load import load_kernels

_K = load_kernels()

# The NumPy dtype of a tensor's host view (bfloat16 through the optional ml_dtypes package).
numpy_dtype = host_numpy_dtype

__all__ = ["allocate", "copy_from_host", "to_host", "wrap_host", "memory_stats", "empty_cache", "numpy_dtype",
           "storage_type"]


# allocate(nbytes, device_index=None) is the C++ allocator's entry itself: every tensor the CPU
# makes passes here, and a Python wrapper around it was a third of a small op's allocation.
allocate = _K.alloc


#: The type of the blocks ``allocate`` and ``wrap_host`` return (their buffers are host memory).
storage_type = _K.Storage


def wrap_host(array: np.ndarray):
    return _K.wrap(array)


def to_host(t) -> np.ndarray:
    """A NumPy view of the CPU tensor ``t`` (shares memory)."""
    dtype = numpy_dtype(t.dtype)
    itemsize = dtype.itemsize
    if not t.shape:  # one element (a loss read with .item()): a view of just that element
        return np.frombuffer(backend_storage(t), dtype=dtype, count=1, offset=t.storage_offset() * itemsize).reshape(())
    strides = tuple(s * itemsize for s in t.stride())
    if 0 not in t.shape:
        # The ndarray constructor checks the view against the buffer's bounds itself, in C:
        # as_strided's Python path was 10 us per call, six calls in an F.ctc_loss (issue 14).
        return np.ndarray(t.shape, dtype=dtype, buffer=backend_storage(t), offset=t.storage_offset() * itemsize,
                          strides=strides)
    base = np.frombuffer(backend_storage(t), dtype=dtype)
    return np.lib.stride_tricks.as_strided(base[t.storage_offset():], shape=t.shape, strides=strides)


def copy_from_host(dst, array: np.ndarray) -> None:
    to_host(dst)[...] = array


def memory_stats(device_index=None) -> dict:
    return dict(_K.memory_stats())


def empty_cache() -> None:
    _K.empty_cache()
