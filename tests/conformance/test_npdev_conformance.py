"""tensorplug-conformance on the example plugin (installed from plugins/tensorplug-npdev): every
required item passes. And on the test-only fallbackdev, which lacks primitives: the report names
each missing one and the device is not conformant, though its ops still give right values."""
import importlib.util
import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PLUGINS = os.path.join(HERE, "..", "plugins")


def _run(tmp_path, *args):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([PLUGINS, os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-m", "tensorplug.conformance", "--report-dir", str(tmp_path), "--no-progress", *args],
                         capture_output=True, text=True, env=env, timeout=600)
    report_path = tmp_path / "report.json"
    return out, json.loads(report_path.read_text()) if report_path.exists() else None


@pytest.mark.skipif(importlib.util.find_spec("tensorplug_npdev") is None,
                    reason="the example plugin is not installed: python -m pip install ./plugins/tensorplug-npdev")
def test_npdev_is_conformant(tmp_path):
    """The quick suite on npdev: conformant, exit status 0, every primitive native, no required failure."""
    out, report = _run(tmp_path, "--device", "npdev", "--quick")
    assert report is not None, out.stderr
    failing = [f"{i['category']} {i['op']} {i['dtype']}: {i['message']}" for i in report["items"] if i["status"] in ("fail", "error", "crash")]
    assert not failing, "\n".join(failing)
    assert report["summary"]["conformant"] and report["summary"]["required_failures"] == 0
    assert out.returncode == 0 and "CONFORMANT" in out.stdout
    native = [i for i in report["items"] if i["op"].startswith("native primitive")]
    assert len(native) == len(__import__("tensorplug").backends.PRIMITIVES) and all(i["status"] == "pass" for i in native)


def test_missing_primitives_are_reported(tmp_path):
    """fallbackdev: 'native primitive: mul' fails (it ran through the fallback), add passes, and
    mul's values are still right."""
    out, report = _run(tmp_path, "--device", "fallbackdev", "--plugin", "fallbackdev=fallback_backend:plugin", "--ops", "add,mul")
    assert out.returncode == 1 and report is not None, out.stderr
    missing = {i["op"]: i["message"] for i in report["items"] if i["category"] == "capabilities" and i["status"] == "fail"}
    assert "native primitive: mul" in missing and "native primitive: add" not in missing
    assert "it runs through the fallback" in missing["native primitive: mul"]
    assert any(i["op"] == "mul" and i["dtype"] == "float32" and i["category"] == "forward" and i["status"] == "pass"
               for i in report["items"])
    assert "[required] capabilities native primitive: copy_" in out.stdout and not report["summary"]["conformant"]
