"""LSTM, GRU and RNN against torch.nn: weights, gate order, layers, directions and states."""
import numpy as np
import pytest

import tensorplug as tp
from module_parity import check_module

torch = pytest.importorskip("torch")
nn = tp.nn

CONFIGS = [
    dict(),
    dict(num_layers=2, batch_first=True),
    dict(bidirectional=True, bias=False),
    dict(num_layers=2, bidirectional=True, batch_first=True),
]


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN"])
@pytest.mark.parametrize("config", CONFIGS)
def test_recurrent_parity(kind, config):
    """Outputs, final states and all gradients match torch for the same weights."""
    ours, theirs = getattr(nn, kind)(3, 5, **config), getattr(torch.nn, kind)(3, 5, **config)
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    assert [tuple(p.shape) for p in ours.parameters()] == [tuple(p.shape) for p in theirs.parameters()]
    assert repr(ours) == repr(theirs)
    shape = (2, 4, 3) if config.get("batch_first") else (4, 2, 3)
    check_module(torch, ours, theirs, [np.random.randn(*shape)])


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
def test_given_initial_state_and_unbatched_input(kind):
    """An explicit initial state and a 2-D (unbatched) input work as in torch."""
    layers = 2
    h0 = np.random.randn(layers, 2, 4)
    state = (h0, np.random.randn(layers, 2, 4)) if kind == "LSTM" else h0
    ours, theirs = getattr(nn, kind)(3, 4, num_layers=layers), getattr(torch.nn, kind)(3, 4, num_layers=layers)
    x = np.random.randn(5, 2, 3)
    if kind == "LSTM":
        check_module(torch, _StateWrapper(ours), _TorchStateWrapper(theirs), [x, state[0], state[1]])
    else:
        check_module(torch, ours, theirs, [x, state])
    check_module(torch, getattr(nn, kind)(3, 4), getattr(torch.nn, kind)(3, 4), [np.random.randn(5, 3)])


class _StateWrapper(nn.Module):
    def __init__(self, lstm):
        super().__init__()
        self.lstm = lstm

    def forward(self, x, h, c):
        return self.lstm(x, (h, c))


class _TorchStateWrapper(torch.nn.Module):
    def __init__(self, lstm):
        super().__init__()
        self.lstm = lstm

    def forward(self, x, h, c):
        return self.lstm(x, (h, c))


def test_init_range_and_errors():
    """Weights start in U(-1/sqrt(H), 1/sqrt(H)); a wrong input size names the layer."""
    lstm = nn.LSTM(3, 16)
    assert max(p.abs().max().item() for p in lstm.parameters()) <= 0.25
    assert lstm.weight_ih_l0.shape == (64, 3) and nn.GRU(3, 16).weight_hh_l0.shape == (48, 16)
    with pytest.raises(RuntimeError, match=r"LSTM\(3, 16\): expected input with last dimension 3 \(input_size\), got shape \[5, 2, 4\]"):
        lstm(tp.zeros(5, 2, 4))
    with pytest.raises(RuntimeError, match=r"Expected hidden\[0\] size \(1, 2, 16\), got \[1, 3, 16\]"):
        lstm(tp.zeros(5, 2, 3), (tp.zeros(1, 3, 16), tp.zeros(1, 3, 16)))
    with pytest.warns(UserWarning, match="dropout option adds dropout after all but last recurrent layer"):
        nn.GRU(3, 4, dropout=0.5)


def test_dropout_between_layers_only_in_training():
    """dropout applies between layers in training; in eval the output is deterministic."""
    lstm = nn.LSTM(3, 8, num_layers=2, dropout=0.5)
    x = tp.randn(4, 2, 3)
    a, b = lstm(x)[0], lstm(x)[0]
    assert not np.allclose(a.detach().numpy(), b.detach().numpy())
    lstm.eval()
    np.testing.assert_array_equal(lstm(x)[0].detach().numpy(), lstm(x)[0].detach().numpy())
