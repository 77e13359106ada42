"""Tensor.item (read in C for one element of a CPU tensor) and tp.tensor of a flat list of
floats, ints or bools (written in C): every dtype's value and Python type, views at an offset,
the errors and the cases that go to the Python paths, against NumPy and PyTorch."""
import numpy as np
import pytest

import tensorplug as tp
from tests.torch_reference import torch_or_skip

VALUES = {
    "bool": [True, False], "uint8": [0, 255], "int8": [-128, 127], "int16": [-32768, 32767],
    "int32": [-2**31, 2**31 - 1], "int64": [-2**63, 2**63 - 1],
    "float16": [1.5, -65504.0, 6e-8], "bfloat16": [1.5, -3.0e38, 1e-39],
    "float32": [0.1, -0.0, float("inf"), 1e-45], "float64": [0.1, -1e-310, float("-inf")],
    "complex64": [1.5 - 2.25j], "complex128": [0.1 + 1e300j],
}
PY_TYPES = {"bool": bool, "complex64": complex, "complex128": complex}


def _numpy_value(value, name):
    """What the element holds once stored in dtype `name` (bfloat16 through float32: round to
    nearest even on the upper 16 bits), as a Python number."""
    if name == "bfloat16":
        bits = np.array([value], np.float32).view(np.uint32).astype(np.uint64)
        bits = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16 << 16).astype(np.uint32)
        return float(bits.view(np.float32)[0])
    return np.array(value, dtype=name).item()


@pytest.mark.parametrize("name", sorted(VALUES))
def test_item_of_every_dtype(name):
    dtype = getattr(tp, name)
    for value in VALUES[name]:
        for shape in ((), (1,), (1, 1, 1)):
            got = tp.tensor(value, dtype=dtype).reshape(shape).item()
            want = _numpy_value(value, name)
            assert type(got) is PY_TYPES.get(name, int if name.startswith(("int", "uint")) else float)
            if isinstance(want, float) and np.isnan(want):
                assert np.isnan(got)
            else:
                assert got == want and np.copysign(1, abs(got) if isinstance(got, complex) else got) == \
                    np.copysign(1, abs(want) if isinstance(want, complex) else want)


def test_item_of_a_view_at_an_offset():
    base = tp.tensor(np.arange(24, dtype=np.float64).reshape(2, 3, 4))
    assert base[1, 2, 3].item() == 23.0
    assert base[1:, 2:, 3:].item() == 23.0
    assert base.transpose(0, 2)[3:, 2:, 1:].item() == 23.0
    c = tp.tensor(np.array([1 + 2j, 3 - 4j], np.complex64))
    assert c[1].item() == 3 - 4j


def test_item_keeps_autograd_out():
    x = tp.tensor([2.5], requires_grad=True)
    y = (x * 2).sum()
    assert y.item() == 5.0 and x.item() == 2.5
    y.backward()
    assert x.grad.tolist() == [2.0]


def test_item_errors_name_the_problem():
    with pytest.raises(RuntimeError, match="a Tensor with 3 elements cannot be converted to Scalar"):
        tp.ones(3).item()
    with pytest.raises(RuntimeError, match="a Tensor with 0 elements"):
        tp.ones(0).item()
    with pytest.raises(RuntimeError, match="meta"):
        tp.ones(1, device="meta").item()


def test_item_matches_torch():
    torch = pytest.importorskip("torch")
    for value, name in ((0.1, "float32"), (-7, "int64"), (True, "bool"), (1.5, "bfloat16"), (2 - 1j, "complex64")):
        got = tp.tensor([value], dtype=getattr(tp, name)).item()
        want = torch.tensor([value], dtype=getattr(torch, name)).item()
        assert type(got) is type(want) and got == want


