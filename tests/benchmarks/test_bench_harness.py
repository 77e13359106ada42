"""benchmarks/_harness.py end to end: workers in their own processes, smoke runs, notes for what is missing."""
import json
import os
import subprocess
import sys
import textwrap

BENCHMARKS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "benchmarks")


def _run(args, cwd):
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=cwd, timeout=120)


def test_bench_add_smoke_run_times_every_case_in_every_column(tmp_path):
    """bench_add.py --smoke times both cases in a tensorplug and a NumPy worker and writes the samples."""
    out = tmp_path / "results.json"
    script = os.path.join(BENCHMARKS, "bench_add.py")
    result = _run([script, "--smoke", "--columns", "tensorplug,numpy", "--json", str(out)], tmp_path)
    assert result.returncode == 0, result.stderr
    rows = json.loads(out.read_text())
    assert [r["case"] for r in rows] == ["a + b, 4 float32", "a + b, 1e7 float32 (allocating)"]
    for row in rows:
        assert set(row["medians"]) == {"tensorplug", "numpy"} and not row["errors"]
        assert all(len(s) == 1 for s in row["samples"].values())
    assert "tp/numpy" in result.stdout


def test_missing_library_is_left_out_and_failing_case_is_reported(tmp_path):
    """An absent library gets a note, a case that raises shows as failed, the other columns go on."""
    (tmp_path / "bench_probe.py").write_text(textwrap.dedent(f"""
        import os, sys
        sys.path.insert(0, {BENCHMARKS!r})
        from _harness import Case, run_cases

        def cases(lib, device):
            def broken():
                raise ValueError("probe failure")
            rows = [Case("ok", lambda: os.getpid(), 3)]
            rows.append(Case("broken", broken if lib.__name__ == "numpy" else (lambda: None), 3))
            rows.append(Case("pid", lambda: print(os.getpid()), 1))
            return rows

        if __name__ == "__main__":
            run_cases(__file__, cases, columns=("tensorplug", "numpy", "no_such_library_xyz"), rounds=2)
    """))
    out = tmp_path / "results.json"
    result = _run(["bench_probe.py", "--json", str(out)], tmp_path)
    assert result.returncode == 0, result.stderr
    assert "no_such_library_xyz: left out: no_such_library_xyz is not installed" in result.stdout
    assert "broken: numpy failed: ValueError: probe failure" in result.stdout
    rows = {r["case"]: r for r in json.loads(out.read_text())}
    assert set(rows["ok"]["medians"]) == {"tensorplug", "numpy"}
    assert set(rows["broken"]["medians"]) == {"tensorplug"}
    # What a case prints goes to stderr, never into the protocol; each column ran in its own process.
    pids = {line for line in result.stderr.split() if line.isdigit()}
    assert len(pids) == 2 and str(os.getpid()) not in pids
