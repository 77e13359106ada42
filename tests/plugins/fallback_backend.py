"""A test-only backend that deliberately lacks most primitives, to exercise the CPU fallback.

``fallbackdev`` keeps its memory in ``bytearray`` storages of its own (never aliased with CPU
tensors) and implements only ``fill_``, ``add``, ``neg`` and ``sum``. Everything else, ``copy_``
included, runs through tensorplug's CPU fallback: each such op warns once and is counted in
``tp.backends.fallback_stats()``, and the conformance report lists it as a missing primitive.
"""
import numpy as np

from tensorplug.backends.api import Backend, backend_storage
from tensorplug.plugins import hookimpl


class FallbackStorage:
    def __init__(self, nbytes):
        self.buffer = bytearray(nbytes)
        self.nbytes = nbytes


def _view(t):
    dtype = np.dtype(t.dtype.name)
    base = np.frombuffer(backend_storage(t).buffer, dtype=dtype)
    if not t.shape:
        return base[t.storage_offset():t.storage_offset() + 1].reshape(())
    strides = tuple(s * dtype.itemsize for s in t.stride())
    return np.lib.stride_tricks.as_strided(base[t.storage_offset():], t.shape, strides)


def _value(x):
    return _view(x) if hasattr(x, "untyped_storage") else x


class FallbackDevBackend(Backend):
    device_type = "fallbackdev"
    dtypes = frozenset({"float32", "int64", "bool", "float64"})

    def allocate(self, nbytes, device_index):
        return FallbackStorage(nbytes)

    def copy_from_host(self, dst, array):
        _view(dst)[...] = array

    def to_host(self, src):
        return _view(src).copy()

    def kernels(self):
        def fill(out, value):
            _view(out)[...] = value

        def add(out, a, b):
            a, b = _value(a), _value(b)
            _view(out)[...] = np.logical_or(a, b) if out.dtype.name == "bool" else a + b

        def neg(out, a):
            _view(out)[...] = -_view(a)

        def sum_(out, a, dims):
            values = _view(a)
            _view(out)[...] = values.sum(axis=tuple(dims), keepdims=True, dtype=np.float64 if values.dtype.kind == "f" else np.int64)

        return {"fill_": fill, "add": add, "neg": neg, "sum": sum_}


class _Plugin:
    @hookimpl
    def tensorplug_register_backends(self):
        return [FallbackDevBackend()]


plugin = _Plugin()


class OwnFallbackBackend(FallbackDevBackend):
    """The same kernels, but the backend brings its own boxed fallback, which tensorplug keeps."""

    device_type = "ownfallbackdev"
    fallback_calls: list = []

    def fallback(self):
        def refuse(op, args, kwargs):
            OwnFallbackBackend.fallback_calls.append(op.name)
            raise NotImplementedError(f"ownfallbackdev has no {op.name}")

        return refuse


class _OwnFallbackPlugin:
    @hookimpl
    def tensorplug_register_backends(self):
        return [OwnFallbackBackend()]


own_fallback_plugin = _OwnFallbackPlugin()
