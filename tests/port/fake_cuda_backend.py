"""A stand-in "cuda" backend for testing how tp.cuda delegates to the backend registered under
the ``cuda`` device type (tensorplug ships none). Host memory, two devices; FAKE_CUDA_STATE
picks what ``is_available`` says: ok (default), unavailable, nodevice."""
import os

import numpy as np

from tensorplug.backends.api import Backend, backend_storage
from tensorplug.plugins import hookimpl


class HostStorage:
    def __init__(self, nbytes):
        self.buffer = bytearray(nbytes)
        self.nbytes = nbytes


def _view(t):
    dtype = np.dtype(t.dtype.name)
    base = np.frombuffer(backend_storage(t).buffer, dtype=dtype)
    strides = tuple(s * dtype.itemsize for s in t.stride())
    return np.lib.stride_tricks.as_strided(base[t.storage_offset():], t.shape, strides)


class FakeCudaBackend(Backend):
    device_type = "cuda"
    dtypes = frozenset({"float32", "int64", "bool", "bfloat16"})
    synchronized: list = []
    loads = 0

    def is_available(self):
        state = os.environ.get("FAKE_CUDA_STATE", "ok")
        if state == "unavailable":
            return False, "CuPy is not installed: pip install cupy"
        return True, ""

    def device_count(self):
        return 0 if os.environ.get("FAKE_CUDA_STATE") == "nodevice" else 2

    def load(self):
        FakeCudaBackend.loads += 1

    def device_name(self, index):
        return f"Fake GPU {index}"

    def allocate(self, nbytes, device_index):
        return HostStorage(nbytes)

    def copy_from_host(self, dst, array):
        _view(dst)[...] = array

    def to_host(self, src):
        return _view(src).copy()

    def synchronize(self, device_index):
        FakeCudaBackend.synchronized.append(device_index)

    def kernels(self):
        def copy(dst, src):
            _view(dst)[...] = _view(src)

        def fill(out, value):
            _view(out)[...] = value

        return {"copy_": copy, "fill_": fill}


class _Plugin:
    @hookimpl
    def tensorplug_register_backends(self):
        return [FakeCudaBackend()]


plugin = _Plugin()
