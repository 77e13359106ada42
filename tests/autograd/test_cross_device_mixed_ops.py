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


@pytest.mark.parametrize("op, value, weight_grad", [
    # x = w * 1 then x.op_(s), s = 2, w = [1, 2, 3], loss = sum(x * [1, 10, 100]); by hand:
    ("add_", [3.0, 4.0, 5.0], 111.0),  # d/ds = sum(c)
    ("mul_", [2.0, 4.0, 6.0], 321.0),  # sum(c * w)
    ("sub_", [-1.0, 0.0, 1.0], -111.0),
    ("div_", [0.5, 1.0, 1.5], -80.25),  # -sum(c * w) / s**2
])
def test_in_place_ops_on_a_device_tensor_with_a_zero_dim_cpu_argument(other_device, op, value, weight_grad):
    scale = tp.tensor(2.0, requires_grad=True)
    w = tp.tensor([1.0, 2.0, 3.0], device=other_device, requires_grad=True)
    x = w * 1
    assert getattr(x, op)(scale) is x and x.device.type == other_device
    np.testing.assert_allclose(x.detach().cpu().numpy(), value)
    (x * tp.tensor([1.0, 10.0, 100.0], device=other_device)).sum().backward()
    assert scale.grad.device.type == "cpu" and scale.grad.shape == ()
    assert scale.grad.item() == pytest.approx(weight_grad)
    assert w.grad.device.type == other_device


def test_clamp_in_place_with_a_zero_dim_cpu_bound(other_device):
    """x.clamp_(min=s): the clamped element's gradient goes to s (at equality it stays with x)."""
    low = tp.tensor(2.0, requires_grad=True)
    w = tp.tensor([1.0, 2.0, 3.0], device=other_device, requires_grad=True)
    x = (w * 1).clamp_(min=low)
    np.testing.assert_array_equal(x.detach().cpu().numpy(), [2.0, 2.0, 3.0])
    (x * tp.tensor([1.0, 10.0, 100.0], device=other_device)).sum().backward()
    assert low.grad.device.type == "cpu" and low.grad.item() == 1.0
    np.testing.assert_array_equal(w.grad.cpu().numpy(), [0.0, 10.0, 100.0])


def test_integer_device_tensor_in_place_with_a_float64_cpu_scalar_is_refused(other_device):
    """The 0-d float64 tensor makes the result float64, which an int64 tensor cannot hold."""
    with pytest.raises(RuntimeError, match="can't be cast"):
        tp.tensor([1, 2], device=other_device).add_(tp.tensor(0.5, dtype=tp.float64))


@pytest.mark.parametrize("source_on_cpu", [True, False])
def test_copy_between_devices_passes_the_gradient_back(other_device, source_on_cpu):
    source_device, target_device = ("cpu", other_device) if source_on_cpu else (other_device, "cpu")
    source = tp.tensor([1.0, 2.0, 3.0], device=source_device, requires_grad=True)
    target = tp.zeros(3, device=target_device) * 1
    target.copy_(source)
    (target * tp.tensor([1.0, 10.0, 100.0], device=target_device)).sum().backward()
    assert source.grad.device.type == source_device
    np.testing.assert_array_equal(source.grad.cpu().numpy(), [1.0, 10.0, 100.0])


def test_joining_tensors_of_two_devices_is_refused(other_device):
    """cat and stack are not elementwise: even 0-d or one-element CPU tensors are refused."""
    for join, parts in ((tp.cat, [tp.ones(2, device=other_device), tp.ones(1)]),
                        (tp.stack, [tp.tensor(1.0, device=other_device), tp.tensor(2.0)])):
        with pytest.raises(RuntimeError, match="same device"):
            join(parts)


def test_indexing_a_device_tensor_with_cpu_indices_and_masks(other_device):
    values = np.arange(6.0).reshape(2, 3)
    x = tp.tensor(values, device=other_device, requires_grad=True)
    rows, cols = np.array([1, 1]), np.array([[True, False, True], [False, True, False]])
    picked = x[tp.tensor(rows)]
    masked = x[tp.tensor(cols)]
    assert picked.device.type == other_device and masked.device.type == other_device
    np.testing.assert_array_equal(picked.detach().cpu().numpy(), values[rows])
    np.testing.assert_array_equal(masked.detach().cpu().numpy(), values[cols])
    (picked.sum() + 2 * masked.sum()).backward()
    expected = np.zeros((2, 3))
    np.add.at(expected, rows, 1.0)
    expected += 2 * cols
    assert x.grad.device.type == other_device
    np.testing.assert_array_equal(x.grad.cpu().numpy(), expected)


