"""Forward + backward side by side: a tiny graph (per-node overhead) and an MLP 784-512-512-10.

    python benchmarks/bench_autograd.py [--rounds 7] [--smoke]

Columns: tensorplug, PyTorch 2.13 (when installed) and tensorplug on OpenCL (when it can run),
each in its own process (see _harness.py).
"""
from __future__ import annotations

import numpy as np

from _harness import Case, run_cases


def _tiny(lib, device):
    a = lib.ones(4, requires_grad=True, device=device)
    b = lib.ones(4, requires_grad=True, device=device)

    def step():
        (a * b).sum().backward()

    return step


def _mlp(lib, device):
    rng = np.random.default_rng(0)
    sizes = [784, 512, 512, 10]
    arrays = []
    for fan_in, fan_out in zip(sizes, sizes[1:]):
        arrays += [(rng.standard_normal((fan_in, fan_out)) / np.sqrt(fan_in)).astype(np.float32),
                   np.zeros(fan_out, np.float32)]
    params = [lib.tensor(w, requires_grad=True, device=device) for w in arrays]
    x = lib.tensor(rng.standard_normal((128, 784), dtype=np.float32), device=device)

    def step():
        h = x
        for i in range(0, len(params), 2):
            h = h @ params[i] + params[i + 1]
            if i + 2 < len(params):
                h = h.relu()
        loss = (h * h).mean()
        loss.backward()
        for p in params:
            p.grad = None

    return step


def cases(lib, device):
    return [
        Case("(a*b).sum().backward(), 4 float32", _tiny(lib, device), 2000),
        Case("MLP 784-512-512-10, batch 128, fwd+bwd", _mlp(lib, device), 20, "ms"),
    ]


if __name__ == "__main__":
    run_cases(__file__, cases, columns=("tensorplug", "torch", "tensorplug:opencl"))
