"""A linear layer's weight and bias gradients come from one op (linear_param_grads, issue 14; one
kernel on OpenCL for small layers): checked against NumPy float64 on every backend, with
strided inputs, layers past the fused kernel's size, and second-order gradients."""
import numpy as np
import pytest

import tensorplug as tp
import tensorplug.nn.functional as F


def _np(t) -> np.ndarray:
    return t.detach().cpu().numpy().astype(np.float64)


@pytest.mark.parametrize("batch, features, outputs", [(32, 4, 1), (5, 3, 7), (1, 1, 1), (64, 40, 30)])
@pytest.mark.parametrize("dtype, tol", [(tp.float32, 1e-5), (tp.float64, 1e-12)])
def test_weight_and_bias_gradients_match_numpy(device, batch, features, outputs, dtype, tol):
    rng = np.random.default_rng(batch * 100 + features)
    x_np = rng.standard_normal((batch, features))
    w_np = rng.standard_normal((outputs, features))
    b_np = rng.standard_normal(outputs)
    g_np = rng.standard_normal((batch, outputs))
    x = tp.tensor(x_np, dtype=dtype, device=device)
    w = tp.tensor(w_np, dtype=dtype, device=device, requires_grad=True)
    b = tp.tensor(b_np, dtype=dtype, device=device, requires_grad=True)
    F.linear(x, w, b).backward(tp.tensor(g_np, dtype=dtype, device=device))
    scale = np.abs(g_np).T @ np.abs(x_np) + 1
    assert np.all(np.abs(_np(w.grad) - g_np.T @ x_np) <= tol * scale)
    np.testing.assert_allclose(_np(b.grad), g_np.sum(0), rtol=tol, atol=tol * batch)


def test_strided_operands_and_three_dimensional_input(device):
    rng = np.random.default_rng(7)
    x_np = rng.standard_normal((6, 2, 5))  # leading dims merge into 12 rows
    w_np = rng.standard_normal((3, 5))
    g_np = rng.standard_normal((6, 2, 3))
    x = tp.tensor(x_np.transpose(2, 1, 0).copy(), device=device).permute(2, 1, 0)  # not contiguous
    w = tp.tensor(w_np, device=device, requires_grad=True)
    b = tp.zeros(3, device=device, requires_grad=True)
    F.linear(x, w, b).backward(tp.tensor(g_np, device=device))
    rows, inputs = g_np.reshape(12, 3), x_np.reshape(12, 5)
    np.testing.assert_allclose(_np(w.grad), rows.T @ inputs, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(_np(b.grad), rows.sum(0), rtol=1e-5, atol=1e-5)


def test_second_order_gradients_still_flow(device):
    # create_graph keeps the differentiable matmul and sum (the fused op records nothing).
    rng = np.random.default_rng(3)
    x_np, w_np = rng.standard_normal((4, 3)), rng.standard_normal((2, 3))
    x = tp.tensor(x_np, device=device, requires_grad=True)
    w = tp.tensor(w_np, device=device, requires_grad=True)
    b = tp.zeros(2, device=device, requires_grad=True)
    out = F.linear(x, w, b)
    (gw, gb) = tp.autograd.grad((out * out).sum(), (w, b), create_graph=True)
    gw.sum().backward()
    y = x_np @ w_np.T
    expected_gw = 2 * y.T @ x_np
    np.testing.assert_allclose(_np(gw), expected_gw, rtol=1e-5)
    # d(sum gw)/dx[r, k] = 2 * (sum_o w[o, k] * sum_j x[r, j] + sum_o y[r, o])
    expected_dx = 2 * (np.outer(x_np.sum(1), w_np.sum(0)) + y.sum(1, keepdims=True))
    np.testing.assert_allclose(_np(x.grad), expected_dx, rtol=1e-5)


def test_torch_agrees():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(11)
    x_np = rng.standard_normal((32, 4)).astype(np.float32)
    w_np = rng.standard_normal((1, 4)).astype(np.float32)
    b_np = rng.standard_normal(1).astype(np.float32)
    w = tp.tensor(w_np, requires_grad=True)
    b = tp.tensor(b_np, requires_grad=True)
    tw = torch.tensor(w_np, requires_grad=True)
    tb = torch.tensor(b_np, requires_grad=True)
    F.smooth_l1_loss(F.linear(tp.tensor(x_np), w, b), tp.zeros(32, 1)).backward()
    torch.nn.functional.smooth_l1_loss(torch.nn.functional.linear(torch.tensor(x_np), tw, tb),
                                       torch.zeros(32, 1)).backward()
    np.testing.assert_allclose(_np(w.grad), tw.grad.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(_np(b.grad), tb.grad.numpy(), rtol=1e-5, atol=1e-6)
