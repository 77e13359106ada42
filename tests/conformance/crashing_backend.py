"""A backend whose ``neg`` kernel kills the process on a transposed 2-D input, as a segfaulting
vendor kernel would on one layout only: the conformance run must name ``neg`` and the sample
that crashed (the 'transposed' one) and still report everything else."""
import os

from tensorplug.backends.cpu import CPUBackend
from tensorplug.plugins import hookimpl


class CrashingBackend(CPUBackend):
    device_type = "crashdev"

    def load(self):
        super().load()
        neg = self._kernels["neg"]

        def crashing_neg(out, a):
            stride = a.stride()
            if len(stride) == 2 and stride[0] == 1 and stride[1] > 1:  # column-major: a transposed view
                os._exit(139)
            neg(out, a)

        self._kernels = dict(self._kernels, neg=crashing_neg)


class _Plugin:
    @hookimpl
    def tensorplug_register_backends(self):
        return [CrashingBackend()]


plugin = _Plugin()
