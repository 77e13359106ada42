"""Speed on a busy machine: each workload alone, then beside a process that keeps one core busy.

A user's laptop or a shared server is rarely idle. On 2 cores, 2-thread kernels whose threads wait
for each other at every parallel region (and an OpenBLAS that splits each GEMM in two equal
halves) slow down far more than the fair share when another process takes one core. The goal
(issue 16) is a slowdown near the fair share: at most 2x the time alone on 2 cores.

Each run is its own process (two OpenMP runtimes in one process distort both); runs alternate
between libraries and between quiet and busy; medians are printed with the busy/alone ratio.

    python benchmarks/bench_busy.py            # all workloads, 3 rounds
    python benchmarks/bench_busy.py --rounds 5 --only sgemm,conv2d
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# One workload = code run in a fresh process that prints its own seconds (setup excluded).
_SETUP = {
    "tensorplug": "import tensorplug as L\nimport tensorplug.nn.functional as F\n",
    "torch": "import torch as L\nimport torch.nn.functional as F\n",
}
_WORKLOADS = {
    "sgemm": """
a, b = L.randn(1024, 1024), L.randn(1024, 1024)
for _ in range(3): a @ b
start = time.perf_counter()
for _ in range(20): a @ b
print(time.perf_counter() - start)
""",
    "conv2d": """
x, w = L.randn(64, 32, 28, 28), L.randn(64, 32, 3, 3)
for _ in range(2): F.conv2d(x, w, padding=1)
start = time.perf_counter()
for _ in range(10): F.conv2d(x, w, padding=1)
print(time.perf_counter() - start)
""",
    "small ops": """
x = L.randn(64, 128)
start = time.perf_counter()
for _ in range(3000): ((x * 2 + 1).relu().sum(1) - 1).abs()
print(time.perf_counter() - start)
""",
    "cnn step": """
model = L.nn.Sequential(L.nn.Conv2d(1, 32, 3, padding=1), L.nn.ReLU(), L.nn.MaxPool2d(2),
                        L.nn.Conv2d(32, 64, 3, padding=1), L.nn.ReLU(), L.nn.MaxPool2d(2), L.nn.Flatten(),
                        L.nn.Linear(64 * 7 * 7, 128), L.nn.ReLU(), L.nn.Linear(128, 10))
opt = L.optim.Adam(model.parameters(), 1e-3)
x, y = L.randn(64, 1, 28, 28), L.randint(0, 10, (64,))
def step():
    opt.zero_grad()
    F.cross_entropy(model(x), y).backward()
    opt.step()
for _ in range(2): step()
start = time.perf_counter()
for _ in range(10): step()
print(time.perf_counter() - start)
""",
}
# tensorplug only: the README's main job, 3 epochs, wall time of the whole script.
_DIGITS = [sys.executable, os.path.join(ROOT, "examples", "train_digits.py"), "--epochs", "3", "--min-accuracy", "0",
           "--out-dir", os.path.join(tempfile.gettempdir(), "tensorplug-busy-digits")]


def _available(library: str) -> bool:
    probe = subprocess.run([sys.executable, "-c", f"import {library}"], capture_output=True)
    return probe.returncode == 0


def _run_once(library: str, workload: str) -> float:
    env = dict(os.environ)
    env.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # as the CPU backend sets it, for a like-for-like run
    if workload == "digits":
        start = time.perf_counter()
        subprocess.run(_DIGITS, check=True, capture_output=True, env=env, cwd=ROOT)
        return time.perf_counter() - start
    code = "import time\n" + _SETUP[library] + _WORKLOADS[workload]
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True, env=env)
    return float(out.stdout.strip().splitlines()[-1])


class _Competitor:
    """A process that keeps one core busy (a pure-Python spin loop) while it lives."""

    def __enter__(self):
        self.process = subprocess.Popen([sys.executable, "-c", "while True: pass"])
        time.sleep(0.5)  # let the scheduler see it
        return self

    def __exit__(self, *exc):
        self.process.kill()
        self.process.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", default="", help="comma-separated workloads (default: all, plus digits)")
    args = parser.parse_args()
    workloads = [w for w in args.only.split(",") if w] or list(_WORKLOADS) + ["digits"]
    libraries = [lib for lib in ("tensorplug", "torch") if _available(lib)]
    times: dict[tuple[str, str, str], list[float]] = {}
    for _ in range(args.rounds):
        for workload in workloads:
            for library in libraries:
                if workload == "digits" and library != "tensorplug":
                    continue
                times.setdefault((workload, library, "alone"), []).append(_run_once(library, workload))
                with _Competitor():
                    times.setdefault((workload, library, "busy"), []).append(_run_once(library, workload))
    print(f"{'workload':<12} {'library':<11} {'alone s':>9} {'busy s':>9} {'busy/alone':>11}")
    for workload in workloads:
        for library in libraries:
            if (workload, library, "alone") not in times:
                continue
            alone = statistics.median(times[(workload, library, "alone")])
            busy = statistics.median(times[(workload, library, "busy")])
            print(f"{workload:<12} {library:<11} {alone:>9.3f} {busy:>9.3f} {busy / alone:>10.2f}x")


if __name__ == "__main__":
    main()
