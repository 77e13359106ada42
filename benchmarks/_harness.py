"""A tiny side-by-side timing harness: same case, every library, one run, medians and ratios.

Machines here are noisy, so each case runs in interleaved rounds (library A, B, C, A, B, C, ...)
and reports the median per call; ratios compare libraries measured in the same run.
"""
from __future__ import annotations

import os

# Both libraries share one libgomp in this process; whichever loads it first fixes its wait
# policy. tensorplug asks for PASSIVE (spinning OpenMP threads starve OpenBLAS on 2 cores), so
# set it before either import for a like-for-like comparison.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import statistics
import time
from typing import Callable

__all__ = ["Case", "run_cases", "optional_torch"]


def optional_torch():
    """PyTorch 2.13 when installed (pip install torch==2.13.0), else None."""
    try:
        import torch
    except ImportError:
        return None
    return torch


class Case:
    """One benchmark row: a name and, per library, a zero-argument callable to time."""

    def __init__(self, name: str, calls: dict[str, Callable[[], object]], number: int, unit: str = "us"):
        self.name = name
        self.calls = calls
        self.number = number
        self.unit = unit


def _time_once(fn: Callable[[], object], number: int) -> float:
    start = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - start) / number


def run_cases(cases: list[Case], rounds: int = 7, baseline: str = "torch") -> list[dict]:
    """Time every case; print a table of medians and tensorplug's ratio to each other library."""
    results = []
    for case in cases:
        for fn in case.calls.values():  # warm-up: caches, allocator, lazy imports
            _time_once(fn, max(1, case.number // 10))
        samples = {lib: [] for lib in case.calls}
        for _ in range(rounds):
            for lib, fn in case.calls.items():
                samples[lib].append(_time_once(fn, case.number))
        medians = {lib: statistics.median(s) for lib, s in samples.items()}
        results.append({"case": case.name, "unit": case.unit, "medians": medians})
        scale = 1e6 if case.unit == "us" else 1e3
        cells = "  ".join(f"{lib} {medians[lib] * scale:9.2f} {case.unit}" for lib in case.calls)
        ratios = "  ".join(
            f"tp/{lib} {medians['tensorplug'] / medians[lib]:5.2f}x" for lib in case.calls if lib != "tensorplug"
        )
        print(f"{case.name:<44} {cells}   {ratios}")
    return results
