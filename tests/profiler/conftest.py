"""The devices the profiler tests run on: cpu, opencl and npdev, each skipping with the reason
``tp.backends.status()`` gives when it cannot be used here."""
import pytest

import tensorplug as tp

_DEVICES = ("cpu", "opencl", "npdev")


def _device_params():
    states = {line.device_type: line for line in tp.backends.status()}
    params = []
    for name in _DEVICES:
        line = states.get(name)
        if line is None:
            reason = f"{name}: no plugin provides it here (tp.backends.status() does not list it)"
        elif line.state not in ("loaded", "ready"):
            reason = f"{name}: {line.state}: {line.detail}"
        else:
            reason = None
        params.append(pytest.param(name, id=name, marks=pytest.mark.skip(reason=reason) if reason else ()))
    return params


@pytest.fixture(params=_device_params())
def device(request):
    return request.param
