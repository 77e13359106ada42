"""A performance model of one DistributedDataParallel step (docs/distributed.md explains it).

    python benchmarks/ddp_model.py                      # NCCL predictions, 1 to 64 GPUs
    python benchmarks/ddp_model.py --measured-here ...  # the same model with this machine's MPI

A ring all-reduce of S bytes over p ranks takes  t(S) = 2 (p - 1) a + S * 2 (p - 1) / p / busbw,
with a the per-hop latency and busbw the engine's bus bandwidth (what nccl-tests prints). DDP
starts bucket i's all-reduce when backward has produced its gradients (at a fraction of backward
proportional to the parameters behind it) and the engine runs buckets one after another, so

    step = forward + max(backward, end of the last bucket's all-reduce) + optimizer.
"""
from __future__ import annotations

import argparse


def allreduce_seconds(nbytes: float, ranks: int, busbw: float, latency: float) -> float:
    if ranks == 1:
        return 0.0
    return 2 * (ranks - 1) * latency + nbytes * 2 * (ranks - 1) / ranks / busbw


def step_seconds(grad_bytes: float, forward: float, backward: float, optimizer: float, ranks: int, busbw: float,
                 latency: float, bucket_bytes: float = 25 * 2**20) -> tuple[float, float]:
    """(step time, communication time left exposed after backward)."""
    buckets = []
    left = grad_bytes
    while left > 0:
        buckets.append(min(bucket_bytes, left))
        left -= bucket_bytes
    done_bytes, engine_free = 0.0, 0.0
    for size in buckets:
        done_bytes += size
        ready = backward * done_bytes / grad_bytes  # the last layers' gradients come first
        engine_free = max(engine_free, ready) + allreduce_seconds(size, ranks, busbw, latency)
    exposed = max(0.0, engine_free - backward)
    return forward + backward + exposed + optimizer, exposed


def table(name: str, grad_bytes: float, forward: float, backward: float, optimizer: float,
          links: list[tuple[int, float, float]]) -> str:
    lines = [f"{name}: {grad_bytes / 2**20:.0f} MiB of gradients, compute {1e3 * (forward + backward + optimizer):.1f} ms "
             "per step per rank",
             f"{'ranks':>6} {'busbw GB/s':>11} {'all-reduce ms':>14} {'exposed ms':>11} {'step ms':>8} {'efficiency':>11}"]
    single = forward + backward + optimizer
    for ranks, busbw, latency in links:
        step, exposed = step_seconds(grad_bytes, forward, backward, optimizer, ranks, busbw, latency)
        comm = allreduce_seconds(grad_bytes, ranks, busbw, latency)
        lines.append(f"{ranks:>6} {busbw / 1e9:>11.0f} {comm * 1e3:>14.2f} {exposed * 1e3:>11.2f} {step * 1e3:>8.1f} "
                     f"{single / step:>10.0%}")
    return "\n".join(lines)


# Published nccl-tests bus bandwidths for large all-reduces (see docs/distributed.md): 8 H100 SXM
# on NVLink 4 about 470 GB/s; across nodes, 8 x 400 Gb/s InfiniBand per node bound it near
# 400 GB/s, of which NCCL's hierarchical rings reach roughly 350-370.
NCCL_LINKS = [(1, 470e9, 0), (2, 470e9, 5e-6), (4, 470e9, 5e-6), (8, 470e9, 5e-6), (16, 360e9, 10e-6),
              (32, 360e9, 10e-6), (64, 350e9, 12e-6)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--measured-here", nargs=5, type=float, metavar=("GRAD_MB", "FWD_MS", "BWD_MS", "OPT_MS", "BUSBW_MBS"),
                        help="predict a 2-rank step on this machine from measured pieces")
    args = parser.parse_args()
    if args.measured_here:
        grad_mb, fwd, bwd, opt, busbw = args.measured_here
        step, exposed = step_seconds(grad_mb * 2**20, fwd / 1e3, bwd / 1e3, opt / 1e3, 2, busbw * 1e6, 5e-6)
        print(f"predicted 2-rank step: {step * 1e3:.2f} ms (exposed communication {exposed * 1e3:.2f} ms)")
        return
    # GPT-2 small (124M parameters, float32 gradients), 8 x 1024 tokens per GPU, bfloat16 compute
    # at 40% of an H100's 990 TFLOP/s dense peak: 6 * params * tokens FLOPs per step.
    flops = 6 * 124e6 * 8 * 1024
    compute = flops / (0.4 * 990e12)
    print(table("GPT-2 small", 124e6 * 4, compute / 3, 2 * compute / 3, 1.5e-3, NCCL_LINKS))
    print()
    # ResNet-50 (25.6M parameters), batch 64 per GPU: about 4.1 GFLOP per image forward.
    flops = 3 * 4.1e9 * 64
    compute = flops / (0.4 * 990e12)
    print(table("ResNet-50", 25.6e6 * 4, compute / 3, 2 * compute / 3, 0.5e-3, NCCL_LINKS))


if __name__ == "__main__":
    main()
