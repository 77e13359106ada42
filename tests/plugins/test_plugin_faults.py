"""Faulty plugins, installed side by side as pip would install them: each gives an attributed
message (package, entry point, what failed), shows in tp.backends.status(), and never breaks
``import tensorplug`` or the other devices."""
import json
import os
import subprocess
import sys
import textwrap

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))

# distribution name -> (entry point name, module source). Each is its own package on the path.
_TOY = "from toy_backend import ToyBackend\nfrom tensorplug.plugins import hookimpl\n"
_PLUGINS = {
    "vendor-importfail": ("importfaildev", "raise ImportError('vendor SDK libfoo.so not found')\n"),
    "vendor-hookfail": ("hookfaildev", _TOY + "class P:\n    @hookimpl\n    def tensorplug_register_backends(self):\n"
                                              "        raise RuntimeError('the driver found no devices')\nplugin = P()\n"),
    "vendor-cpuclash": ("cpu", _TOY + "class B(ToyBackend):\n    device_type = 'cpu'\nclass P:\n    @hookimpl\n"
                                      "    def tensorplug_register_backends(self):\n        return [B()]\nplugin = P()\n"),
    "vendor-alias": ("aliasdev", _TOY + "class B(ToyBackend):\n    device_type = 'cpu'\nclass P:\n    @hookimpl\n"
                                        "    def tensorplug_register_backends(self):\n        return [B()]\nplugin = P()\n"),
    "vendor-dup-a": ("dupdev", _TOY + "class B(ToyBackend):\n    device_type = 'dupdev'\nclass P:\n    @hookimpl\n"
                                      "    def tensorplug_register_backends(self):\n        return [B()]\nplugin = P()\n"),
    "vendor-dup-b": ("dupdev", _TOY + "class B(ToyBackend):\n    device_type = 'dupdev'\nclass P:\n    @hookimpl\n"
                                      "    def tensorplug_register_backends(self):\n        return [B()]\nplugin = P()\n"),
    "vendor-badop": ("badopdev", _TOY + "class B(ToyBackend):\n    device_type = 'badopdev'\n"
                                        "    def kernels(self):\n        return dict(super().kernels(), fused_gemm_relu=print)\n"
                                        "class P:\n    @hookimpl\n    def tensorplug_register_backends(self):\n"
                                        "        return [B()]\nplugin = P()\n"),
    "vendor-loadfail": ("loadfaildev", _TOY + "class B(ToyBackend):\n    device_type = 'loadfaildev'\n"
                                              "    def load(self):\n        raise OSError('firmware image missing')\n"
                                              "class P:\n    @hookimpl\n    def tensorplug_register_backends(self):\n"
                                              "        return [B()]\nplugin = P()\n"),
    "vendor-nograd": ("nograddev", _TOY + "class B(ToyBackend):\n    device_type = 'nograddev'\n"
                                          "    def kernels(self):\n        return dict(super().kernels(), mish=print)\n"
                                          "class P:\n    @hookimpl\n    def tensorplug_register_backends(self):\n"
                                          "        return [B()]\nplugin = P()\n"),
    "vendor-good": ("gooddev", _TOY + "class B(ToyBackend):\n    device_type = 'gooddev'\nclass P:\n    @hookimpl\n"
                                      "    def tensorplug_register_backends(self):\n        return [B()]\nplugin = P()\n"),
    "vendor-twodevices": ("twodev", _TOY + "class B(ToyBackend):\n    device_type = 'twodev'\n"
                                           "class C(ToyBackend):\n    device_type = 'twodevlite'\nclass P:\n    @hookimpl\n"
                                           "    def tensorplug_register_backends(self):\n        return [B(), C()]\nplugin = P()\n"),
    "vendor-oldcontract": ("oldcontractdev", _TOY + "class B(ToyBackend):\n    device_type = 'oldcontractdev'\n"
                                                    "    contract_version = 99\nclass P:\n    @hookimpl\n"
                                                    "    def tensorplug_register_backends(self):\n        return [B()]\nplugin = P()\n"),
}

_SCRIPT = """
import json
import tensorplug as tp
result = {"cpu": (tp.ones(2) + 1).tolist(), "errors": {}}
result["status_before_use"] = [[s.device_type, s.state, s.plugin, s.detail] for s in tp.backends.status()]
result["second_device"] = (tp.ones(2, device="twodevlite") * 2).cpu().tolist()
for device in ("importfaildev", "hookfaildev", "aliasdev", "dupdev", "badopdev", "loadfaildev", "nograddev", "oldcontractdev"):
    try:
        tp.ones(1, device=device)
        result["errors"][device] = None
    except Exception as exc:
        result["errors"][device] = f"{type(exc).__name__}: {exc}"
result["good"] = (tp.ones(2, device="gooddev") + tp.ones(2, device="gooddev")).cpu().tolist()
result["cpu_after"] = (tp.ones(2) * 3).tolist()
result["status"] = [[s.device_type, s.state, s.plugin, s.detail] for s in tp.backends.status()]
print(json.dumps(result))
"""


