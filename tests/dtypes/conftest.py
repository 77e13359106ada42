"""The device fixture of the dtype tests: every backend that declares the extra dtypes."""
import pytest

import tensorplug as tp


@pytest.fixture
def extra_device(device):
    """``device`` where its backend declares uint16/32/64 and the float8 types, else a skip."""
    try:
        tp.empty(1, dtype=tp.uint16, device=device)
    except TypeError as exc:
        pytest.skip(f"the {device} backend does not declare the extra dtypes ({exc})")
    return device
