"""tp.autocast on an accelerator runs the pointwise functions, pow and the sums and scans of PyTorch's
CUDA "float32" list in float32 for half-precision inputs (issue 13); the CPU leaves them alone, as
PyTorch's CPU list does. Values against NumPy float64 on the rounded half inputs."""
import math

import numpy as np
import pytest
from scipy import special

import tensorplug as tp
from tensorplug.conformance.opdb._core import round_to

F = tp.nn.functional
HALF = ["float16", "bfloat16"]

# name -> (tensorplug call, NumPy float64 reference, the inputs' range)
OPS = {
    "acos": (tp.acos, np.arccos, (-0.9, 0.9)),
    "asin": (tp.asin, np.arcsin, (-0.9, 0.9)),
    "cosh": (tp.cosh, np.cosh, (-2.0, 2.0)),
    "erfinv": (tp.erfinv, special.erfinv, (-0.9, 0.9)),
    "exp": (tp.exp, np.exp, (-2.0, 2.0)),
    "expm1": (tp.expm1, np.expm1, (-2.0, 2.0)),
    "log": (tp.log, np.log, (0.1, 10.0)),
    "log10": (tp.log10, np.log10, (0.1, 10.0)),
    "log2": (tp.log2, np.log2, (0.1, 10.0)),
    "log1p": (tp.log1p, np.log1p, (-0.9, 10.0)),
    "reciprocal": (tp.reciprocal, np.reciprocal, (0.5, 4.0)),
    "rsqrt": (tp.rsqrt, lambda a: 1 / np.sqrt(a), (0.1, 10.0)),
    "sinh": (tp.sinh, np.sinh, (-2.0, 2.0)),
    "tan": (tp.tan, np.tan, (-1.5, 1.5)),
    "pow_tensor": (lambda x: tp.pow(x, x), lambda a: a ** a, (0.5, 2.0)),
    "pow_number": (lambda x: tp.pow(x, 1.7), lambda a: a ** 1.7, (0.5, 2.0)),
    "pow_operator": (lambda x: x ** 2, lambda a: a ** 2, (-2.0, 2.0)),
    "rpow_operator": (lambda x: 2 ** x, lambda a: 2.0 ** a, (-2.0, 2.0)),
    "rtruediv_operator": (lambda x: 2 / x, lambda a: 2 / a, (0.5, 4.0)),
    "sum": (tp.sum, np.sum, (-2.0, 2.0)),
    "sum_dim": (lambda x: x.sum(1), lambda a: a.sum(1), (-2.0, 2.0)),
    "sum_keyword": (lambda x: x.sum(dim=0, keepdim=True), lambda a: a.sum(0, keepdims=True), (-2.0, 2.0)),
    "cumsum": (lambda x: tp.cumsum(x, 1), lambda a: np.cumsum(a, 1), (-2.0, 2.0)),
    "cumprod": (lambda x: x.cumprod(dim=0), lambda a: np.cumprod(a, 0), (0.5, 1.5)),
    "exp_method": (lambda x: x.exp(), np.exp, (-2.0, 2.0)),
    "dist": (lambda x: tp.dist(x, x.flip(0)), lambda a: np.sqrt(((a - a[::-1]) ** 2).sum()), (-2.0, 2.0)),
    "pdist": (F.pdist, lambda a: np.array([np.sqrt(((a[i] - a[j]) ** 2).sum()) for i in range(len(a))
                                           for j in range(i + 1, len(a))]), (-2.0, 2.0)),
    "rms_norm": (lambda x: F.rms_norm(x, (6,)), lambda a: a / np.sqrt((a * a).mean(-1, keepdims=True) + np.finfo(
        np.float32).eps), (-2.0, 2.0)),
}


def _opencl() -> str:
    from tensorplug.backends.opencl import OpenCLBackend

    ok, reason = OpenCLBackend().is_available()
    if not ok:
        pytest.skip(f"OpenCL backend unavailable: {reason}")
    return "opencl"


def _inputs(low: float, high: float, dtype_name: str) -> np.ndarray:
    """A (5, 6) array in [low, high], rounded to ``dtype_name``, as float64."""
    a = np.random.default_rng(3).uniform(low, high, (5, 6)).astype(np.float32).astype(np.float64)
    return round_to(a, dtype_name)


@pytest.mark.parametrize("dtype_name", HALF)
@pytest.mark.parametrize("name", list(OPS))
def test_half_input_runs_in_float32_on_opencl(name, dtype_name):
    """The result is float32, with float32's accuracy on the half-precision input."""
    device = _opencl()
    fn, reference, bounds = OPS[name]
    a = _inputs(*bounds, dtype_name)
    x = tp.tensor(a, dtype=getattr(tp, dtype_name), device=device)
    with tp.autocast(device, dtype=getattr(tp, dtype_name)):
        out = fn(x)
    assert out.dtype is tp.float32
    expected = reference(a)
    np.testing.assert_allclose(out.cpu().numpy(), expected, rtol=1e-5, atol=1e-5 * np.abs(expected).max())


@pytest.mark.parametrize("dtype_name", ["float32", "float64"])
@pytest.mark.parametrize("name", list(OPS))
def test_float32_and_float64_inputs_keep_their_dtype(name, dtype_name):
    device = _opencl()
    fn, _, bounds = OPS[name]
    x = tp.tensor(_inputs(*bounds, "float32"), dtype=getattr(tp, dtype_name), device=device)
    with tp.autocast(device, dtype=tp.float16):
        assert fn(x).dtype is getattr(tp, dtype_name)


