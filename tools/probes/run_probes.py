"""Run a batch of PyTorch idioms under ``import torch`` and under ``import tensorplug as torch``
and list the ones that fail, or give different results, only under tensorplug (issue 13).

A batch is a Python file of functions named ``probe_*``, each taking the library module as its
one argument (``def probe_flip(torch): ...``; an ``import torch.X`` inside a probe gives
tensorplug's ``X`` in the tensorplug run) and returning what the idiom computes: tensors,
numbers, strings, bools, None, or tuples/lists/dicts of them. Inputs that decide values come
from NumPy (``probe_common.data``) because the two libraries' generators differ; idioms whose
results are random return shapes only.

Each library runs in its own process (they never share an interpreter), so the batch file
imports neither. Usage::

    python tools/probes/run_probes.py tools/probes/batch_amp_performance.py [--only NAME] [-v]

Exit status 1 when some idiom misses; the report lists each miss with tensorplug's exception or
the first differing value.
"""
from __future__ import annotations

import argparse
import importlib.abc
import importlib.util
import json
import math
import os
import subprocess
import sys
import traceback
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def _load_batch(path: str):
    spec = importlib.util.spec_from_file_location(os.path.splitext(os.path.basename(path))[0], path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _summary(value, lib):
    """A JSON-able description of an idiom's result that means the same in both libraries."""
    if isinstance(value, lib.Tensor):
        t = value.detach()
        if t.is_sparse if hasattr(t, "is_sparse") else False:
            t = t.to_dense()
        dtype = str(t.dtype).split(".")[-1]
        host = t.cpu()
        if dtype in ("bfloat16", "float16"):
            host = host.float()
        if host.is_complex():
            flat = [[z.real, z.imag] for z in host.reshape(-1).tolist()]
        else:
            flat = host.reshape(-1).tolist()
        return {"tensor": list(t.shape), "dtype": dtype, "values": flat}
    if isinstance(value, (bool, int, str)) or value is None:
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, (tuple, list)):
        return [_summary(v, lib) for v in value]
    if isinstance(value, dict):
        return {str(k): _summary(v, lib) for k, v in value.items()}
    if hasattr(value, "dtype") and hasattr(value, "tolist"):  # a NumPy array or scalar
        return {"array": value.tolist()}
    if isinstance(value, lib.dtype):
        return "dtype:" + str(value).split(".")[-1]
    if isinstance(value, lib.Size):
        return list(value)
    return f"<{type(value).__name__}>"


