"""a + b side by side: tiny tensors (per-call overhead) and 1e7 elements (allocation + bandwidth).

    python benchmarks/bench_add.py [--rounds 7] [--smoke]

Columns: tensorplug, PyTorch 2.13 (when installed), NumPy, and tensorplug on OpenCL (when it can
run), each in its own process (see _harness.py).
"""
from __future__ import annotations

from _harness import Case, run_cases


def cases(lib, device):
    rows = []
    for n, number, label in ((4, 20000, "a + b, 4 float32"), (10**7, 10, "a + b, 1e7 float32 (allocating)")):
        if lib.__name__ == "numpy":
            a, b = lib.ones(n, lib.float32), lib.ones(n, lib.float32)
        else:
            a, b = lib.ones(n, device=device), lib.ones(n, device=device)
        rows.append(Case(label, lambda a=a, b=b: a + b, number, "us" if n < 1000 else "ms"))
    return rows


if __name__ == "__main__":
    run_cases(__file__, cases, columns=("tensorplug", "torch", "numpy", "tensorplug:opencl"))
