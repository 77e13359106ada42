"""PyTorch's small first-lines surface: tp.finfo/iinfo, tp.Size, tp.compile, tp.is_complex,
Tensor.is_xpu/is_meta (issue 13). Limits are checked against NumPy's and PyTorch 2.13's."""
import pickle

import numpy as np
import pytest

import tensorplug as tp

FLOATS = ["float16", "bfloat16", "float32", "float64"]
INTEGERS = ["uint8", "int8", "int16", "int32", "int64"]


def _torch():
    return pytest.importorskip("torch", reason="PyTorch 2.13 is the reference here (pip install torch==2.13.0)")


@pytest.mark.parametrize("name", [n for n in FLOATS if n != "bfloat16"])
def test_finfo_matches_numpy(name):
    """bits, eps, max, min, tiny/smallest_normal equal NumPy's finfo; resolution is 10**-precision."""
    ours, theirs = tp.finfo(getattr(tp, name)), np.finfo(name)
    assert (ours.bits, ours.eps, ours.max, ours.min) == (theirs.bits, float(theirs.eps), float(theirs.max), float(theirs.min))
    assert ours.tiny == ours.smallest_normal == float(theirs.smallest_normal)
    assert ours.resolution == 10.0 ** -theirs.precision and ours.dtype == name  # NumPy rounds it to the dtype


@pytest.mark.parametrize("name", FLOATS)
def test_finfo_matches_torch(name):
    """Every attribute and the repr equal PyTorch's (bfloat16 included); finfo() is the default dtype's."""
    torch = _torch()
    ours, theirs = tp.finfo(getattr(tp, name)), torch.finfo(getattr(torch, name))
    for attr in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype"):
        assert getattr(ours, attr) == getattr(theirs, attr), attr
    assert repr(ours) == repr(theirs)
    assert tp.finfo() == tp.finfo(tp.float32) and hash(tp.finfo()) == hash(tp.finfo(tp.float32))


@pytest.mark.parametrize("name", INTEGERS)
def test_iinfo_matches_numpy_and_torch(name):
    """bits, min, max and dtype equal NumPy's iinfo, and the repr PyTorch's."""
    ours, theirs = tp.iinfo(getattr(tp, name)), np.iinfo(name)
    assert (ours.bits, ours.min, ours.max, ours.dtype) == (theirs.bits, int(theirs.min), int(theirs.max), name)
    torch = _torch()
    assert repr(ours) == repr(torch.iinfo(getattr(torch, name)))


def test_limits_refuse_the_wrong_kind_of_dtype():
    """finfo of an integer, iinfo of a float or of bool: TypeError naming the other function."""
    with pytest.raises(TypeError, match="iinfo"):
        tp.finfo(tp.int32)
    with pytest.raises(TypeError, match="finfo"):
        tp.iinfo(tp.float32)
    with pytest.raises(TypeError, match="bool is not supported"):
        tp.iinfo(tp.bool)


def test_size_is_a_tuple_of_ints():
    """Size compares equal to the tuple, keeps its type through slicing, + and *, counts
    elements, pickles, and refuses non-integers; its repr names it."""
    size = tp.Size([2, 3])
    assert size == (2, 3) and isinstance(size, tuple) and hash(size) == hash((2, 3))
    assert type(size[1:]) is tp.Size and size[1] == 3 and type(size[1]) is int
    assert type(size + (4,)) is tp.Size and size + (4,) == (2, 3, 4)
    assert type((4,) + size) is tp.Size and (4,) + size == (4, 2, 3)
    assert type(size * 2) is tp.Size and size * 2 == (2, 3, 2, 3)
    assert size.numel() == 6 and tp.Size().numel() == 1 and tp.Size([tp.tensor(5)]) == (5,)
    assert repr(size) == "tensorplug.Size([2, 3])"
    assert pickle.loads(pickle.dumps(size)) == size and type(pickle.loads(pickle.dumps(size))) is tp.Size
    with pytest.raises(TypeError, match=r"item 0 is 'float'"):
        tp.Size([2.0])


def test_size_works_where_shapes_go():
    """Factories and views take a Size; the legacy constructor reads a Size as a shape."""
    size = tp.Size([2, 3])
    assert tp.zeros(size).shape == (2, 3) and tp.ones(2, 3).reshape(tp.Size([3, 2])).shape == (3, 2)
    made = tp.Tensor(size)
    assert made.shape == (2, 3) and made.dtype is tp.float32
    assert tp.Tensor([2, 3]).tolist() == [2.0, 3.0]  # a list is still data


def test_compile_returns_the_callable_unchanged():
    """As a call, a bare decorator and a decorator with PyTorch's arguments; modules too."""
    def f(x):
        return x * 2

    assert tp.compile(f) is f
    assert tp.compile(f, fullgraph=True, dynamic=False, backend="inductor", mode="max-autotune") is f

    @tp.compile
    def g(x):
        return x + 1

    @tp.compile(mode="reduce-overhead", options=None)
    def h(x):
        return x - 1

    assert g(tp.tensor(1)).item() == 2 and h(tp.tensor(1)).item() == 0
    model = tp.nn.Linear(2, 2)
    assert tp.compile(model) is model
    assert tp.compiler.is_compiling() is False and tp.compiler.disable(f) is f


def test_compile_checks_its_arguments():
    """PyTorch's errors: mode and options together, an unknown mode, a non-callable."""
    with pytest.raises(RuntimeError, match="Either mode or options"):
        tp.compile(len, mode="default", options={})
    with pytest.raises(RuntimeError, match="Unrecognized mode=foo"):
        tp.compile(len, mode="foo")
    with pytest.raises(TypeError, match="callable"):
        tp.compile(1)


def test_device_and_complex_flags():
    """No tensor is complex, meta or on xpu here; dtypes say they are not complex."""
    x = tp.ones(2)
    assert x.is_meta is False and x.is_xpu is False and x.is_complex() is False
    assert tp.is_complex(x) is False and tp.float32.is_complex is False
    with pytest.raises(TypeError, match="is_complex"):
        tp.is_complex(1.0)
