"""A deliberately broken backend for the conformance tests: the CPU backend's kernels under a new
device type, except that ``add`` writes one too many (out = a + b + 1).

The conformance suite must catch it and name ``add`` with the dtypes it was run on.
"""
from tensorplug.backends.cpu import CPUBackend
from tensorplug.plugins import hookimpl


class OffByOneBackend(CPUBackend):
    device_type = "brokendev"

    def load(self):
        super().load()
        kernels = dict(self._kernels)
        add, add_one = kernels["add"], kernels["add"]

        def broken_add(out, a, b):
            add(out, a, b)
            add_one(out, out, True if out.dtype.name == "bool" else 1)

        kernels["add"] = broken_add
        self._kernels = kernels

    def memory_stats(self, device_index):  # CPU's statistics are shared with the CPU device
        return {}


class _Plugin:
    @hookimpl
    def tensorplug_register_backends(self):
        return [OffByOneBackend()]


plugin = _Plugin()
