"""Fixtures for the op-library tests: readable dtype ids and a seeded NumPy generator."""
import numpy as np
import pytest

import tensorplug as tp


def pytest_make_parametrize_id(config, val, argname):
    if isinstance(val, tp.dtype):
        return val.name
    return None


@pytest.fixture
def rng():
    return np.random.default_rng(1234)
