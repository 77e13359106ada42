"""What a report certifies: the certificate fields (device, driver, package and version, software,
a timestamp with its offset), the JUnit XML file CI systems read, and the machine-readable
conformance level. Each is checked against an independent source (importlib.metadata, platform,
NumPy, the report's own items) on a short --ops run."""
import datetime
import importlib.util
import json
import os
import platform
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections import Counter

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PLUGINS = os.path.join(HERE, "..", "plugins")


def _run(tmp_path, *args):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([HERE, PLUGINS, os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-m", "tensorplug.conformance", "--report-dir", str(tmp_path), "--no-progress", *args],
                         capture_output=True, text=True, env=env, timeout=600)
    path = tmp_path / "report.json"
    return out, json.loads(path.read_text()) if path.exists() else None


@pytest.mark.skipif(importlib.util.find_spec("tensorplug_npdev") is None,
                    reason="the example plugin is not installed: python -m pip install ./plugins/tensorplug-npdev")
def test_certificate_names_device_package_and_software(tmp_path):
    from importlib import metadata

    before = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    out, report = _run(tmp_path, "--device", "npdev", "--ops", "add")
    assert report is not None, out.stderr
    cert = report["certificate"]
    assert cert["device"] == "npdev" and cert["devices"] == ["npdev:0"]
    assert cert["plugin"]["distribution"] == "tensorplug-npdev"
    assert cert["plugin"]["version"] == metadata.version("tensorplug-npdev")
    assert cert["plugin"]["entry_point"] == "npdev = tensorplug_npdev:plugin"
    assert cert["python_version"] == platform.python_version() and cert["numpy_version"] == np.__version__
    assert cert["os"] == platform.platform() and cert["tensorplug_version"] == metadata.version("tensorplug")
    created = datetime.datetime.fromisoformat(report["created"])
    assert created.tzinfo is not None, report["created"]  # ISO 8601 with its UTC offset
    assert before <= created <= datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=1)
    page = (tmp_path / "report.html").read_text()
    head = page[:page.index("<h2>")]  # the certificate is at the top, before any grid
    for text in ("tensorplug-npdev 0.1.0", "npdev:0", platform.python_version(), np.__version__, report["created"]):
        assert text in head, text
    assert "tensorplug-npdev 0.1.0" in out.stdout


def _junit_counts(path):
    root = ET.parse(path).getroot()
    cases = root.findall("./testsuite/testcase")
    return root, {
        "tests": len(cases),
        "failures": sum(1 for c in cases if c.find("failure") is not None),
        "errors": sum(1 for c in cases if c.find("error") is not None),
        "skipped": sum(1 for c in cases if c.find("skipped") is not None),
    }


def test_junit_xml_and_level_on_a_backend_with_missing_primitives(tmp_path):
    """fallbackdev (few primitives, four dtypes): one testcase per item, failures for the missing
    primitives, skipped for undeclared dtypes; the level lists the ops that ran through the fallback."""
    junit = tmp_path / "junit.xml"
    out, report = _run(tmp_path, "--device", "fallbackdev", "--plugin", "fallbackdev=fallback_backend:plugin", "--ops", "add,mul",
                       "--junit-xml", str(junit))
    assert report is not None and junit.exists(), out.stderr
    statuses = Counter(i["status"] for i in report["items"])
    root, counts = _junit_counts(junit)
    assert counts == {"tests": len(report["items"]), "failures": statuses["fail"],
                      "errors": statuses["error"] + statuses["crash"], "skipped": statuses["not supported"]}
    assert counts["failures"] > 0 and counts["skipped"] > 0
    assert {k: int(root.get(k)) for k in counts} == counts
    failed = {c.get("name") for c in root.iter("testcase") if c.find("failure") is not None}
    assert "native primitive: mul" in failed and "native primitive: add" not in failed
    mul = next(c for c in root.iter("testcase") if c.get("name") == "native primitive: mul")
    assert "runs through the fallback" in mul.find("failure").get("message")
    assert next(p.get("value") for p in root.iter("property") if p.get("name") == "device") == "fallbackdev"

    level = report["conformance"]
    assert level["level"] == "partial" and not report["summary"]["conformant"]
    assert "mul" in level["cpu_fallback_ops"] and "copy_" in level["cpu_fallback_ops"]
    assert not {"add", "neg", "sum", "fill_"} & set(level["cpu_fallback_ops"])
    assert level["optional_dtypes_passing"] == ["float64"]
