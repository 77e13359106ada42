"""What the meta tests compare with: a tensor's metadata as a plain tuple, for tensorplug and
PyTorch alike, and PyTorch (skipping without it)."""
import pytest


def torch_or_skip():
    """PyTorch 2.13, the reference for meta results; skips the test without it."""
    return pytest.importorskip("torch", reason="PyTorch 2.13 is the reference here (pip install torch==2.13.0)")


def metadata(t) -> tuple:
    """(shape, dtype name, strides, storage offset, device type) of a tensorplug or torch tensor."""
    return (tuple(t.shape), str(t.dtype).split(".")[-1], tuple(t.stride()), t.storage_offset(), t.device.type)


def all_metadata(result) -> list:
    """``metadata`` of every tensor in a result (a tensor, or a tuple/list of them)."""
    if isinstance(result, (tuple, list)):
        return [metadata(t) for t in result]
    return [metadata(result)]
