"""tp.Tensor(...) and the typed legacy constructors follow PyTorch's rules (issue 13)."""
import numpy as np
import pytest

import tensorplug as tp


def test_data_sizes_and_empty():
    """A sequence is data (default float dtype), ints are a shape, no argument is empty."""
    t = tp.Tensor([[1, 2], [3, 4]])
    assert t.dtype is tp.float32 and t.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert tp.Tensor(2, 3).shape == (2, 3) and tp.Tensor(2, 3).dtype is tp.float32
    assert tp.Tensor().shape == (0,)
    assert tp.Tensor(np.array([1, 2], dtype=np.int64)).dtype is tp.float32


@pytest.mark.parametrize("name,dtype", [("FloatTensor", "float32"), ("DoubleTensor", "float64"), ("LongTensor", "int64"),
                                        ("IntTensor", "int32"), ("ByteTensor", "uint8"), ("BoolTensor", "bool"),
                                        ("HalfTensor", "float16"), ("ShortTensor", "int16"), ("CharTensor", "int8")])
def test_typed_constructors_and_isinstance(name, dtype):
    cls = getattr(tp, name)
    t = cls([1, 0, 1])
    assert t.dtype is getattr(tp, dtype) and t.tolist() == ([True, False, True] if dtype == "bool" else [1, 0, 1])
    assert cls(4).shape == (4,)  # one int is a size, not data
    assert isinstance(t, cls) and isinstance(t, tp.Tensor)
    other = tp.FloatTensor if name != "FloatTensor" else tp.LongTensor
    assert not isinstance(t, other)


def test_tensor_argument_shares_data_or_refuses_another_dtype():
    base = tp.ones(3)
    alias = tp.Tensor(base)
    alias[0] = 5.0
    assert base.tolist() == [5.0, 1.0, 1.0]
    with pytest.raises(TypeError, match="expected tensorplug.float32"):
        tp.Tensor(tp.ones(2, dtype=tp.int64))


def test_default_dtype_follows_set_default_dtype():
    previous = tp.get_default_dtype()
    tp.set_default_dtype(tp.float64)
    try:
        assert tp.Tensor([1]).dtype is tp.float64
    finally:
        tp.set_default_dtype(previous)


def test_bad_arguments_are_clear_errors():
    with pytest.raises(TypeError, match="data must be a sequence"):
        tp.Tensor("abc")
    with pytest.raises(RuntimeError, match="negative dimension"):
        tp.LongTensor(2, -1)


def test_matches_pytorch_where_installed():
    torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")
    for args in ([[1.5, 2]], [[True, False]], [np.arange(4).reshape(2, 2)]):
        ours, theirs = tp.Tensor(*args), torch.Tensor(*args)
        assert ours.tolist() == theirs.tolist() and ours.dtype.name == str(theirs.dtype).split(".")[1]
    assert tuple(tp.LongTensor(2, 3).shape) == tuple(torch.LongTensor(2, 3).shape)
