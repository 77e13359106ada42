"""A backend whose ``neg`` kernel kills the process, as a segfaulting vendor kernel would: the
conformance run must name ``neg`` as the crash and still report everything else."""
import os

from tensorplug.backends.cpu import CPUBackend
from tensorplug.plugins import hookimpl


class CrashingBackend(CPUBackend):
    device_type = "crashdev"

    def load(self):
        super().load()
        self._kernels = dict(self._kernels, neg=lambda out, a: os._exit(139))


class _Plugin:
    @hookimpl
    def tensorplug_register_backends(self):
        return [CrashingBackend()]


plugin = _Plugin()
