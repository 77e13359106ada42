"""Runs a ported program as a script and returns the results it prints on its last line.

A ported program differs from its PyTorch original only in the module named by its import
lines, so `switch_imports` is the whole port in either direction. Run as a script, this module
runs programs under PyTorch in one process (one `import torch` for all of them) and prints
{program: results} as JSON; the test module calls it in a subprocess, so that PyTorch and
tensorplug never share an interpreter.

    python program_runner.py torch '{"mnist_cnn": ["--device", "cpu", "--dropout", "0"]}'
"""
import contextlib
import io
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

# `import tensorplug`, `import tensorplug.nn as nn`, `from tensorplug.utils.data import ...`:
# the module name right after `import` or `from` at the start of a line, and nowhere else.
_IMPORT_LINE = re.compile(r"^(\s*(?:import|from)\s+)tensorplug\b", re.MULTILINE)


def switch_imports(source: str, module: str) -> str:
    """The program's source with its import lines naming `module` instead of tensorplug."""
    return _IMPORT_LINE.sub(lambda match: match.group(1) + module, source)


def run_source(source: str, path: str, argv: list[str]) -> dict:
    """Run `source` as the __main__ script `path` with `argv`; the JSON object on its last line."""
    saved_argv = sys.argv
    sys.argv = [path, *argv]
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(source, path, "exec"), {"__name__": "__main__", "__file__": path})
    finally:
        sys.argv = saved_argv
    lines = out.getvalue().strip().splitlines()
    if not lines:
        raise RuntimeError(f"{os.path.basename(path)} printed nothing; expected its results as JSON")
    return json.loads(lines[-1])


def program_path(name: str) -> str:
    return os.path.join(HERE, f"{name}.py")


def run_program(name: str, argv: list[str], module: str = "tensorplug") -> dict:
    """Run the program `name` with its imports switched to `module`."""
    path = program_path(name)
    with open(path, encoding="utf-8") as file:
        source = file.read()
    return run_source(switch_imports(source, module), path, argv)


if __name__ == "__main__":
    module, runs = sys.argv[1], json.loads(sys.argv[2])
    if module == "torch":
        import torch

        # These programs are far too small for intra-op threads: on a busy 2-core machine
        # PyTorch's OpenMP threads wait on each other and a 0.3 s program took 9 s.
        torch.set_num_threads(1)
    results = {}
    for name, argv in runs.items():
        try:
            results[name] = {"ok": run_program(name, argv, module)}
        except Exception as exc:  # reported per program; one failure must not hide the others
            results[name] = {"error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(results))
