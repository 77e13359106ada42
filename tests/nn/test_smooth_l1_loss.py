"""smooth_l1_loss and huber_loss: values and gradients against NumPy in float64 and against
PyTorch where installed, for every reduction, beta 0 / small / large, both float dtypes, empty,
non-contiguous and broadcast inputs, double backward, and the errors raised before any kernel."""
import numpy as np
import pytest

import tensorplug as tp
import tensorplug.nn.functional as F
from tensorplug.dispatcher import get_operator

REDUCTIONS = ["none", "mean", "sum"]
BETAS = [0.0, 1e-3, 0.5, 1.0, 4.0]
TOL = {"float32": dict(rtol=2e-6, atol=2e-6), "float64": dict(rtol=1e-12, atol=1e-13)}


def _reduced(values, reduction):
    if reduction == "none":
        return values
    if reduction == "sum":
        return values.sum()
    return values.sum() / values.size if values.size else np.float64("nan")


def _reference(a, b, reduction, beta, grad):
    """float64 loss and the gradient of input for an output gradient ``grad``."""
    d = a.astype(np.float64) - b.astype(np.float64)
    z = np.abs(d)
    if beta == 0:
        loss, slope = z, np.sign(d)
    else:
        loss = np.where(z < beta, 0.5 * z * z / beta, z - 0.5 * beta)
        slope = np.clip(d / beta, -1.0, 1.0)
    scale = grad if reduction == "none" else grad / (d.size if reduction == "mean" else 1)
    return _reduced(loss, reduction), slope * scale


def _torch():
    try:
        import torch
    except ImportError:
        pytest.skip("PyTorch is not installed: the NumPy reference tests cover the values")
    return torch


def _strided(x: np.ndarray) -> tp.Tensor:
    """x as every other element of a wider tensor (not contiguous)."""
    wide = np.zeros(x.shape[:-1] + (2 * x.shape[-1],), x.dtype)
    wide[..., ::2] = x
    return tp.tensor(wide)[..., ::2]


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("beta", BETAS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_values_and_gradients_match_numpy(reduction, beta, dtype):
    """Loss and both gradients in float64 NumPy, with elements on both sides of beta and ties."""
    rng = np.random.default_rng(1)
    a = (rng.standard_normal((6, 7)) * 2).astype(dtype)
    b = rng.standard_normal((6, 7)).astype(dtype)
    a[0, :3] = b[0, :3]  # d == 0: L1's derivative is 0 there
    x, y = tp.tensor(a, requires_grad=True), tp.tensor(b, requires_grad=True)
    loss = F.smooth_l1_loss(x, y, reduction=reduction, beta=beta)
    grad = rng.standard_normal(loss.shape).astype(dtype)
    loss.backward(tp.tensor(grad))
    expected, grad_input = _reference(a, b, reduction, beta, grad.astype(np.float64))
    np.testing.assert_allclose(loss.detach().numpy(), expected, **TOL[dtype])
    np.testing.assert_allclose(x.grad.numpy(), grad_input, **TOL[dtype])
    np.testing.assert_allclose(y.grad.numpy(), -grad_input, **TOL[dtype])


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("beta", [0.0, 0.3, 1.0])
def test_noncontiguous_inputs(reduction, beta):
    """Strided and transposed operands give the contiguous operands' loss and gradients."""
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((5, 4)), rng.standard_normal((5, 4))
    x = _strided(a).requires_grad_()
    y = tp.tensor(np.ascontiguousarray(b.T)).t()
    loss = F.smooth_l1_loss(x, y, reduction=reduction, beta=beta)
    grad = np.ones(loss.shape)
    loss.backward(tp.tensor(grad))
    expected, grad_input = _reference(a, b, reduction, beta, grad)
    np.testing.assert_allclose(loss.detach().numpy(), expected, **TOL["float64"])
    np.testing.assert_allclose(x.grad.numpy(), grad_input, **TOL["float64"])


def test_broadcast_grad_of_unreduced_loss():
    """reduction='none' followed by a sum: the gradient reaching the loss kernel is expanded."""
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((3, 5)), rng.standard_normal((3, 5))
    x = tp.tensor(a, requires_grad=True)
    F.smooth_l1_loss(x, tp.tensor(b), reduction="none", beta=0.7).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), _reference(a, b, "none", 0.7, np.ones((3, 5)))[1], **TOL["float64"])


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_empty_input(reduction):
    """No elements: the mean is NaN, the sum 0, 'none' an empty tensor; gradients are empty."""
    x = tp.zeros(0, 3, requires_grad=True)
    loss = F.smooth_l1_loss(x, tp.zeros(0, 3), reduction=reduction)
    expected = {"none": np.zeros((0, 3)), "mean": np.float64("nan"), "sum": 0.0}[reduction]
    np.testing.assert_array_equal(loss.detach().numpy(), expected)
    (loss.sum() if reduction == "none" else loss).backward()
    assert x.grad.shape == (0, 3)