@pytest.mark.parametrize("data", [
    [1.0, 2.0, 3.0], [0.1, -0.0, float("inf"), float("nan"), 1e-45, 3.5e38], [1, -2, 2**63 - 1], [True, False],
    [5], [1e-310], [1, 2.5], [True, 1], [1.0, np.float32(2.0)],
])
def test_list_factory_matches_numpy_and_torch(data):
    got = tp.tensor(data)
    array = np.asarray(data)
    want_dtype = {"f": tp.float32, "i": tp.int64, "b": tp.bool}[array.dtype.kind]
    assert got.dtype == want_dtype and got.shape == (len(data),)
    with np.errstate(over="ignore"):  # 3.5e38 rounds to inf in float32, as in PyTorch
        want = array.astype(np.float32) if want_dtype == tp.float32 else array
    np.testing.assert_array_equal(got.numpy(), want)
    assert np.array_equal(np.signbit(got.numpy()), np.signbit(want))
    torch = pytest.importorskip("torch")
    reference = torch.tensor(data)
    assert str(reference.dtype).split(".")[1] == got.dtype.name
    np.testing.assert_array_equal(got.numpy(), reference.numpy())


def test_list_factory_default_dtype_and_arguments():
    previous = tp.get_default_dtype()
    try:
        tp.set_default_dtype(tp.float64)
        got = tp.tensor([0.1, 0.2])
        assert got.dtype == tp.float64 and got.tolist() == [0.1, 0.2]
    finally:
        tp.set_default_dtype(previous)
    x = tp.tensor([1.0, 2.0], requires_grad=True)
    assert x.requires_grad and x.is_leaf and x._version == 0
    (x * x).sum().backward()
    assert x.grad.tolist() == [2.0, 4.0]
    assert tp.tensor([1.0], device="meta").device.type == "meta"
    assert tp.tensor([1.0, 2.0], dtype=tp.float16).dtype == tp.float16


def test_list_factory_errors_stay_the_python_ones():
    with pytest.raises(ValueError, match="int64"):  # beyond int64, as PyTorch: "Overflow when unpacking long long"
        tp.tensor([2**64])
    with pytest.raises(RuntimeError, match="floating point"):
        tp.tensor([1, 2], requires_grad=True)
    assert tp.tensor([]).shape == (0,) and tp.tensor([]).dtype == tp.float32


@pytest.mark.parametrize("dtype_name,value", [("uint16", 65535), ("uint32", 2**32 - 1), ("uint64", 2**64 - 1),
                                              ("uint64", 2**63 + 5)])
def test_item_of_unsigned_dtypes_reads_the_full_range(dtype_name, value):
    """item() of uint16/32/64 gives the Python int stored, above the signed range too."""
    dtype = getattr(tp, dtype_name)
    assert tp.tensor([value], dtype=dtype).item() == value


def test_item_of_float8_goes_through_float32():
    """float8 values come back as the float32 value they represent (1.5 and 288 are exact)."""
    assert tp.tensor([1.5]).to(tp.float8_e4m3fn).item() == 1.5
    assert tp.tensor([300.0]).to(tp.float8_e4m3fn).item() == 288.0


# Found by tools/fuzz_native.py: tp.tensor inferred a list's dtype from NumPy's reading of it, so
# NumPy scalars and 0-d tensors lost their dtypes ([np.float64(0.1), ...] was rounded to
# float32), and a one-element tensor inside a list added a dim. PyTorch promotes the items' own
# dtypes and reads a tensor inside a list as one number. (Dtypes below measured on PyTorch 2.13.)
@pytest.mark.parametrize("data,dtype,shape", [
    ([np.float64(0.1), np.float64(0.2)], "float64", (2,)),
    ([np.float64(1.5), 1], "float64", (2,)),
    ([np.float16(1.5)], "float16", (1,)),
    ([np.float16(1.5), 1.0], "float32", (2,)),
    ([np.int8(1), np.uint8(2)], "int16", (2,)),
    ([np.int8(1), True], "int8", (2,)),
    ([np.int16(3), 2.5], "float32", (2,)),
    ([np.complex64(1j), np.float64(2.0)], "complex128", (2,)),
    ([tp.tensor(True), 2], "int64", (2,)),
    ([tp.tensor([1.0]), tp.tensor([2.0])], "float32", (2,)),
    ([[tp.tensor([1.0])]], "float32", (1, 1)),
])
def test_list_of_numpy_scalars_and_tensors_keeps_their_dtypes(data, dtype, shape):
    t = tp.tensor(data)
    assert t.dtype == getattr(tp, dtype) and tuple(t.shape) == shape
    flat = []
    stack = [data]
    while stack:
        item = stack.pop(0)
        if isinstance(item, list):
            stack[:0] = item
        else:
            flat.append(item.item() if hasattr(item, "item") else item)
    np.testing.assert_array_equal(np.asarray(t.tolist()).ravel(), np.array(flat).astype(np.dtype(dtype)))


