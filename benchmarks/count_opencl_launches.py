"""Kernel launches per call on the OpenCL backend, counted instead of timed (issue 14).

    python benchmarks/count_opencl_launches.py [--only LSTM] [--top 8]

Timings on these shared machines move with the load; launches do not, and on PoCL each one costs
10-100 us of host time whatever it computes, so a count says how far a case is launch-bound.
Every kernel object the backend builds is wrapped to count its calls (host copies are not
kernels and are not counted); each case runs twice to warm up, then once counted. The cases are
bench_autograd.py's (the tiny backward, the MLP), bench_rnn.py's recurrent ones and
bench_training.py's training steps (the same shapes and seeds).
"""
from __future__ import annotations

import argparse
import collections
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import tensorplug as tp  # noqa: E402
from bench_autograd import cases as _autograd_cases  # noqa: E402
from bench_rnn import _recurrent, _word_lm_step  # noqa: E402
from bench_training import cases as _training_cases  # noqa: E402


class _Counted:
    """A built kernel that counts its launches by name."""

    def __init__(self, kernel, name: str, counts: collections.Counter):
        self._kernel, self._name, self._counts = kernel, name, counts

    def __call__(self, *args, **kwargs):
        self._counts[self._name] += 1
        return self._kernel(*args, **kwargs)


def _install(counts: collections.Counter) -> None:
    from tensorplug.backends.opencl import storage

    tp.ones(1, device="opencl")  # loads the backend
    for state in storage.devices():
        build = state.build_kernel
        for key, kernel in state.kernels.items():  # (family, dtype, name) -> kernel, cached before
            state.kernels[key] = _Counted(kernel, key[2], counts)

        def counted(family, dtype, name, build=build):
            return _Counted(build(family, dtype, name), name, counts)

        state.build_kernel = counted


def _cases():
    forward, forward_backward = _recurrent(tp, "opencl", "LSTM")
    gru_forward, gru_forward_backward = _recurrent(tp, "opencl", "GRU")
    rnn_forward, rnn_forward_backward = _recurrent(tp, "opencl", "RNN")
    return [*((case.name, case.fn) for case in _autograd_cases(tp, "opencl")),
            ("LSTM forward", forward), ("LSTM forward + backward", forward_backward),
            ("GRU forward", gru_forward), ("GRU forward + backward", gru_forward_backward),
            ("RNN tanh forward", rnn_forward), ("RNN tanh forward + backward", rnn_forward_backward),
            ("word LM training step", _word_lm_step(tp, "opencl")),
            *((f"{case.name} training step", case.fn) for case in _training_cases(tp, "opencl"))]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="comma-separated substrings of the case names to run")
    parser.add_argument("--top", type=int, default=6, help="kernels to list per case, most launched first")
    args = parser.parse_args(argv)
    counts = collections.Counter()
    _install(counts)
    wanted = [w for w in args.only.split(",") if w]
    for name, fn in _cases():
        if wanted and not any(w in name for w in wanted):
            continue
        fn()
        fn()
        tp.opencl.synchronize()
        counts.clear()
        fn()
        tp.opencl.synchronize()
        top = ", ".join(f"{k} {v}" for k, v in counts.most_common(args.top))
        print(f"{name:32s} {sum(counts.values()):6d} launches  ({top})")


if __name__ == "__main__":
    main()
