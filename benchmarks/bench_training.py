"""Training steps side by side (forward, backward, optimizer step), tensorplug vs PyTorch:

* the small regression of pytorch/examples' regression/main.py: Linear(4, 1) on a fixed batch of
  32 rows of polynomial features (x, x^2, x^3, x^4) of x ~ N(0, 1) with targets from a fixed
  degree-4 polynomial; one step is ``fc.zero_grad()``, ``F.smooth_l1_loss(fc(x), y)``,
  ``loss.item()``, ``loss.backward()`` and ``p.data.add_(-0.1 * p.grad)`` for each parameter,
  as the example does (issue 14's "small-regression training step");
* MLP 784-512-512-10, batch 128, cross entropy, SGD with momentum;
* CNN conv(1,32,3)-conv(32,64,3)-pool-fc128-fc10 on 28x28 images, batch 64, cross entropy, Adam;
* the paper's Listing 1 model: conv(1,128,3)-global average pool-linear(10), batch 32, SGD.

The same model code runs in every library (the APIs match), each in its own process (see
_harness.py); columns: tensorplug, PyTorch 2.13 (when installed) and tensorplug on OpenCL.

    python benchmarks/bench_training.py [--rounds 5] [--smoke] [--only regression]
"""
from __future__ import annotations

import numpy as np

from _harness import Case, run_cases


def _regression(lib, device):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(32).astype(np.float32)
    features = np.stack([x**i for i in range(1, 5)], 1)
    targets = features @ (5 * rng.standard_normal((4, 1))).astype(np.float32) + np.float32(5 * rng.standard_normal())
    lib.manual_seed(0)
    fc = lib.nn.Linear(4, 1).to(device)
    batch_x, batch_y = lib.tensor(features, device=device), lib.tensor(targets, device=device)
    smooth_l1_loss = lib.nn.functional.smooth_l1_loss

    def step():
        fc.zero_grad()
        output = smooth_l1_loss(fc(batch_x), batch_y)
        output.item()
        output.backward()
        for param in fc.parameters():
            param.data.add_(-0.1 * param.grad)

    return step


def _mlp(nn):
    return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))


def _cnn(nn):
    return nn.Sequential(
        nn.Conv2d(1, 32, 3), nn.ReLU(), nn.Conv2d(32, 64, 3), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(64 * 12 * 12, 128), nn.ReLU(), nn.Linear(128, 10),
    )


def _listing1(nn):
    class Listing1(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(1, 128, 3)
            self.fc = nn.Linear(128, 10)

        def forward(self, x):
            return self.fc(nn.functional.relu(self.conv(x)).mean(dim=(2, 3)))

    return Listing1()


def _classifier_step(lib, device, build, optimizer, x_np, y_np):
    lib.manual_seed(0)
    model = build(lib.nn).to(device)
    opt = optimizer(lib.optim, model.parameters())
    x, y = lib.tensor(x_np, device=device), lib.tensor(y_np, device=device)
    loss_fn = lib.nn.CrossEntropyLoss()

    def step():
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()

    return step


def cases(lib, device):
    rng = np.random.default_rng(0)
    rows = [Case("small regression Linear(4, 1), batch 32", _regression(lib, device), 500, "us")]
    setups = [
        ("MLP 784-512-512-10, batch 128, SGD", _mlp, lambda optim, p: optim.SGD(p, lr=0.01, momentum=0.9),
         (128, 784), 20),
        ("CNN conv32-conv64-fc128, batch 64, Adam", _cnn, lambda optim, p: optim.Adam(p, lr=1e-3),
         (64, 1, 28, 28), 5),
        ("Listing 1 conv128-GAP-linear, batch 32, SGD", _listing1, lambda optim, p: optim.SGD(p, lr=0.01),
         (32, 1, 28, 28), 10),
    ]
    for name, build, optimizer, shape, number in setups:
        x = rng.standard_normal(shape).astype(np.float32)
        y = rng.integers(0, 10, shape[0]).astype(np.int64)
        rows.append(Case(name, _classifier_step(lib, device, build, optimizer, x, y), number, "ms"))
    return rows


if __name__ == "__main__":
    run_cases(__file__, cases, columns=("tensorplug", "torch", "tensorplug:opencl"), rounds=5)
