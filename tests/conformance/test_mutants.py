"""The suite's own mutation check: each mutant of tests/conformance/mutant_backend.py breaks one
rule the backend contract states (NaN propagation, accumulator width, ties to even, shifts past
the width, sign of NaN, the sign of a zero remainder, negative integer powers, float to integer
conversions, exact fills, 64-bit randint ranges). The suite, restricted to the mutant's op, must
fail that op on every dtype the mutant breaks, and nothing else: mutation score 100% on these
rules, no false alarm.

An --ops run is partial and never conformant by design, so the verdict says nothing here: the
failing items do.
"""
import json
import os
import subprocess
import sys

import pytest

from mutant_backend import ENVIRONMENT_VARIABLE, MUTANTS

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.mark.parametrize("name", sorted(MUTANTS))
def test_mutant_is_caught(name, tmp_path):
    mutant = MUTANTS[name]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([HERE, os.environ.get("PYTHONPATH", "")]), **{ENVIRONMENT_VARIABLE: name})
    out = subprocess.run([sys.executable, "-m", "tensorplug.conformance", "--device", "mutantdev", "--plugin",
                          "mutantdev=mutant_backend:plugin", "--ops", mutant.op, "--quick", "--no-progress",
                          "--report-dir", str(tmp_path)], capture_output=True, text=True, env=env, timeout=600)
    assert (tmp_path / "report.json").exists(), out.stdout[-2000:] + out.stderr[-2000:]
    report = json.loads((tmp_path / "report.json").read_text())
    failing = [i for i in report["items"] if i["status"] in ("fail", "error", "crash")]
    where = f"{name} ({mutant.rule}): " + "; ".join(f"{i['category']} {i['op']} {i['dtype']}" for i in failing)
    # Caught on every dtype the mutant breaks directly...
    assert {("forward", mutant.op, d) for d in mutant.dtypes} <= {(i["category"], i["op"], i["dtype"]) for i in failing}, where
    # ...and nothing else is blamed: other dtypes may fail too where the backend computes them
    # through a mutated kernel (the CPU computes bfloat16 in float32), and the "dtype support"
    # capability sums and compares, but no other op or check fails.
    assert all(i["op"] == mutant.op or i["op"] == "dtype support" for i in failing), where
    assert out.returncode == 1


def test_mutants_load_only_when_named(tmp_path):
    """Without a mutant named, the backend refuses to load, with the choices in the message."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([HERE, os.environ.get("PYTHONPATH", "")]))
    env.pop(ENVIRONMENT_VARIABLE, None)
    out = subprocess.run([sys.executable, "-m", "tensorplug.conformance", "--device", "mutantdev", "--plugin",
                          "mutantdev=mutant_backend:plugin", "--ops", "add", "--report-dir", str(tmp_path)],
                         capture_output=True, text=True, env=env, timeout=600)
    assert out.returncode == 2 and "names no mutant" in out.stderr and "round half away from zero" in out.stderr
