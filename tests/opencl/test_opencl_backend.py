"""The OpenCL backend's own behaviour: lazy import, device selection, data-dependent errors
raised at synchronization, memory pool, clean out-of-memory, build errors with the compiler log."""
import os
import subprocess
import sys

import numpy as np
import pytest

import tensorplug as tp
from tensorplug.backends.opencl import OpenCLBackend

AVAILABLE, REASON = OpenCLBackend().is_available()
needs_opencl = pytest.mark.skipif(not AVAILABLE, reason=f"OpenCL backend unavailable: {REASON}")


def _run(code: str, **env):
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, **env))


def test_import_does_not_load_pyopencl():
    """import tensorplug (and listing plugins' entry points) leaves pyopencl unimported."""
    out = _run("import sys, tensorplug; print('pyopencl' in sys.modules)")
    assert out.stdout.strip() == "False", out.stderr


def test_unavailable_reason_names_the_extra():
    """Without PyOpenCL the backend says why and how to fix it."""
    out = _run("import sys; sys.modules['pyopencl'] = None\n"
               "from tensorplug.backends.opencl import OpenCLBackend\nprint(OpenCLBackend().is_available())")
    assert "tensorplug[opencl]" in out.stdout and "False" in out.stdout, out.stderr


@needs_opencl
def test_device_and_values():
    """opencl:0 tensors compute like the CPU, through tp.device too."""
    with tp.device("opencl:0"):
        x = tp.arange(12, dtype=tp.float32).reshape(3, 4)
    assert str(x.device) == "opencl:0"
    y = (x.t() * 2 + 1).sum(dim=0)
    np.testing.assert_array_equal(y.cpu().numpy(), (np.arange(12).reshape(3, 4).T * 2 + 1).sum(0))


@needs_opencl
def test_device_selection_env():
    """TENSORPLUG_OPENCL_DEVICE naming no device makes the backend unavailable, with the list."""
    out = _run("import tensorplug as tp\ntry:\n    tp.ones(1, device='opencl')\nexcept RuntimeError as e:\n    print(e)",
               TENSORPLUG_OPENCL_DEVICE="no-such-device")
    assert "no OpenCL device matches 'no-such-device'" in out.stdout, out.stdout + out.stderr


@needs_opencl
def test_index_error_at_synchronization_and_recovers():
    """An out-of-range tensor index raises IndexError at the next host read (the kernel found it);
    the device keeps working. (gather and index_select check their index range before any kernel
    runs, on every device, as PyTorch refuses negative values there.)"""
    x = tp.ones(3, device="opencl")
    y = x[tp.tensor([5], device="opencl")]
    with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 0 with size 3"):
        y.tolist()
    assert (x + 1).tolist() == [2.0, 2.0, 2.0]
    with pytest.raises(IndexError, match=r"gather\(\): index 5 is out of bounds"):
        x.gather(0, tp.tensor([5], device="opencl"))


@needs_opencl
def test_integer_division_by_zero():
    """A number divisor raises at once; a tensor divisor raises at synchronization (result 0)."""
    a = tp.tensor([7, 8], device="opencl")
    with pytest.raises(ZeroDivisionError, match="integer division by zero"):
        a // 0
    with pytest.raises(ZeroDivisionError, match="integer division by zero"):
        (a // tp.tensor([2, 0], device="opencl")).tolist()
    assert (a // 2).tolist() == [3, 4]


@needs_opencl
def test_memory_returns_to_pool():
    """A dead tensor's bytes leave allocated_bytes at once and its block is reused."""
    backend = tp.backends.backend_for("opencl")
    before = backend.memory_stats(0)["allocated_bytes"]
    x = tp.empty(1 << 20, device="opencl")
    assert backend.memory_stats(0)["allocated_bytes"] - before == 4 << 20
    del x
    assert backend.memory_stats(0)["allocated_bytes"] == before
    reserved = backend.memory_stats(0)["reserved_bytes"]
    y = tp.empty(1 << 20, device="opencl")
    assert backend.memory_stats(0)["reserved_bytes"] == reserved
    del y


@needs_opencl
def test_out_of_memory_is_a_clean_error():
    """Asking for more than the device has raises MemoryError; the process keeps working."""
    with pytest.raises(MemoryError, match="opencl:0 out of memory"):
        tp.empty(1 << 36, dtype=tp.uint8, device="opencl")
    assert tp.ones(2, device="opencl").sum().item() == 2.0


@needs_opencl
def test_build_error_shows_compiler_log():
    """A kernel source that does not compile is reported with the compiler's message."""
    from tensorplug.backends.opencl import _source, kernels, storage

    state = storage.devices()[0]
    original = _source.reduce
    kernels._GENERATORS["reduce"] = lambda dtype, fp64: "__kernel void broken( { syntax error"
    try:
        state.programs.pop(("reduce", "int8"), None)
        with pytest.raises(RuntimeError, match="building the reduce kernels for int8") as info:
            kernels.build_program(state, "reduce", "int8")
        assert "error" in str(info.value).lower()
    finally:
        kernels._GENERATORS["reduce"] = original


@needs_opencl
def test_device_mismatch_error_is_the_frontends():
    """Mixing opencl and cpu tensors raises the same device error as any other pair."""
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        tp.ones(2, device="opencl") + tp.ones(2)


@needs_opencl
def test_random_matches_cpu_bit_for_bit():
    """rand in every float dtype gives the CPU's exact numbers for the same seed."""
    # tp.manual_seed seeds only generators that exist already (reported to the lead): make the
    # opencl one first.
    tp.rand(1, device="opencl")
    for dtype in (tp.float32, tp.float16, tp.bfloat16, tp.float64):
        tp.manual_seed(3)
        here = tp.rand(1003, dtype=dtype, device="opencl").float().cpu().numpy()
        tp.manual_seed(3)
        cpu = tp.rand(1003, dtype=dtype).float().numpy()
        np.testing.assert_array_equal(here, cpu, err_msg=str(dtype))


@needs_opencl
def test_many_dims_and_big_matmul():
    """Views of more than 8 non-mergeable dims and a Linear-shaped matmul match the CPU."""
    base = tp.randn(*([2] * 10), 3)
    view = base[..., ::2]
    np.testing.assert_allclose((view.to("opencl") * 3).cpu().numpy(), (view * 3).numpy(), rtol=1e-6)
    a, w = tp.randn(128, 784), tp.randn(512, 784)
    np.testing.assert_allclose((a.to("opencl") @ w.to("opencl").t()).cpu().numpy(), (a @ w.t()).numpy(), rtol=1e-4, atol=1e-3)