@pytest.mark.parametrize("index", ["cpu rows", "cpu mask", "int", "slice"])
def test_setitem_with_cpu_index_and_cpu_value_that_requires_grad(other_device, index):
    """y[index] = 3 * v (v on the CPU, 0-d, or a row for a slice): the value's gradient is the
    summed weights of the written elements, times 3; the rest of y passes its weights to w."""
    mask = np.array([[True, False, True], [False, True, False]])
    written = {"cpu rows": np.array([[False] * 3, [True] * 3]), "cpu mask": mask,
               "int": np.array([[True] * 3, [False] * 3]), "slice": np.array([[True] * 3, [False] * 3])}[index]
    key = {"cpu rows": tp.tensor([1]), "cpu mask": tp.tensor(mask), "int": 0, "slice": slice(0, 1)}[index]
    value = tp.ones((1, 3) if index == "slice" else (), requires_grad=True)
    w = tp.zeros(2, 3, device=other_device, requires_grad=True)
    y = w * 1
    y[key] = value * 3
    weights = np.arange(1.0, 7.0).reshape(2, 3)
    np.testing.assert_array_equal(y.detach().cpu().numpy(), 3.0 * written)
    (y * tp.tensor(weights, dtype=tp.float32, device=other_device)).sum().backward()
    assert value.grad.device.type == "cpu" and value.grad.shape == value.shape
    expected_value_grad = 3 * weights[:1] if index == "slice" else 3 * weights[written].sum()
    np.testing.assert_allclose(value.grad.numpy(), expected_value_grad)
    np.testing.assert_array_equal(w.grad.cpu().numpy(), np.where(written, 0.0, weights))


def test_setitem_of_a_cpu_value_with_dimensions_through_an_index_tensor_is_refused(other_device):
    """Advanced-index assignment is index_put_, which needs the value on the tensor's device
    unless it is 0-d (as in PyTorch)."""
    y = tp.zeros(2, 3, device=other_device)
    with pytest.raises(RuntimeError, match="same device"):
        y[tp.tensor([1])] = tp.ones(1, 3)


def test_shape_and_type_helpers_across_devices(other_device):
    """type_as moves to the other tensor's device and dtype (PyTorch's ``to(other.options())``);
    new_tensor keeps self's device and dtype; expand_as/view_as/reshape_as read only a shape."""
    x = tp.ones(3, device=other_device)
    cast = x.type_as(tp.zeros(1, dtype=tp.float64))
    assert cast.device.type == "cpu" and cast.dtype == tp.float64
    back = tp.ones(2).type_as(tp.zeros(1, dtype=tp.int64, device=other_device))
    assert back.device.type == other_device and back.dtype == tp.int64
    made = x.new_tensor(tp.tensor([1.5, 2.5], dtype=tp.float64))
    assert made.device.type == other_device and made.dtype == tp.float32
    assert made.cpu().tolist() == [1.5, 2.5]
    assert tp.ones(1, device=other_device).expand_as(tp.ones(4)).shape == (4,)
    for shaped in (x.view_as(tp.ones(3, 1)), x.reshape_as(tp.ones(1, 3))):
        assert shaped.device.type == other_device and shaped.numel() == 3


def test_augmented_assignment_through_an_index_with_a_cpu_scalar(device):
    """``y[mask] += v; y[i] *= v`` (PyTorch programs' idiom): the index node keeps only the
    input's shape, so writing y afterwards does not invalidate it. By hand, with y = w = 1 and
    weights c = [1, 10, 100, 1000]: y = [1 + v, v, 1 + v, 1]; dv = c0 + c1 + c2 = 111 at v = 3;
    dw = [c0, v * c1, c2, c3]."""
    v = tp.tensor(3.0, requires_grad=True)
    w = tp.ones(4, device=device, requires_grad=True)
    y = w * 1
    y[tp.tensor([True, False, True, False])] += v
    y[tp.tensor([1])] *= v
    np.testing.assert_array_equal(y.detach().cpu().numpy(), [4.0, 3.0, 4.0, 1.0])
    (y * tp.tensor([1.0, 10.0, 100.0, 1000.0], device=device)).sum().backward()
    assert v.grad.device.type == "cpu" and v.grad.item() == 111.0
    assert w.grad.device.type == w.device.type
    np.testing.assert_array_equal(w.grad.cpu().numpy(), [1.0, 30.0, 100.0, 1000.0])


def test_gather_gradient_after_its_input_is_written(device):
    """gather's node keeps only the input's shape and dtype: an in-place write to the input
    after the gather leaves its gradient (scatter-added weights) computable."""
    x = tp.arange(6.0, device=device).reshape(2, 3).requires_grad_()
    y = x * 1
    picked = y.gather(1, tp.tensor([[0, 0], [2, 1]], device=device))
    y.add_(1.0)
    (picked * tp.tensor([[1.0, 2.0], [3.0, 4.0]], device=device)).sum().backward()
    np.testing.assert_array_equal(x.grad.cpu().numpy(), [[3.0, 0.0, 0.0], [0.0, 4.0, 3.0]])
