"""DLPack interop without copies: NumPy (always) and PyTorch (where installed) read and write
tensorplug CPU tensors in place, and tp.from_dlpack wraps their arrays in place."""
import numpy as np
import pytest

import tensorplug as tp


def test_numpy_reads_and_writes_a_tensor_in_place():
    t = tp.arange(6, dtype=tp.float32).reshape(2, 3)
    view = np.from_dlpack(t)
    assert view.shape == (2, 3) and view.dtype == np.float32
    view[1, 2] = 42.0
    assert t[1, 2].item() == 42.0


def test_non_contiguous_tensors_keep_their_strides():
    t = tp.arange(12, dtype=tp.int64).reshape(3, 4).t()
    view = np.from_dlpack(t)
    np.testing.assert_array_equal(view, np.arange(12).reshape(3, 4).T)


def test_from_dlpack_shares_memory():
    array = np.arange(5, dtype=np.int32)
    t = tp.from_dlpack(array)
    assert t.dtype is tp.int32
    t[0] = 7
    assert array[0] == 7


def test_refusals_are_clear():
    with pytest.raises(BufferError, match="requires grad"):
        tp.ones(2, requires_grad=True).__dlpack__()
    with pytest.raises(BufferError, match="bfloat16"):
        tp.ones(2, dtype=tp.bfloat16).__dlpack__()
    assert tp.ones(1).__dlpack_device__() == (1, 0)


def test_pytorch_exchange_where_installed():
    torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")
    t = tp.zeros(3)
    shared = torch.from_dlpack(t)
    shared[1] = 5.0
    assert t.tolist() == [0.0, 5.0, 0.0]
    back = tp.from_dlpack(torch.arange(4.0))
    assert back.tolist() == [0.0, 1.0, 2.0, 3.0]
