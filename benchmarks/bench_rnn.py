"""Recurrent nets, tensorplug against PyTorch 2.13, each library alone in its own process (issue 14).

    python benchmarks/bench_rnn.py [--rounds 5] [--smoke] [--only LSTM]

Cases:

* LSTM 32->64, 2 layers, 35 steps, batch 20: forward under no_grad, and forward + backward of
  the output's sum (gradients accumulate from call to call);
* GRU and RNN (tanh) of the same shape, the same two ways;
* one training step of a word-level LSTM language model: vocabulary 2000, embedding 64, 2-layer
  LSTM 64, 35 steps x batch 20, linear decoder, cross entropy, SGD;
* the word-level LSTM language model end to end: tests/programs/word_language_model.py (the port
  of pytorch/examples' word_language_model on a synthetic corpus: building the corpus, 2 epochs of
  training, evaluation) with its default arguments and its imports switched to the worker's
  library; once run inside the worker (the library already imported), once as a fresh
  interpreter, as a user runs it (start and import included: bench_import.py has the import).

Columns: tensorplug, PyTorch (when installed) and tensorplug on OpenCL (when it can run); see
_harness.py for the method.
"""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np

from _harness import Case, run_cases

PROGRAMS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "programs")


def _recurrent(lib, device, kind):
    """Forward and forward + backward of a 2-layer ``kind`` (LSTM, GRU or RNN) 32->64."""
    lib.manual_seed(0)
    net = getattr(lib.nn, kind)(32, 64, num_layers=2).to(device)
    x = lib.randn(35, 20, 32).to(device)

    def forward():
        with lib.no_grad():
            net(x)

    def forward_backward():
        out, _ = net(x)
        out.sum().backward()

    return forward, forward_backward


def _word_lm_step(lib, device):
    nn = lib.nn

    class WordLM(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(2000, 64)
            self.rnn = nn.LSTM(64, 64, num_layers=2)
            self.decode = nn.Linear(64, 2000)

        def forward(self, tokens):
            out, _ = self.rnn(self.embed(tokens))
            return self.decode(out)

    lib.manual_seed(0)
    model = WordLM().to(device)
    opt = lib.optim.SGD(model.parameters(), lr=0.1)
    tokens = lib.tensor(np.random.default_rng(0).integers(0, 2000, size=(35, 20)), device=device)
    targets = lib.tensor(np.random.default_rng(1).integers(0, 2000, size=(35 * 20,)), device=device)

    def step():
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(tokens).reshape(-1, 2000), targets)
        loss.backward()
        opt.step()

    return step


def _word_lm_program(lib, device):
    """The program run in this worker (its library already imported)."""
    sys.path.insert(0, PROGRAMS)
    import program_runner

    def run():
        program_runner.run_program("word_language_model", ["--device", device, "--quiet"], lib.__name__)

    return run


_FRESH = """
import sys
sys.path.insert(0, sys.argv[1])
import program_runner
program_runner.run_program("word_language_model", ["--device", sys.argv[2], "--quiet"], sys.argv[3])
"""


def _word_lm_process(lib, device):
    """The program in a fresh interpreter, as a user runs it: start and import included. The worker
    waits meanwhile, so the child is still the only busy process; it inherits the worker's
    thread settings through the environment."""

    def run():
        subprocess.run([sys.executable, "-c", _FRESH, PROGRAMS, device, lib.__name__], check=True,
                       stdout=subprocess.DEVNULL)

    return run


def cases(lib, device):
    forward, forward_backward = _recurrent(lib, device, "LSTM")
    gru_forward, gru_forward_backward = _recurrent(lib, device, "GRU")
    rnn_forward, rnn_forward_backward = _recurrent(lib, device, "RNN")
    rows = [
        Case("LSTM 32->64 x2, 35 steps, batch 20: forward", forward, 20, "ms"),
        Case("LSTM same: forward + backward", forward_backward, 10, "ms"),
        Case("GRU 32->64 x2, 35 steps, batch 20: forward", gru_forward, 20, "ms"),
        Case("GRU same: forward + backward", gru_forward_backward, 10, "ms"),
        Case("RNN tanh 32->64 x2, 35 steps, batch 20: forward", rnn_forward, 20, "ms"),
        Case("RNN tanh same: forward + backward", rnn_forward_backward, 10, "ms"),
        Case("word LM training step", _word_lm_step(lib, device), 5, "ms"),
    ]
    if os.path.exists(os.path.join(PROGRAMS, "word_language_model.py")):
        rows.append(Case("word LM end to end, in the worker", _word_lm_program(lib, device), 1, "s"))
        rows.append(Case("word LM end to end, fresh process", _word_lm_process(lib, device), 1, "s"))
    return rows


if __name__ == "__main__":
    run_cases(__file__, cases, columns=("tensorplug", "torch", "tensorplug:opencl"), rounds=5)
