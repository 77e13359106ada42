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


def test_type_names_and_conversions_as_pytorch():
    """t.type() is the legacy type name (with tensorplug's module name, and the device for other
    devices); t.type(X) takes a legacy type (a CPU tensor of its dtype), a type name in
    PyTorch's or tensorplug's spelling, or a dtype; anything else is PyTorch's ValueError."""
    t = tp.tensor([1, 2], dtype=tp.int64)
    assert t.type() == "tensorplug.LongTensor" and tp.ones(1).type() == "tensorplug.FloatTensor"
    assert tp.ones(1, dtype=tp.complex64).type() == "tensorplug.ComplexFloatTensor"
    assert t.type(tp.FloatTensor).dtype is tp.float32 and t.type(tp.FloatTensor).tolist() == [1.0, 2.0]
    assert t.type("torch.DoubleTensor").dtype is tp.float64
    assert t.type("tensorplug.HalfTensor").dtype is tp.float16
    assert t.type(tp.int32).dtype is tp.int32
    assert t.type(t.type()).dtype is tp.int64
    with pytest.raises(ValueError, match="invalid type: 'torch.float32'"):
        t.type("torch.float32")


def test_type_names_carry_the_device(device):
    t = tp.ones(2, device=device)
    if device == "cpu":
        assert t.type() == "tensorplug.FloatTensor"
        return
    assert t.type() == f"tensorplug.{device}.FloatTensor"
    assert t.type(tp.DoubleTensor).device.type == "cpu"  # a legacy type is a CPU type, as in PyTorch
    moved = tp.ones(2).type(f"torch.{device}.LongTensor")
    assert moved.device.type == device and moved.dtype is tp.int64


def test_pin_memory_copies_cpu_tensors_and_refuses_others(device):
    t = tp.arange(4.0, device=device)
    if device != "cpu":
        with pytest.raises(RuntimeError, match="only dense CPU tensors can be pinned"):
            t.pin_memory()
        return
    pinned = t.pin_memory()
    assert pinned is not t and pinned.tolist() == t.tolist() and not pinned.is_pinned()
    pinned.add_(1)
    assert t.tolist() == [0.0, 1.0, 2.0, 3.0]  # a copy, as PyTorch's


def test_environment_queries_scripts_print():
    """tp.version and PyTorch's always-present device modules (xpu, mps, mtia)."""
    assert tp.version.__version__ == tp.__version__ and tp.version.hip is None
    assert tp.version.cuda == (None if not tp.cuda.is_available() else tp.version.cuda)
    for name in ("xpu", "mps", "mtia"):
        module = getattr(tp, name)
        assert module.is_available() is False and module.device_count() == 0
        with pytest.raises(RuntimeError, match=f"no installed plugin provides the '{name}' device type"):
            module.synchronize()
    with pytest.raises(AttributeError, match="no attribute 'not_a_device'"):
        tp.not_a_device
