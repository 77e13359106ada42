"""Loading a ~400 MB safetensors file: tp.load beside the safetensors package's own load_file.

The file looks like a model's state dict: a few large float32 matrices and many small tensors.
Every load runs in a fresh process (so no library's caches or freed memory help the next run),
libraries alternate run by run, and each row is the median of several runs. Each child reports
the seconds spent in the load call and the growth of its peak resident set size (VmHWM) over the
load, so import costs (and tensorplug's backend start-up) are left out. The file is read once beforehand so every run reads it from
the page cache. tp.load(mmap=True) touches no data while loading; its row shows what mapping
costs, the default row is the like-for-like comparison with load_file.

A copying load is mostly first-touch page faults on fresh memory, whose cost on a virtual machine
depends on what the host and the other processes did just before; hence many runs, rotated
order, and the fastest run beside the median.

Run: python benchmarks/bench_load.py [--runs N] [--path FILE]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

import numpy as np

_CHILD = r"""
import json, sys, time

def peak_kib():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])

flavour, path = sys.argv[1], sys.argv[2]
if flavour.startswith("tensorplug"):
    import tensorplug as tp
    tp.zeros(1)  # the CPU backend starts on first use; start it outside the timing, as import torch does
    kwargs = {"mmap": True} if flavour == "tensorplug-mmap" else {}
    load = lambda: tp.load(path, **kwargs)
elif flavour == "safetensors-numpy":
    from safetensors.numpy import load_file
    load = lambda: load_file(path)
else:
    import torch
    from safetensors.torch import load_file
    load = lambda: load_file(path)
before = peak_kib()
start = time.perf_counter()
state = load()
seconds = time.perf_counter() - start
print(json.dumps({"seconds": seconds, "peak_growth_kib": peak_kib() - before, "tensors": len(state)}))
"""

FLAVOURS = ("tensorplug", "tensorplug-mmap", "safetensors-numpy", "safetensors-torch")
BASELINE = "safetensors-numpy"


def write_state_dict(path: str) -> int:
    """A state-dict-like file of about 400 MB; returns its size in bytes."""
    from safetensors.numpy import save_file

    rng = np.random.default_rng(0)
    state = {}
    for i in range(5):  # 5 x 64 MiB: the big projection matrices
        state[f"layers.{i}.proj.weight"] = rng.standard_normal((4096, 4096), dtype=np.float32)
    for i in range(200):  # 200 x 256 KiB, plus biases, norms and counters: the long tail
        state[f"blocks.{i}.conv.weight"] = rng.standard_normal((256, 256), dtype=np.float32)
        state[f"blocks.{i}.conv.bias"] = rng.standard_normal(256, dtype=np.float32)
        state[f"blocks.{i}.norm.weight"] = np.ones(256, dtype=np.float16)
        state[f"blocks.{i}.norm.num_batches_tracked"] = np.array(i, dtype=np.int64)
    save_file(state, path)
    return os.path.getsize(path)


def measure(flavour: str, path: str, report_failure: bool = True) -> dict | None:
    """One load in a fresh interpreter; None when it fails (the library is not installed, or
    someone is rebuilding it), saying why unless told not to."""
    env = dict(os.environ, OMP_WAIT_POLICY=os.environ.get("OMP_WAIT_POLICY", "PASSIVE"))
    out = subprocess.run([sys.executable, "-c", _CHILD, flavour, path], capture_output=True, text=True, env=env)
    if out.returncode != 0:
        if report_failure:
            last = (out.stderr.strip().splitlines() or ["no output"])[-1]
            print(f"  ({flavour}: a run failed and is left out: {last})")
        return None
    return json.loads(out.stdout)


def run(path: str, runs: int) -> dict:
    size = os.path.getsize(path)
    with open(path, "rb") as warm:  # page cache: every run reads the same cached pages
        while warm.read(1 << 24):
            pass
    samples: dict = {flavour: [] for flavour in FLAVOURS}
    # Libraries that fail on the warm-up run are taken as not installed.
    available = {flavour: measure(flavour, path, report_failure=False) is not None for flavour in FLAVOURS}
    for round_index in range(runs):
        # Rotate who goes first: a run inherits the memory state the previous process left behind.
        shift = round_index % len(FLAVOURS)
        for flavour in FLAVOURS[shift:] + FLAVOURS[:shift]:
            result = measure(flavour, path) if available[flavour] else None
            if result is not None:
                samples[flavour].append(result)
    print(f"file: {size / 1e6:.0f} MB, up to {runs} runs per row: median and fastest load, median peak RSS growth")
    medians = {}
    for flavour in FLAVOURS:
        if not samples[flavour]:
            print(f"{flavour:<20} not available")
            continue
        times = [s["seconds"] for s in samples[flavour]]
        peak = statistics.median(s["peak_growth_kib"] for s in samples[flavour]) * 1024
        medians[flavour] = {"seconds": statistics.median(times), "fastest": min(times), "peak_bytes": peak}
        print(f"{flavour:<20} {statistics.median(times) * 1e3:8.0f} ms (fastest {min(times) * 1e3:6.0f} ms)   "
              f"peak +{peak / 1e6:6.0f} MB ({peak / size:4.2f}x the file)")
    if BASELINE in medians:
        base = medians[BASELINE]
        for flavour in ("tensorplug", "tensorplug-mmap"):
            if flavour in medians:
                m = medians[flavour]
                print(f"{flavour}/{BASELINE}: time {m['seconds'] / base['seconds']:.2f}x "
                      f"(fastest {m['fastest'] / base['fastest']:.2f}x), "
                      f"peak memory {m['peak_bytes'] / max(base['peak_bytes'], 1):.2f}x")
    return {"file_bytes": size, "medians": medians}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--path", help="where to write the test file (default: a temporary directory)")
    args = parser.parse_args()
    if args.path:
        write_state_dict(args.path)
        run(args.path, args.runs)
    else:
        with tempfile.TemporaryDirectory() as folder:
            target = os.path.join(folder, "state.safetensors")
            write_state_dict(target)
            run(target, args.runs)