@pytest.fixture(scope="module")
def outcome(tmp_path_factory):
    """Install every plugin above at once, use each device, and report what happened."""
    site = tmp_path_factory.mktemp("site")
    for dist, (entry, source) in _PLUGINS.items():
        module = dist.replace("-", "_")
        (site / f"{module}.py").write_text(source)
        info = site / f"{module}-1.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n")
        (info / "entry_points.txt").write_text(f"[tensorplug.backends]\n{entry} = {module}:plugin\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(site), HERE]))
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(_SCRIPT)], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.splitlines()[-1])


def _status(outcome, device, plugin_part=""):
    rows = [row for row in outcome["status"] if row[0] == device and plugin_part in row[2]]
    assert rows, f"no status line for {device} ({plugin_part}): {outcome['status']}"
    return rows


def test_cpu_and_good_plugin_unaffected(outcome):
    """import tensorplug, the CPU and a well-behaved plugin all work beside the broken ones."""
    assert outcome["cpu"] == [2.0, 2.0] and outcome["cpu_after"] == [3.0, 3.0]
    assert outcome["good"] == [2.0, 2.0]
    assert _status(outcome, "cpu", "from tensorplug")[0][1] == "ready"


def test_entry_point_that_cannot_import(outcome):
    """The error names the package, the entry point target and the import that failed."""
    message = outcome["errors"]["importfaildev"]
    assert "vendor_importfail:plugin" in message and "vendor-importfail" in message
    assert "importing vendor_importfail:plugin failed: ImportError: vendor SDK libfoo.so not found" in message
    _, state, plugin, detail = _status(outcome, "importfaildev")[0]
    assert state == "failed" and "vendor-importfail" in plugin and "libfoo.so" in detail


def test_hook_that_raises(outcome):
    message = outcome["errors"]["hookfaildev"]
    assert "vendor-hookfail" in message and "tensorplug_register_backends hook failed: RuntimeError: the driver found no devices" in message
    assert _status(outcome, "hookfaildev")[0][1] == "failed"


def test_second_package_claiming_cpu_is_refused(outcome):
    """A package whose entry point is named 'cpu' is refused; tensorplug's CPU keeps the name."""
    _, state, plugin, detail = _status(outcome, "cpu", "vendor-cpuclash")[0]
    assert state == "failed"
    assert "registers device type 'cpu', which already exists" in detail and "from tensorplug)" in detail


def test_backend_claiming_an_existing_device_type(outcome):
    """A plugin whose hook returns a backend for another plugin's device type is refused, named."""
    message = outcome["errors"]["aliasdev"]
    assert "vendor-alias" in message and "registers device type 'cpu', which already exists" in message
    assert _status(outcome, "aliasdev")[0][1] == "failed"


def test_two_packages_with_one_device_type(outcome):
    """Two packages providing 'dupdev': neither is used, and the message names both."""
    message = outcome["errors"]["dupdev"]
    assert "vendor-dup-a" in message and "vendor-dup-b" in message and "uninstall one" in message
    assert {row[1] for row in _status(outcome, "dupdev")} == {"failed"}
    assert len(_status(outcome, "dupdev")) == 2


def test_kernel_for_an_op_that_does_not_exist(outcome):
    message = outcome["errors"]["badopdev"]
    assert "vendor-badop" in message and "declares kernels for ops that do not exist: ['fused_gemm_relu']" in message
    _, state, _, detail = _status(outcome, "badopdev")[0]
    assert state == "failed" and "fused_gemm_relu" in detail


def test_load_that_raises(outcome):
    message = outcome["errors"]["loadfaildev"]
    assert "vendor-loadfail" in message and "load() raised OSError: firmware image missing" in message
    assert _status(outcome, "loadfaildev")[0][1] == "failed"


def test_override_without_derivative(outcome):
    """A fused kernel for a composite op with no explicit derivative is refused before anything registers."""
    message = outcome["errors"]["nograddev"]
    assert "vendor-nograd" in message and "overrides composite ops without an explicit derivative: ['mish']" in message


def test_one_entry_point_registers_two_device_types(outcome):
    """A hook may return backends for two device types; the second is found without an entry
    point of its own (its plugin is loaded to look for it)."""
    assert outcome["second_device"] == [2.0, 2.0]
    states = {row[0]: row[1] for row in outcome["status"] if "vendor-twodevices" in row[2]}
    assert states == {"twodev": "loaded", "twodevlite": "ready"}


def test_wrong_contract_version_fails_in_status_before_first_use(outcome):
    """status() does not call a backend written for another contract version "loaded": it is
    "failed" before anyone uses it, naming both versions, and using it raises the same."""
    rows = [row for row in outcome["status_before_use"] if row[0] == "oldcontractdev"]
    assert rows and rows[0][1] == "failed", outcome["status_before_use"]
    assert "contract version 99" in rows[0][3] and "implements version" in rows[0][3]
    assert "contract version 99" in outcome["errors"]["oldcontractdev"]


def test_unused_backend_status_says_what_is_still_unchecked(outcome):
    """A plugin that loaded but whose device was never used says its kernel table is checked on
    first use (status() never loads a device)."""
    rows = [row for row in outcome["status_before_use"] if row[0] == "badopdev"]
    assert rows[0][1] == "loaded" and "checked on first use" in rows[0][3]
