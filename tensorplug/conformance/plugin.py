"""The conformance suite's pytest plugin.

Load it with ``-p tensorplug.conformance.plugin`` and point pytest at the suite::

    pytest -p tensorplug.conformance.plugin --pyargs tensorplug.conformance.suites \\
        --tensorplug-device npdev --tensorplug-report-dir out/

It parametrizes the suite for the device, marks each item required, declared or not supported,
records results (to a progress file as they happen, so a crash names the item that was running)
and writes report.json and report.html at the end.
"""
from __future__ import annotations

import json
import os
import time

import pytest

from . import _cases, _checks
from ._checks import ConformanceFailure
from ._valueless import refusal_without_values

_RESULTS_KEY = pytest.StashKey[list]()


def pytest_addoption(parser):
    group = parser.getgroup("tensorplug", "tensorplug conformance suite")
    group.addoption("--tensorplug-device", default=None, help="device type to test (e.g. cpu)")
    group.addoption("--tensorplug-ops", default=None, help="only ops matching these comma-separated globs or regexes")
    group.addoption("--tensorplug-quick", action="store_true", help="skip large samples and slow statistical checks")
    group.addoption("--tensorplug-report-dir", default=None, help="write report.json and report.html here")
    group.addoption("--tensorplug-progress", default=None, help="append one JSON line per item event to this file")
    group.addoption("--tensorplug-plugin", action="append", default=[],
                    help="NAME=module:attr: register a backend plugin in-process before testing")


class Context:
    """What the suite knows about the device under test."""

    def __init__(self, config):
        import tensorplug as tp

        self.device = config.getoption("--tensorplug-device")
        self.ops = config.getoption("--tensorplug-ops")
        self.quick = config.getoption("--tensorplug-quick")
        self.backend = resolve_backend(tp, self.device)
        self.declared = frozenset(self.backend.dtypes)
        self.autocast_declared = frozenset(getattr(self.backend, "autocast_dtypes", ()))
        self.has_float64 = "float64" in self.declared


def resolve_backend(tp, device: str):
    """The ready backend for ``device``, or a UsageError naming the installed ones or the reason."""
    refusal = refusal_without_values(device)
    if refusal:
        raise pytest.UsageError(refusal)
    report = {s.device_type: s for s in tp.backends.status()}
    if device not in report:
        installed = ", ".join(f"{name} ({s.state})" for name, s in sorted(report.items()))
        raise pytest.UsageError(f"unknown device {device!r}; installed backends: {installed}")
    status = report[device]
    if status.state in ("unavailable", "failed", "disabled"):
        raise pytest.UsageError(f"device {device!r} is {status.state}: {status.detail or 'no reason given'}")
    try:
        return tp.backends.backend_for(device)
    except Exception as exc:
        raise pytest.UsageError(f"device {device!r} cannot be used: {exc}") from exc


def pytest_configure(config):
    config.addinivalue_line("markers", "tensorplug_case: a conformance suite item (set by the plugin)")
    config.stash[_RESULTS_KEY] = []
    if config.getoption("--tensorplug-device") is None:
        return
    from ..backends import plugin_manager

    for spec in config.getoption("--tensorplug-plugin"):
        name, _, target = spec.partition("=")
        if name not in plugin_manager.records:
            plugin_manager.add(name, target)
    config._tensorplug = Context(config)
    config._tensorplug_progress = config.getoption("--tensorplug-progress")
    config._tensorplug_running = None
    _progress(config, {"event": "begin", "device": config._tensorplug.device})
    if config._tensorplug_progress:
        _checks.set_sample_listener(lambda described: _sample_progress(config, described))


def _sample_progress(config, described):
    """A sample about to run, appended to the progress file. Not fsynced (thousands per run):
    written data outlives a process that dies, and only an OS crash would lose it."""
    with open(config._tensorplug_progress, "a") as f:
        f.write(json.dumps({"event": "sample", "nodeid": config._tensorplug_running, "sample": described}) + "\n")


def pytest_unconfigure(config):
    if getattr(config, "_tensorplug", None) is not None:
        _checks.set_sample_listener(None)


def _progress(config, record):
    path = getattr(config, "_tensorplug_progress", None)
    if path:
        with open(path, "a") as f:
            f.write(json.dumps(record) + "\n")
            f.flush()
            os.fsync(f.fileno())


def _cases_for(kind, ctx):
    if kind == "forward":
        return _cases.forward_cases(ctx.declared, ctx.ops, ctx.autocast_declared)
    if kind == "gradient":
        return _cases.gradient_cases(ctx.declared, ctx.ops)
    if kind == "errors":
        return _cases.error_cases(ctx.declared, ctx.ops)
    if kind == "random":
        return _cases.random_cases(ctx.declared, ctx.ops)
    if kind == "dtypes":
        return _cases.dtype_cases(ctx.declared)
    raise ValueError(kind)


def pytest_generate_tests(metafunc):
    ctx = getattr(metafunc.config, "_tensorplug", None)
    if "case" not in metafunc.fixturenames:
        return
    kind = getattr(metafunc.function, "conformance_cases", None)
    cases = _cases_for(kind, ctx) if ctx is not None and kind else []
    params = []
    for case in cases:
        marks = [pytest.mark.tensorplug_case]
        if case.level == "not supported":
            marks.append(pytest.mark.skip(reason=case.reason))
        params.append(pytest.param(case, id=case.id, marks=marks))
    metafunc.parametrize("case", params)


