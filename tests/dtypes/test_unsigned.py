"""uint16, uint32 and uint64 on every device that declares them: values against NumPy's unsigned
arithmetic (modulo 2**n), and the ops PyTorch 2.13 supports against PyTorch itself where it is
installed."""
import numpy as np
import pytest

import tensorplug as tp

UNSIGNED = [("uint16", np.uint16), ("uint32", np.uint32), ("uint64", np.uint64)]


def _sample(np_dtype, n=40):
    """Values over the whole range: small ones, the top, and around the signed type's limit."""
    info = np.iinfo(np_dtype)
    rng = np.random.default_rng(3)
    top = int(info.max)
    half = (top + 1) // 2
    fixed = [0, 1, 2, 7, half - 1, half, half + 1, top - 1, top]
    rand = [int(v) for v in rng.integers(0, top, n, dtype=np.uint64, endpoint=True)] if top < 2 ** 64 else []
    if np_dtype == np.uint64:
        rand = [int(v) for v in rng.integers(0, 2 ** 63, n, dtype=np.uint64)] + [2 ** 63 + int(v) for v in
                                                                                 rng.integers(0, 2 ** 63, n, dtype=np.uint64)]
    return np.array(fixed + rand, dtype=np_dtype)


def _on(device, array: np.ndarray) -> tp.Tensor:
    """``array`` as a tensor on ``device`` (its dtype kept)."""
    return tp.from_numpy(array).to(device)


@pytest.mark.parametrize("name,np_dtype", UNSIGNED)
def test_values_round_trip_exactly(name, np_dtype, extra_device):
    values = _sample(np_dtype)
    t = tp.tensor([int(v) for v in values], dtype=getattr(tp, name), device=extra_device)
    assert t.dtype is getattr(tp, name) and not t.dtype.is_signed
    assert t.tolist() == [int(v) for v in values]
    np.testing.assert_array_equal(t.cpu().numpy(), values)
    assert t.cpu().numpy().dtype == np_dtype
    assert _on(extra_device, values).dtype is getattr(tp, name)
    assert t[-1].item() == int(values[-1])


def test_uint64_above_int64(extra_device):
    big = 2 ** 64 - 1
    t = tp.tensor([1, big, 2 ** 63 + 5], dtype=tp.uint64, device=extra_device)
    assert t.tolist() == [1, big, 2 ** 63 + 5]
    assert tp.full((2,), big, dtype=tp.uint64, device=extra_device).tolist() == [big, big]
    assert tp.full((1,), -1, dtype=tp.uint64, device=extra_device).tolist() == [big]  # wraps, as PyTorch's fill
    with pytest.raises(OverflowError):
        tp.tensor([-1], dtype=tp.uint64, device=extra_device)  # as PyTorch: "can't convert negative int to unsigned"
    assert t.to(tp.int64).tolist() == [1, -1, -(2 ** 63) + 5]
    assert t.double().tolist() == [1.0, float(big), float(2 ** 63 + 5)]
    converted = tp.tensor([1.8e19, -1.0, 3.9], dtype=tp.float64).to(tp.uint64).tolist()
    assert converted == [int(np.float64(1.8e19)), big, 3]


