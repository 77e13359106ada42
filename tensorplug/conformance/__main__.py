"""``tensorplug-conformance --device NAME [--ops PATTERN] [--report-dir DIR] [--quick] [--junit-xml PATH]``

Runs the conformance suite (pytest with the conformance plugin) in a child process that records
each item to a progress file before running it; if a kernel kills the process, the item that was
running is reported as a crash and the suite resumes in a new process after it.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

_SUITES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "suites")
_MAX_RESTARTS = 50


def _parser():
    p = argparse.ArgumentParser(prog="tensorplug-conformance", description="Run the tensorplug conformance suite on a backend.")
    p.add_argument("--device", required=True, help="device type to test (e.g. cpu)")
    p.add_argument("--ops", default=None, help="only ops matching these comma-separated globs or regexes (e.g. 'add,log*')")
    p.add_argument("--report-dir", default="conformance-report", help="where report.json and report.html go")
    p.add_argument("--quick", action="store_true", help="skip large samples, fewer random numbers")
    p.add_argument("--plugin", action="append", default=[], metavar="NAME=module:attr",
                   help="register a backend plugin in-process first (for backends not installed as packages)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar (there is none unless stderr is a terminal)")
    p.add_argument("--junit-xml", default=None, metavar="PATH",
                   help="also write the results as JUnit XML (one testcase per report item) for CI systems")
    p.add_argument("--keep-temp", action="store_true", help="keep the suite's temporary folder (its path is printed)")
    return p


def _check_device(device: str, plugins) -> str | None:
    """An error message if ``device`` is unknown or unusable, else None."""
    import tensorplug as tp
    from tensorplug.backends import plugin_manager

    from ._valueless import refusal_without_values

    refusal = refusal_without_values(device)
    if refusal:
        return refusal
    for spec in plugins:
        name, _, target = spec.partition("=")
        if name not in plugin_manager.records:
            plugin_manager.add(name, target)
    report = {s.device_type: s for s in tp.backends.status()}
    if device not in report:
        installed = ", ".join(f"{n} ({s.state})" for n, s in sorted(report.items()))
        return f"unknown device {device!r}; installed backends: {installed}"
    status = report[device]
    if status.state in ("unavailable", "failed", "disabled"):
        return f"device {device!r} is {status.state}: {status.detail or 'no reason given'}"
    try:
        tp.backends.backend_for(device)
    except Exception as exc:
        return f"device {device!r} cannot be used: {exc}"
    return None


def _read(progress: str) -> list[dict]:
    if not os.path.exists(progress):
        return []
    records = []
    with open(progress) as f:
        for line in f:
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:  # a line cut short by a crash
                pass
    return records


class _Tail:
    """Reads the records appended to a progress file since the last call (whole lines only)."""

    def __init__(self, path: str):
        self.path = path
        self.offset = 0

    def new_records(self) -> list[dict]:
        if not os.path.exists(self.path):
            return []
        with open(self.path, "rb") as f:
            f.seek(self.offset)
            chunk = f.read()
        end = chunk.rfind(b"\n") + 1  # a line still being written is read next time
        self.offset += end
        records = []
        for line in chunk[:end].splitlines():
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                pass
        return records


class _Bar:
    """A one-line progress bar redrawn with carriage returns: only on a terminal, so that logs and
    CI output get no control characters."""

    def __init__(self, enabled: bool):
        self.enabled = enabled and sys.stderr.isatty()
        self.last = 0.0

    def update(self, done: int, total: int, label: str, force=False):
        now = time.monotonic()
        if not self.enabled or (not force and now - self.last < 0.2) or not total:
            return
        self.last = now
        width = 30
        filled = int(width * min(done, total) / total)
        text = f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} {label[:60]:<60}"
        sys.stderr.write(text)
        sys.stderr.flush()

    def close(self):
        if self.enabled:
            sys.stderr.write("\n")


def run(args) -> int:
    message = _check_device(args.device, args.plugin)
    if message:
        print(f"tensorplug-conformance: {message}", file=sys.stderr)
        return 2
    os.makedirs(args.report_dir, exist_ok=True)
    progress = os.path.join(args.report_dir, "progress.jsonl")
    log_path = os.path.join(args.report_dir, "pytest.log")
    for path in (progress, log_path):
        if os.path.exists(path):
            os.remove(path)
    work = tempfile.mkdtemp(prefix="tensorplug-conformance-")
    try:
        return _run_suite(args, work, progress, log_path)
    finally:
        if args.keep_temp:
            print(f"tensorplug-conformance: temporary files kept in {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)


def _run_suite(args, work: str, progress: str, log_path: str) -> int:
    """Runs the suite in child processes (restarted after a crash) and writes the reports."""
    ini = os.path.join(work, "pytest.ini")
    with open(ini, "w") as f:  # our own config: the caller's pytest settings must not change results
        f.write("[pytest]\naddopts =\nxfail_strict = true\n")
    command = [sys.executable, "-m", "pytest", _SUITES, "-c", ini, "--rootdir", work, "-p", "tensorplug.conformance.plugin",
               "-p", "no:cacheprovider", "--basetemp", os.path.join(work, "tmp"), "-q", "--tb=short", "-rN",
               "--tensorplug-device", args.device,
               "--tensorplug-progress", progress, "--tensorplug-report-dir", args.report_dir]
    if args.ops:
        command += ["--tensorplug-ops", args.ops]
    if args.quick:
        command.append("--tensorplug-quick")
    for spec in args.plugin:
        command += ["--tensorplug-plugin", spec]
    env = dict(os.environ)
    # Make plugins given as module paths importable in the child as they are here.
    env["PYTHONPATH"] = os.pathsep.join([p for p in sys.path if p] + [env.get("PYTHONPATH", "")])
    bar = _Bar(not args.no_progress)
    started = time.time()
    total = None
    crashes = 0
    with open(log_path, "a") as log:
        for attempt in range(_MAX_RESTARTS):
            child = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
            try:
                tail = _Tail(progress)
                done, current = set(), None
                while child.poll() is None:
                    time.sleep(0.2)
                    if not bar.enabled:
                        continue
                    # Only the lines written since the last look: the file holds a line per sample.
                    for r in tail.new_records():
                        event = r.get("event")
                        if event == "collected":
                            total = total or r["count"]
                        elif event in ("result", "crash"):
                            done.add(r["nodeid"])
                        elif event == "start":
                            current = r
                    bar.update(len(done), total or 0, f"{current['category']} {current['op']} {current['dtype']}" if current else "collecting")
            finally:
                if child.poll() is None:  # interrupted (Ctrl-C): the child must not outlive us
                    child.kill()
                    child.wait()
            records = _read(progress)
            finished = {r["nodeid"] for r in records if r.get("event") in ("result", "crash")}
            running = [r for r in records if r.get("event") == "start" and r["nodeid"] not in finished]
            if child.returncode in (0, 1, 5) or not running:
                if child.returncode not in (0, 1, 5):
                    bar.close()
                    print(f"tensorplug-conformance: pytest exited with status {child.returncode}; see {log_path}", file=sys.stderr)
                    return 3
                break
            culprit = running[-1]
            crashes += 1
            crash = _crash_record(culprit, records, child.returncode)
            with open(progress, "a") as f:
                f.write(json.dumps(crash) + "\n")
    total = total or next((r["count"] for r in _read(progress) if r.get("event") == "collected"), None)
    bar.update(total or 0, total or 0, "done", force=True)
    bar.close()

    from tensorplug.backends import backend_for

    from .report import build_report, summary_table, write_reports

    results, fallback_ops = {}, set()
    for r in _read(progress):
        if r.get("event") in ("result", "crash"):
            results[r["nodeid"]] = r  # a crash record wins over nothing; a result is final
        elif r.get("event") == "fallback":
            fallback_ops.update(r["ops"])
    report = build_report(list(results.values()), args.device, backend_for(args.device), time.time(),
                          fallback_ops=sorted(fallback_ops), quick=bool(args.quick), ops=args.ops,
                          duration_s=round(time.time() - started, 2), process_restarts=crashes)
    json_path, html_path = write_reports(report, args.report_dir)
    written = [json_path, html_path]
    if args.junit_xml:
        from .junit import write_junit

        written.append(write_junit(report, args.junit_xml))
    print(summary_table(report))
    print(f"\ntime: {time.time() - started:.1f} s; reports: {', '.join(written)}")
    return 0 if report["summary"]["conformant"] else 1


def _crash_record(culprit: dict, records: list[dict], returncode: int) -> dict:
    """The report record of an item whose process died, naming the last sample it started."""
    from ._checks import sample_summary

    how = f"signal {-returncode}" if returncode < 0 else f"exit status {returncode}"
    sample = next((r["sample"] for r in reversed(records) if r.get("event") == "sample" and r.get("nodeid") == culprit["nodeid"]), None)
    during = f" in {sample_summary(sample)}" if sample else ""
    return {"event": "crash", "nodeid": culprit["nodeid"], **{k: culprit[k] for k in ("category", "op", "dtype", "level")},
            "status": "crash", "sample": sample,
            "message": f"the process died ({how}) while running {culprit['nodeid']}{during}; "
                       "the suite resumed after it in a new process", "max_error": None, "duration": None}


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    code = run(args)
    if argv is None:
        sys.exit(code)
    return code


if __name__ == "__main__":
    main()
