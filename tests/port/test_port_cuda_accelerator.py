"""tp.cuda, tp.accelerator, tp.backends.{cudnn,cuda,mps} and the global switches: the calls a
PyTorch script makes in its first lines, without CUDA (this machine, CI) and, in a subprocess,
with a stand-in backend registered under the "cuda" device type (the seam the real backend uses)."""
import os
import re
import subprocess
import sys
import textwrap

import pytest

import tensorplug as tp

HERE = os.path.dirname(__file__)
# tensorplug's CUDA backend is always registered; without CuPy or a GPU it is unavailable.
needs_no_cuda = pytest.mark.skipif(tp.cuda.is_available(), reason="a CUDA GPU is usable here")
# What tp.cuda and a move to cuda say without one: which of the two is missing.
UNAVAILABLE = (r"(CUDA is not available|the 'cuda' backend is not available): "
               r"(CuPy is not installed|CuPy cannot load|no CUDA device found)")


def _torch():
    try:
        import torch
    except ImportError:
        pytest.skip("PyTorch is not installed")
    return torch


# --- tp.cuda without CUDA -----------------------------------------------------------------------------
@needs_no_cuda
def test_cuda_queries_answer_without_a_device():
    """The calls PyTorch answers without CUDA answer here too, with PyTorch's values."""
    assert tp.cuda.is_available() is False
    assert tp.cuda.device_count() == 0
    assert tp.cuda.is_bf16_supported() is False
    assert tp.cuda.is_initialized() is False
    assert tp.cuda.manual_seed(0) is None and tp.cuda.manual_seed_all(0) is None and tp.cuda.seed() is None
    assert tp.cuda.empty_cache() is None
    assert tp.cuda.memory_allocated() == tp.cuda.max_memory_allocated() == tp.cuda.memory_reserved() == 0
    assert tp.cuda.memory_stats() == {}
    assert re.match(r"CuPy is not installed|CuPy cannot load|no CUDA device found", tp.cuda.unavailable_reason())


@needs_no_cuda
def test_cuda_manual_seed_leaves_cpu_numbers_alone():
    """tp.cuda.manual_seed without CUDA is a no-op: the CPU stream goes on as if not called."""
    tp.manual_seed(3)
    a = tp.rand(4).numpy()
    tp.manual_seed(3)
    tp.cuda.manual_seed_all(99)
    tp.cuda.manual_seed(98)
    b = tp.rand(4).numpy()
    assert (a == b).all()


@needs_no_cuda
@pytest.mark.parametrize("call", [
    tp.cuda.init, tp.cuda.synchronize, tp.cuda.current_device, lambda: tp.cuda.set_device(0), tp.cuda.get_device_name,
    tp.cuda.get_device_capability, tp.cuda.initial_seed, tp.cuda.mem_get_info,
    lambda: tp.ones(2).cuda(), lambda: tp.ones(2).to("cuda"), lambda: tp.zeros(2, device="cuda:0"),
    lambda: tp.nn.Linear(2, 2).cuda(),
], ids=["init", "synchronize", "current_device", "set_device", "get_device_name", "get_device_capability",
        "initial_seed", "mem_get_info", "Tensor.cuda", "Tensor.to", "factory", "Module.cuda"])
def test_calls_that_need_a_device_say_why(call):
    """Each raises RuntimeError naming the reason CUDA is unavailable."""
    with pytest.raises(RuntimeError, match=UNAVAILABLE):
        call()


def test_is_cuda_property():
    assert tp.ones(1).is_cuda is False


@needs_no_cuda
def test_cuda_matches_torch_without_cuda():
    """Where torch (a CPU build) answers, tensorplug answers the same."""
    torch = _torch()
    for name in ("is_available", "device_count", "is_bf16_supported", "memory_allocated", "max_memory_allocated",
                 "memory_reserved", "is_initialized"):
        assert getattr(tp.cuda, name)() == getattr(torch.cuda, name)(), name


