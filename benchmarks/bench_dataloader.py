"""DataLoader throughput: batches of 64x3x224x224 float32 images (38.5 MB each) from a synthetic
in-memory dataset, in the main process (num_workers=0) and from 2 worker processes, tensorplug
and PyTorch. Each (library, num_workers) run is a fresh process; runs alternate between the
libraries and modes, and the table shows medians over the rounds.

Every run uses persistent workers, iterates one warm-up epoch (worker start-up is not timed),
then times ``--epochs`` epochs of 8 batches. The consumer sums each batch (``--consume sum``,
the default) so that the batch's memory is really read in the main process, as a training step
would; ``--consume none`` only receives the batches. Run:

python benchmarks/bench_dataloader.py [--rounds 5] [--epochs 3] [--consume sum|none]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

# Same OpenMP wait policy as the other benchmarks (see _harness): spinning OpenMP threads
# starve the other processes on a 2-core machine.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

BATCH, SHAPE, POOL, SAMPLES = 64, (3, 224, 224), 16, 512
BATCH_BYTES = BATCH * int(np.prod(SHAPE)) * 4


class SyntheticImages:
    """``SAMPLES`` images cycled from a pool of ``POOL`` random ones (made on first use in each
    process, so the dataset pickles to workers as a few bytes), each with an int label.

    Subclassing the library's Dataset is not needed: both DataLoaders accept any object with
    ``__getitem__`` and ``__len__``."""

    def __init__(self, lib_name: str) -> None:
        self.lib_name = lib_name
        self._pool = None

    def __getstate__(self):
        return {"lib_name": self.lib_name, "_pool": None}

    def __len__(self) -> int:
        return SAMPLES

    def __getitem__(self, i: int):
        if self._pool is None:
            lib = _import(self.lib_name)
            rng = np.random.default_rng(0)
            self._pool = [lib.from_numpy(rng.standard_normal(SHAPE, dtype=np.float32)) for _ in range(POOL)]
        return self._pool[i % POOL], i


def _import(lib_name: str):
    if lib_name == "torch":
        import torch

        return torch
    import tensorplug

    return tensorplug


def _child(lib_name: str, num_workers: int, epochs: int, consume: str) -> None:
    """One timed run: prints {"mb_per_s": ...} as JSON."""
    lib = _import(lib_name)
    loader = lib.utils.data.DataLoader(SyntheticImages(lib_name), batch_size=BATCH, num_workers=num_workers,
                                       persistent_workers=num_workers > 0)
    checksum = 0.0

    def epoch() -> int:
        nonlocal checksum
        count = 0
        for images, labels in loader:
            if images.shape != (BATCH, *SHAPE):
                raise RuntimeError(f"unexpected batch shape {tuple(images.shape)}")
            if consume == "sum":
                checksum += float(images.sum())
            count += 1
        return count

    epoch()  # warm-up: worker start-up, allocator, first-use costs
    pids = [os.getpid()] + _worker_pids(loader)
    cpu_before = _cpu_seconds(pids)
    start = time.perf_counter()
    batches = sum(epoch() for _ in range(epochs))
    elapsed = time.perf_counter() - start
    cpu = _cpu_seconds(pids) - cpu_before
    print(json.dumps({"mb_per_s": batches * BATCH_BYTES / elapsed / 1e6, "cpu_ms_per_batch": cpu / batches * 1e3,
                      "checksum": checksum}))


def _worker_pids(loader) -> list[int]:
    """The process ids of a persistent-worker loader's workers (none without workers)."""
    if hasattr(loader, "_persistent_iterator"):  # tensorplug: the iterator's source is its worker pool
        processes = getattr(getattr(loader._persistent_iterator, "_source", None), "_processes", [])
    else:  # PyTorch
        processes = getattr(loader._iterator, "_workers", [])
    return [process.pid for process in processes]


def _cpu_seconds(pids) -> float:
    """User + system CPU time of these processes (Linux /proc; 0 elsewhere): unlike wall time,
    it does not depend on what else the machine runs."""
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            return 0.0
        total += int(fields[11]) + int(fields[12])  # utime, stime in clock ticks
    return total / os.sysconf("SC_CLK_TCK")


def _run(lib_name: str, num_workers: int, epochs: int, consume: str) -> dict:
    cmd = [sys.executable, os.path.abspath(__file__), "--child", lib_name, str(num_workers), "--epochs", str(epochs),
           "--consume", consume]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"{lib_name} num_workers={num_workers} failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--consume", choices=["sum", "none"], default="sum")
    parser.add_argument("--libs", default="tensorplug,torch")
    parser.add_argument("--child", nargs=2, metavar=("LIB", "NUM_WORKERS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.child[0], int(args.child[1]), args.epochs, args.consume)
        return

    libs = [lib for lib in args.libs.split(",") if lib != "torch" or _torch_installed()]
    modes = [0, 2]
    samples = {(lib, w): [] for lib in libs for w in modes}
    for _ in range(args.rounds):  # interleaved: every library and mode once per round
        for w in modes:
            for lib in libs:
                samples[lib, w].append(_run(lib, w, args.epochs, args.consume))
    medians = {key: statistics.median(r["mb_per_s"] for r in runs) for key, runs in samples.items()}
    cpu = {key: statistics.median(r["cpu_ms_per_batch"] for r in runs) for key, runs in samples.items()}
    print(f"{os.cpu_count()} CPUs; batches of {BATCH}x{'x'.join(map(str, SHAPE))} float32 ({BATCH_BYTES / 1e6:.1f} MB); "
          f"consume={args.consume}; median of {args.rounds} runs; MB/s, and CPU ms per batch summed over the main "
          "process and its workers")
    for lib in libs:
        in_process, workers = medians[lib, 0], medians[lib, 2]
        print(f"{lib:<11} num_workers=0 {in_process:6.0f} MB/s {cpu[lib, 0]:5.1f} ms CPU   "
              f"num_workers=2 {workers:6.0f} MB/s {cpu[lib, 2]:5.1f} ms CPU   workers/in-process {workers / in_process:5.2f}x")
    if len(libs) == 2:
        for w in modes:
            print(f"tensorplug/torch num_workers={w}: {medians['tensorplug', w] / medians['torch', w]:5.2f}x")


def _torch_installed() -> bool:
    try:
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


if __name__ == "__main__":
    main()
