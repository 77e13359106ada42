"""tensorplug's CUDA backend beside PyTorch CUDA, in one run on one GPU (issue 11's speed list).

Cases (each timed with the library's own CUDA events, median over rounds):

* ``a + b`` on 1e8 float32, allocating its output: GB/s (12 bytes moved per element);
* 4096 x 4096 matmul in float32 and bfloat16: TFLOP/s;
* a tiny ``a + b`` (4 floats): host microseconds per op (queued back to back, one sync at the end);
* a training step of an MLP 784-512-512-10 (batch 128, Adam): milliseconds, and beside it the host's
  milliseconds to queue a step against the wall time until the GPU is done (host ahead = no stall);
* a training step of a small CNN (conv 32-64, fc 128, 28x28 inputs, batch 64, Adam): milliseconds.

A case that fails for one library prints the error and the others go on. Run:
``python benchmarks/bench_cuda.py [--quick] [--skip-cnn]``. The summary table is printed last.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
import traceback


class Lib:
    """One library's spellings of what the cases need."""

    def __init__(self, name: str) -> None:
        self.name = name
        if name == "torch":
            import torch

            self.m, self.cuda = torch, torch.cuda
        else:
            import tensorplug

            self.m, self.cuda = tensorplug, tensorplug.cuda

    def sync(self) -> None:
        self.cuda.synchronize()

    def event(self):
        return self.cuda.Event(enable_timing=True)


def device_ms(lib: Lib, fn, number: int, rounds: int, round_seconds: float = 0.5) -> float:
    """Median over ``rounds`` of the device time per call of ``fn`` (up to ``number`` calls a
    round: fewer when one call is slow, so that a round takes about ``round_seconds``)."""
    started = time.perf_counter()
    fn()
    lib.sync()
    once = time.perf_counter() - started  # includes first-use costs: an upper bound
    number = max(1, min(number, int(round_seconds / max(once, 1e-9))))
    times = []
    for _ in range(rounds):
        start, end = lib.event(), lib.event()
        start.record()
        for _ in range(number):
            fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / number)
    return statistics.median(times)


def host_us(lib: Lib, fn, number: int, rounds: int) -> float:
    """Median host microseconds per call, queued back to back (the GPU syncs once per round)."""
    fn()
    lib.sync()
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - started) / number * 1e6)
        lib.sync()
    return statistics.median(times)


def host_vs_wall_ms(lib: Lib, fn, number: int) -> tuple[float, float]:
    """(host ms per call to queue ``number`` calls, wall ms per call until the GPU finished them).
    Host well under wall means the host runs ahead of the GPU: no hidden synchronization."""
    lib.sync()
    started = time.perf_counter()
    for _ in range(number):
        fn()
    queued = time.perf_counter()
    lib.sync()
    finished = time.perf_counter()
    return (queued - started) / number * 1e3, (finished - started) / number * 1e3


def case_add(lib: Lib, quick: bool):
    m = lib.m
    n = 10**7 if quick else 10**8
    a, b = m.ones(n, device="cuda"), m.ones(n, device="cuda")
    ms = device_ms(lib, lambda: a + b, 5, 5)
    return 12 * n / (ms * 1e-3) / 1e9, "GB/s", True


def case_matmul(dtype_name: str):
    def run(lib: Lib, quick: bool):
        m = lib.m
        n = 1024 if quick else 4096
        dtype = getattr(m, dtype_name)
        a, b = m.randn(n, n, device="cuda").to(dtype), m.randn(n, n, device="cuda").to(dtype)
        ms = device_ms(lib, lambda: a @ b, 5, 5)
        return 2 * n**3 / (ms * 1e-3) / 1e12, "TFLOP/s", True

    return run


def case_tiny(lib: Lib, quick: bool):
    m = lib.m
    a, b = m.ones(4, device="cuda"), m.ones(4, device="cuda")
    return host_us(lib, lambda: a + b, 2000, 7), "us host", False


def _train_step(lib: Lib, model, x, y):
    m = lib.m
    opt = m.optim.Adam(model.parameters(), lr=1e-3)

    def step():
        loss = m.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()

    return step


