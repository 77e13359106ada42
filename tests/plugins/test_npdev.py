"""The example vendor package tensorplug-npdev, installed with pip: found through its entry point,
separate memory, coexisting with a second third-party backend, and the training script on it."""
import importlib.util
import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tensorplug as tp
from tensorplug.backends.api import backend_storage

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HERE = os.path.dirname(os.path.abspath(__file__))

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("tensorplug_npdev") is None,
    reason="the example plugin is not installed: python -m pip install ./plugins/tensorplug-npdev",
)


def _python(script: str, extra_path=()):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([*extra_path, os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True, env=env, timeout=120)


def test_found_through_its_entry_point_and_loaded_lazily():
    """import tensorplug does not import the plugin; the first npdev tensor does."""
    out = _python("""
        import sys
        import tensorplug as tp
        print('tensorplug_npdev' in sys.modules)
        x = tp.arange(4, device='npdev')
        print('tensorplug_npdev' in sys.modules, x.device, x.sum().item())
        print({s.device_type: (s.state, s.plugin) for s in tp.backends.status()}['npdev'])
    """)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "False" and lines[1] == "True npdev:0 6"
    assert "'ready'" in lines[2] and "from tensorplug-npdev" in lines[2]


def test_memory_is_its_own():
    """npdev tensors live in the plugin's storages; nothing aliases CPU memory either way."""
    from tensorplug_npdev.storage import NpStorage

    host = tp.zeros(3)
    dev = host.to("npdev")
    assert isinstance(backend_storage(dev), NpStorage)
    host.fill_(5)
    back = dev.cpu()
    dev.fill_(7)
    np.testing.assert_array_equal(back.numpy(), [0.0, 0.0, 0.0])
    np.testing.assert_array_equal(host.numpy(), [5.0, 5.0, 5.0])
    with pytest.raises(NotImplementedError, match="cannot share host memory"):
        tp.backends.backend_for("npdev").wrap_host(np.ones(2))


def test_runs_without_the_fallback():
    """Every primitive is native: a small model's step never reaches the CPU fallback."""
    tp.backends.reset_fallback_stats()
    model = tp.nn.Sequential(tp.nn.Linear(4, 8), tp.nn.ReLU(), tp.nn.Linear(8, 3)).to("npdev")
    x, y = tp.randn(5, 4, device="npdev"), tp.tensor([0, 1, 2, 1, 0], device="npdev")
    tp.nn.functional.cross_entropy(model(x), y).backward()
    assert model[0].weight.grad.device.type == "npdev"
    assert tp.backends.fallback_stats() == {}


def test_two_third_party_backends_coexist(tmp_path):
    """npdev (a pip package) and fallbackdev (another package's entry point) in one process: tensors
    move between them through the CPU, and each runs its own kernels."""
    out = _python("""
        import warnings
        import tensorplug as tp
        warnings.simplefilter('ignore', tp.backends.FallbackWarning)
        a = tp.tensor([1.0, 2.0, 3.0], device='npdev')
        b = a.to('fallbackdev')
        c = (b * 2).to('npdev') + a
        print(b.device, c.device, c.cpu().tolist())
        print(type(b._storage).__name__, type(c._storage).__name__)
        print(sorted(tp.backends.ready_backends()))
        print(tp.backends.fallback_stats())
    """, extra_path=[_fallbackdev_site(tmp_path), HERE])
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "fallbackdev:0 npdev:0 [3.0, 6.0, 9.0]"
    assert lines[1] == "FallbackStorage NpStorage"
    assert lines[2] == "['cpu', 'fallbackdev', 'npdev']"
    assert lines[3] == "{'fallbackdev': {'mul': 1}}"


def _fallbackdev_site(site) -> str:
    """A site directory where the test-only fallbackdev plugin is installed as a package would be."""
    info = os.path.join(site, "tensorplug_fallbackdev-1.0.dist-info")
    os.mkdir(info)
    with open(os.path.join(info, "METADATA"), "w") as f:
        f.write("Metadata-Version: 2.1\nName: tensorplug-fallbackdev\nVersion: 1.0\n")
    with open(os.path.join(info, "entry_points.txt"), "w") as f:
        f.write("[tensorplug.backends]\nfallbackdev = fallback_backend:plugin\n")
    return str(site)


def test_training_script_runs_on_npdev(tmp_path):
    """examples/train_digits.py with --device npdev: same script, and the same losses as on the CPU."""
    pytest.importorskip("sklearn")
    pytest.importorskip("matplotlib")
    losses = {}
    for device in ("cpu", "npdev"):
        out = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "train_digits.py"), "--device", device,
                              "--epochs", "2", "--min-accuracy", "0.6", "--out-dir", str(tmp_path / device)],
                             capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stdout + out.stderr
        assert f"trained on {device}" in out.stdout
        losses[device] = [float(v) for v in re.findall(r"loss (\d+\.\d+)", out.stdout)]
    assert len(losses["npdev"]) == 2 and losses["npdev"][1] < losses["npdev"][0]
    np.testing.assert_allclose(losses["npdev"], losses["cpu"], rtol=1e-3)


def test_storage_dying_in_a_garbage_collection_during_allocation_does_not_hang(monkeypatch):
    """A collection that starts inside allocate() may free an npdev storage on the same thread;
    its __del__ takes the allocator's lock again (a plain Lock hung there forever)."""
    import gc
    import threading

    from tensorplug_npdev import storage

    real_empty = storage.np.empty

    class CollectingNumpy:
        """np for the storage module, whose empty() runs a collection first, as one may."""

        def __getattr__(self, name):
            return getattr(np, name)

        def empty(self, *args, **kwargs):
            gc.collect()
            return real_empty(*args, **kwargs)

    def allocate_with_a_dead_cycle():
        cycle = [tp.ones(3, device="npdev")]
        cycle.append(cycle)  # only the collector frees it, with the tensor's storage
        del cycle
        storage.allocate(12345)  # a size the cache does not hold: np.empty runs

    gc.disable()  # the cycle must be freed inside allocate, not before
    try:
        monkeypatch.setattr(storage, "np", CollectingNumpy())
        worker = threading.Thread(target=allocate_with_a_dead_cycle, daemon=True)
        worker.start()
        worker.join(timeout=30)
    finally:
        gc.enable()
    assert not worker.is_alive(), "npdev's allocator deadlocked on a storage freed by the collector"