def test_large_input_matches_numpy_and_threads():
    """Past the parallel threshold (several fixed chunks) the sum is the same on 1 and 2 threads."""
    rng = np.random.default_rng(4)
    a, b = rng.standard_normal(100_003).astype(np.float32), rng.standard_normal(100_003).astype(np.float32)
    x, y = tp.tensor(a), tp.tensor(b)
    threads = tp.get_num_threads()
    try:
        tp.set_num_threads(1)
        one = F.smooth_l1_loss(x, y, reduction="sum").item()
        tp.set_num_threads(2)
        two = F.smooth_l1_loss(x, y, reduction="sum").item()
    finally:
        tp.set_num_threads(threads)
    assert one == two
    np.testing.assert_allclose(one, _reference(a, b, "sum", 1.0, 1.0)[0], rtol=1e-6)


@pytest.mark.parametrize("dtype", [tp.float32, tp.float64])
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_fused_kernel_matches_decomposition(dtype, reduction):
    """The CPU's fused loss and gradient agree with the ops' decompositions (the contract)."""
    rng = np.random.default_rng(5)
    a = tp.tensor(rng.standard_normal((4, 6)), dtype=dtype)
    b = tp.tensor(rng.standard_normal((4, 6)), dtype=dtype)
    tol = TOL[dtype.name]
    for beta in (0.0, 0.25, 1.0):
        fused = F._losses._smooth_l1_loss(a, b, reduction, beta)
        decomposed = get_operator("smooth_l1_loss").decomposition(a, b, reduction, beta)
        np.testing.assert_allclose(fused.numpy(), decomposed.numpy(), **tol)
        grad = tp.ones(fused.shape, dtype=dtype) * 0.5
        fused_grad = F._losses._smooth_l1_grad(grad, a, b, reduction, beta)
        decomposed_grad = get_operator("smooth_l1_loss_backward").decomposition(grad, a, b, reduction, beta)
        np.testing.assert_allclose(fused_grad.numpy(), decomposed_grad.numpy(), **tol)


@pytest.mark.parametrize("beta", [0.0, 0.5, 2.0])
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_double_backward(beta, reduction):
    """create_graph differentiates the gradient op (its own derivative) like finite differences."""
    rng = np.random.default_rng(6)
    a = tp.tensor(rng.standard_normal(5) * 2, requires_grad=True)
    b = tp.tensor(rng.standard_normal(5), requires_grad=True)
    assert tp.autograd.gradgradcheck(lambda p, q: F.smooth_l1_loss(p, q, reduction=reduction, beta=beta), (a, b))


def test_half_precision_uses_the_decomposition():
    """float16 and bfloat16 (no fused kernel) give the float32 values within their precision."""
    a, b = tp.randn(3, 4), tp.randn(3, 4)
    expected = F.smooth_l1_loss(a, b, beta=0.5).item()
    for dtype in (tp.float16, tp.bfloat16):
        got = F.smooth_l1_loss(a.to(dtype), b.to(dtype), beta=0.5)
        assert got.dtype is dtype
        np.testing.assert_allclose(got.float().item(), expected, rtol=2e-2, atol=1e-2)


