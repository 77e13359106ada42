"""The shipped conformance suite run on the OpenCL backend (PoCL in CI); skipped, with the reason,
where PyOpenCL or a working OpenCL device is missing."""
import json
import os
import subprocess
import sys

import pytest

from tensorplug.backends.opencl import OpenCLBackend


def _availability():
    try:
        return OpenCLBackend().is_available()
    except Exception as exc:  # a broken runtime is a reason to skip, shown in the skip message
        return False, f"{type(exc).__name__}: {exc}"


AVAILABLE, REASON = _availability()
pytestmark = pytest.mark.skipif(not AVAILABLE, reason=f"OpenCL backend unavailable: {REASON}")


def test_opencl_passes_quick_suite(tmp_path):
    """Every required and declared item passes on opencl (quick mode); both reports are written."""
    out = subprocess.run([sys.executable, "-m", "tensorplug.conformance", "--device", "opencl", "--quick",
                          "--report-dir", str(tmp_path), "--no-progress"],
                         capture_output=True, text=True, env=dict(os.environ), timeout=1800)
    report_path = tmp_path / "report.json"
    assert report_path.exists(), out.stdout[-3000:] + out.stderr[-3000:]
    report = json.loads(report_path.read_text())
    failing = [f"{i['category']} {i['op']} {i['dtype']}: {i['message'][:300]}" for i in report["items"]
               if i["status"] in ("fail", "error", "crash")]
    assert not failing, "\n".join(failing)
    assert report["summary"]["conformant"] and out.returncode == 0
    assert report["summary"]["passed"] > 1000
