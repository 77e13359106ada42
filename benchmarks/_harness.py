"""Side-by-side timings, each library alone in its own process, in alternating rounds (issue 14).

A bench script declares its cases as a function of one library and hands the rest to run_cases:

    def cases(lib, device):  # lib: the imported module (tensorplug, torch or numpy)
        a, b = lib.ones(4), lib.ones(4)
        return [Case("a + b, 4 float32", lambda: a + b, number=20000)]

    if __name__ == "__main__":
        run_cases(__file__, cases, columns=("tensorplug", "torch", "numpy", "tensorplug:opencl"))

A column is a library, or ``library:device`` for tensors on another device. The script, run
plainly, is the parent: it starts one worker per column (the same script again, with
``--worker COLUMN``), which imports only that library (and NumPy, to build the same inputs for
every library), builds its own cases and times what the parent asks over a pipe. Two OpenMP
runtimes in one process distort both, so no process ever holds two libraries.

For each case the parent warms every worker up, then runs rounds: in each round every worker
times the case once (``number`` calls), one after the other, the order rotating from round to
round so that the machine's noise falls on every library alike. It prints the median per call
over the rounds and tensorplug's ratio to each other library (lower is better).

Every worker runs with the same thread settings: ``OMP_WAIT_POLICY=PASSIVE`` (tensorplug's CPU
backend asks for it: OpenMP threads spinning between kernels starve the BLAS threads on 2 cores)
and ``--threads`` threads (default: every core this process may use), through
``OMP_NUM_THREADS`` and the library's own ``set_num_threads`` where it has one.
tensorplug's load-adaptive thread count is off in the workers (``TENSORPLUG_ADAPTIVE_THREADS=0``):
it samples the machine every 50 ms, and the turns the workers take are shorter, so it read the
other library's turn as a competitor and timed tensorplug's next turn on one thread (sigmoid of
1.28e6 float32 1.27 ms against 0.65 on two; csrc/threads.cpp). The libraries take turns here,
they never compete; a test with a real competitor is the busy-machine row of the README.
A column whose library is not installed, or whose device cannot run, is left out with a note.
"""
from __future__ import annotations

import argparse
import importlib
import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Callable, Sequence

__all__ = ["Case", "run_cases", "device_unavailable"]

_SCALE = {"s": 1.0, "ms": 1e3, "us": 1e6}


@dataclass
class Case:
    """One benchmark row in one library: a zero-argument callable, timed ``number`` calls at a time.

    ``name`` matches the rows of the different libraries; a library without the case (NumPy has
    no conv2d) just leaves it out of its list. ``unit`` is how the table shows the time per call.
    """

    name: str
    fn: Callable[[], object]
    number: int
    unit: str = "us"


CasesFn = Callable[[object, str], Sequence[Case]]