def test_mixed_dtypes_promote():
    """float32 input and float64 target compute in float64, as PyTorch."""
    loss = F.smooth_l1_loss(tp.ones(3), tp.zeros(3, dtype=tp.float64) + 0.25)
    assert loss.dtype is tp.float64
    assert loss.item() == pytest.approx(0.5 * 0.75 ** 2)


def test_errors_before_any_kernel():
    """Negative beta, an unknown reduction, a non-tensor and shapes that do not broadcast."""
    x = tp.ones(2, 3)
    with pytest.raises(RuntimeError, match="smooth_l1_loss does not support negative values for beta"):
        F.smooth_l1_loss(x, x, beta=-0.1)
    with pytest.raises(ValueError, match="average is not a valid value for reduction"):
        F.smooth_l1_loss(x, x, reduction="average")
    with pytest.raises(TypeError, match="smooth_l1_loss"):
        F.smooth_l1_loss([1.0, 2.0], x)
    with pytest.warns(UserWarning, match="different to the input size"):
        with pytest.raises(RuntimeError, match="must match|broadcast"):
            F.smooth_l1_loss(x, tp.ones(4, 5))
    with pytest.raises(RuntimeError, match="huber_loss does not support non-positive values for delta"):
        F.huber_loss(x, x, delta=0.0)


def test_cpu_entry_points_refuse_bad_arguments():
    """The C++ entries check their operands (a wrong shape or dtype raises, never crashes)."""
    from tensorplug.backends.api import strided
    from tensorplug.backends.cpu._load import load_kernels

    K = load_kernels()
    code = dict(K.DTYPES)["float32"]
    a, small = tp.ones(4), tp.ones(2)
    out = tp.empty(())
    with pytest.raises(ValueError):
        K.smooth_l1_loss(code, (4,), 1, 1.0, strided(out), strided(a), strided(small))
    with pytest.raises(ValueError, match="reduction"):
        K.smooth_l1_loss(code, (4,), 3, 1.0, strided(out), strided(a), strided(a))
    with pytest.raises(ValueError, match="beta"):
        K.smooth_l1_loss(code, (4,), 1, -1.0, strided(out), strided(a), strided(a))
    with pytest.raises(ValueError, match="float32 and float64"):
        K.smooth_l1_loss(dict(K.DTYPES)["int64"], (4,), 1, 1.0, strided(out), strided(a), strided(a))
    with pytest.raises(ValueError):
        K.smooth_l1_loss_backward(code, (4,), 0, 1.0, strided(tp.empty(4)), strided(out), strided(a), strided(a))


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("beta", [0.0, 0.5, 1.0, 2.0])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_matches_pytorch(reduction, beta, dtype):
    """Values and both gradients as PyTorch 2's smooth_l1_loss (and huber_loss with delta = beta)."""
    torch = _torch()
    rng = np.random.default_rng(7)
    a = (rng.standard_normal((4, 5)) * 2).astype(dtype)
    b = rng.standard_normal((4, 5)).astype(dtype)
    a[1, 1] = b[1, 1]
    for name in ("smooth_l1_loss", "huber_loss"):
        if name == "huber_loss" and beta == 0:
            continue
        kwargs = {"beta": beta} if name == "smooth_l1_loss" else {"delta": beta}
        x, y = tp.tensor(a, requires_grad=True), tp.tensor(b, requires_grad=True)
        tx, ty = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
        loss = getattr(F, name)(x, y, reduction=reduction, **kwargs)
        expected = getattr(torch.nn.functional, name)(tx, ty, reduction=reduction, **kwargs)
        grad = rng.standard_normal(expected.shape).astype(dtype)
        loss.backward(tp.tensor(grad))
        expected.backward(torch.tensor(grad))
        np.testing.assert_allclose(loss.detach().numpy(), expected.detach().numpy(), **TOL[dtype])
        np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), **TOL[dtype])
        np.testing.assert_allclose(y.grad.numpy(), ty.grad.numpy(), **TOL[dtype])