class _TorchImportsTensorplug(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Makes ``import torch.X`` / ``from torch.X import Y`` inside a probe give tensorplug's
    ``X``: the probes' own import lines switch library as a ported script's do."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname == "torch" or fullname.startswith("torch."):
            return importlib.util.spec_from_loader(fullname, self)
        return None

    def create_module(self, spec):
        module = importlib.import_module("tensorplug" + spec.name[len("torch"):])
        self.own_spec = module.__spec__  # the import system overwrites it; exec_module puts it back
        return module

    def exec_module(self, module):
        """The tensorplug module is already executed; only its own spec is restored (relative
        imports inside it check it)."""
        module.__spec__ = self.own_spec


def run_worker(batch_path: str, library: str, only: str | None) -> dict:
    """Runs every probe of the batch under one library; returns {name: {"ok": summary} or {"error": text}}."""
    sys.path.insert(0, HERE)
    if library == "torch":
        import torch as lib
        lib.set_num_threads(1)
    else:
        sys.path.insert(0, ROOT)
        import tensorplug as lib
        sys.meta_path.insert(0, _TorchImportsTensorplug())
    batch = _load_batch(batch_path)
    results = {}
    for name in sorted(n for n in vars(batch) if n.startswith("probe_")):
        if only and only not in name:
            continue
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                results[name] = {"ok": _summary(getattr(batch, name)(lib), lib)}
            except Exception as error:  # an idiom's failure is the data this tool collects
                frames = traceback.extract_tb(error.__traceback__)
                where = f"{frames[-1].filename.replace(ROOT + os.sep, '')}:{frames[-1].lineno}" if frames else ""
                results[name] = {"error": f"{type(error).__name__}: {error}"[:400], "where": where}
        # DeprecationWarnings come from libraries' own imports (torch's compiler stack), not the idiom.
        results[name]["warnings"] = sorted({w.category.__name__ for w in caught if w.category is not DeprecationWarning})
    return results


def _same(ours, theirs, rtol: float, atol: float) -> str | None:
    """None when equal within tolerance; otherwise where they first differ."""
    if isinstance(theirs, dict) and "tensor" in theirs:
        if not (isinstance(ours, dict) and "tensor" in ours):
            return f"expected a tensor, got {ours!r:.80}"
        if ours["tensor"] != theirs["tensor"] or ours["dtype"] != theirs["dtype"]:
            return f"shape/dtype {ours['tensor']} {ours['dtype']} vs torch {theirs['tensor']} {theirs['dtype']}"
        return _same(ours["values"], theirs["values"], rtol, atol)
    if isinstance(theirs, float) and isinstance(ours, (int, float)) and not isinstance(ours, bool):
        if math.isclose(ours, theirs, rel_tol=rtol, abs_tol=atol):
            return None
        return f"{ours} vs torch {theirs}"
    if isinstance(theirs, list) and isinstance(ours, list):
        if len(ours) != len(theirs):
            return f"length {len(ours)} vs torch {len(theirs)}"
        for i, (a, b) in enumerate(zip(ours, theirs)):
            why = _same(a, b, rtol, atol)
            if why:
                return f"[{i}] {why}"
        return None
    if isinstance(theirs, dict) and isinstance(ours, dict):
        if set(ours) != set(theirs):
            return f"keys {sorted(ours)} vs torch {sorted(theirs)}"
        for key in theirs:
            why = _same(ours[key], theirs[key], rtol, atol)
            if why:
                return f"[{key!r}] {why}"
        return None
    return None if ours == theirs else f"{ours!r:.120} vs torch {theirs!r:.120}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("batch")
    parser.add_argument("--only", help="run the probes whose name contains this")
    parser.add_argument("--worker", choices=("torch", "tensorplug"), help=argparse.SUPPRESS)
    parser.add_argument("--rtol", type=float, default=1e-4)
    parser.add_argument("--atol", type=float, default=1e-5)
    parser.add_argument("-v", "--verbose", action="store_true", help="also list idioms both libraries refuse")
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(run_worker(args.batch, args.worker, args.only)))
        return 0
    reports = {}
    for library in ("torch", "tensorplug"):
        command = [sys.executable, os.path.abspath(__file__), args.batch, "--worker", library]
        if args.only:
            command += ["--only", args.only]
        done = subprocess.run(command, capture_output=True, text=True, timeout=900, cwd=ROOT)
        if done.returncode != 0:
            print(f"{library} worker failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
            return 2
        reports[library] = json.loads(done.stdout.strip().splitlines()[-1])
    misses, both_fail = [], []
    for name, theirs in reports["torch"].items():
        ours = reports["tensorplug"][name]
        if "error" in theirs:
            both_fail.append((name, theirs["error"], ours.get("error")))
            continue
        if "error" in ours:
            misses.append((name, f"{ours['error']}  ({ours['where']})"))
            continue
        why = _same(ours["ok"], theirs["ok"], args.rtol, args.atol)
        if why:
            misses.append((name, "differs: " + why))
        elif set(ours["warnings"]) != set(theirs["warnings"]):
            misses.append((name, f"warnings {ours['warnings']} vs torch {theirs['warnings']}"))
    total = len(reports["torch"])
    print(f"{os.path.basename(args.batch)}: {total} idioms, {len(misses)} miss under tensorplug")
    for name, why in misses:
        print(f"  MISS {name}: {why}")
    if both_fail:
        print(f"  ({len(both_fail)} idioms fail under torch too; -v lists them)")
        if args.verbose:
            for name, theirs, ours in both_fail:
                print(f"  BOTH {name}: torch {theirs}; tensorplug {ours}")
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main())