@pytest.mark.parametrize("name,np_dtype", UNSIGNED)
def test_arithmetic_wraps_like_numpy(name, np_dtype, extra_device):
    a_np = _sample(np_dtype)
    b_np = np.roll(a_np, 3)
    b_np[b_np == 0] = 1
    a, b = _on(extra_device, a_np), _on(extra_device, b_np)
    with np.errstate(over="ignore"):
        expected = {"add": a_np + b_np, "sub": a_np - b_np, "mul": a_np * b_np, "floor_divide": a_np // b_np,
                    "remainder": a_np % b_np, "bitwise_and": a_np & b_np, "bitwise_or": a_np | b_np,
                    "bitwise_xor": a_np ^ b_np, "maximum": np.maximum(a_np, b_np), "minimum": np.minimum(a_np, b_np)}
    for op, want in expected.items():
        got = getattr(tp, op)(a, b)
        assert got.dtype is getattr(tp, name), op
        np.testing.assert_array_equal(got.cpu().numpy(), want, err_msg=op)
    for op, want in {"eq": a_np == b_np, "lt": a_np < b_np, "ge": a_np >= b_np}.items():
        np.testing.assert_array_equal(getattr(tp, op)(a, b).cpu().numpy(), want, err_msg=op)
    np.testing.assert_array_equal((a * 3).cpu().numpy(), (a_np * np_dtype(3)).astype(np_dtype))
    np.testing.assert_array_equal((-a).cpu().numpy(), (np.zeros_like(a_np) - a_np))
    np.testing.assert_allclose((a / b).cpu().numpy(), (a_np.astype(np.float64) / b_np).astype(np.float32), rtol=1e-6)
    assert (a / b).dtype is tp.float32


@pytest.mark.parametrize("name,np_dtype", UNSIGNED)
def test_reductions_sort_and_selection(name, np_dtype, extra_device):
    a_np = _sample(np_dtype)
    a = _on(extra_device, a_np)
    assert a.max().item() == int(a_np.max()) and a.min().item() == int(a_np.min())
    assert a.argmax().item() == int(a_np.argmax())
    total = a.sum()
    assert total.dtype is tp.int64  # integer sums are int64, as PyTorch's (a uint64 sum wraps)
    assert int(total.item()) % 2 ** 64 == sum(int(v) for v in a_np) % 2 ** 64
    values, indices = a.sort()
    np.testing.assert_array_equal(values.cpu().numpy(), np.sort(a_np, kind="stable"))
    np.testing.assert_array_equal(indices.cpu().numpy(), np.argsort(a_np, kind="stable"))
    assert values.dtype is getattr(tp, name)
    mask = a_np > a_np[4]
    np.testing.assert_array_equal(tp.where(_on(extra_device, mask), a, a[0]).cpu().numpy(),
                                  np.where(mask, a_np, a_np[0]))
    np.testing.assert_array_equal(a[tp.tensor([0, 3, 8], device=extra_device)].cpu().numpy(), a_np[[0, 3, 8]])
    np.testing.assert_array_equal(tp.cat([a, a.clone()]).cpu().numpy(), np.concatenate([a_np, a_np]))
    np.testing.assert_array_equal(tp.arange(5, dtype=getattr(tp, name), device=extra_device).cpu().numpy(),
                                  np.arange(5, dtype=np_dtype))


@pytest.mark.parametrize("name,np_dtype", UNSIGNED)
def test_conversions_both_ways(name, np_dtype, extra_device):
    dtype = getattr(tp, name)
    floats = np.array([0.0, 1.5, 3.99, 70000.0, 4e9, -1.0], dtype=np.float64)
    got = _on(extra_device, floats).to(dtype).tolist()
    # float -> unsigned truncates toward zero through int64 and wraps to n bits (uint64: directly)
    expected = [int(np.int64(np.trunc(v))) % 2 ** (8 * np.dtype(np_dtype).itemsize) for v in floats]
    assert got == expected
    values = _sample(np_dtype)
    t = _on(extra_device, values)
    np.testing.assert_array_equal(t.to(tp.float64).cpu().numpy(), values.astype(np.float64))
    np.testing.assert_array_equal(t.to(tp.int64).cpu().numpy(), values.astype(np.int64))
    np.testing.assert_array_equal(t.to(tp.uint8).cpu().numpy(), values.astype(np.uint8))
    np.testing.assert_array_equal(t.to(tp.bool).cpu().numpy(), values != 0)