# --- tp.cuda delegating to a registered "cuda" backend ---------------------------------------------------
def _run_with_fake_cuda(code: str, state: str = "ok") -> str:
    script = textwrap.dedent("""
        import tensorplug as tp
        from tensorplug.backends import plugin_manager
        plugin_manager.add("cuda", "fake_cuda_backend:plugin")
    """) + textwrap.dedent(code)
    env = dict(os.environ, FAKE_CUDA_STATE=state, PYTHONPATH=os.pathsep.join([HERE, os.environ.get("PYTHONPATH", "")]))
    result = subprocess.run([sys.executable, "-W", "error", "-c", script], capture_output=True, text=True, env=env,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_cuda_delegates_to_a_registered_backend():
    out = _run_with_fake_cuda("""
        import fake_cuda_backend as fake
        assert tp.cuda.is_available() and tp.cuda.device_count() == 2
        assert fake.FakeCudaBackend.loads == 0, "asking must not load the device"
        assert tp.cuda.is_bf16_supported()
        assert tp.cuda.get_device_name(1) == "Fake GPU 1"
        assert tp.cuda.current_device() == 0
        tp.cuda.set_device(1)
        assert tp.cuda.current_device() == 1
        x = tp.ones(3).cuda()
        assert x.is_cuda and x.device == tp.device("cuda", 1), x.device
        with tp.cuda.device(0):
            assert tp.ones(1, device="cuda").device == tp.device("cuda", 0)
        assert tp.cuda.current_device() == 1
        tp.cuda.synchronize()
        tp.cuda.synchronize("cuda:0")
        assert fake.FakeCudaBackend.synchronized == [1, 0]
        tp.cuda.manual_seed_all(5)
        from tensorplug.frontend.random import default_generator
        assert default_generator("cuda:1").initial_seed() == 5
        try:
            tp.cuda.set_device(2)
        except RuntimeError as exc:
            assert "2 CUDA device(s)" in str(exc)
        else:
            raise AssertionError("set_device(2) should raise")
        assert tp.accelerator.current_accelerator() == tp.device("cuda")
        assert tp.accelerator.device_count() == 2
        print("ok")
    """)
    assert out.strip() == "ok"


def test_unavailable_backend_reason_reaches_the_user():
    """A registered backend that is unavailable: its own reason, from is_available() to .cuda()."""
    out = _run_with_fake_cuda("""
        assert not tp.cuda.is_available() and tp.cuda.device_count() == 0
        assert tp.cuda.unavailable_reason() == "CuPy is not installed: pip install cupy"
        for call in (tp.cuda.init, lambda: tp.ones(1).cuda()):
            try:
                call()
            except RuntimeError as exc:
                print(exc)
    """, state="unavailable")
    lines = out.strip().splitlines()
    assert len(lines) == 2 and all("CuPy is not installed: pip install cupy" in line for line in lines)


def test_backend_without_devices():
    out = _run_with_fake_cuda("""
        assert not tp.cuda.is_available()
        try:
            tp.cuda.init()
        except RuntimeError as exc:
            print(exc)
    """, state="nodevice")
    assert out.strip() == "CUDA is not available: no CUDA device found"


# --- tp.accelerator -------------------------------------------------------------------------------------
def test_accelerator_none_when_told(monkeypatch):
    """TENSORPLUG_ACCELERATOR=none: PyTorch's answers on a machine without an accelerator."""
    monkeypatch.setenv("TENSORPLUG_ACCELERATOR", "none")
    assert tp.accelerator.is_available() is False
    assert tp.accelerator.current_accelerator() is None
    assert tp.accelerator.device_count() == 0
    for call in (tp.accelerator.current_device_index, lambda: tp.accelerator.set_device_index(0),
                 tp.accelerator.synchronize):
        with pytest.raises(RuntimeError, match="Cannot access accelerator device when none is available"):
            call()


def test_accelerator_picks_the_first_usable_in_preference_order(monkeypatch):
    """The answer is the first usable type among PREFERENCE and then the other plugins."""
    monkeypatch.delenv("TENSORPLUG_ACCELERATOR", raising=False)
    installed = [t for t in tp.backends._probe.known_device_types() if t != "cpu"]
    order = [t for t in tp.accelerator.PREFERENCE if t in installed] + sorted(set(installed) - set(tp.accelerator.PREFERENCE))
    usable = [t for t in order if tp.backends._probe.probe(t).available]
    found = tp.accelerator.current_accelerator()
    if not usable:
        assert found is None and not tp.accelerator.is_available()
        return
    assert found == tp.device(usable[0]) and tp.accelerator.is_available()
    assert tp.accelerator.device_count() == tp.backends._probe.probe(usable[0]).device_count >= 1
    assert tp.accelerator.current_device_index() == 0
    with tp.accelerator.device_index(0):
        assert tp.accelerator.current_device_index() == 0
    tp.accelerator.synchronize()
    with pytest.raises(RuntimeError, match="invalid device index"):
        tp.accelerator.set_device_index(tp.accelerator.device_count())


def test_accelerator_env_picks_a_plugin(monkeypatch):
    """TENSORPLUG_ACCELERATOR names the backend to prefer (here the example plugin, if installed)."""
    if not tp.backends._probe.probe("npdev").available:
        pytest.skip("the npdev example plugin is not installed")
    monkeypatch.setenv("TENSORPLUG_ACCELERATOR", "npdev")
    assert tp.accelerator.current_accelerator() == tp.device("npdev")
    x = tp.ones(2, device=tp.accelerator.current_accelerator())
    assert x.device.type == "npdev"


def test_accelerator_never_raises_for_a_broken_plugin(monkeypatch):
    """A plugin that fails to import is skipped, not raised, by is_available()."""
    from tensorplug.backends import plugin_manager

    if "brokenaccel" not in plugin_manager.records:
        plugin_manager.add("brokenaccel", "no_such_module_for_tensorplug:plugin")
    monkeypatch.setenv("TENSORPLUG_ACCELERATOR", "brokenaccel")
    assert tp.backends._probe.probe("brokenaccel").available is False
    assert "ModuleNotFoundError" in tp.backends._probe.probe("brokenaccel").reason
    assert tp.accelerator.current_accelerator() != tp.device("brokenaccel")
    plugin_manager.records.pop("brokenaccel")


# --- flags ------------------------------------------------------------------------------------------------
def test_backend_flags_defaults_and_setting():
    """PyTorch's defaults; the attributes are settable and keep their value."""
    cudnn = tp.backends.cudnn
    assert (cudnn.benchmark, cudnn.deterministic, cudnn.enabled, cudnn.allow_tf32) == (False, False, True, True)
    saved = (cudnn.benchmark, cudnn.deterministic)
    try:
        cudnn.benchmark, cudnn.deterministic = True, True
        import tensorplug.backends.cudnn as cudnn_module

        assert cudnn_module.benchmark is True and tp.backends.cudnn.deterministic is True
        with cudnn.flags(enabled=False, benchmark=False):
            assert cudnn.enabled is False and cudnn.benchmark is False
        assert cudnn.enabled is True and cudnn.benchmark is True
    finally:
        cudnn.benchmark, cudnn.deterministic = saved
    if not tp.cuda.is_available():
        assert cudnn.is_available() is False and cudnn.version() is None
    assert tp.backends.cuda.is_built() is True  # tensorplug ships its CUDA backend, usable or not
    assert tp.backends.mps.is_available() is False and tp.backends.mps.is_built() is False


def test_matmul_allow_tf32_is_the_matmul_precision():
    assert tp.get_float32_matmul_precision() == "highest" and tp.backends.cuda.matmul.allow_tf32 is False
    try:
        tp.backends.cuda.matmul.allow_tf32 = True
        assert tp.get_float32_matmul_precision() == "high"
        tp.set_float32_matmul_precision("medium")
        assert tp.backends.cuda.matmul.allow_tf32 is True
        with pytest.warns(UserWarning, match="has no effect"):
            tp.set_float32_matmul_precision("fastest")
        assert tp.get_float32_matmul_precision() == "medium"
    finally:
        tp.set_float32_matmul_precision("highest")


def test_deterministic_switches():
    assert tp.are_deterministic_algorithms_enabled() is False
    try:
        tp.use_deterministic_algorithms(True, warn_only=True)
        assert tp.are_deterministic_algorithms_enabled() and tp.is_deterministic_algorithms_warn_only_enabled()
        assert tp.get_deterministic_debug_mode() == 1
        tp.set_deterministic_debug_mode("error")
        assert tp.are_deterministic_algorithms_enabled() and not tp.is_deterministic_algorithms_warn_only_enabled()
        with pytest.raises(TypeError):
            tp.use_deterministic_algorithms("yes")
    finally:
        tp.use_deterministic_algorithms(False)
    assert tp.get_deterministic_debug_mode() == 0


def test_flags_match_torch_defaults():
    torch = _torch()
    assert tp.get_float32_matmul_precision() == torch.get_float32_matmul_precision()
    assert tp.backends.cuda.matmul.allow_tf32 == torch.backends.cuda.matmul.allow_tf32
    for name in ("benchmark", "deterministic", "enabled", "allow_tf32"):
        assert getattr(tp.backends.cudnn, name) == getattr(torch.backends.cudnn, name), name
    assert tp.are_deterministic_algorithms_enabled() == torch.are_deterministic_algorithms_enabled()
    assert tp.backends.mps.is_available() == torch.backends.mps.is_available()


def test_status_still_lists_backends():
    """The flag submodules do not disturb the registry's status table."""
    names = [s.device_type for s in tp.backends.status()]
    assert "cpu" in names and "cudnn" not in names


# --- onnx ---------------------------------------------------------------------------------------------
def test_onnx_export_says_what_to_do_instead():
    import tensorplug.onnx

    with pytest.raises(NotImplementedError, match="cannot export ONNX.*state_dict.*safetensors"):
        tensorplug.onnx.export(tp.nn.Linear(2, 2), (tp.ones(1, 2),), "model.onnx")
    assert tp.onnx.is_in_onnx_export() is False
