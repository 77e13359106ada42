"""Forward + backward side by side: a tiny graph (per-node overhead) and an MLP 784-512-512-10.

Run: python benchmarks/bench_autograd.py   (PyTorch rows appear when torch==2.13.0 is installed)
"""
from __future__ import annotations

import numpy as np

import tensorplug as tp
from _harness import Case, optional_torch, run_cases


def _tiny(lib):
    a = lib.ones(4, requires_grad=True)
    b = lib.ones(4, requires_grad=True)

    def step():
        (a * b).sum().backward()

    return step


def _mlp(lib, weights, x_np):
    params = [lib.tensor(w, requires_grad=True) for w in weights]
    x = lib.tensor(x_np)

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


def cases() -> list[Case]:
    torch = optional_torch()
    rng = np.random.default_rng(0)
    sizes = [784, 512, 512, 10]
    weights = []
    for fan_in, fan_out in zip(sizes, sizes[1:]):
        weights += [(rng.standard_normal((fan_in, fan_out)) / np.sqrt(fan_in)).astype(np.float32), np.zeros(fan_out, np.float32)]
    x = rng.standard_normal((128, 784), dtype=np.float32)
    tiny = {"tensorplug": _tiny(tp)}
    mlp = {"tensorplug": _mlp(tp, weights, x)}
    if torch is not None:
        tiny["torch"] = _tiny(torch)
        mlp["torch"] = _mlp(torch, weights, x)
    return [
        Case("(a*b).sum().backward(), 4 float32", tiny, 2000),
        Case("MLP 784-512-512-10, batch 128, fwd+bwd", mlp, 20, "ms"),
    ]


if __name__ == "__main__":
    torch = optional_torch()
    if torch is not None:
        torch.set_num_threads(tp.get_num_threads())
    run_cases(cases())
