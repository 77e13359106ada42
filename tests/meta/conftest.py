"""The meta-device tests: readable dtype ids, a seeded NumPy generator, and the default device
put back after each test (several tests make ``meta`` the default, as scripts do)."""
import numpy as np
import pytest

import tensorplug as tp


def pytest_make_parametrize_id(config, val, argname):
    if isinstance(val, tp.dtype):
        return val.name
    return None


@pytest.fixture(autouse=True)
def _default_device_restored():
    before = tp.get_default_device()
    yield
    tp.set_default_device(before)


@pytest.fixture
def rng():
    return np.random.default_rng(1234)
