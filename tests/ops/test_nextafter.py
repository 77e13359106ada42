"""tp.nextafter, Tensor.nextafter and Tensor.nextafter_: bit for bit against NumPy's np.nextafter
(float16, float32, float64) and PyTorch 2.13 (bfloat16 too), special values included, on every
backend; PyTorch's promotion, broadcasting, gradient and refusals."""
import numpy as np
import pytest

import tensorplug as tp
from device_params import every_device, torch_or_skip
from torch_reference import compare

# The integer type of each float's size: results are compared as bits, so -0.0 differs from 0.0
# and NaN is compared by being NaN.
BITS = {"float16": "int16", "bfloat16": "int16", "float32": "int32", "float64": "int64"}


def _specials(dtype: str) -> np.ndarray:
    """Zeros, infinities, NaN, the extremes of the format (in float64, exact in ``dtype``)."""
    values = [0.0, -0.0, 1.0, -1.0, 2.0, -0.5, np.inf, -np.inf, np.nan, 1e-3, -7.25]
    if dtype != "bfloat16":
        info = np.finfo(dtype)
        values += [float(info.max), -float(info.max), float(info.tiny), -float(info.tiny),
                   float(info.smallest_subnormal), -float(info.smallest_subnormal)]
    return np.array(values, dtype=np.float64)


def _on(array: np.ndarray, dtype: str, device: str) -> tp.Tensor:
    """``array`` (float64) as ``dtype`` on ``device``; skips where the device lacks the dtype."""
    try:
        return tp.tensor(array, device=device).to(getattr(tp, dtype))
    except TypeError as error:
        pytest.skip(str(error))


def _assert_same_floats(got: tp.Tensor, expected_bits: np.ndarray, expected_nan: np.ndarray, dtype: str) -> None:
    assert got.dtype is getattr(tp, dtype)
    bits = got.view(getattr(tp, BITS[dtype])).cpu().numpy()
    nan = np.isnan(got.float().cpu().numpy())
    np.testing.assert_array_equal(nan, expected_nan)
    np.testing.assert_array_equal(bits[~nan], expected_bits[~nan])


@pytest.mark.parametrize("device", every_device())
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_special_values_match_numpy(device, dtype):
    """Every pair of special values (zeros of both signs, infinities, NaN, max, tiny, the smallest
    subnormal) gives NumPy's bits."""
    specials = _specials(dtype).astype(dtype)
    a, b = np.meshgrid(specials, specials)
    with np.errstate(over="ignore", under="ignore"):  # max toward inf overflows, as it should
        expected = np.nextafter(a, b)
    # NumPy's float16 nextafter returns x for x == y (-0.0 toward 0.0 stays -0.0); C's, NumPy's
    # float32/float64 and PyTorch's return y.
    expected = np.where(a == b, b, expected)
    got = tp.nextafter(_on(a.astype(np.float64), dtype, device), _on(b.astype(np.float64), dtype, device))
    assert got.device.type == device
    _assert_same_floats(got, expected.view(BITS[dtype]), np.isnan(expected), dtype)


@pytest.mark.parametrize("device", every_device())
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_random_values_match_numpy(device, dtype):
    """Values of every magnitude the format holds, each stepped up, down, and onto itself."""
    rng = np.random.default_rng(3)
    exponent_range = {"float16": 14, "float32": 120, "float64": 1000}[dtype]
    a = (rng.standard_normal(300) * 2.0 ** rng.integers(-exponent_range, exponent_range, 300)).astype(dtype)
    b = np.concatenate([a[:100] + np.abs(a[:100]) + 1, a[100:200] - np.abs(a[100:200]) - 1, a[200:]]).astype(dtype)
    with np.errstate(over="ignore", under="ignore"):
        expected = np.nextafter(a, b)
    got = tp.nextafter(_on(a.astype(np.float64), dtype, device), _on(b.astype(np.float64), dtype, device))
    _assert_same_floats(got, expected.view(BITS[dtype]), np.isnan(expected), dtype)


