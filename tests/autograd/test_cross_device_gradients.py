"""Gradients through copies between devices and through 0-d CPU tensors joining another device's
computation (``x.to(device)``, ``cpu_scalar * device_tensor``), as PyTorch records them.

References are hand-computed derivatives (NumPy float64), so the file runs without PyTorch."""
import numpy as np
import pytest

import tensorplug as tp


@pytest.fixture
def other_device(device):
    if device == "cpu":
        pytest.skip("needs a device other than the CPU")
    return device


def test_to_another_device_records_the_copy(other_device):
    """``x.to(device)`` of a tensor that requires grad is differentiable; the gradient arrives on
    x's device and dtype."""
    values = np.array([0.5, -1.0, 2.0])
    x = tp.tensor(values, dtype=tp.float32, requires_grad=True)
    moved = x.to(other_device)
    assert moved.requires_grad and moved.grad_fn.name() == "ToCopyBackward0"
    weights = tp.tensor([1.0, 2.0, 3.0], device=other_device)
    (moved * moved * weights).sum().backward()
    assert x.grad.device.type == "cpu" and x.grad.dtype == tp.float32
    np.testing.assert_allclose(x.grad.numpy(), 2 * values * [1.0, 2.0, 3.0], rtol=1e-6)


def test_round_trip_and_dtype_change(other_device):
    """cpu -> device (float64) -> cpu: both copies and the cast pass the gradient back."""
    x = tp.tensor([1.0, 2.0], requires_grad=True)
    y = x.to(other_device, tp.float64).cpu()
    (y * tp.tensor([3.0, 4.0], dtype=tp.float64)).sum().backward()
    assert x.grad.dtype == tp.float32
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 4.0])


def test_no_grad_copy_and_detached_source(other_device):
    """Under no_grad, or from a tensor that does not require grad, the copy records nothing."""
    x = tp.ones(2, requires_grad=True)
    with tp.no_grad():
        assert not x.to(other_device).requires_grad
    assert not tp.ones(2).to(other_device).requires_grad


def test_second_order_through_the_copy(other_device):
    """create_graph=True: the backward copy is itself differentiable."""
    x = tp.tensor([1.5, -2.0], requires_grad=True)
    y = (x.to(other_device) ** 3).sum()
    (grad,) = tp.autograd.grad(y, x, create_graph=True)
    np.testing.assert_allclose(grad.detach().numpy(), 3 * np.array([1.5, -2.0]) ** 2, rtol=1e-6)
    grad.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 6 * np.array([1.5, -2.0]), rtol=1e-6)


@pytest.mark.parametrize("cpu_first", [True, False])
def test_zero_dim_cpu_tensor_in_arithmetic_gets_its_gradient(other_device, cpu_first):
    """A 0-d CPU tensor that requires grad, combined with a tensor on another device, receives the
    summed gradient (a learned scale, a loss term computed on the CPU)."""
    scale = tp.tensor(2.0, requires_grad=True)
    values = tp.tensor([1.0, 2.0, 3.0], device=other_device, requires_grad=True)
    product = scale * values if cpu_first else values * scale
    (product + scale).sum().backward()
    assert scale.grad.device.type == "cpu"
    assert scale.grad.item() == pytest.approx(6.0 + 3.0)
    np.testing.assert_allclose(values.grad.cpu().numpy(), [2.0, 2.0, 2.0])


def test_zero_dim_cpu_tensor_promotes_as_a_tensor(other_device):
    """int tensor + 0-d float64 CPU tensor is float64 (a 0-d tensor's dtype, not a Python float's)."""
    result = tp.tensor([1, 2], device=other_device) + tp.tensor(0.5, dtype=tp.float64)
    assert result.dtype == tp.float64 and result.device.type == other_device
    np.testing.assert_array_equal(result.cpu().numpy(), [1.5, 2.5])
    same_category = tp.tensor([1.0, 2.0], device=other_device) * tp.tensor(3.0, dtype=tp.float64)
    assert same_category.dtype == tp.float32


def test_index_put_of_a_zero_dim_cpu_value_that_requires_grad(other_device):
    """``x[i] = cpu_scalar`` (requiring grad) on another device passes the gradient back."""
    value = tp.tensor(5.0, requires_grad=True)
    x = tp.zeros(3, device=other_device)
    x[1] = value * 2
    (x * tp.tensor([1.0, 7.0, 1.0], device=other_device)).sum().backward()
    assert value.grad.item() == pytest.approx(14.0)