def _parse_args(argv: Sequence[str] | None, rounds: int) -> argparse.Namespace:
    main = sys.modules.get("__main__")
    description = (getattr(main, "__doc__", None) or "").strip().splitlines()[:1]
    parser = argparse.ArgumentParser(description=description[0] if description else None)
    parser.add_argument("--rounds", type=int, default=rounds, help=f"timed rounds per case (default {rounds})")
    parser.add_argument("--only", default="", help="comma-separated substrings: run the cases whose name has one")
    parser.add_argument("--columns", default="", help="comma-separated columns to run (default: the script's)")
    parser.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)),
                        help="threads for every library (default: every core this process may use)")
    parser.add_argument("--smoke", action="store_true",
                        help="check that every case runs: one round of one call, timings meaningless")
    parser.add_argument("--json", metavar="PATH", help="also write the samples and medians to PATH")
    parser.add_argument("--worker", metavar="COLUMN", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def run_cases(script: str, cases: CasesFn, columns: Sequence[str] = ("tensorplug", "torch"),
              rounds: int = 7, argv: Sequence[str] | None = None) -> list[dict]:
    """Time ``cases`` in every column, each in its own process; print and return medians and ratios.

    ``script`` is the calling script's ``__file__``: the workers run it again with ``--worker``.
    """
    args = _parse_args(argv, rounds)
    if args.worker:
        _serve(cases, args.worker, args.threads)
        return []
    chosen = [c for c in args.columns.split(",") if c] or list(columns)
    workers = [_Worker(script, column, args.threads) for column in chosen]
    try:
        return _drive(workers, args)
    finally:
        for worker in workers:
            worker.close()


# --- the parent --------------------------------------------------------------------------------

class _Worker:
    """One column's process, answering one JSON line per request."""

    def __init__(self, script: str, column: str, threads: int) -> None:
        self.column = column
        env = dict(os.environ, OMP_NUM_THREADS=str(threads))
        env.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        env.setdefault("TENSORPLUG_ADAPTIVE_THREADS", "0")  # see the module docstring
        self.process = subprocess.Popen(
            [sys.executable, os.path.abspath(script), "--worker", column, "--threads", str(threads)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env,
        )
        hello = self._read()
        self.skipped = hello.get("skipped") or hello.get("error")
        self.cases = {c["name"]: c for c in hello.get("cases", [])}

    def _read(self) -> dict:
        line = self.process.stdout.readline()
        if not line:
            self.process.wait()
            return {"error": f"worker exited with status {self.process.returncode} (its error is above)"}
        return json.loads(line)

    def ask(self, request: dict) -> dict:
        try:
            self.process.stdin.write(json.dumps(request) + "\n")
            self.process.stdin.flush()
        except BrokenPipeError:
            pass  # _read reports the exit
        return self._read()

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.stdin.close()  # the worker exits at end of input
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def _drive(workers: list[_Worker], args: argparse.Namespace) -> list[dict]:
    notes = [f"{w.column}: left out: {w.skipped}" for w in workers if w.skipped]
    live = [w for w in workers if not w.skipped]
    columns = [w.column for w in live]
    policy = os.environ.get("OMP_WAIT_POLICY", "PASSIVE")
    plan = "smoke run: one call per case, timings meaningless" if args.smoke else f"{args.rounds} rounds, medians per call"
    print(f"{len(columns)} processes, {args.threads} threads each, OMP_WAIT_POLICY={policy}; {plan}")
    for note in notes:
        print(note)
    names: list[str] = []
    for worker in live:
        names += [n for n in worker.cases if n not in names]
    wanted = [s for s in args.only.split(",") if s]
    names = [n for n in names if not wanted or any(s in n for s in wanted)]
    table = _Table(columns, names)
    table.print_header()
    results = []
    for name in names:
        results.append(_time_case(name, live, args))
        table.print_row(results[-1])
    for result in results:
        for column, error in result["errors"].items():
            print(f"{result['case']}: {column} failed: {error}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as file:
            json.dump(results, file, indent=1)
    return results


def _time_case(name: str, live: list[_Worker], args: argparse.Namespace) -> dict:
    having = [w for w in live if name in w.cases]
    first = having[0].cases[name]
    number = 1 if args.smoke else first["number"]
    rounds = 1 if args.smoke else args.rounds
    samples: dict[str, list[float]] = {w.column: [] for w in having}
    errors: dict[str, str] = {}
    for worker in having:  # warm-up: caches, allocator, lazy imports, kernel builds
        reply = worker.ask({"case": name, "number": max(1, number // 10)})
        if "error" in reply:
            errors[worker.column] = reply["error"]
    running = [w for w in having if w.column not in errors]
    for r in range(rounds):
        turn = r % len(running) if running else 0
        for worker in running[turn:] + running[:turn]:
            if worker.column in errors:
                continue
            reply = worker.ask({"case": name, "number": number})
            if "error" in reply:
                errors[worker.column] = reply["error"]
            else:
                samples[worker.column].append(reply["seconds"])
    medians = {c: statistics.median(s) for c, s in samples.items() if s and c not in errors}
    return {"case": name, "unit": first["unit"], "number": number, "samples": samples, "medians": medians,
            "errors": errors}


class _Table:
    """Medians per column, then tensorplug's columns over each other library's (lower is better)."""

    def __init__(self, columns: list[str], names: list[str]) -> None:
        self.columns = columns
        self.name_width = max([len("case"), *map(len, names)]) + 2
        self.pairs = [(s, b) for s in columns if s.startswith("tensorplug") for b in columns
                      if not b.startswith("tensorplug")]
        self.labels = ["tp" + s[len("tensorplug"):] + "/" + b for s, b in self.pairs]
        self.widths = [max(13, len(c) + 2) for c in self.columns]

    def print_header(self) -> None:
        cells = [f"{c:>{w}}" for c, w in zip(self.columns, self.widths)]
        print(f"{'case':<{self.name_width}}" + "".join(cells) + "".join(f"{label:>{len(label) + 2}}" for label in self.labels))

    def print_row(self, result: dict) -> None:
        medians, unit, errors = result["medians"], result["unit"], result["errors"]
        cells = []
        for column, width in zip(self.columns, self.widths):
            if column in medians:
                cells.append(f"{medians[column] * _SCALE[unit]:>{width - 3}.2f} {unit:<2}")
            else:
                cells.append(f"{'failed' if column in errors else '-':>{width}}")
        for (subject, baseline), label in zip(self.pairs, self.labels):
            if subject in medians and baseline in medians:
                cells.append(f"{medians[subject] / medians[baseline]:>{len(label) + 1}.2f}x")
            else:
                cells.append(f"{'-':>{len(label) + 2}}")
        print(f"{result['case']:<{self.name_width}}" + "".join(cells), flush=True)


# --- the worker --------------------------------------------------------------------------------

def _serve(cases: CasesFn, column: str, threads: int) -> None:
    """Build one column's cases, then answer timing requests from stdin until it closes."""
    # Requests and answers use the original stdout; anything the library prints goes to stderr.
    channel = os.fdopen(os.dup(sys.stdout.fileno()), "w", buffering=1)
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())

    def send(message: dict) -> None:
        channel.write(json.dumps(message) + "\n")

    module, _, device = column.partition(":")
    device = device or "cpu"
    try:
        lib = importlib.import_module(module)
    except ImportError as exc:
        hint = " (pip install torch==2.13.0)" if module == "torch" else ""
        send({"skipped": f"{module} is not installed{hint}: {exc}"})
        return
    if hasattr(lib, "set_num_threads"):
        lib.set_num_threads(threads)
    reason = device_unavailable(lib, device)
    if reason:
        send({"skipped": reason})
        return
    runtime = getattr(lib, device, None) if device != "cpu" else None
    sync = getattr(runtime, "synchronize", None) or (lambda: None)
    built = {c.name: c for c in cases(lib, device)}
    send({"cases": [{"name": c.name, "number": c.number, "unit": c.unit} for c in built.values()]})
    for line in sys.stdin:
        request = json.loads(line)
        fn = built[request["case"]].fn
        try:
            sync()
            start = time.perf_counter()
            for _ in range(request["number"]):
                fn()
            sync()  # device work queued by the calls counts
            send({"seconds": (time.perf_counter() - start) / request["number"]})
        except Exception as exc:  # reported in the table; the other cases go on
            send({"error": f"{type(exc).__name__}: {exc}"})


def device_unavailable(lib, device: str) -> str | None:
    """Why ``lib`` cannot run on ``device``, or None when it can."""
    if device == "cpu":
        return None
    if lib.__name__ == "tensorplug":
        rows = [s for s in lib.backends.status() if s.device_type == device]
        if not rows:
            return f"no {device!r} backend is installed"
        if rows[0].state not in ("ready", "loaded"):
            return f"the {device!r} backend is {rows[0].state}: {rows[0].detail}"
    try:
        lib.ones(1, device=device) + 1
    except Exception as exc:  # e.g. a backend that loads but finds no device
        return f"{device} cannot run: {type(exc).__name__}: {exc}"
    return None