@pytest.mark.parametrize("device", every_device())
@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32", "float64"])
def test_every_dtype_matches_torch(device, dtype):
    """bfloat16, which NumPy lacks, and the others against torch.nextafter."""
    torch = torch_or_skip()
    specials = _specials(dtype)
    a, b = np.meshgrid(specials, specials)
    expected = torch.nextafter(torch.tensor(a).to(getattr(torch, dtype)), torch.tensor(b).to(getattr(torch, dtype)))
    expected_bits = expected.view(getattr(torch, BITS[dtype])).numpy()
    got = tp.nextafter(_on(a, dtype, device), _on(b, dtype, device))
    _assert_same_floats(got, expected_bits, torch.isnan(expected).numpy(), dtype)


@pytest.mark.parametrize("device", every_device())
def test_methods_out_and_inplace(device):
    """Tensor.nextafter, out= (cast to out's dtype) and nextafter_ (in self's dtype), as PyTorch's."""
    x = tp.tensor([1.0, -1.0, 0.0], device=device)
    up = tp.tensor([2.0, 2.0, -1.0], device=device)
    expected = np.nextafter(np.array([1.0, -1.0, 0.0], np.float32), np.array([2.0, 2.0, -1.0], np.float32))
    np.testing.assert_array_equal(x.nextafter(up).cpu().numpy(), expected)
    out = tp.empty(3, dtype=tp.float32, device=device)
    assert tp.nextafter(x, up, out=out) is out
    np.testing.assert_array_equal(out.cpu().numpy(), expected)
    assert x.nextafter_(up) is x
    np.testing.assert_array_equal(x.cpu().numpy(), expected)


def test_promotion_and_broadcasting_match_torch():
    """The result dtype is PyTorch's result_type (0-d tensors promote only across categories) and
    the shapes broadcast."""
    torch = torch_or_skip()
    cases = [("float16", (3, 1), "float32", (4,)), ("float16", (3,), "float64", ()), ("bfloat16", (2,), "float16", (2,)),
             ("int32", (2, 2), "float64", ()), ("int64", (2,), "float32", (2,)), ("float32", (2,), "int64", (1,))]
    rng = np.random.default_rng(5)
    for dtype_a, shape_a, dtype_b, shape_b in cases:
        a, b = rng.integers(-3, 4, shape_a).astype(np.float64), rng.integers(-3, 4, shape_b).astype(np.float64)
        expected = torch.nextafter(torch.tensor(a).to(getattr(torch, dtype_a)), torch.tensor(b).to(getattr(torch, dtype_b)))
        got = tp.nextafter(tp.tensor(a).to(getattr(tp, dtype_a)), tp.tensor(b).to(getattr(tp, dtype_b)))
        assert got.dtype.name == str(expected.dtype).removeprefix("torch.")
        assert tuple(got.shape) == tuple(expected.shape)
        np.testing.assert_array_equal(got.double().numpy(), expected.double().numpy())


@pytest.mark.parametrize("device", every_device())
def test_gradient_matches_torch(device):
    """torch 2.13 passes the gradient to input unchanged (summed over broadcast dims) and gives
    other zeros."""
    torch = torch_or_skip()
    rng = np.random.default_rng(11)
    compare(torch, lambda lib, a, b: lib.nextafter(a, b) * 3, [rng.standard_normal((3, 1)), rng.standard_normal((4,))],
            device=device)
    compare(torch, lambda lib, a, b: a.nextafter(b), [rng.standard_normal((2, 3)), rng.standard_normal((2, 3))],
            device=device)


def test_integer_complex_and_number_operands_are_refused_as_in_torch():
    """Integer and bool results, complex operands and a Python number for other raise the errors'
    types PyTorch raises."""
    torch = torch_or_skip()
    calls = [
        lambda lib: lib.nextafter(lib.tensor([1, 2]), lib.tensor([3, 0])),
        lambda lib: lib.nextafter(lib.tensor([True]), lib.tensor([False])),
        lambda lib: lib.nextafter(lib.tensor([1.0]), lib.tensor([2j])),
    ]
    for call in calls:
        with pytest.raises(NotImplementedError):
            call(torch)
        with pytest.raises(NotImplementedError, match="nextafter"):
            call(tp)
    with pytest.raises(TypeError):
        torch.nextafter(torch.tensor([1.0]), 3.0)
    with pytest.raises(TypeError, match="argument 'other' must be Tensor, not float"):
        tp.nextafter(tp.tensor([1.0]), 3.0)
    with pytest.raises(NotImplementedError, match="'Long'"):
        tp.nextafter(tp.tensor([1]), tp.tensor([2]))
