"""Fixtures of the array API tests: the namespace (the devices come from tests/conftest.py)."""
import pytest

import tensorplug as tp


@pytest.fixture(scope="session")
def xp():
    return tp.ones(1).__array_namespace__()
