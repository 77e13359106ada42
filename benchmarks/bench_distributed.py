"""tp.distributed against raw mpi4py, and a DDP step on 2 ranks against 1 (issue 12).

    python benchmarks/bench_distributed.py            # starts itself under mpiexec -n 2

Part 1: all_reduce (SUM) of float32 buffers from 4 KB to 64 MB: tensorplug's ``all_reduce`` on a
CPU tensor against mpi4py's ``Allreduce`` on a NumPy array of the same size, interleaved, medians
over repeats; the ratio is tensorplug's throughput over mpi4py's (1.0 = no overhead).
Part 2: one training step of an MLP (784-512-512-10, Adam) with the same total batch: 1 rank on
256 samples, and 2 ranks on 128 each under DistributedDataParallel.
"""
from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time

import numpy as np

SIZES = [4 << 10, 64 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20]


def _median_time(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def allreduce_table(dist, tp, MPI) -> list[str]:
    comm = MPI.COMM_WORLD
    lines = [f"{'bytes':>10} {'mpi4py MB/s':>12} {'tensorplug MB/s':>16} {'ratio':>6}"]
    for nbytes in SIZES:
        n = nbytes // 4
        array = np.ones(n, dtype=np.float32)
        out = np.empty_like(array)
        tensor = tp.ones(n)
        repeats = max(5, min(200, (64 << 20) // nbytes))
        raw, ours = [], []
        for _ in range(3):  # interleave the two, three rounds
            comm.Barrier()
            raw.append(_median_time(lambda: comm.Allreduce(array, out), repeats))
            comm.Barrier()
            ours.append(_median_time(lambda: dist.all_reduce(tensor), repeats))
        raw_t, our_t = statistics.median(raw), statistics.median(ours)
        lines.append(f"{nbytes:>10} {nbytes / raw_t / 1e6:>12.0f} {nbytes / our_t / 1e6:>16.0f} {raw_t / our_t:>6.2f}")
    return lines


def ddp_step_time(dist, tp, world: int, steps: int = 30) -> float:
    from tensorplug import nn
    from tensorplug.nn.parallel import DistributedDataParallel as DDP
    import tensorplug.nn.functional as F

    tp.manual_seed(0)
    model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
    if world > 1:
        model = DDP(model)
    opt = tp.optim.Adam(model.parameters(), 1e-3)
    batch = 256 // world
    x, y = tp.randn(batch, 784), tp.randint(0, 10, (batch,))

    def step():
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()

    for _ in range(3):
        step()
    return _median_time(step, steps)


def child() -> None:
    import tensorplug as tp
    import tensorplug.distributed as dist

    dist.init_process_group("mpi")
    from mpi4py import MPI

    table = allreduce_table(dist, tp, MPI)
    two = ddp_step_time(dist, tp, dist.get_world_size())
    if dist.get_rank() == 0:
        print("all_reduce float32, 2 ranks on this machine (shared memory):")
        print("\n".join(table))
        print(f"\nMLP step, total batch 256: 2 ranks x 128 under DDP: {two * 1e3:.2f} ms")
        sys.stdout.flush()
    dist.destroy_process_group()


def single() -> None:
    import tensorplug as tp

    one = ddp_step_time(None, tp, 1)
    print(f"MLP step, total batch 256: 1 rank x 256: {one * 1e3:.2f} ms")


def main() -> None:
    if os.environ.get("TP_BENCH_DISTRIBUTED_CHILD"):
        child()
        return
    if os.environ.get("TP_BENCH_DISTRIBUTED_SINGLE"):
        single()
        return
    from tensorplug.distributed.run import find_mpiexec

    launcher = find_mpiexec()
    if launcher is None:
        sys.exit("mpiexec not found: pip install tensorplug[distributed]")
    env = dict(os.environ, TP_BENCH_DISTRIBUTED_CHILD="1")
    subprocess.run([launcher, "-n", "2", sys.executable, os.path.abspath(__file__)], env=env, check=True)
    subprocess.run([sys.executable, os.path.abspath(__file__)], env=dict(os.environ, TP_BENCH_DISTRIBUTED_SINGLE="1"),
                   check=True)


if __name__ == "__main__":
    main()
