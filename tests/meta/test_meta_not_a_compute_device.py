"""The meta device is a backend like the others, but no place to compute: ``tp.accelerator``
never picks it, it has no device module, and the conformance suite refuses it with the reason."""
import os
import subprocess
import sys

import pytest

import tensorplug as tp
from tensorplug.conformance.__main__ import main as conformance_main


def test_registered_through_the_entry_point():
    lines = {line.device_type: line for line in tp.backends.status()}
    assert lines["meta"].plugin.startswith("plugin 'meta' (tensorplug.backends.meta:plugin")
    backend = tp.backends.backend_for("meta")
    assert backend.device_type == "meta" and {"float32", "int64", "bool", "bfloat16", "uint8"} <= backend.dtypes


def test_accelerator_never_picks_meta(monkeypatch):
    tp.empty(1, device="meta")  # a backend in use is still no accelerator
    assert tp.accelerator.current_accelerator() != tp.device("meta")
    monkeypatch.setenv("TENSORPLUG_ACCELERATOR", "meta")  # not even when named
    found = tp.accelerator.current_accelerator()
    assert found is None or found.type != "meta"
    assert tp.accelerator.is_available() == (found is not None)


def test_no_device_module():
    with pytest.raises(AttributeError, match="'meta' device has no runtime"):
        tp.meta  # noqa: B018  (PyTorch has no torch.meta either)


def test_no_device_module_in_pytorch_either():
    torch = pytest.importorskip("torch")
    assert not hasattr(torch, "meta")


def test_conformance_refuses_meta(capsys):
    assert conformance_main(["--device", "meta", "--no-progress"]) == 2
    message = capsys.readouterr().err
    assert "device 'meta' has no values to check" in message and "compares the values each op computes" in message


def test_conformance_pytest_plugin_refuses_meta():
    suites = os.path.join(os.path.dirname(__import__("tensorplug.conformance").conformance.__file__), "suites")
    out = subprocess.run([sys.executable, "-m", "pytest", suites, "-p", "tensorplug.conformance.plugin", "-q",
                          "-p", "no:cacheprovider", "--tensorplug-device", "meta"], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode != 0 and "device 'meta' has no values to check" in out.stdout + out.stderr


def test_an_op_without_a_meta_kernel_is_refused_by_name():
    """The backend's fallback (for an op with no kernel and no decomposition) names the op instead
    of copying meta tensors to the CPU, which cannot be done."""
    fallback = tp.backends.backend_for("meta").fallback()

    class SomeOp:
        name = "vendor_op"

    with pytest.raises(NotImplementedError, match="^vendor_op: no kernel for the meta device"):
        fallback(SomeOp(), (tp.empty(2, device="meta"),), {})
