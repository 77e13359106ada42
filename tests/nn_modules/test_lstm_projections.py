"""nn.LSTM(proj_size=...) (LSTM with projections): PyTorch's parameters, shapes, checks, values and
gradients, padded and packed, on every device, against torch 2.13."""
import warnings

import numpy as np
import pytest

import tensorplug as tp

try:
    import torch
except ImportError:  # the reference; tensorplug itself does not need it
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch (the reference) is not installed: pip install torch==2.13.0")


def test_parameters_shapes_and_checks():
    m = tp.nn.LSTM(4, 8, num_layers=2, proj_size=3, bidirectional=True)
    names = [(name, tuple(p.shape)) for name, p in m.named_parameters()][:7]
    assert names == [("weight_ih_l0", (32, 4)), ("weight_hh_l0", (32, 3)), ("bias_ih_l0", (32,)), ("bias_hh_l0", (32,)),
                     ("weight_hr_l0", (3, 8)), ("weight_ih_l0_reverse", (32, 4)), ("weight_hh_l0_reverse", (32, 3))]
    assert m.weight_ih_l1.shape == (32, 6) and [len(group) for group in m.all_weights] == [5, 5, 5, 5]
    assert repr(m) == "LSTM(4, 8, proj_size=3, num_layers=2, bidirectional=True)"
    out, (h, c) = m(tp.randn(5, 2, 4))
    assert out.shape == (5, 2, 6) and h.shape == (4, 2, 3) and c.shape == (4, 2, 8)
    with pytest.raises(ValueError, match="proj_size has to be smaller than hidden_size"):
        tp.nn.LSTM(4, 8, proj_size=8)
    with pytest.raises(ValueError, match="proj_size should be a positive integer or zero"):
        tp.nn.LSTM(4, 8, proj_size=-1)
    with pytest.raises(RuntimeError, match=r"Expected hidden\[0\] size \(4, 2, 3\), got \[4, 2, 8\]"):
        m(tp.randn(5, 2, 4), (tp.zeros(4, 2, 8), tp.zeros(4, 2, 8)))


@needs_torch
@pytest.mark.parametrize("bidirectional", [False, True])
def test_values_and_gradients_match_torch(bidirectional, device):
    reference = torch.nn.LSTM(4, 8, num_layers=2, proj_size=3, bidirectional=bidirectional, batch_first=True,
                              dtype=torch.float64)
    model = tp.nn.LSTM(4, 8, num_layers=2, proj_size=3, bidirectional=bidirectional, batch_first=True, dtype=tp.float64)
    model.load_state_dict({k: tp.tensor(v.detach().numpy()) for k, v in reference.state_dict().items()})
    model.to(device)
    x = np.random.default_rng(1).standard_normal((2, 5, 4))
    h0 = np.random.default_rng(2).standard_normal((4 if bidirectional else 2, 2, 3))
    c0 = np.random.default_rng(3).standard_normal((4 if bidirectional else 2, 2, 8))
    xt = torch.tensor(x, requires_grad=True)
    xp = tp.tensor(x, device=device, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PyTorch: projections are not supported with oneDNN
        out_t, (h_t, c_t) = reference(xt, (torch.tensor(h0), torch.tensor(c0)))
    out_p, (h_p, c_p) = model(xp, (tp.tensor(h0, device=device), tp.tensor(c0, device=device)))
    for got, want in ((out_p, out_t), (h_p, h_t), (c_p, c_t)):
        np.testing.assert_allclose(got.detach().cpu().numpy(), want.detach().numpy(), rtol=1e-12, atol=1e-12)
    (out_t.sum() + 2 * h_t.sum() + c_t.sum()).backward()
    (out_p.sum() + 2 * h_p.sum() + c_p.sum()).backward()
    np.testing.assert_allclose(xp.grad.cpu().numpy(), xt.grad.numpy(), rtol=1e-12, atol=1e-12)
    for name, p in model.named_parameters():
        np.testing.assert_allclose(p.grad.cpu().numpy(), getattr(reference, name).grad.numpy(), rtol=1e-10, atol=1e-12,
                                   err_msg=name)


@needs_torch
def test_packed_sequences_match_torch(device):
    reference = torch.nn.LSTM(4, 8, proj_size=3, dtype=torch.float64)
    model = tp.nn.LSTM(4, 8, proj_size=3, dtype=tp.float64)
    model.load_state_dict({k: tp.tensor(v.detach().numpy()) for k, v in reference.state_dict().items()})
    model.to(device)
    x = np.random.default_rng(4).standard_normal((5, 3, 4))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out_t, (h_t, _) = reference(torch.nn.utils.rnn.pack_padded_sequence(torch.tensor(x), [5, 2, 4],
                                                                             enforce_sorted=False))
    out_p, (h_p, _) = model(tp.nn.utils.rnn.pack_padded_sequence(tp.tensor(x, device=device), [5, 2, 4],
                                                                  enforce_sorted=False))
    np.testing.assert_allclose(out_p.data.detach().cpu().numpy(), out_t.data.detach().numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(h_p.detach().cpu().numpy(), h_t.detach().numpy(), rtol=1e-12, atol=1e-12)


def _numpy_lstm_projected(x, params, h, c):
    """One layer, one direction of an LSTM with projections in float64 NumPy: x (T, N, I)."""
    w_ih, w_hh, b_ih, b_hh, w_hr = params
    sigmoid = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    outputs = []
    for t in range(x.shape[0]):
        gates = x[t] @ w_ih.T + b_ih + h @ w_hh.T + b_hh
        i, f, g, o = np.split(gates, 4, axis=-1)
        c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
        h = (sigmoid(o) * np.tanh(c)) @ w_hr.T
        outputs.append(h)
    return np.stack(outputs), h, c


def test_values_match_a_numpy_recurrence(device):
    """Without PyTorch: one layer against the recurrence written out in NumPy (float64)."""
    model = tp.nn.LSTM(4, 6, proj_size=2, dtype=tp.float64)
    params = [getattr(model, name).detach().numpy().copy() for name in
              ("weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0", "weight_hr_l0")]
    x = np.random.default_rng(5).standard_normal((5, 3, 4))
    want_out, want_h, want_c = _numpy_lstm_projected(x, params, np.zeros((3, 2)), np.zeros((3, 6)))
    out, (h, c) = model.to(device)(tp.tensor(x, device=device))
    np.testing.assert_allclose(out.detach().cpu().numpy(), want_out, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(h[0].detach().cpu().numpy(), want_h, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(c[0].detach().cpu().numpy(), want_c, rtol=1e-12, atol=1e-12)
