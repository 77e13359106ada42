"""Check mode: a kernel that returns the wrong shape or dtype is caught at the call and named."""
import os
import subprocess
import sys

import numpy as np
import pytest

import tensorplug as tp
from tensorplug.backends import plugin_manager

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.fixture
def check_mode():
    if "badkernelsdev" not in plugin_manager.records:
        plugin_manager.add("badkernelsdev", "bad_kernels_backend:plugin")
    tp.ones(1, device="badkernelsdev")
    tp.backends.set_check_kernels(True)
    yield "badkernelsdev"
    tp.backends.set_check_kernels(False)


def test_primitive_returning_a_tensor_is_named(check_mode):
    """A primitive that returns a tensor instead of writing its output: backend, op, both shapes."""
    a = tp.ones(2, 3, device=check_mode)
    with pytest.raises(RuntimeError, match=r"check mode: plugin 'badkernelsdev' .*'badkernelsdev' kernel for primitive 'mul' "
                                           r"returned a value \(shape \[1\], dtype float32\).*output argument \(shape \[2, 3\], dtype float32\)"):
        a * a


def test_fused_kernel_with_wrong_dtype_is_named(check_mode):
    """A fused composite kernel returning float64 for float32 input: expected and got are named."""
    x = tp.ones(2, 3, device=check_mode)
    with pytest.raises(RuntimeError, match=r"kernel for 'softmax' returned shape \[2, 3\], dtype float64; "
                                           r"expected shape \[2, 3\], dtype float32"):
        x.softmax(dim=1)


def test_correct_kernels_pass_check_mode(check_mode):
    """Kernels that follow the contract run unchanged under check mode."""
    a = tp.tensor([3.0, 5.0], device=check_mode)
    np.testing.assert_array_equal((a - 1 + a).cpu().numpy(), [5.0, 9.0])
    sm = tp.ones(2, 2).softmax(dim=1)  # the CPU's fused softmax is checked too
    np.testing.assert_allclose(sm.numpy(), np.full((2, 2), 0.5))


def test_off_by_default():
    """Without check mode the wrong kernel is not intercepted at the call (the conformance suite finds it)."""
    if "badkernelsdev" not in plugin_manager.records:
        plugin_manager.add("badkernelsdev", "bad_kernels_backend:plugin")
    assert not tp.backends.check_kernels_enabled()
    a = tp.ones(2, device="badkernelsdev")
    assert (a * a).shape == (2,)


def test_environment_variable_turns_it_on():
    """TENSORPLUG_CHECK_KERNELS=1 checks from the first registration on."""
    script = ("import tensorplug as tp\nfrom tensorplug.backends import plugin_manager\n"
              "plugin_manager.add('badkernelsdev', 'bad_kernels_backend:plugin')\n"
              "print(tp.backends.check_kernels_enabled())\n"
              "x = tp.ones(2, device='badkernelsdev')\n"
              "try:\n    x * x\nexcept RuntimeError as exc:\n    print(exc)\n")
    env = dict(os.environ, TENSORPLUG_CHECK_KERNELS="1", PYTHONPATH=os.pathsep.join([HERE, os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "True" and "kernel for primitive 'mul' returned a value" in lines[1]
