"""Readable test ids: dtypes show as their names (float32, not dtype0)."""
import tensorplug as tp


def pytest_make_parametrize_id(config, val, argname):
    if isinstance(val, tp.dtype):
        return val.name
    return None
