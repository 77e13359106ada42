"""Issue 8's parity test: 10 training steps from identical weights give the same losses and
parameters as PyTorch (float32) for an MLP, a small CNN, an LSTM and a TransformerEncoderLayer.

The update is SGD with momentum written here (torch's formula: buf = momentum * buf + grad,
p -= lr * buf), so the test checks nn alone, independent of tp.optim."""
import numpy as np
import pytest

import tensorplug as tp
from module_parity import copy_torch_weights

torch = pytest.importorskip("torch")
nn = tp.nn
STEPS = 10


def sgd_momentum_step(lib, params, buffers, lr=0.05, momentum=0.9):
    with lib.no_grad():
        for i, p in enumerate(params):
            if buffers[i] is None:
                buffers[i] = p.grad.clone()
            else:
                buffers[i].mul_(momentum).add_(p.grad)
            p.sub_(lr * buffers[i])
            p.grad = None


def train_both(ours, theirs, make_batch, loss_name):
    """Train both models on the same batch; returns the two loss histories."""
    copy_torch_weights(theirs, ours)
    our_loss, their_loss = getattr(nn, loss_name)(), getattr(torch.nn, loss_name)()
    our_params, their_params = list(ours.parameters()), list(theirs.parameters())
    assert len(our_params) == len(their_params)
    our_buffers, their_buffers = [None] * len(our_params), [None] * len(their_params)
    history = ([], [])
    x, y = make_batch(np.random.default_rng(0))
    for _ in range(STEPS):
        loss = our_loss(ours(tp.tensor(x)), tp.tensor(y))
        loss.backward()
        sgd_momentum_step(tp, our_params, our_buffers)
        reference = their_loss(theirs(torch.tensor(x)), torch.tensor(y))
        reference.backward()
        sgd_momentum_step(torch, their_params, their_buffers)
        history[0].append(loss.item())
        history[1].append(reference.item())
    np.testing.assert_allclose(history[0], history[1], rtol=1e-4, atol=1e-5)
    for (name, p), q in zip(ours.named_parameters(), their_params):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-3, atol=1e-4, err_msg=name)
    assert history[0][-1] < history[0][0]  # it learns
    return history


def test_mlp():
    """Linear-ReLU-Linear-Tanh-Linear with cross-entropy."""
    def build(lib):
        return lib.nn.Sequential(lib.nn.Linear(20, 32), lib.nn.ReLU(), lib.nn.Linear(32, 16), lib.nn.Tanh(), lib.nn.Linear(16, 5))

    def batch(rng):
        x = rng.standard_normal((16, 20)).astype("float32")
        return x, (x[:, :5].argmax(1)).astype("int64")

    train_both(build(tp), build(torch), batch, "CrossEntropyLoss")


def test_small_cnn():
    """Conv-BatchNorm-ReLU-MaxPool-Conv-AdaptiveAvgPool-Linear with cross-entropy (BatchNorm
    running statistics are compared too)."""
    def build(lib):
        n = lib.nn
        return n.Sequential(
            n.Conv2d(1, 4, 3, padding=1), n.BatchNorm2d(4), n.ReLU(), n.MaxPool2d(2), n.Conv2d(4, 8, 3, stride=2, padding=1),
            n.ReLU(), n.AdaptiveAvgPool2d(1), n.Flatten(), n.Linear(8, 3),
        )

    def batch(rng):
        x = rng.standard_normal((8, 1, 8, 8)).astype("float32")
        return x, (x.mean((1, 2, 3)) > 0).astype("int64") + (x[:, 0, 0, 0] > 1).astype("int64")

    ours, theirs = build(tp), build(torch)
    train_both(ours, theirs, batch, "CrossEntropyLoss")
    np.testing.assert_allclose(ours[1].running_mean.numpy(), theirs[1].running_mean.numpy(), rtol=1e-3, atol=1e-5)
    np.testing.assert_allclose(ours[1].running_var.numpy(), theirs[1].running_var.numpy(), rtol=1e-3, atol=1e-5)


class _SequenceModel:
    """A recurrent or attention encoder followed by a linear head on the last time step."""

    @staticmethod
    def build(lib, kind):
        class Model(lib.nn.Module):
            def __init__(self):
                super().__init__()
                if kind == "lstm":
                    self.encoder = lib.nn.LSTM(6, 12, num_layers=2, batch_first=True)
                    width = 12
                else:
                    self.encoder = lib.nn.TransformerEncoderLayer(6, 2, dim_feedforward=24, dropout=0.0, batch_first=True)
                    width = 6
                self.head = lib.nn.Linear(width, 1)

            def forward(self, x):
                out = self.encoder(x)
                out = out[0] if isinstance(out, tuple) else out
                return self.head(out[:, -1]).squeeze(-1)

        return Model()


@pytest.mark.parametrize("kind", ["lstm", "transformer"])
def test_sequence_models(kind):
    """A 2-layer LSTM and a TransformerEncoderLayer regress the sum of a sequence with MSE."""
    def batch(rng):
        x = rng.standard_normal((4, 7, 6)).astype("float32")
        return x, (x[:, :, 0].sum(1) * 0.3).astype("float32")

    train_both(_SequenceModel.build(tp, kind), _SequenceModel.build(torch, kind), batch, "MSELoss")
