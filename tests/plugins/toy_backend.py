"""A minimal third-party-style backend used by the plugin tests.

Its memory is a ``bytearray`` per storage (standing in for device memory: never aliased with
CPU tensors) and it implements only a few primitives, so tests can watch calls arrive and see
what happens for the rest.
"""
import numpy as np

from tensorplug.backends.api import Backend, backend_storage
from tensorplug.plugins import hookimpl


class ToyStorage:
    def __init__(self, nbytes):
        self.buffer = bytearray(nbytes)
        self.nbytes = nbytes


def _view(t):
    dtype = np.dtype(t.dtype.name)
    base = np.frombuffer(backend_storage(t).buffer, dtype=dtype)
    strides = tuple(s * dtype.itemsize for s in t.stride())
    return np.lib.stride_tricks.as_strided(base[t.storage_offset():], t.shape, strides)


def _operand(x):
    return _view(x) if hasattr(x, "untyped_storage") else x


class ToyBackend(Backend):
    device_type = "toydev"
    calls: list = []

    def allocate(self, nbytes, device_index):
        return ToyStorage(nbytes)

    def copy_from_host(self, dst, array):
        _view(dst)[...] = array

    def to_host(self, src):
        return _view(src).copy()

    def kernels(self):
        def record(name, fn):
            def kernel(*args):
                ToyBackend.calls.append(name)
                return fn(*args)

            return kernel

        def fill(out, value):
            _view(out)[...] = value

        def copy(dst, src):
            _view(dst)[...] = _view(src)

        def add(out, a, b):
            _view(out)[...] = _operand(a) + _operand(b)

        return {"fill_": record("fill_", fill), "copy_": record("copy_", copy), "add": record("add", add)}


class _Plugin:
    @hookimpl
    def tensorplug_register_backends(self):
        return [ToyBackend()]


plugin = _Plugin()
