"""Recurrent nets, tensorplug against PyTorch 2.13, each library alone in its own process (issue 14).

    python benchmarks/bench_rnn.py [--rounds 5]

Cases: LSTM 32->64, 2 layers, 35 steps, batch 20 (forward under no_grad; forward + backward), and
one training step of a word-level LSTM language model (vocabulary 2000, embedding 64, 2-layer
LSTM 64, 35 steps x batch 20, linear decoder, cross entropy, SGD). Each process times every case
(median of 20 calls after warm-up); processes alternate between the libraries, and the table shows
the median over rounds and tensorplug's ratio (lower is better).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

_CHILD = r"""
import json, statistics, sys, time
L = __import__(sys.argv[1])
import numpy as np
L.manual_seed(0)

def timed(fn, number=20):
    for _ in range(3):
        fn()
    times = []
    for _ in range(number):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)

lstm = L.nn.LSTM(32, 64, num_layers=2)
x = L.randn(35, 20, 32)

def forward():
    with L.no_grad():
        lstm(x)

def forward_backward():
    out, _ = lstm(x)
    out.sum().backward()

class WordLM(L.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = L.nn.Embedding(2000, 64)
        self.rnn = L.nn.LSTM(64, 64, num_layers=2)
        self.decode = L.nn.Linear(64, 2000)

    def forward(self, tokens):
        out, _ = self.rnn(self.embed(tokens))
        return self.decode(out)

model = WordLM()
opt = L.optim.SGD(model.parameters(), lr=0.1)
tokens = L.tensor(np.random.default_rng(0).integers(0, 2000, size=(35, 20)))
targets = L.tensor(np.random.default_rng(1).integers(0, 2000, size=(35 * 20,)))

def lm_step():
    opt.zero_grad()
    loss = L.nn.functional.cross_entropy(model(tokens).reshape(-1, 2000), targets)
    loss.backward()
    opt.step()

print(json.dumps({"LSTM forward": timed(forward), "LSTM forward+backward": timed(forward_backward),
                  "word LM training step": timed(lm_step, 10)}))
"""


def _available(library: str) -> bool:
    return subprocess.run([sys.executable, "-c", f"import {library}"], capture_output=True).returncode == 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    libraries = [lib for lib in ("tensorplug", "torch") if _available(lib)]
    env = dict(os.environ)
    env.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # as tensorplug's CPU backend sets it
    samples: dict = {}
    for _ in range(args.rounds):
        for library in libraries:
            out = subprocess.run([sys.executable, "-c", _CHILD, library], capture_output=True, text=True, env=env,
                                 check=True)
            for case, seconds in json.loads(out.stdout.strip().splitlines()[-1]).items():
                samples.setdefault(case, {}).setdefault(library, []).append(seconds)
    for case, by_library in samples.items():
        medians = {lib: statistics.median(v) for lib, v in by_library.items()}
        cells = "  ".join(f"{lib} {medians[lib] * 1e3:8.2f} ms" for lib in libraries)
        ratio = f"   tp/torch {medians['tensorplug'] / medians['torch']:.2f}x" if "torch" in medians else ""
        print(f"{case:<26} {cells}{ratio}")


if __name__ == "__main__":
    main()
