"""What the distribution tests share: the devices they run on and float64 comparisons."""
import numpy as np
import pytest

import tensorplug as tp

DEVICES = ["cpu", "opencl", "npdev"]


def usable_device(name):
    """``name`` if its backend is ready here; else the test skips, saying why."""
    status = {s.device_type: s for s in tp.backends.status()}.get(name)
    if status is None or status.state not in ("ready", "loaded"):
        pytest.skip(f"{name} unavailable: {status.detail if status else 'no plugin registers it'}")
    return name


def to_numpy(t):
    return t.detach().cpu().numpy()


def assert_close(ours, expected, rtol=1e-9):
    np.testing.assert_allclose(to_numpy(ours), np.asarray(expected, dtype=np.float64), rtol=rtol, atol=1e-12)
