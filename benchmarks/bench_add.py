"""a + b side by side: tiny tensors (per-call overhead) and 1e7 elements (allocation + bandwidth).

Run: python benchmarks/bench_add.py   (PyTorch rows appear when torch==2.13.0 is installed)
"""
from __future__ import annotations

import numpy as np

import tensorplug as tp
from _harness import Case, optional_torch, run_cases


def cases() -> list[Case]:
    torch = optional_torch()
    rows = []
    for n, number, label in ((4, 20000, "a + b, 4 float32"), (10**7, 10, "a + b, 1e7 float32 (allocating)")):
        unit = "us" if n < 1000 else "ms"
        a_np, b_np = np.ones(n, np.float32), np.ones(n, np.float32)
        a_tp, b_tp = tp.ones(n), tp.ones(n)
        calls = {"tensorplug": lambda a=a_tp, b=b_tp: a + b}
        if torch is not None:
            a_t, b_t = torch.ones(n), torch.ones(n)
            calls["torch"] = lambda a=a_t, b=b_t: a + b
        calls["numpy"] = lambda a=a_np, b=b_np: a + b
        rows.append(Case(label, calls, number, unit))
    return rows


if __name__ == "__main__":
    torch = optional_torch()
    threads = tp.get_num_threads()
    if torch is not None:
        torch.set_num_threads(threads)
    print(f"tensorplug {tp.__version__}, torch {torch.__version__ if torch else 'not installed'}, numpy {np.__version__}, {threads} threads")
    run_cases(cases())
