"""Peak memory of an MLP training step (784-512-512-10, batch 128), each library in a fresh
process: the growth of the peak resident set size over the step, and tensorplug's own
allocator peak. Run: python benchmarks/bench_memory.py
"""
from __future__ import annotations

import json
import subprocess
import sys

_SCRIPT = r"""
import json, resource, sys
import numpy as np
lib_name = sys.argv[1]
if lib_name == "torch":
    import torch as lib
    lib.set_num_threads(2)
else:
    import tensorplug as lib
rng = np.random.default_rng(0)
sizes = [784, 512, 512, 10]
params = []
for fan_in, fan_out in zip(sizes, sizes[1:]):
    params.append(lib.tensor((rng.standard_normal((fan_in, fan_out)) / np.sqrt(fan_in)).astype(np.float32), requires_grad=True))
    params.append(lib.tensor(np.zeros(fan_out, np.float32), requires_grad=True))
x = lib.tensor(rng.standard_normal((128, 784)).astype(np.float32))

def step():
    h = x
    for i in range(0, len(params), 2):
        h = h @ params[i] + params[i + 1]
        if i + 2 < len(params):
            h = h.relu()
    loss = (h * h).mean()
    loss.backward()
    with lib.no_grad():
        for p in params:
            p -= 0.01 * p.grad
            p.grad = None

step()
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
if lib_name == "tensorplug":
    lib.cpu.reset_peak_memory_stats()
    base = lib.cpu.memory_allocated()
for _ in range(5):
    step()
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
result = {"rss_growth_kib": after - before, "rss_peak_kib": after}
if lib_name == "tensorplug":
    result["allocator_peak_over_live_kib"] = (lib.cpu.max_memory_allocated() - base) // 1024
print(json.dumps(result))
"""


def measure(lib: str):
    out = subprocess.run([sys.executable, "-c", _SCRIPT, lib], capture_output=True, text=True)
    if out.returncode != 0:
        return None
    return json.loads(out.stdout)


if __name__ == "__main__":
    for lib in ("tensorplug", "torch"):
        print(lib, measure(lib) or "not installed")