def case_mlp(lib: Lib, quick: bool):
    m = lib.m
    m.manual_seed(0)
    nn = m.nn
    model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10)).cuda()
    x, y = m.randn(128, 784, device="cuda"), m.randint(0, 10, (128,), device="cuda")
    step = _train_step(lib, model, x, y)
    ms = device_ms(lib, step, 20, 5)
    host, wall = host_vs_wall_ms(lib, step, 20)
    print(f"{'MLP step host vs GPU':28s} {lib.name:10s} host {host:.3f} ms/step queued, {wall:.3f} ms/step until done, "
          f"GPU {ms:.3f} ms/step (host {'ahead of' if host < 0.9 * wall else 'behind or level with'} the GPU)",
          flush=True)
    return ms, "ms/step", False


def case_cnn(lib: Lib, quick: bool):
    m = lib.m
    m.manual_seed(0)
    nn = m.nn
    model = nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(32, 64, 3, padding=1),
                          nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(64 * 7 * 7, 128), nn.ReLU(),
                          nn.Linear(128, 10)).cuda()
    x, y = m.randn(64, 1, 28, 28, device="cuda"), m.randint(0, 10, (64,), device="cuda")
    step = _train_step(lib, model, x, y)
    return device_ms(lib, step, 5 if quick else 10, 3), "ms/step", False


CASES = [
    ("add 1e8 float32", case_add),
    ("matmul 4096 float32", case_matmul("float32")),
    ("matmul 4096 bfloat16", case_matmul("bfloat16")),
    ("tiny a + b (host)", case_tiny),
    ("MLP 784-512-512-10 step", case_mlp),
    ("CNN 32-64 step", case_cnn),
]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes (a smoke run)")
    parser.add_argument("--skip-cnn", action="store_true")
    parser.add_argument("--budget", type=float, default=50.0,
                        help="seconds: cases that would start later are skipped, so the summary is always printed")
    args = parser.parse_args(argv)
    libs = []
    for name in ("tensorplug", "torch"):
        try:
            lib = Lib(name)
            if not lib.cuda.is_available():
                print(f"{name}: CUDA unavailable, left out")
                continue
            libs.append(lib)
        except ImportError as exc:
            print(f"{name}: not installed ({exc}), left out")
    if not libs:
        print("no library can use CUDA here")
        return 1
    rows = []
    began = time.perf_counter()
    for title, case in CASES:
        if args.skip_cnn and title.startswith("CNN"):
            continue
        if time.perf_counter() - began > args.budget:
            print(f"{title:28s} skipped: past the {args.budget:.0f} s budget", flush=True)
            continue
        results = {}
        for lib in libs:
            started = time.perf_counter()
            try:
                value, unit, higher_better = case(lib, args.quick)
                results[lib.name] = (value, unit, higher_better)
                print(f"{title:28s} {lib.name:10s} {value:10.3f} {unit}  ({time.perf_counter() - started:.1f} s)",
                      flush=True)
            except Exception as exc:
                print(f"{title:28s} {lib.name:10s} FAILED: {type(exc).__name__}: {exc}", flush=True)
                traceback.print_exc(limit=3)
        rows.append((title, results))
    print("\nsummary (tensorplug vs torch; ratio > 1 means tensorplug is better)")
    print(f"{'case':28s} {'tensorplug':>14s} {'torch':>14s} {'ratio':>7s}")
    for title, results in rows:
        tp_r, th_r = results.get("tensorplug"), results.get("torch")
        unit = (tp_r or th_r or (0, "", True))[1]
        cell = lambda r: f"{r[0]:10.3f}" if r else "    failed"  # noqa: E731
        ratio = ""
        if tp_r and th_r and tp_r[0] and th_r[0]:
            ratio = f"{(tp_r[0] / th_r[0]) if tp_r[2] else (th_r[0] / tp_r[0]):.2f}"
        print(f"{title:28s} {cell(tp_r):>14s} {cell(th_r):>14s} {ratio:>7s}  {unit}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
