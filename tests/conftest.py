"""Shared fixtures and the reference helpers every test file uses."""
import numpy as np
import pytest

import tensorplug as tp


@pytest.fixture(autouse=True)
def _seeded():
    """Every test starts from the same random state."""
    tp.manual_seed(0)
    np.random.seed(0)
    yield
