"""Shared fixtures and the reference helpers every test file uses."""
import importlib.util

import numpy as np
import pytest

import tensorplug as tp


@pytest.fixture(autouse=True)
def _seeded():
    """Every test starts from the same random state."""
    tp.manual_seed(0)
    np.random.seed(0)
    yield


# The devices a test taking `device` runs on (unless its folder defines its own): every backend
# present, each skipping with its reason.
def _device_params():
    params = [pytest.param("cpu", id="cpu")]
    from tensorplug.backends.opencl import OpenCLBackend

    ok, reason = OpenCLBackend().is_available()
    params.append(pytest.param("opencl", id="opencl", marks=() if ok else pytest.mark.skip(
        reason=f"OpenCL backend unavailable: {reason}")))
    from tensorplug.backends.cuda import CUDABackend

    ok, reason = CUDABackend().is_available()
    params.append(pytest.param("cuda", id="cuda", marks=() if ok else pytest.mark.skip(
        reason=f"CUDA backend unavailable: {reason}")))
    has_npdev = importlib.util.find_spec("tensorplug_npdev") is not None
    params.append(pytest.param("npdev", id="npdev", marks=() if has_npdev else pytest.mark.skip(
        reason="the example plugin is not installed: python -m pip install ./plugins/tensorplug-npdev")))
    return params


@pytest.fixture(params=_device_params())
def device(request):
    return request.param