@pytest.mark.parametrize("name", list(OPS))
def test_outside_autocast_the_half_dtype_stays(name):
    device = _opencl()
    fn, _, bounds = OPS[name]
    x = tp.tensor(_inputs(*bounds, "float16"), dtype=tp.float16, device=device)
    assert fn(x).dtype is tp.float16


@pytest.mark.parametrize("dtype_name", HALF)
@pytest.mark.parametrize("name", ["exp", "log", "pow_operator", "sum_dim", "cumsum", "rsqrt"])
def test_gradient_reaches_the_half_input_in_its_dtype(name, dtype_name):
    """The cast is recorded by autograd: the leaf's gradient is in its own dtype, and it is the
    float32 derivative rounded once."""
    device = _opencl()
    fn, _, bounds = OPS[name]
    a = _inputs(*bounds, dtype_name)
    x = tp.tensor(a, dtype=getattr(tp, dtype_name), device=device, requires_grad=True)
    with tp.autocast(device, dtype=getattr(tp, dtype_name)):
        out = fn(x)
    out.backward(tp.ones_like(out))
    assert x.grad.dtype is x.dtype
    derivatives = {"exp": np.exp, "log": lambda v: 1 / v, "pow_operator": lambda v: 2 * v, "sum_dim": np.ones_like,
                   "cumsum": lambda v: np.arange(6, 0, -1.0) * np.ones_like(v), "rsqrt": lambda v: -0.5 * v ** -1.5}
    expected = round_to(derivatives[name](a), dtype_name)
    eps = 2.0 ** -8 if dtype_name == "bfloat16" else 2.0 ** -11
    np.testing.assert_allclose(x.grad.float().cpu().numpy(), expected, rtol=eps, atol=eps * np.abs(expected).max())


def test_out_dtype_and_in_place_calls_are_not_autocast():
    """As in PyTorch: a call with out= or dtype= and the in-place forms run in the dtypes given."""
    device = _opencl()
    x = tp.tensor(_inputs(0.5, 2.0, "float16"), dtype=tp.float16, device=device)
    out = tp.empty(5, 6, dtype=tp.float16, device=device)
    with tp.autocast(device, dtype=tp.float16):
        assert tp.exp(x, out=out) is out and out.dtype is tp.float16
        assert x.sum(dtype=tp.float16).dtype is tp.float16
        assert tp.cumsum(x, 0, dtype=tp.float16).dtype is tp.float16
        y = x.clone()
        assert y.exp_().dtype is tp.float16
        y **= 2
        assert y.dtype is tp.float16
    np.testing.assert_allclose(out.float().cpu().numpy(), round_to(np.exp(x.float().cpu().numpy().astype(np.float64)),
                                                                   "float16"), rtol=2.0 ** -11)


def test_a_region_of_another_device_type_leaves_opencl_alone():
    device = _opencl()
    x = tp.ones(3, dtype=tp.float16, device=device)
    with tp.autocast("cpu", dtype=tp.float16):
        assert x.exp().dtype is x.sum().dtype is tp.float16


def test_ops_pytorch_runs_natively_stay_in_the_half_dtype():
    """acosh, erfc, digamma, avg_pool2d, ... are written with exp/log/sum here, but PyTorch's list
    leaves them in their inputs' dtype."""
    device = _opencl()
    x = tp.full((1, 2, 4, 4), 1.5, dtype=tp.float16, device=device)
    with tp.autocast(device, dtype=tp.float16):
        for out in (tp.acosh(x), tp.asinh(x), tp.atanh(x / 2), tp.erfc(x), tp.digamma(x), tp.special.ndtr(x),
                    F.avg_pool2d(x, 2), F.adaptive_avg_pool2d(x, 3), x[0, 0].trace()):
            assert out.dtype is tp.float16


# --- the CPU: PyTorch's CPU list does not name these ops -------------------------------------------------
def _cpu_cases(lib):
    x = lib.full((3, 4), 0.5, dtype=lib.bfloat16)
    return {
        "exp": lambda: lib.exp(x), "log": lambda: x.log(), "pow": lambda: x ** 2, "rpow": lambda: 2 ** x,
        "rtruediv": lambda: 2 / x, "sum": lambda: x.sum(), "sum_dim": lambda: x.sum(1), "cumsum": lambda: x.cumsum(0),
        "cumprod": lambda: lib.cumprod(x, 1), "tan": lambda: lib.tan(x), "erfinv": lambda: lib.erfinv(x),
        "dist": lambda: lib.dist(x, x),
    }


@pytest.mark.parametrize("case", list(_cpu_cases(tp)))
def test_cpu_keeps_the_input_dtype_as_torch(case):
    with tp.autocast("cpu", dtype=tp.bfloat16):
        got = _cpu_cases(tp)[case]().dtype
    assert got is tp.bfloat16
    try:
        import torch
    except ImportError:
        return
    with torch.autocast("cpu", dtype=torch.bfloat16):
        expected = _cpu_cases(torch)[case]().dtype
    assert str(expected) == "torch.bfloat16"


def test_fronted_functions_keep_their_signatures_and_names():
    import inspect

    assert tp.exp.__name__ == "exp" and str(inspect.signature(tp.exp)) == "(input, *, out=None)"
    assert tp.Tensor.sum is tp.sum and "dtype" in inspect.signature(tp.sum).parameters
    assert math.isclose(tp.tensor([2.0]).pow(3).item(), 8.0)
