"""Fixtures of the array API tests: the namespace and the devices (each absent one skips with its
reason)."""
import pytest

import tensorplug as tp
from array_api_support import device_params


@pytest.fixture(params=device_params())
def device(request):
    return request.param


@pytest.fixture(scope="session")
def xp():
    return tp.ones(1).__array_namespace__()
