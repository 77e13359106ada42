"""The shipped conformance suite run on every backend present: the CPU backend passes it, and
deliberately broken backends are caught, with the op and dtype named in the report."""
import html
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PLUGINS = os.path.join(HERE, "..", "plugins")


def _run(tmp_path, *args):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([HERE, PLUGINS, os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-m", "tensorplug.conformance", "--report-dir", str(tmp_path), "--no-progress", *args],
                         capture_output=True, text=True, env=env, timeout=600)
    report = None
    if (tmp_path / "report.json").exists():
        report = json.loads((tmp_path / "report.json").read_text())
    return out, report


def _failing(report):
    return [i for i in report["items"] if i["status"] in ("fail", "error", "crash")]


def test_cpu_passes_quick_suite(tmp_path):
    """The CPU backend is conformant (quick mode), and both reports are written."""
    out, report = _run(tmp_path, "--device", "cpu", "--quick")
    assert report is not None, out.stderr
    assert report["schema"] == "tensorplug-conformance-report" and report["schema_version"] == 1
    failing = {(i["category"], i["op"], i["dtype"]): i["message"] for i in _failing(report)}
    assert failing == {}, "\n".join(f"{k}: {m}" for k, m in failing.items())
    assert out.returncode == 0
    assert (tmp_path / "report.html").read_text().startswith("<!DOCTYPE html>")
    assert report["summary"]["passed"] > 1000
    labels = [(i["category"], i["op"], i["dtype"]) for i in report["items"]]
    assert len(labels) == len(set(labels)), "two report items share a label"
    assert ("copies", "round trip", "float32") in labels and ("capabilities", "dtype support", "float32") in labels
    # The certificate level: every optional dtype passes; no op runs through the fallback.
    from tensorplug.backends.api import OPTIONAL_DTYPES

    level = report["conformance"]
    assert level["level"] == "conformant"
    assert sorted(level["optional_dtypes_passing"]) == sorted(OPTIONAL_DTYPES) and level["cpu_fallback_ops"] == []
    assert report["certificate"]["plugin"]["distribution"] == "tensorplug"


def test_off_by_one_add_is_caught(tmp_path):
    """A backend whose add is off by one fails add on every dtype it runs, and nothing unrelated."""
    out, report = _run(tmp_path, "--device", "brokendev", "--plugin", "brokendev=broken_backend:plugin", "--ops", "add,mul,neg")
    assert out.returncode == 1, out.stdout + out.stderr
    failed = {(i["op"], i["dtype"]) for i in _failing(report) if i["category"] == "forward"}
    assert {("add", "float32"), ("add", "int64"), ("add", "float16")} <= failed
    assert not {op for op, _ in failed} - {"add"}
    item = next(i for i in report["items"] if (i["op"], i["dtype"], i["category"]) == ("add", "float32", "forward"))
    assert item["max_error"] == pytest.approx(1.0) and "expected" in item["message"]
    assert "add" in (tmp_path / "report.html").read_text()


def test_crashing_kernel_is_named(tmp_path):
    """A kernel that kills the process on one layout is reported as a crash of that op, naming the
    sample that was running (name, shapes, dtypes, layouts); the run goes on."""
    junit = tmp_path / "junit.xml"
    out, report = _run(tmp_path, "--device", "crashdev", "--plugin", "crashdev=crashing_backend:plugin", "--ops", "neg,abs",
                       "--junit-xml", str(junit))
    assert out.returncode == 1
    crashes = [i for i in report["items"] if i["status"] == "crash"]
    crashed = {(i["op"], i["dtype"]) for i in crashes}
    assert ("neg", "float32") in crashed and all(op == "neg" for op, _ in crashed)
    assert any(i["op"] == "abs" and i["status"] == "pass" for i in report["items"])
    forward = next(i for i in crashes if (i["category"], i["dtype"]) == ("forward", "float32"))
    # The crashing backend dies only on a transposed view: the earlier samples ran and passed.
    assert forward["sample"]["name"] == "transposed" and forward["sample"]["op"] == "neg"
    assert forward["sample"]["args"] == [{"shape": [4, 6], "dtype": "float32", "layout": "transposed"}]
    assert "sample 'transposed' (transposed [4, 6] float32)" in forward["message"]
    assert html.escape("sample 'transposed' (transposed [4, 6] float32)") in (tmp_path / "report.html").read_text()
    # JUnit XML: a crash is an <error> carrying the same message.
    errors = {(c.get("classname").rsplit(".", 1)[1], c.get("name")): c.find("error")
              for c in ET.parse(junit).getroot().iter("testcase") if c.find("error") is not None}
    assert len(errors) == len(crashes) and errors["forward", "neg [float32]"].get("type") == "crash"
    assert "sample 'transposed'" in errors["forward", "neg [float32]"].get("message")


def test_toy_plugin_is_reported_not_conformant(tmp_path):
    """The toy plugin (three primitives) runs to the end; its missing primitives are named."""
    out, report = _run(tmp_path, "--device", "toydev", "--plugin", "toydev=toy_backend:plugin", "--ops", "add,mul")
    assert out.returncode == 1 and report is not None
    missing = {i["op"] for i in report["items"] if i["category"] == "capabilities" and i["status"] == "fail"}
    assert "native primitive: mul" in missing and "native primitive: add" not in missing
    assert any(i["op"] == "add" and i["dtype"] == "float32" and i["status"] == "pass" for i in report["items"])


def test_unknown_device_lists_installed(tmp_path):
    out, _ = _run(tmp_path, "--device", "nosuchdev")
    assert out.returncode == 2 and "unknown device 'nosuchdev'" in out.stderr and "cpu" in out.stderr


def test_pytest_plugin_runs_in_process():
    """Vendors can run the suite from pytest: -p tensorplug.conformance.plugin --tensorplug-device."""
    suites = os.path.join(os.path.dirname(__import__("tensorplug.conformance").conformance.__file__), "suites")
    out = subprocess.run([sys.executable, "-m", "pytest", suites, "-p", "tensorplug.conformance.plugin", "-q", "-p", "no:cacheprovider",
                          "--tensorplug-device", "cpu", "--tensorplug-ops", "add", "-k", "forward"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-3000:]
    assert "tensorplug conformance: device 'cpu'" in out.stdout


def test_leaves_no_temporary_files_and_no_carriage_returns(tmp_path):
    """The command removes its temporary folder and, off a terminal, writes no progress bar."""
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = dict(os.environ, TMPDIR=str(scratch))
    out = subprocess.run([sys.executable, "-m", "tensorplug.conformance", "--report-dir", str(tmp_path / "report"),
                          "--device", "cpu", "--ops", "neg"], capture_output=True, text=True, env=env, timeout=600)
    assert out.returncode == 1, out.stdout + out.stderr  # a partial run (--ops) is not conformant
    assert list(scratch.iterdir()) == []
    assert "\r" not in out.stdout + out.stderr
    kept = subprocess.run([sys.executable, "-m", "tensorplug.conformance", "--report-dir", str(tmp_path / "report"),
                           "--device", "cpu", "--ops", "neg", "--keep-temp"], capture_output=True, text=True, env=env, timeout=600)
    assert len(list(scratch.iterdir())) == 1 and "kept in" in kept.stderr
