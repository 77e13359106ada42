"""The devices that run-on-every-backend op tests take: every backend the plugin manager knows,
each skipped with the reason ``tp.backends.status()`` gives when it cannot run."""
import pytest

import tensorplug as tp

DEVICE_TYPES = ("cpu", "opencl", "npdev")


def _param(device_type: str):
    status = {s.device_type: s for s in tp.backends.status()}.get(device_type)
    if status is None:
        return pytest.param(device_type, id=device_type, marks=pytest.mark.skip(reason=f"no plugin registers {device_type!r}"))
    if status.state not in ("ready", "loaded"):
        return pytest.param(device_type, id=device_type, marks=pytest.mark.skip(
            reason=f"{device_type} backend {status.state}: {status.detail}"))
    return pytest.param(device_type, id=device_type)


def every_device():
    """pytest params for ``@pytest.mark.parametrize("device", every_device())``."""
    return [_param(name) for name in DEVICE_TYPES]


def torch_or_skip():
    """PyTorch, the reference for dtypes, errors and gradients; skips the test without it."""
    return pytest.importorskip("torch", reason="PyTorch 2.13 is the reference here (pip install torch==2.13.0)")