def pytest_collection_modifyitems(session, config, items):
    ctx = getattr(config, "_tensorplug", None)
    if ctx is None:
        return
    resume = config.getoption("--tensorplug-progress")
    done = set()
    if resume and os.path.exists(resume):
        with open(resume) as f:
            for line in f:
                try:
                    record = json.loads(line)
                except json.JSONDecodeError:  # a line cut short by a crash
                    continue
                if record.get("event") in ("result", "crash"):
                    done.add(record["nodeid"])
    # With an op pattern, the semantic suites are left out; capabilities are cheap and always run.
    keep, dropped = [], []
    for item in items:
        category = getattr(getattr(item, "function", None), "conformance", {}).get("category")
        if item.nodeid in done:
            dropped.append(item)
        elif ctx.ops and "case" not in getattr(item, "fixturenames", ()) and category != "capabilities":
            dropped.append(item)
        else:
            keep.append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep
    _progress(config, {"event": "collected", "count": len(items)})


@pytest.fixture(scope="session")
def conformance(request):
    ctx = getattr(request.config, "_tensorplug", None)
    if ctx is None:
        pytest.skip("no --tensorplug-device given")
    return ctx


@pytest.fixture(scope="session")
def device(conformance):
    return conformance.device


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    # Written (and fsynced) before the item runs: if the process dies, this names the culprit.
    if getattr(item.config, "_tensorplug", None) is not None:
        item.config._tensorplug_running = item.nodeid
        _progress(item.config, {"event": "start", "nodeid": item.nodeid, **_describe_item(item)})


_CONFIG: dict = {}


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session):
    _CONFIG["config"] = session.config


def _describe_item(item):
    case = getattr(item, "callspec", None) and item.callspec.params.get("case")
    meta = dict(getattr(item.function, "conformance", {}))
    if isinstance(case, _cases.Case):
        # The "dtypes" cases are shared by several tests (the round trip, the capability check):
        # each keeps its own label, so that no two tests report under one name.
        if meta and getattr(item.function, "conformance_cases", None) == "dtypes":
            return {"category": meta["category"], "op": meta["op"], "dtype": case.dtype, "level": case.level}
        return {"category": case.category, "op": case.op, "dtype": case.dtype, "level": case.level}
    info = {"category": meta.get("category", "other"), "op": meta.get("op", item.name), "dtype": meta.get("dtype", "-"),
            "level": meta.get("level", "required")}
    params = dict(getattr(getattr(item, "callspec", None), "params", {}))
    if "promo_dtype" in params:
        info["dtype"] = params.pop("promo_dtype")
        info["level"] = _cases.dtype_level(info["dtype"], item.config._tensorplug.declared)
    params.pop("case", None)  # an empty parameter set (every case filtered out by --tensorplug-ops)
    for value in params.values():
        label = "->".join(value) if isinstance(value, tuple) else str(value)
        info["op"] = f"{info['op']}: {label}"
    return info


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if getattr(item.config, "_tensorplug", None) is None:
        return
    report.user_properties.append(("tensorplug", _describe_item(item)))
    if call.excinfo is not None and isinstance(call.excinfo.value, ConformanceFailure):
        report.user_properties.append(("max_error", call.excinfo.value.max_error))
    if call.excinfo is not None:
        report.user_properties.append(("message", f"{call.excinfo.typename}: {call.excinfo.value}"))


def _status(report) -> str | None:
    if report.when == "call":
        return "pass" if report.passed else ("not supported" if report.skipped else "fail")
    if report.failed:
        return "error"
    if report.skipped:
        return "not supported"
    return None


def pytest_runtest_logreport(report):
    config = _CONFIG.get("config")
    if config is None or getattr(config, "_tensorplug", None) is None:
        return
    status = _status(report)
    if status is None:
        return
    props = dict(report.user_properties)
    meta = props.get("tensorplug", {})
    message = props.get("message", "")
    if status == "not supported" and isinstance(report.longrepr, tuple):
        message = report.longrepr[2].removeprefix("Skipped: ")
    if status == "not supported":
        meta = {**meta, "level": "not supported"}
    record = {"event": "result", "nodeid": report.nodeid, **meta, "status": status, "message": message,
              "max_error": props.get("max_error"), "duration": round(report.duration, 4)}
    config.stash[_RESULTS_KEY].append(record)
    _progress(config, record)


def _fallback_ops(device: str) -> list[str]:
    from ..backends import fallback_stats

    return sorted(fallback_stats().get(device, {}))


def pytest_sessionfinish(session):
    # The command line tool builds the report in another process: it learns from here which ops
    # went through the CPU fallback (one record per child process; a crashed one leaves none).
    ctx = getattr(session.config, "_tensorplug", None)
    if ctx is not None:
        _progress(session.config, {"event": "fallback", "ops": _fallback_ops(ctx.device)})


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    ctx = getattr(config, "_tensorplug", None)
    if ctx is None:
        return
    from .report import build_report, summary_table, write_reports

    report = build_report(config.stash[_RESULTS_KEY], ctx.device, ctx.backend, time.time(), fallback_ops=_fallback_ops(ctx.device),
                          ops=ctx.ops, quick=bool(ctx.quick))
    terminalreporter.write_line(summary_table(report))
    directory = config.getoption("--tensorplug-report-dir")
    if directory and not config.getoption("--tensorplug-progress"):
        # With a progress file the command line tool writes the reports (it also sees crashes).
        write_reports(report, directory)
        terminalreporter.write_line(f"reports written to {directory}")
