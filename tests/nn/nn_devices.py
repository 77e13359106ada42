"""The devices the every-backend tests under tests/nn run on: cpu, opencl and npdev, each
skipping with its reason where it is missing (as tests/every_backend/conftest.py's fixture)."""
import importlib.util

import pytest


def device_params() -> list:
    from tensorplug.backends.opencl import OpenCLBackend

    ok, reason = OpenCLBackend().is_available()
    has_npdev = importlib.util.find_spec("tensorplug_npdev") is not None
    return [
        pytest.param("cpu", id="cpu"),
        pytest.param("opencl", id="opencl", marks=() if ok else pytest.mark.skip(reason=f"OpenCL backend unavailable: {reason}")),
        pytest.param("npdev", id="npdev", marks=() if has_npdev else pytest.mark.skip(
            reason="the example plugin is not installed: python -m pip install ./plugins/tensorplug-npdev")),
    ]