def test_tensor_of_several_elements_inside_a_list_raises():
    with pytest.raises(ValueError, match=r"tensor\(\): only one element tensors can be converted"):
        tp.tensor([tp.tensor([1.0, 2.0]), tp.tensor([3.0, 4.0])])


# Found by tools/fuzz_native.py: ints mixed with floats went through NumPy's float64, so an int
# beyond 2**53 was rounded (2**53 + 1 became 2**53) or overflowed (2**63 - 1); PyTorch converts
# each number exactly, floats truncated toward zero.
def test_big_ints_mixed_with_floats_convert_exactly_to_an_int_dtype():
    assert tp.tensor([2 ** 53 + 1, 0.5], dtype=tp.int64).tolist() == [2 ** 53 + 1, 0]
    assert tp.tensor([[2 ** 63 - 1], [-2.7]], dtype=tp.int64).tolist() == [[2 ** 63 - 1], [-2]]
    with pytest.raises(RuntimeError, match=r"tensor\(\): value nan cannot be converted to type int64"):
        tp.tensor([2 ** 60, float("nan")], dtype=tp.int64)
    with pytest.raises(RuntimeError, match=r"tensor\(\): value \d+ cannot be converted to type int32"):
        tp.tensor([2 ** 60, 1.5], dtype=tp.int32)


# Found by tools/fuzz_native.py: a list of Python ints with one beyond int64 became a float32
# tensor (NumPy read the list as float64); PyTorch raises ValueError (issue 13).
@pytest.mark.parametrize("data", [[1, 1, 2 ** 63], [[2 ** 63], [1]], [1, 2 ** 64 - 1], [True, -2 ** 63 - 1], 2 ** 64])
def test_list_of_ints_with_one_beyond_int64_raises(data):
    with pytest.raises(ValueError, match=r"tensor\(\): value -?\d+ does not fit in int64"):
        tp.tensor(data)


def test_big_int_with_a_float_is_a_float_tensor():
    assert tp.tensor([2 ** 63, 1.5]).tolist() == np.array([2 ** 63, 1.5], dtype=np.float32).tolist()


def test_numpy_float16_mixed_with_big_ints_converts_to_an_int_dtype():
    # (found by the fuzzer right after the fix above: NumPy's float16 has no __trunc__)
    assert tp.tensor([2 ** 60, np.float16(2.5), np.float32(-3.5)], dtype=tp.int64).tolist() == [2 ** 60, 2, -3]


# Issue 13: a Python int beyond int64 among floats (or with a floating dtype) is a float, as in
# PyTorch 2.13; beyond the float range it raises PyTorch's OverflowError.
@pytest.mark.parametrize("case", ["[2**64, 1.0]", "[[2**64], (1.0,)]", "[2**70, 1j]", "[tensor(1.5), -2**64]",
                                  "[2**64] as float64", "10**400 among floats", "full 2**64 as float32",
                                  "full 2**63 as float32", "as_tensor [2**64]"])
def test_ints_beyond_int64_as_pytorch_reads_them(case):
    torch = torch_or_skip()
    calls = {
        "[2**64, 1.0]": lambda L: L.tensor([2 ** 64, 1.0]),
        "[[2**64], (1.0,)]": lambda L: L.tensor([[2 ** 64], (1.0,)]),
        "[2**70, 1j]": lambda L: L.tensor([2 ** 70, 1j]),
        "[tensor(1.5), -2**64]": lambda L: L.tensor([L.tensor(1.5), -2 ** 64]),
        "[2**64] as float64": lambda L: L.tensor([2 ** 64], dtype=L.float64),
        "10**400 among floats": lambda L: L.tensor([10 ** 400, 1.0]),
        "full 2**64 as float32": lambda L: L.full((2,), 2 ** 64, dtype=L.float32),
        "full 2**63 as float32": lambda L: L.full((2,), 2 ** 63, dtype=L.float32),
        "as_tensor [2**64]": lambda L: L.as_tensor([2 ** 64]),
    }
    try:
        want = calls[case](torch)
    except Exception as error:
        with pytest.raises(type(error)):
            calls[case](tp)
        return
    got = calls[case](tp)
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1] and got.tolist() == want.tolist()