@pytest.mark.parametrize("name,np_dtype", UNSIGNED)
def test_against_torch(name, np_dtype, extra_device):
    torch = pytest.importorskip("torch")
    values = _sample(np_dtype)
    ours, theirs = _on(extra_device, values), torch.from_numpy(values)
    assert ours.sum().item() == theirs.sum().item()
    assert ours.prod().item() == theirs.prod().item()
    np.testing.assert_array_equal((ours * ours).cpu().numpy(), (theirs * theirs).cpu().numpy())
    np.testing.assert_array_equal((ours * 3).cpu().numpy(), (theirs * 3).cpu().numpy())
    np.testing.assert_array_equal((ours & 1234).cpu().numpy(), (theirs & 1234).cpu().numpy())
    np.testing.assert_array_equal((ours / 3).cpu().numpy(), (theirs / 3).cpu().numpy())
    np.testing.assert_array_equal(ours.sort().values.cpu().numpy(), theirs.sort().values.cpu().numpy())
    np.testing.assert_array_equal(ours.to(tp.float32).cpu().numpy(), theirs.to(torch.float32).cpu().numpy())
    np.testing.assert_array_equal(ours.to(tp.int32).cpu().numpy(), theirs.to(torch.int32).cpu().numpy())
    # In-range values and small negative ones (which wrap): beyond the range, C++ leaves the
    # conversion undefined and PyTorch's results differ between source dtypes (docs/dtypes.md).
    extra = {"uint16": [], "uint32": [3e9], "uint64": [3e9, 1e19, -3e9]}[name]
    floats = np.array([0.5, 1e4, 65535.0, -1.0, -7.5] + extra, dtype=np.float32)
    np.testing.assert_array_equal(_on(extra_device, floats).to(getattr(tp, name)).cpu().numpy(),
                                  torch.from_numpy(floats).to(getattr(torch, name)).cpu().numpy())
    assert repr(ours[:3].cpu()).replace("tensorplug.", "") == repr(theirs[:3]).replace("torch.", "")


# Found by tools/fuzz_native.py: NumPy truncated a Python float for uint64 (1.5 -> 1) or raised
# an OverflowError naming no op (1e300); PyTorch refuses Python floats for uint64.
@pytest.mark.parametrize("data", [[1.5], [float("nan")], [1e300], [2.0 ** 64], [[1], [2.5]]])
def test_tensor_of_python_floats_as_uint64_raises(data):
    with pytest.raises(TypeError, match=r"tensor\(\): an integer is required for dtype uint64"):
        tp.tensor(data, dtype=tp.uint64)


def test_tensor_of_python_ints_as_uint64_keeps_them_exactly():
    assert tp.tensor([1, 2 ** 64 - 1, 2 ** 63], dtype=tp.uint64).tolist() == [1, 2 ** 64 - 1, 2 ** 63]


# Found by tools/fuzz_native.py: a NumPy integer scalar was cast as NumPy casts (np.int64(-3) as
# uint64 wrapped to 2**64 - 3, np.int64(300) as int8 to 44); PyTorch checks it as the Python
# number it holds.
@pytest.mark.parametrize("data", [np.int64(-3), [np.int64(-3)], [np.int8(-1), 2]])
def test_negative_numpy_integer_as_uint64_raises(data):
    with pytest.raises(OverflowError, match=r"tensor\(\): Python integer -\d out of bounds for uint64"):
        tp.tensor(data, dtype=tp.uint64)


@pytest.mark.parametrize("data", [np.int64(300), [np.int64(300)], np.uint16(65535)])
def test_numpy_integer_scalar_beyond_the_dtype_raises(data):
    with pytest.raises(RuntimeError, match=r"tensor\(\): value \d+ cannot be converted to type int8 without overflow"):
        tp.tensor(data, dtype=tp.int8)


def test_numpy_arrays_still_cast_as_numpy_casts():
    assert tp.tensor(np.array([300]), dtype=tp.int8).tolist() == np.array([300]).astype(np.int8).tolist()
    assert tp.tensor(np.uint64(2 ** 64 - 1), dtype=tp.uint64).item() == 2 ** 64 - 1
