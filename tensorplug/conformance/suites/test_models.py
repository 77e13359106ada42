"""Model-level conformance: small models trained on the device and on the CPU from the same
weights and data, compared step by step (losses, parameters, gradients, buffers), and
checkpoints moved both ways between the device and the CPU (issue 15).

Op-level checks miss what only shows in a whole model: a view aliasing bug, an ordering bug on
an asynchronous queue, an optimizer update written in place. Every model here uses float32 (a
required dtype), no dropout, and an optimizer whose state updates in place.
"""
import numpy as np

import tensorplug as tp
import tensorplug.nn.functional as F
from tensorplug import nn
from tensorplug.conformance._checks import ConformanceFailure
from tensorplug.conformance.suites import item

_RTOL, _ATOL = 2e-4, 2e-5


class _Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, 4))

    def forward(self, x):
        return self.net(x)


class _Cnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, padding=1)
        self.norm = nn.BatchNorm2d(4)
        self.head = nn.Linear(4 * 4 * 4, 4)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.norm(self.conv(x))), 2)
        return self.head(x.flatten(1))


class _Lstm(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(6, 8, num_layers=2)
        self.head = nn.Linear(8, 4)

    def forward(self, x):
        out, _ = self.rnn(x)
        return self.head(out[-1])


class _Gru(nn.Module):
    """Two bidirectional layers: the GRU's whole-sequence ops, both directions."""

    def __init__(self):
        super().__init__()
        self.rnn = nn.GRU(6, 8, num_layers=2, bidirectional=True)
        self.head = nn.Linear(16, 4)

    def forward(self, x):
        out, _ = self.rnn(x)
        return self.head(out[-1])


class _Rnn(nn.Module):
    """A tanh layer into a bidirectional relu layer: the Elman RNN's ops, both nonlinearities."""

    def __init__(self):
        super().__init__()
        self.tanh = nn.RNN(6, 8)
        self.relu = nn.RNN(8, 8, nonlinearity="relu", bidirectional=True)
        self.head = nn.Linear(16, 4)

    def forward(self, x):
        out, _ = self.relu(self.tanh(x)[0])
        return self.head(out[-1])


class _Transformer(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(16, 2, dim_feedforward=32, dropout=0.0)
        self.head = nn.Linear(16, 4)

    def forward(self, x):
        return self.head(self.layer(x).mean(0))


# name -> (model class, input shape, optimizer factory)
# Adam only where every gradient is well above rounding noise: its first step moves each weight
# by about lr * sign(gradient), so a gradient that is zero in exact arithmetic (the attention key
# bias's) turns rounding noise into a full step.
_MODELS = {
    "mlp": (_Mlp, (8, 12), lambda p: tp.optim.Adam(p, lr=1e-2)),
    "cnn with batch norm and pooling": (_Cnn, (8, 1, 8, 8), lambda p: tp.optim.SGD(p, lr=0.05, momentum=0.9)),
    "lstm": (_Lstm, (5, 8, 6), lambda p: tp.optim.SGD(p, lr=0.1, momentum=0.9)),
    "gru": (_Gru, (5, 8, 6), lambda p: tp.optim.SGD(p, lr=0.1, momentum=0.9)),
    "rnn (tanh, relu)": (_Rnn, (5, 8, 6), lambda p: tp.optim.SGD(p, lr=0.1, momentum=0.9)),
    "transformer encoder layer": (_Transformer, (5, 8, 16), lambda p: tp.optim.SGD(p, lr=0.05, momentum=0.9)),
}

# Models whose input is (steps, batch, features): one target per batch row.
_SEQUENCE_FIRST = {"lstm", "gru", "rnn (tanh, relu)", "transformer encoder layer"}


def _host(t) -> np.ndarray:
    return t.detach().cpu().numpy().astype(np.float64)


def _compare(what: str, got, expected) -> None:
    a, b = _host(got), _host(expected)
    if a.shape != b.shape or not np.allclose(a, b, rtol=_RTOL, atol=_ATOL):
        worst = float(np.max(np.abs(a - b))) if a.shape == b.shape else float("inf")
        raise ConformanceFailure(f"{what}: the device differs from the CPU (max difference {worst:.3g}, shapes "
                                 f"{list(a.shape)} and {list(b.shape)})")


def _train_side_by_side(name: str, device: str, steps: int) -> None:
    cls, shape, make_optimizer = _MODELS[name]
    tp.manual_seed(0)
    reference = cls()
    model = cls().to(device)
    model.load_state_dict({k: v.to(device) for k, v in reference.state_dict().items()})
    opt_ref, opt_dev = make_optimizer(reference.parameters()), make_optimizer(model.parameters())
    rng = np.random.default_rng(0)
    for step in range(steps):
        x = rng.standard_normal(shape).astype(np.float32)
        y = rng.integers(0, 4, size=shape[1] if name in _SEQUENCE_FIRST else shape[0])
        losses = []
        for net, opt, dev in ((reference, opt_ref, "cpu"), (model, opt_dev, device)):
            opt.zero_grad()
            loss = F.cross_entropy(net(tp.tensor(x, device=dev)), tp.tensor(y, device=dev))
            loss.backward()
            opt.step()
            losses.append(loss)
        _compare(f"{name}, step {step}: loss", losses[1], losses[0])
        for (pname, p_ref), p_dev in zip(reference.named_parameters(), model.parameters()):
            _compare(f"{name}, step {step}: gradient of {pname}", p_dev.grad, p_ref.grad)
            _compare(f"{name}, step {step}: {pname} after the update", p_dev, p_ref)
        for (bname, b_ref), b_dev in zip(reference.named_buffers(), model.buffers()):
            if b_ref.dtype.is_floating_point:
                _compare(f"{name}, step {step}: buffer {bname}", b_dev, b_ref)


def _steps(conformance) -> int:
    return 2 if conformance.quick else 4


@item("models", "mlp", "float32")
def test_mlp_trains_as_on_the_cpu(conformance):
    """An MLP (Adam) matches the CPU step by step."""
    _train_side_by_side("mlp", conformance.device, _steps(conformance))


@item("models", "cnn with batch norm and pooling", "float32")
def test_cnn_trains_as_on_the_cpu(conformance):
    """Conv, batch norm (running statistics included), ReLU and max pooling match the CPU."""
    _train_side_by_side("cnn with batch norm and pooling", conformance.device, _steps(conformance))


@item("models", "lstm", "float32")
def test_lstm_trains_as_on_the_cpu(conformance):
    """A 2-layer LSTM (SGD with momentum) matches the CPU step by step."""
    _train_side_by_side("lstm", conformance.device, _steps(conformance))


@item("models", "gru", "float32")
def test_gru_trains_as_on_the_cpu(conformance):
    """A 2-layer bidirectional GRU (SGD with momentum) matches the CPU step by step."""
    _train_side_by_side("gru", conformance.device, _steps(conformance))


@item("models", "rnn (tanh, relu)", "float32")
def test_rnn_trains_as_on_the_cpu(conformance):
    """A tanh RNN layer and a bidirectional relu one (SGD with momentum) match the CPU step by step."""
    _train_side_by_side("rnn (tanh, relu)", conformance.device, _steps(conformance))


@item("models", "transformer encoder layer", "float32")
def test_transformer_trains_as_on_the_cpu(conformance):
    """A TransformerEncoderLayer (attention, layer norm; SGD with momentum) matches the CPU."""
    _train_side_by_side("transformer encoder layer", conformance.device, _steps(conformance))


@item("models", "checkpoint device <-> cpu", "float32")
def test_checkpoints_cross_devices(conformance, tmp_path):
    """A state dict saved on the device loads on the CPU with the same values, and the reverse."""
    device = conformance.device
    tp.manual_seed(1)
    on_cpu = _Cnn()
    on_device = _Cnn().to(device)
    path = tmp_path / "device.safetensors"
    tp.save(on_device.state_dict(), path)
    loaded = tp.load(path, map_location="cpu")
    for key, value in on_device.state_dict().items():
        if loaded[key].device.type != "cpu":
            raise ConformanceFailure(f"{key} loaded on {loaded[key].device}, not the CPU")
        _compare(f"device -> cpu: {key}", loaded[key], value)
    path = tmp_path / "cpu.safetensors"
    tp.save(on_cpu.state_dict(), path)
    on_device.load_state_dict(tp.load(path, map_location=device))
    for key, value in on_cpu.state_dict().items():
        _compare(f"cpu -> device: {key}", on_device.state_dict()[key], value)
