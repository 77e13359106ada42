"""The CPU fallback: how an op runs on a backend that has no kernel for it.

A backend that lacks a primitive still runs user programs: the dispatcher hands the call to the
backend's boxed fallback ``fallback(op, args, kwargs)``, and unless the backend brings its own,
that is :func:`cpu_fallback` here. It copies every tensor argument to host memory as a CPU
tensor, runs the op's CPU kernel, and copies what the kernel wrote (primitives are out-style: the
first argument is the preallocated output, or for ``sort`` the first two) back into the device
tensors. Each call counts in ``tp.backends.fallback_stats()``; the first call of an op on a
device warns with a :class:`~tensorplug.backends.FallbackWarning`. A backend that runs through the
fallback is not conformant: the conformance report lists each missing primitive.

The cost is two host copies per tensor argument plus the CPU kernel (docs/writing-a-backend.md
gives measured numbers). The fallback sits below autograd, so gradients are unaffected.

``import tensorplug`` installs it as the registry's default (the registry cannot import tensors).
"""
from __future__ import annotations

import sys
import warnings

import numpy as np

from ..backends import _registry
from ..backends.api import PRIMITIVES
from ..dispatcher import get_operator
from . import dtypes as _dt
from .factories import from_numpy
from .ops.copying import copy_from_numpy, to_numpy
from .tensor import Tensor, empty_tensor, make_tensor, resolve_device

__all__ = ["cpu_fallback", "fallback_for"]

# In-place primitives whose output is also an input: its values travel to the CPU first.
_READS_OUTPUT = frozenset({"scatter_", "index_put_"})


def fallback_for(device_type: str):
    """The default fallback of ``device_type`` (None for the CPU itself, which has every kernel)."""
    if device_type == "cpu":
        return None

    def fallback(op, args, kwargs):
        return cpu_fallback(op, args, kwargs, device_type)

    fallback.__qualname__ = f"cpu_fallback[{device_type}]"
    return fallback


def cpu_fallback(op, args: tuple, kwargs: dict, device_type: str | None = None):
    """Run ``op`` on CPU copies of its arguments and write the results back to their device."""
    device = _first_device(args, kwargs)
    device_type = device_type or device.type
    key = (device_type, op.name)
    count = _registry.fallback_counts.get(key, 0)
    _registry.fallback_counts[key] = count + 1
    if count == 0:
        warnings.warn(_registry.FallbackWarning(
            f"the {device_type!r} backend has no kernel for {op.name!r}; it runs on the CPU through the fallback "
            f"(every tensor argument is copied to host memory and back, which is slow). Shown once per op; "
            f"tp.backends.fallback_stats() counts the calls."), stacklevel=_caller_level())

    cpu = resolve_device("cpu")
    primitive = op.name in PRIMITIVES
    written = (0, 1) if op.name == "sort" else (0,) if primitive else ()
    cpu_args = tuple(
        _to_cpu(a, cpu, fresh=i in written and op.name not in _READS_OUTPUT, written=i in written or not primitive)
        for i, a in enumerate(args)
    )
    cpu_kwargs = {name: _to_cpu(value, cpu, written=not primitive) for name, value in kwargs.items()}
    kernel = op.lookup(_registry.backend_key("cpu").mask)
    result = kernel(*cpu_args, **cpu_kwargs)
    if primitive:
        for i in written:
            _write_back(args[i], cpu_args[i])
    else:
        # An op a plugin defined: which arguments it writes is not known, so every tensor argument
        # whose values changed on the CPU is written back.
        for original, copy in zip(_tensors(args, kwargs), _tensors(cpu_args, cpu_kwargs)):
            if not np.array_equal(to_numpy(original), to_numpy(copy), equal_nan=original.is_floating_point()):
                _write_back(original, copy)
    return _to_device(result, device)


def _caller_level() -> int:
    """The stack level of the first frame outside tensorplug: the user's line that made the call."""
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_globals.get("__name__", "").startswith("tensorplug."):
        frame, level = frame.f_back, level + 1
    return level


def _tensors(args, kwargs):
    for value in (*args, *kwargs.values()):
        if isinstance(value, Tensor):
            yield value
        elif isinstance(value, (tuple, list)):
            yield from (v for v in value if isinstance(v, Tensor))


def _first_device(args, kwargs):
    for t in _tensors(args, kwargs):
        return t._device
    raise RuntimeError("cpu_fallback: the call has no tensor argument, so it has no device")


def _to_cpu(value, cpu, fresh: bool = False, written: bool = False):
    if isinstance(value, Tensor):
        if fresh:  # an output the kernel overwrites: no need to copy its old values
            return empty_tensor(value._shape, value._dtype, cpu)
        host = to_numpy(value)
        if written or value._dtype is _dt.bfloat16 or host.dtype != _dt.numpy_dtype(value._dtype):
            return copy_from_numpy(host, value._dtype, cpu)
        # An input the kernel only reads: the CPU tensor may share the host array (one copy fewer).
        return from_numpy(_contiguous(host))
    if isinstance(value, (tuple, list)):
        return type(value)(_to_cpu(v, cpu) for v in value)
    return value


def _contiguous(array: np.ndarray) -> np.ndarray:
    # np.ascontiguousarray turns a 0-d array into a 1-d one: keep the shape.
    return np.ascontiguousarray(array).reshape(array.shape)


def _to_device(value, device):
    if isinstance(value, Tensor):
        return copy_from_numpy(to_numpy(value), value._dtype, device)
    if isinstance(value, (tuple, list)):
        return type(value)(_to_device(v, device) for v in value)
    return value


def _write_back(dst: Tensor, src: Tensor) -> None:
    """Copy the CPU tensor ``src`` into the device tensor ``dst`` (any layout) through host memory."""
    host = _contiguous(to_numpy(src))
    backend = dst._device._backend
    if dst.is_contiguous():
        if host.size:
            backend.copy_from_host(dst, host)
        return
    copy = get_operator("copy_")
    key = _registry.backend_key(dst._device.type)
    if key in copy.kernels:  # stage contiguously on the device, then the backend's own copy_
        staged = copy_from_numpy(host, dst._dtype, dst._device)
        copy.kernels[key](dst, staged)
        return
    # No native copy_ either: read the whole storage, change the viewed elements, write it back.
    storage = dst._storage
    whole = make_tensor(storage, (storage.nbytes // dst._dtype.itemsize,), (1,), 0, dst._dtype, dst._device)
    values = np.array(to_numpy(whole), copy=True)
    itemsize = values.itemsize
    target = np.lib.stride_tricks.as_strided(values[dst.storage_offset():], dst._shape, tuple(s * itemsize for s in dst._stride))
    target[...] = host
    backend.copy_from_host(whole, values)


_registry.set_default_fallback(fallback_for)
