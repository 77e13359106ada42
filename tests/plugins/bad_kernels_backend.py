"""A test-only backend whose kernels hand back the wrong things, for check mode
(``TENSORPLUG_CHECK_KERNELS=1`` / ``tp.backends.set_check_kernels(True)``) to catch.

``mul`` returns a fresh tensor of the wrong shape instead of writing its output; the fused
``softmax`` returns float64 for float32 input. Without check mode neither is noticed at the call.
"""
import numpy as np

from tensorplug.plugins import hookimpl

from toy_backend import ToyBackend, _operand, _view


class BadKernelsBackend(ToyBackend):
    device_type = "badkernelsdev"
    # float64 declared so that the wrong softmax can make its float64 result (an undeclared
    # dtype is refused before any kernel runs, which would hide the wrong dtype check mode names).
    dtypes = ToyBackend.dtypes | {"float64"}

    def kernels(self):
        kernels = dict(super().kernels())

        def mul(out, a, b):
            wrong = out.new_empty((1,))
            _view(wrong)[...] = 0
            return wrong

        def softmax(input, dim):
            x = _view(input).astype(np.float64)
            e = np.exp(x - x.max(axis=dim, keepdims=True))
            out = input.new_empty(input.shape, dtype=_float64())
            _view(out)[...] = e / e.sum(axis=dim, keepdims=True)
            return out

        kernels.update(mul=mul, softmax=softmax, sub=lambda out, a, b: _view(out).__setitem__(..., _operand(a) - _operand(b)))
        return kernels


def _float64():
    import tensorplug

    return tensorplug.float64


class _Plugin:
    @hookimpl
    def tensorplug_register_backends(self):
        return [BadKernelsBackend()]


plugin = _Plugin()
