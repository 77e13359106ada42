"""Training steps side by side (forward, backward, optimizer step), tensorplug vs PyTorch:

* MLP 784-512-512-10, batch 128, SGD with momentum
* CNN conv(1,32,3)-conv(32,64,3)-pool-fc128-fc10 on 28x28 images, batch 64, Adam
* the paper's Listing 1 model: conv(1,128,3)-global average pool-linear(10), batch 32, SGD

The same model code runs on both libraries (the APIs match). Run:
python benchmarks/bench_training.py
"""
from __future__ import annotations

import numpy as np

import tensorplug as tp
from _harness import Case, optional_torch, run_cases


def _mlp(lib):
    nn = lib.nn
    return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))


def _cnn(lib):
    nn = lib.nn
    return nn.Sequential(
        nn.Conv2d(1, 32, 3), nn.ReLU(), nn.Conv2d(32, 64, 3), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(64 * 12 * 12, 128), nn.ReLU(), nn.Linear(128, 10),
    )


def _listing1(lib):
    nn = lib.nn

    class Listing1(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(1, 128, 3)
            self.fc = nn.Linear(128, 10)

        def forward(self, x):
            return self.fc(nn.functional.relu(self.conv(x)).mean(dim=(2, 3)))

    return Listing1()


def _step(lib, build, optimizer, x_np, y_np):
    lib.manual_seed(0)
    model = build(lib)
    opt = optimizer(lib, model.parameters())
    x, y = lib.tensor(x_np), lib.tensor(y_np)
    loss_fn = lib.nn.CrossEntropyLoss()

    def step():
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()

    return step


def cases() -> list[Case]:
    torch = optional_torch()
    rng = np.random.default_rng(0)
    setups = [
        ("MLP 784-512-512-10, batch 128, SGD", _mlp, lambda lib, p: lib.optim.SGD(p, lr=0.01, momentum=0.9),
         rng.standard_normal((128, 784)).astype(np.float32), 20),
        ("CNN conv32-conv64-fc128, batch 64, Adam", _cnn, lambda lib, p: lib.optim.Adam(p, lr=1e-3),
         rng.standard_normal((64, 1, 28, 28)).astype(np.float32), 5),
        ("Listing 1 conv128-GAP-linear, batch 32, SGD", _listing1, lambda lib, p: lib.optim.SGD(p, lr=0.01),
         rng.standard_normal((32, 1, 28, 28)).astype(np.float32), 10),
    ]
    rows = []
    for name, build, optimizer, x, number in setups:
        y = rng.integers(0, 10, len(x)).astype(np.int64)
        calls = {"tensorplug": _step(tp, build, optimizer, x, y)}
        if torch is not None:
            calls["torch"] = _step(torch, build, optimizer, x, y)
        rows.append(Case(name, calls, number, "ms"))
    return rows


if __name__ == "__main__":
    torch = optional_torch()
    if torch is not None:
        torch.set_num_threads(tp.get_num_threads())
    run_cases(cases(), rounds=5)
