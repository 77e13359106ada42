"""tp.frombuffer against PyTorch 2.13: shared memory, count and offset, read-only buffers, and
PyTorch's errors (issue 13)."""
import array

import numpy as np
import pytest

import tensorplug as tp


def _torch():
    return pytest.importorskip("torch", reason="PyTorch 2.13 is the reference here (pip install torch==2.13.0)")


def test_frombuffer_shares_memory():
    """Writes through the tensor reach the bytearray and the other way round."""
    buffer = bytearray(np.array([1, 2, 3], dtype=np.int32).tobytes())
    t = tp.frombuffer(buffer, dtype=tp.int32)
    assert t.device.type == "cpu" and t.dtype is tp.int32 and t.tolist() == [1, 2, 3]
    t[0] = 7
    assert np.frombuffer(buffer, dtype=np.int32).tolist() == [7, 2, 3]
    buffer[4:8] = np.array([9], dtype=np.int32).tobytes()
    assert t.tolist() == [7, 9, 3]


@pytest.mark.parametrize("dtype, count, offset", [("float32", -1, 0), ("int16", 3, 2), ("float64", 1, 8), ("uint8", -1, 5),
                                                  ("int64", 2, 0), ("bool", 4, 1)])
def test_frombuffer_matches_torch(dtype, count, offset):
    """count and offset select the same elements as PyTorch, for several dtypes."""
    torch = _torch()
    raw = bytearray(np.arange(16, dtype=np.uint8).tobytes() if dtype != "bool" else bytes([0, 1] * 8))
    got = tp.frombuffer(raw, dtype=getattr(tp, dtype), count=count, offset=offset)
    expected = torch.frombuffer(bytearray(raw), dtype=getattr(torch, dtype), count=count, offset=offset)
    assert got.dtype is getattr(tp, dtype) and got.shape == tuple(expected.shape)
    np.testing.assert_array_equal(got.numpy(), expected.numpy())


def test_frombuffer_array_and_requires_grad():
    """array.array works; requires_grad as PyTorch (floats only)."""
    t = tp.frombuffer(array.array("d", [1.5, 2.5]), dtype=tp.float64, requires_grad=True)
    assert t.requires_grad and t.tolist() == [1.5, 2.5]
    with pytest.raises(RuntimeError, match="floating point"):
        tp.frombuffer(bytearray(8), dtype=tp.int32, requires_grad=True)


def test_frombuffer_warns_for_read_only_buffers():
    """bytes are read-only: PyTorch warns and still wraps them."""
    with pytest.warns(UserWarning, match="The given buffer is not writable"):
        t = tp.frombuffer(b"\x01\x00\x02\x00", dtype=tp.int16)
    assert t.tolist() == [1, 2]


@pytest.mark.parametrize("buffer, kwargs", [
    (bytearray(7), {"dtype": "int32"}),
    (bytearray(8), {"dtype": "int32", "count": 3}),
    (bytearray(8), {"dtype": "int32", "offset": 8}),
    (bytearray(8), {"dtype": "int32", "offset": -1}),
    (bytearray(0), {"dtype": "int32"}),
    (bytearray(8), {"dtype": "int32", "count": 0}),
    ([1, 2], {"dtype": "int32"}),
    (array.array("i", [1, 2, 3]), {"dtype": "int32", "offset": 2}),
])
def test_frombuffer_errors_match_torch(buffer, kwargs):
    """Each bad length, count or offset raises PyTorch's ValueError with its message."""
    torch = _torch()
    with pytest.raises(ValueError) as expected:
        torch.frombuffer(buffer, **{**kwargs, "dtype": getattr(torch, kwargs["dtype"])})
    with pytest.raises(ValueError) as got:
        tp.frombuffer(buffer, **{**kwargs, "dtype": getattr(tp, kwargs["dtype"])})
    assert str(got.value) == str(expected.value)
