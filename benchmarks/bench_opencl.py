"""The OpenCL backend measured side by side, in one run, on the same device and queue:

* ``a + b`` on 1e7 float32: tensorplug (allocating its output from the pool) against a
  hand-written one-element-per-work-item kernel into a preallocated output, in GB/s
  (12 bytes moved per element);
* per-op overhead of a tiny ``a + b`` (4 floats): tensorplug against pyopencl.array, each
  launched back to back with one finish at the end, and each with a finish per op;
* first-use latency: a fresh process's first ``a + b`` on opencl (backend load, device probe,
  program build, code generation), with the on-disk kernel caches cold and warm.

Run: python benchmarks/bench_opencl.py   (needs pip install tensorplug[opencl])

tensorplug on OpenCL beside tensorplug and PyTorch on the CPU, case by case (training steps, LSTM,
nn ops, the tiny op and backward), is the ``tensorplug:opencl`` column of the other scripts.
"""
from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

import tensorplug as tp
from _harness import device_unavailable

HANDWRITTEN = """
__kernel void add(__global const float* a, __global const float* b, __global float* c, long n) {
    long i = get_global_id(0);
    if (i < n) c[i] = a[i] + b[i];
}
"""


def _median_time(fn, number: int, rounds: int = 7, sync=None) -> float:
    fn()
    if sync:
        sync()
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        if sync:
            sync()
        samples.append((time.perf_counter() - start) / number)
    return statistics.median(samples)


def bench_add_bandwidth(n: int = 10_000_000) -> dict:
    import pyopencl as cl

    from tensorplug.backends.api import backend_storage
    from tensorplug.backends.opencl import storage

    state = storage.devices()[0]
    queue = state.queue
    a = tp.rand(n, device="opencl")
    b = tp.rand(n, device="opencl")
    program = cl.Program(state.context, HANDWRITTEN).build()
    kernel = program.add
    kernel.set_scalar_arg_dtypes([None, None, None, np.int64])
    c_buf = cl.Buffer(state.context, cl.mem_flags.READ_WRITE, 4 * n)
    a_buf, b_buf = backend_storage(a).buffer, backend_storage(b).buffer
    group = 256
    size = (n + group - 1) // group * group

    def handwritten():
        kernel(queue, (size,), (group,), a_buf, b_buf, c_buf, n)

    def tensorplug_add():
        return a + b

    out = tp.empty(n, device="opencl")

    def tensorplug_add_out():
        tp.add(a, b, out=out)

    sync = queue.finish
    times = {}
    for _ in range(2):  # interleave the three, twice, and keep the best median of each
        for name, fn in (("hand-written kernel", handwritten), ("tensorplug a + b", tensorplug_add),
                         ("tensorplug add(out=)", tensorplug_add_out)):
            t = _median_time(fn, 10, rounds=5, sync=sync)
            times[name] = min(times.get(name, t), t)
    np.testing.assert_allclose((a + b)[:5].cpu().numpy(), a[:5].cpu().numpy() + b[:5].cpu().numpy(), rtol=1e-6)
    return {name: 12 * n / t / 1e9 for name, t in times.items()}


def bench_tiny_overhead() -> dict:
    import pyopencl.array as cla

    from tensorplug.backends.opencl import storage

    queue = storage.devices()[0].queue
    a = tp.ones(4, device="opencl")
    b = tp.ones(4, device="opencl")
    x = cla.to_device(queue, np.ones(4, dtype=np.float32))
    y = cla.to_device(queue, np.ones(4, dtype=np.float32))
    rows = {
        "tensorplug a + b (no finish)": _median_time(lambda: a + b, 2000, sync=queue.finish),
        "pyopencl.array x + y (no finish)": _median_time(lambda: x + y, 500, sync=queue.finish),
        "tensorplug a + b, finish each": _median_time(lambda: (a + b, queue.finish()), 1000),
        "pyopencl.array x + y, finish each": _median_time(lambda: (x + y, queue.finish()), 500),
    }
    return {name: t * 1e6 for name, t in rows.items()}


_FIRST_USE = """
import time
t0 = time.perf_counter()
import tensorplug as tp
t1 = time.perf_counter()
a = tp.ones(4, device="opencl")
t2 = time.perf_counter()
b = a + a
b.tolist()
t3 = time.perf_counter()
c = a * a
c.tolist()
t4 = time.perf_counter()
print(f"{t1 - t0:.3f} {t2 - t1:.3f} {t3 - t2:.3f} {t4 - t3:.3f}")
"""


def bench_first_use() -> dict:
    rows = {}
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, POCL_CACHE_DIR=os.path.join(cache, "pocl"), XDG_CACHE_HOME=cache)
        for label in ("cold caches", "warm caches"):
            out = subprocess.run([sys.executable, "-c", _FIRST_USE], capture_output=True, text=True, env=env, check=True)
            rows[label] = [float(v) for v in out.stdout.split()]
    return rows


def main() -> None:
    reason = device_unavailable(tp, "opencl")
    if reason:
        print(f"skipped: {reason}")
        return
    print("OpenCL backend:", "; ".join(tp.backends.backend_for("opencl").describe_devices()))
    bw = bench_add_bandwidth()
    print("\nadd, 1e7 float32 (GB/s, 12 bytes per element)")
    for name, gbs in bw.items():
        print(f"  {name:<34} {gbs:7.1f} GB/s")
    print(f"  tensorplug / hand-written: {bw['tensorplug a + b'] / bw['hand-written kernel']:.2f} (a + b), "
          f"{bw['tensorplug add(out=)'] / bw['hand-written kernel']:.2f} (out=)")
    print("\ntiny a + b (4 floats), per op")
    for name, us in bench_tiny_overhead().items():
        print(f"  {name:<36} {us:8.1f} us")
    print("\nfirst use in a fresh process (s): import, first opencl tensor (load + device probe), "
          "first a + a (build + codegen), first a * a")
    for label, (imp, load, first, second) in bench_first_use().items():
        print(f"  {label:<12} import {imp:.2f}  load {load:.2f}  first add {first:.2f}  first mul {second:.2f}")


if __name__ == "__main__":
    main()
