"""The LSTM's whole-sequence ops (fused in C++ on the CPU, decomposed elsewhere) give the values
and gradients of a step-by-step NumPy float64 LSTM, on every backend (issue 14)."""
import numpy as np
import pytest

import tensorplug as tp


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _numpy_lstm(x, w_ih, w_hh, b, h, c):
    """One layer direction, step by step, in float64; returns outputs and the final states."""
    hidden = w_hh.shape[1]
    outs = []
    for t in range(x.shape[0]):
        gates = x[t] @ w_ih.T + b + h @ w_hh.T
        i, f = _sigmoid(gates[:, :hidden]), _sigmoid(gates[:, hidden:2 * hidden])
        g, o = np.tanh(gates[:, 2 * hidden:3 * hidden]), _sigmoid(gates[:, 3 * hidden:])
        c = f * c + i * g
        h = o * np.tanh(c)
        outs.append(h)
    return np.stack(outs), h, c


def _numeric_grad(fn, value, eps=1e-6):
    grad = np.zeros_like(value)
    for index in np.ndindex(value.shape):
        plus, minus = value.copy(), value.copy()
        plus[index] += eps
        minus[index] -= eps
        grad[index] = (fn(plus) - fn(minus)) / (2 * eps)
    return grad


@pytest.mark.parametrize("steps,batch,hidden", [(5, 3, 4), (1, 1, 2), (4, 0, 3)])
def test_lstm_layer_matches_numpy(device, steps, batch, hidden):
    rng = np.random.default_rng(steps * 10 + hidden)
    features = 3
    x = rng.standard_normal((steps, batch, features))
    h0, c0 = rng.standard_normal((batch, hidden)), rng.standard_normal((batch, hidden))
    lstm = tp.nn.LSTM(features, hidden).to(device)
    params = {n: p.detach().cpu().numpy().astype(np.float64) for n, p in lstm.named_parameters()}
    b = params["bias_ih_l0"] + params["bias_hh_l0"]
    weights = rng.standard_normal((steps, batch, hidden))  # a loss that weighs every output

    xt = tp.tensor(x, dtype=tp.float32, device=device, requires_grad=True)
    out, (h_n, c_n) = lstm(xt, (tp.tensor(h0[None], dtype=tp.float32, device=device),
                                tp.tensor(c0[None], dtype=tp.float32, device=device)))
    expected, h_exp, c_exp = _numpy_lstm(x, params["weight_ih_l0"], params["weight_hh_l0"], b, h0, c0)
    np.testing.assert_allclose(out.detach().cpu().numpy(), expected, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(h_n[0].detach().cpu().numpy(), h_exp, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(c_n[0].detach().cpu().numpy(), c_exp, rtol=1e-4, atol=1e-5)

    loss = (out * tp.tensor(weights, dtype=tp.float32, device=device)).sum() + 2 * c_n.sum()
    loss.backward()

    def numpy_loss(w_hh=params["weight_hh_l0"], x_=x):
        outs, _, c = _numpy_lstm(x_, params["weight_ih_l0"], w_hh, b, h0, c0)
        return (outs * weights).sum() + 2 * c.sum()

    if batch:
        np.testing.assert_allclose(lstm.weight_hh_l0.grad.cpu().numpy(),
                                   _numeric_grad(lambda w: numpy_loss(w_hh=w), params["weight_hh_l0"]), rtol=1e-3, atol=1e-4)
        np.testing.assert_allclose(xt.grad.cpu().numpy(), _numeric_grad(lambda v: numpy_loss(x_=v), x), rtol=1e-3,
                                   atol=1e-4)


def test_bidirectional_two_layers_match_pytorch_where_installed():
    torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")
    ours = tp.nn.LSTM(6, 5, num_layers=2, bidirectional=True)
    theirs = torch.nn.LSTM(6, 5, num_layers=2, bidirectional=True)
    with torch.no_grad():
        for (name, p), q in zip(ours.named_parameters(), theirs.parameters()):
            q.copy_(torch.tensor(p.detach().numpy()))
    x = np.random.default_rng(1).standard_normal((7, 3, 6)).astype(np.float32)
    xt, xq = tp.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    (o1, (h1, c1)), (o2, (h2, c2)) = ours(xt), theirs(xq)
    np.testing.assert_allclose(o1.detach().numpy(), o2.detach().numpy(), rtol=1e-5, atol=1e-6)
    (o1.sum() + c1.sum()).backward()
    (o2.sum() + c2.sum()).backward()
    np.testing.assert_allclose(xt.grad.numpy(), xq.grad.numpy(), rtol=1e-4, atol=1e-5)
    for p, q in zip(ours.parameters(), theirs.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-4, atol=1e-5)
