"""Backends as plugins: entry-point discovery, lazy loading, calls reaching a third-party
backend, and broken plugins that must not break tensorplug."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tensorplug as tp
from tensorplug.backends import plugin_manager

HERE = os.path.dirname(__file__)


@pytest.fixture(scope="module")
def toydev():
    """The toy backend registered in-process through the same plugin manager."""
    if "toydev" not in plugin_manager.records:
        plugin_manager.add("toydev", "toy_backend:plugin")
    return tp.device("toydev")


def test_plugin_backend_receives_calls(toydev):
    """Ops on a plugin device run the plugin's kernels and give the right values."""
    import toy_backend

    a = tp.tensor([1.0, 2.0, 3.0], device="toydev")
    b = tp.ones(3, device="toydev")
    toy_backend.ToyBackend.calls.clear()
    c = a + b
    assert toy_backend.ToyBackend.calls == ["add"]
    assert c.device == tp.device("toydev", 0)
    np.testing.assert_array_equal(c.cpu().numpy(), [2.0, 3.0, 4.0])


def test_plugin_memory_is_separate_from_cpu(toydev):
    """Copies to a plugin device do not alias CPU memory."""
    host = tp.zeros(3)
    dev = host.to("toydev")
    host.fill_(5)
    np.testing.assert_array_equal(dev.cpu().numpy(), [0.0, 0.0, 0.0])


def test_mixing_devices_is_a_clear_error(toydev):
    """A CPU tensor and a plugin tensor in one op raise the same-device error."""
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device.*cpu.*toydev"):
        tp.ones(3) + tp.ones(3, device="toydev")


def test_missing_primitive_is_named(toydev):
    """An op the plugin lacks runs through the CPU fallback, with a warning naming the op and the backend."""
    tp.backends.reset_fallback_stats()
    with pytest.warns(tp.backends.FallbackWarning, match="'toydev' backend has no kernel for 'mul'"):
        c = tp.ones(2, device="toydev") * tp.full((2,), 3.0, device="toydev")
    assert c.device.type == "toydev"
    np.testing.assert_array_equal(c.cpu().numpy(), [3.0, 3.0])


def test_status_lists_ready_backends(toydev):
    """status() lists the CPU backend and the plugin, with the plugin's missing primitives."""
    tp.ones(1, device="toydev")
    report = {s.device_type: s for s in tp.backends.status()}
    assert report["cpu"].state == "ready"
    assert report["toydev"].state == "ready"
    assert "mul" in report["toydev"].missing_primitives


def test_unknown_device_lists_known_ones():
    with pytest.raises(RuntimeError, match="Expected one of .*cpu.* device type at start of device string: nosuchdev"):
        tp.ones(1, device="nosuchdev")


def _run_with_dist(tmp_path, module_source: str, entry_name: str, script: str, env_extra=None):
    """Install a plugin the way pip would (a module plus dist-info with entry points) on a
    temporary path, then run ``script`` in a fresh interpreter."""
    (tmp_path / "vendor_plugin.py").write_text(textwrap.dedent(module_source))
    dist = tmp_path / "vendor_plugin-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: vendor-plugin\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(f"[tensorplug.backends]\n{entry_name} = vendor_plugin:plugin\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), HERE]))
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-c", textwrap.dedent(script)], env=env, capture_output=True, text=True, timeout=120)


def test_entry_point_plugin_is_discovered_and_used(tmp_path):
    """A backend installed with an entry point is found by its device name and used."""
    result = _run_with_dist(
        tmp_path,
        "from toy_backend import *\nfrom toy_backend import ToyBackend\nclass Vendor(ToyBackend):\n    device_type = 'vendordev'\n"
        "class P:\n    @hookimpl\n    def tensorplug_register_backends(self):\n        return [Vendor()]\nplugin = P()\n",
        "vendordev",
        """
        import sys
        import tensorplug as tp
        assert 'vendor_plugin' not in sys.modules, 'plugins must load lazily'
        x = tp.tensor([1.0, 2.0], device='vendordev')
        print((x + x).cpu().tolist())
        """,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[2.0, 4.0]"


def test_broken_plugin_never_breaks_import(tmp_path):
    """A plugin that raises on import: tensorplug works, status() and the device name the error."""
    result = _run_with_dist(
        tmp_path,
        "raise ImportError('vendor SDK libfoo.so not found')\n",
        "brokendev",
        """
        import tensorplug as tp
        print((tp.ones(2) + 1).tolist())
        status = {s.device_type: s for s in tp.backends.status()}
        print(status['brokendev'].state, '|', status['brokendev'].detail)
        try:
            tp.ones(1, device='brokendev')
        except RuntimeError as exc:
            print('error:', exc)
        """,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "[2.0, 2.0]"
    assert lines[1].startswith("failed |") and "libfoo.so not found" in lines[1]
    assert "brokendev" in lines[2] and "libfoo.so not found" in lines[2]


def test_disable_plugins_env_var(tmp_path):
    """TENSORPLUG_DISABLE_PLUGINS=1 skips third-party plugins but keeps the CPU backend."""
    result = _run_with_dist(
        tmp_path,
        "from toy_backend import plugin\n",
        "toydev",
        """
        import tensorplug as tp
        print(tp.ones(1).tolist())
        print({s.device_type: s.state for s in tp.backends.status()})
        """,
        {"TENSORPLUG_DISABLE_PLUGINS": "1"},
    )
    assert result.returncode == 0, result.stderr
    assert "'toydev': 'disabled'" in result.stdout and "'cpu': 'ready'" in result.stdout


def test_disabled_plugin_claiming_cpu_changes_nothing(tmp_path):
    """A disabled package whose entry point is named 'cpu' neither takes the name nor shows as a
    clash: it is listed as disabled, and using a disabled device says why it is unusable."""
    result = _run_with_dist(
        tmp_path,
        "from toy_backend import plugin\n",
        "cpu",
        """
        import tensorplug as tp
        print(tp.ones(1).tolist())
        print(sorted((s.device_type, s.state, 'vendor' in s.plugin) for s in tp.backends.status() if s.device_type == 'cpu'))
        """,
        {"TENSORPLUG_DISABLE_PLUGINS": "1"},
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "[1.0]"
    assert lines[1] == "[('cpu', 'disabled', True), ('cpu', 'ready', False)]"


def test_import_is_light():
    """import tensorplug imports no GPU runtime and no backend kernels (its time: benchmarks/bench_import.py)."""
    script = "import sys, tensorplug; print(sorted(m for m in ('cupy', 'pyopencl', 'tensorplug.backends.cpu._kernels') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "[]", out.stderr
