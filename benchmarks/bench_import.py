"""Import time of tensorplug beside PyTorch and NumPy, each in a fresh interpreter (median of 5).

Run: python benchmarks/bench_import.py
"""
from __future__ import annotations

import statistics
import subprocess
import sys


def import_seconds(module: str, runs: int = 5) -> float | None:
    script = f"import time; t = time.perf_counter(); import {module}; print(time.perf_counter() - t)"
    times = []
    for _ in range(runs):
        result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
        if result.returncode != 0:
            return None
        times.append(float(result.stdout))
    return statistics.median(times)


if __name__ == "__main__":
    measured = {name: import_seconds(name) for name in ("tensorplug", "torch", "numpy")}
    for name, seconds in measured.items():
        print(f"import {name:<11} {'not installed' if seconds is None else f'{seconds * 1e3:8.1f} ms'}")
    if measured["torch"]:
        print(f"tensorplug/torch: {measured['tensorplug'] / measured['torch']:.2f}x")
