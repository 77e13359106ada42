"""Instructions per call of the small cases, counted with callgrind: numbers that do not move
with the machine's load, unlike timings (docs/performance.md, "Counting instead of timing").

    python benchmarks/count_instructions.py [--cases add,backward] [--number 2000]

Each library runs alone under `valgrind --tool=callgrind`, once with N iterations and once with
none; the difference over N is the count per iteration (imports and setup cancel out). Needs
valgrind; PyTorch's column is left out where it is not installed.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

CASES = {
    # name: (setup, statement), in terms of the library `L`
    "add": ("a = L.ones(4); b = L.ones(4)", "a + b"),
    "backward": ("g = L.ones(4, requires_grad=True); h = L.ones(4, requires_grad=True)",
                 "(g * h).sum().backward()"),
    # A loss read once per step, and a small tensor from a Python list.
    "item": ("x = L.ones(()) * 1.5", "x.item()"),
    # A reduction over one dim: a function taking out=, called without it (issue 13).
    "sum_dim": ("x = L.ones(4, 3)", "L.sum(x, 0)"),
    "tensor": ("L.tensor([0.0])  # the first call loads the CPU backend", "L.tensor([1.0, 2.0, 3.0])"),
    # bench_training.py's small-regression step (pytorch/examples' regression), one statement.
    "regression": ("L.manual_seed(0); fc = L.nn.Linear(4, 1); x = L.randn(32, 4); y = L.randn(32, 1)\n"
                   "def step():\n"
                   "    fc.zero_grad()\n"
                   "    loss = L.nn.functional.smooth_l1_loss(fc(x), y)\n"
                   "    loss.item()\n"
                   "    loss.backward()\n"
                   "    for p in fc.parameters():\n"
                   "        p.data.add_(-0.1 * p.grad)",
                   "step()"),
}


def _child(library: str, case: str, number: int) -> None:
    if library == "torch":
        import torch as L
        L.set_num_threads(1)
    else:
        import tensorplug as L
    setup, statement = CASES[case]
    namespace = {"L": L}
    exec(setup, namespace)
    code = compile(f"for _ in range({number}):\n    {statement}\n", case, "exec")
    exec(code, namespace)


def _count(library: str, case: str, number: int) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, PYTHONHASHSEED="0", OMP_NUM_THREADS="1")
        done = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={tmp}/out",
                               sys.executable, __file__, "--child", library, case, str(number)],
                              env=env, capture_output=True, text=True, check=True)
    found = re.search(r"Collected : (\d+)", done.stderr)
    if not found:
        raise RuntimeError(f"callgrind printed no count:\n{done.stderr[-2000:]}")
    return int(found.group(1))


def main() -> int:
    if len(sys.argv) == 5 and sys.argv[1] == "--child":
        _child(sys.argv[2], sys.argv[3], int(sys.argv[4]))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--number", type=int, default=None, help="iterations (default: 2000 add, item, tensor and sum_dim, 300 the others)")
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        print("valgrind is not installed (apt install valgrind)")
        return 1
    libraries = ["tensorplug"]
    try:
        import importlib.util
        if importlib.util.find_spec("torch") is not None:
            libraries.append("torch")
    except ValueError:
        pass
    print(f"{'case':<10} " + " ".join(f"{name:>12}" for name in libraries) + "   ratio (instructions per call)")
    for case in args.cases.split(","):
        number = args.number or (2000 if case in ("add", "item", "tensor", "sum_dim") else 300)
        counts = [(_count(lib, case, number) - _count(lib, case, 0)) // number for lib in libraries]
        ratio = f"{counts[0] / counts[1]:.2f}x" if len(counts) > 1 else ""
        print(f"{case:<10} " + " ".join(f"{c:>12,}" for c in counts) + f"   {ratio}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
