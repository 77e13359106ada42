"""A short tour of tensorplug: tensors, broadcasting, views, reductions, matmul, random numbers,
NumPy interop, and how the dispatcher routes a call. Run: python examples/demo.py"""
import time

import numpy as np

import tensorplug as tp


def main() -> None:
    tp.manual_seed(0)
    x = tp.arange(6, dtype=tp.float32).reshape(2, 3)
    print("x =", x)
    print("x.T @ x =", x.T @ x)
    print("x + [10, 20, 30] =", x + tp.tensor([10.0, 20.0, 30.0]))
    print("row sums:", x.sum(dim=1), " max per column:", x.max(dim=0).values)
    print("x[:, 1:] view shares memory:", x[:, 1:].untyped_storage() is x.untyped_storage())
    print("randn(2, 3) with seed 0:", tp.randn(2, 3))
    print("int + float promotes:", (tp.tensor([1, 2]) + 0.5).dtype, "; int8 + uint8 ->", (tp.ones(1, dtype=tp.int8) + tp.ones(1, dtype=tp.uint8)).dtype)

    a = np.arange(4.0)
    t = tp.from_numpy(a)
    t += 1
    print("from_numpy shares memory with NumPy:", a)

    m = tp.randn(512, 512)
    start = time.perf_counter()
    for _ in range(10):
        m @ m
    gflops = 10 * 2 * 512**3 / (time.perf_counter() - start) / 1e9
    print(f"512x512 float32 matmul: {gflops:.0f} GFLOP/s on {tp.get_num_threads()} threads")

    print()
    tp.dispatcher.explain("add", x, x)
    print()
    print(tp.backends.status())
    print("CPU allocator:", {k: v for k, v in tp.cpu.memory_stats().items() if k in ("allocated_bytes", "reserved_bytes", "num_cache_hits")})


if __name__ == "__main__":
    main()
