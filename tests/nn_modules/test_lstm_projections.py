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
