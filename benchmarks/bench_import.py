"""Import time of tensorplug beside PyTorch and NumPy, each in a fresh interpreter.

Two cases: the import alone, and the import followed by a program's first op (a tensor of three
ones plus one), which is what every script pays: the first tensor loads the CPU backend (its
compiled kernels and OpenBLAS). Each round starts one interpreter per library, the order rotating
from round to round; the table shows medians.

Python is allowed to cache bytecode (an inherited PYTHONDONTWRITEBYTECODE is dropped, and one
untimed run per library writes the cache first): otherwise every run would recompile the package.

Run: python benchmarks/bench_import.py [--rounds N]
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys

FIRST_OP = {"tensorplug": "tensorplug.ones(3) + 1", "torch": "torch.ones(3) + 1", "numpy": "numpy.ones(3) + 1"}


def _seconds(module: str, first_op: bool, env: dict) -> float | None:
    body = f"import {module}" + (f"; {FIRST_OP[module]}" if first_op else "")
    script = f"import time; t = time.perf_counter(); {body}; print(time.perf_counter() - t)"
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env)
    return float(result.stdout) if result.returncode == 0 else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    modules = [m for m in FIRST_OP if _seconds(m, True, env) is not None]  # also writes the bytecode caches
    for first_op in (False, True):
        samples: dict[str, list[float]] = {m: [] for m in modules}
        for r in range(args.rounds):
            for m in modules[r % len(modules):] + modules[:r % len(modules)]:
                samples[m].append(_seconds(m, first_op, env))
        medians = {m: statistics.median(s) for m, s in samples.items()}
        label = "import + first op" if first_op else "import"
        for m in FIRST_OP:
            shown = f"{medians[m] * 1e3:8.1f} ms" if m in medians else "not installed"
            print(f"{label:<18} {m:<11} {shown}")
        if "torch" in medians:
            print(f"{label:<18} tensorplug/torch: {medians['tensorplug'] / medians['torch']:.2f}x")


if __name__ == "__main__":
    main()