def test_clamp_tensor_bounds_get_gradients_of_their_own_shape(device):
    """clamp with broadcast tensor bounds: each gradient is summed back to its argument's shape
    (hand-computed: an element clamped from below sends its gradient to min, above to max)."""
    x = tp.tensor([[-1.0, 0.5, 2.0]], device=device, requires_grad=True)
    low = tp.tensor([[0.0], [1.0]], device=device, requires_grad=True)
    high = tp.tensor(1.5, device=device, requires_grad=True)
    weights = tp.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], device=device)
    (tp.clamp(x, low, high) * weights).sum().backward()
    np.testing.assert_array_equal(x.grad.cpu().numpy(), [[0.0, 2.0, 0.0]])
    np.testing.assert_array_equal(low.grad.cpu().numpy(), [[1.0], [9.0]])
    assert high.grad.shape == () and high.grad.item() == 9.0


def test_clamp_with_a_zero_dim_cpu_bound_on_another_device(other_device):
    """A 0-d CPU bound of a tensor on another device: its gradient is 0-d and on the CPU, through
    backward() and through autograd.grad."""
    x = tp.tensor([-1.0, 0.5, 2.0], device=other_device, requires_grad=True)
    low = tp.tensor(0.0, requires_grad=True)
    (grad,) = tp.autograd.grad(tp.clamp(x, min=low).sum(), low)
    assert grad.device.type == "cpu" and grad.shape == () and grad.item() == 1.0
    tp.clamp(x, min=low).sum().backward()
    assert low.grad.device.type == "cpu" and low.grad.item() == 1.0


@pytest.mark.parametrize("op", ["where_other", "where_condition", "lerp_weight", "addcmul", "masked_fill",
                                "index_fill", "heaviside", "xlogy"])
def test_zero_dim_cpu_tensor_joins_other_ops(other_device, op):
    """where, lerp, addcmul, masked_fill, index_fill_, heaviside, xlogy accept a 0-d CPU tensor
    beside tensors on another device (NumPy float64 reference)."""
    values = np.array([-1.0, 0.0, 2.0])
    x = tp.tensor(values, dtype=tp.float32, device=other_device)
    half = tp.tensor(0.5)
    calls = {
        "where_other": (lambda: tp.where(x > 0, x, half), np.where(values > 0, values, 0.5)),
        "where_condition": (lambda: tp.where(tp.tensor(False), x, x * 2), values * 2),
        "lerp_weight": (lambda: tp.lerp(x, x * 3, half), values * 2),
        "addcmul": (lambda: tp.addcmul(x, half, x), values + 0.5 * values),
        "masked_fill": (lambda: x.masked_fill(x > 0, half), np.where(values > 0, 0.5, values)),
        "index_fill": (lambda: x.clone().index_fill_(0, tp.tensor([1], device=other_device), half),
                       np.array([-1.0, 0.5, 2.0])),
        "heaviside": (lambda: tp.heaviside(x, half), np.array([0.0, 0.5, 1.0])),
        "xlogy": (lambda: tp.xlogy(x, half), values * np.log(0.5)),
    }
    compute, expected = calls[op]
    result = compute()
    assert result.device.type == other_device
    np.testing.assert_allclose(result.cpu().numpy(), expected, rtol=1e-6)


def test_tensors_with_dimensions_on_two_devices_are_still_refused(other_device):
    """Only 0-d CPU tensors move: a 1-element CPU vector is refused, naming both devices."""
    x = tp.ones(3, device=other_device)
    with pytest.raises(RuntimeError, match="same device.*where"):
        tp.where(x > 0, x, tp.ones(1))


def test_fill_with_a_value_that_requires_grad(device):
    """``t.fill_(v)`` with a 0-d ``v`` that requires grad passes the filled elements' summed
    gradient to ``v`` (PyTorch's FillBackward); without grad mode it only writes."""
    value = tp.tensor(2.0, requires_grad=True)
    filled = tp.zeros(3, device=device).fill_(value)
    assert filled.requires_grad
    (filled * tp.tensor([1.0, 5.0, 1.0], device=device)).sum().backward()
    assert value.grad.device.type == "cpu" and value.grad.item() == 7.0
    with tp.no_grad():
        assert tp.zeros(2, device=device).fill_(value).cpu().tolist() == [2.0, 2.0]