def test_broadcasting_warns_as_pytorch():
    """A target of another shape warns (PyTorch's message) and broadcasts, with the same values."""
    torch = _torch()
    a, b = np.random.default_rng(8).standard_normal((3, 4)), np.random.default_rng(9).standard_normal(4)
    with pytest.warns(UserWarning, match="different to the input size"):
        got = F.smooth_l1_loss(tp.tensor(a), tp.tensor(b), beta=0.5)
    with pytest.warns(UserWarning, match="different to the input size"):
        expected = torch.nn.functional.smooth_l1_loss(torch.tensor(a), torch.tensor(b), beta=0.5)
    np.testing.assert_allclose(got.item(), expected.item(), rtol=1e-12)


def _opencl():
    from tensorplug.backends.opencl import OpenCLBackend

    available, reason = OpenCLBackend().is_available()
    if not available:
        pytest.skip(f"OpenCL backend unavailable: {reason}")
    return "opencl"


# one work-item's sum, one work-group's, the per-element kernel and a reduction
@pytest.mark.parametrize("size", [37, 5_000, 70_001])
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_opencl_fused_kernels_match_numpy(size, reduction, dtype):
    """OpenCL's fused loss and gradient (fused.py) against float64 NumPy, with ties (d == 0), NaN,
    both sides of beta, a non-contiguous input and a per-element incoming gradient for "none"."""
    device = _opencl()
    rng = np.random.default_rng(7)
    a = (rng.standard_normal(size) * 2).astype(dtype)
    b = rng.standard_normal(size).astype(dtype)
    a[:3] = b[:3]
    a[5] = np.nan
    for beta in (0.0, 0.25, 1.0):
        x = tp.tensor(np.stack([a, a]), device=device)[0].requires_grad_()  # a view at offset 0
        wide = tp.tensor(np.stack([b, b], 1), device=device)[:, 1]  # stride 2
        loss = F.smooth_l1_loss(x, wide, reduction=reduction, beta=beta)
        grad = rng.standard_normal(loss.shape).astype(dtype)
        loss.backward(tp.tensor(grad, device=device))
        expected, grad_input = _reference(a, b, reduction, beta, grad.astype(np.float64))
        if beta == 0:  # L1's slope sign(NaN) is 0 in PyTorch (NumPy's is NaN)
            grad_input = np.where(np.isnan(a - b), 0.0, grad_input)
        tol = dict(rtol=2e-5, atol=2e-5) if dtype == "float32" else TOL[dtype]
        np.testing.assert_allclose(loss.detach().cpu().numpy(), expected, **tol)
        np.testing.assert_allclose(x.grad.cpu().numpy(), grad_input, **tol)


@pytest.mark.parametrize("dtype", [tp.float16, tp.bfloat16])
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_opencl_fused_kernels_half_precision(dtype, reduction):
    """16-bit inputs compute in float32 and round once: the float32 values within their precision."""
    device = _opencl()
    rng = np.random.default_rng(8)
    a = tp.tensor(rng.standard_normal((5, 9)) * 2, dtype=dtype)
    b = tp.tensor(rng.standard_normal((5, 9)), dtype=dtype)
    x = a.to(device).requires_grad_()
    loss = F.smooth_l1_loss(x, b.to(device), reduction=reduction, beta=0.5)
    (loss.sum() if reduction == "none" else loss).backward()
    expected, grad_input = _reference(a.float().numpy(), b.float().numpy(), reduction, 0.5, 1.0)
    assert loss.dtype is dtype and x.grad.dtype is dtype
    np.testing.assert_allclose(loss.detach().cpu().float().numpy(), expected, rtol=1e-2, atol=1e-2)
    np.testing.assert_allclose(x.grad.cpu().float().numpy(), grad_input, rtol=1e-2, atol=1e-2)
