"""Fixtures for tests/linalg: the devices (every backend present, each skipping with the reason
tp.backends.status() gives) and PyTorch 2.13 as the reference."""
import pytest

import tensorplug as tp

DEVICES = ["cpu", "opencl", "npdev"]


def _usable(name):
    status = {s.device_type: s for s in tp.backends.status()}.get(name)
    if status is None:
        return f"{name} unavailable: no plugin registers it"
    if status.state not in ("ready", "loaded"):
        return f"{name} unavailable: {status.detail}"
    return None


@pytest.fixture(params=DEVICES)
def device(request):
    reason = _usable(request.param)
    if reason is not None:
        pytest.skip(reason)
    return request.param


@pytest.fixture
def torch():
    return pytest.importorskip("torch", reason="PyTorch 2.13 is the reference here (pip install torch==2.13.0)")
