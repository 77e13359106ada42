"""What tensorplug/conformance/cross_device.py found: ops that refused or crashed on a 0-d CPU tensor beside
another device's tensors, where PyTorch computes (nextafter, isclose, the pointwise losses,
composite ops with a fused backend kernel), and the mixes that must still be refused clearly.

References are NumPy float64 or hand-computed derivatives, so the file runs without PyTorch."""
import numpy as np
import pytest

import tensorplug as tp

F = tp.nn.functional


@pytest.fixture
def other_device(device):
    if device == "cpu":
        pytest.skip("needs a device other than the CPU")
    return device


@pytest.mark.parametrize("cpu_first", [True, False])
def test_nextafter_with_a_zero_dim_cpu_operand(other_device, cpu_first):
    values = np.array([-1.0, 0.0, 2.5], dtype=np.float32)
    x = tp.tensor(values, device=other_device)
    toward = tp.tensor(1.0)
    result = tp.nextafter(toward, x) if cpu_first else tp.nextafter(x, toward)
    expected = np.nextafter(np.float32(1.0), values) if cpu_first else np.nextafter(values, np.float32(1.0))
    assert result.device.type == other_device and result.dtype == tp.float32
    np.testing.assert_array_equal(result.cpu().numpy(), expected)
    in_place = tp.tensor(values, device=other_device).nextafter_(toward)
    np.testing.assert_array_equal(in_place.cpu().numpy(), np.nextafter(values, np.float32(1.0)))


def test_isclose_and_allclose_with_a_zero_dim_cpu_operand(other_device):
    values = np.array([1.0, 1.0 + 1e-7, 1.1], dtype=np.float32)
    x = tp.tensor(values, device=other_device)
    one = tp.tensor(1.0)
    result = tp.isclose(x, one)
    assert result.device.type == other_device
    np.testing.assert_array_equal(result.cpu().numpy(), np.isclose(values, 1.0, rtol=1e-5, atol=1e-8))
    assert tp.allclose(x[:2], one) and not tp.allclose(one, x)


def test_equal_still_needs_one_device(other_device):
    """torch.equal is not elementwise: a 0-d CPU tensor beside another device is refused."""
    with pytest.raises(RuntimeError, match="same device.*equal"):
        tp.equal(tp.tensor(1.0, device=other_device), tp.tensor(1.0))


@pytest.mark.parametrize("loss", ["smooth_l1_loss", "huber_loss", "mse_loss", "l1_loss"])
def test_pointwise_loss_of_zero_dim_tensors_on_two_devices(other_device, loss):
    """Both 0-d, the input on the device and the target on the CPU (a composite op whose fused
    backend kernel read only its own device's storages crashed here): value and both gradients,
    hand-computed for d = input - target = -0.3 (every loss is in its quadratic or L1 part)."""
    input = tp.tensor(0.2, device=other_device, requires_grad=True)
    target = tp.tensor(0.5, requires_grad=True)
    result = getattr(F, loss)(input, target)
    d = 0.2 - 0.5
    value, slope = {"smooth_l1_loss": (0.5 * d * d, d), "huber_loss": (0.5 * d * d, d),
                    "mse_loss": (d * d, 2 * d), "l1_loss": (abs(d), np.sign(d))}[loss]
    assert result.device.type == other_device
    assert result.item() == pytest.approx(value, rel=1e-5)
    result.backward()
    assert input.grad.device.type == other_device and input.grad.shape == ()
    assert target.grad.device.type == "cpu" and target.grad.shape == ()
    assert input.grad.item() == pytest.approx(slope, rel=1e-5)
    assert target.grad.item() == pytest.approx(-slope, rel=1e-5)


def test_pointwise_loss_broadcasts_a_zero_dim_cpu_target(other_device):
    """A vector on the device against a 0-d CPU target: PyTorch warns about the sizes and
    broadcasts; the target's gradient is the summed one, on the CPU."""
    values = np.array([0.5, 1.0, 3.0])
    input = tp.tensor(values, dtype=tp.float32, device=other_device, requires_grad=True)
    target = tp.tensor(1.5, requires_grad=True)
    with pytest.warns(UserWarning, match="target size"):
        result = F.mse_loss(input, target)
    assert result.device.type == other_device
    assert result.item() == pytest.approx(np.mean((values - 1.5) ** 2), rel=1e-6)
    result.backward()
    np.testing.assert_allclose(input.grad.cpu().numpy(), 2 * (values - 1.5) / 3, rtol=1e-6)
    assert target.grad.device.type == "cpu"
    assert target.grad.item() == pytest.approx(-2 * np.mean(values - 1.5), abs=1e-6)


def test_class_losses_refuse_a_cpu_target_clearly(other_device):
    """cross_entropy and nll_loss with the target on the CPU: a same-device error, not a crash
    inside one backend's kernel (the fused kernel got the other device's storage)."""
    logits = tp.tensor([[1.0, 2.0, 3.0]], device=other_device)
    for loss in (F.cross_entropy, F.nll_loss):
        with pytest.raises(RuntimeError, match="same device"):
            loss(logits, tp.tensor([1]))
