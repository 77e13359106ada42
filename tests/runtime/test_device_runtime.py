"""The device runtime (streams, events, synchronize, memory statistics, autocast declarations) on
every backend present, through tp.<device>, tp.accelerator and the contract's defaults."""
import importlib.util
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tensorplug as tp
from tensorplug._device_runtime import RUNTIME_NAMES
from tensorplug.backends.api import Backend, backend_storage
from tensorplug.backends.opencl import OpenCLBackend

OPENCL, OPENCL_REASON = OpenCLBackend().is_available()
HAS_NPDEV = importlib.util.find_spec("tensorplug_npdev") is not None
needs_opencl = pytest.mark.skipif(not OPENCL, reason=f"OpenCL backend unavailable: {OPENCL_REASON}")
needs_npdev = pytest.mark.skipif(not HAS_NPDEV, reason="the example plugin is not installed: "
                                 "python -m pip install ./plugins/tensorplug-npdev")


@pytest.fixture(params=[
    pytest.param("cpu", id="cpu"),
    pytest.param("opencl", id="opencl", marks=needs_opencl),
    pytest.param("npdev", id="npdev", marks=needs_npdev),
])
def device(request):
    return request.param


def _module(device):
    return getattr(tp, device)


# --- the modules ----------------------------------------------------------------------------------
def test_every_device_type_has_a_runtime_module(device):
    """tp.<device> has every runtime name (tp.cpu, a real module shaped as torch.cpu, all but the
    per-device ones: there is one CPU); the others are made on first access."""
    module = _module(device)
    missing = {name for name in RUNTIME_NAMES if not hasattr(module, name)}
    assert missing == (set() if device != "cpu" else {"is_initialized", "device"})
    assert module.Stream.device_type == device and module.Event.device_type == device


@needs_npdev
def test_npdev_module_is_made_once_and_does_not_load_the_device():
    """tp.npdev is one module object; asking whether it is available loads nothing (in a fresh process)."""
    code = """
        import sys, tensorplug as tp
        m = tp.npdev
        assert m is tp.npdev and m.__name__ == "tensorplug.npdev"
        assert m.is_available() and m.device_count() == 1 and not m.is_initialized()
        assert "npdev" not in tp.backends.ready_backends()
        assert m.memory_allocated() == 0 and m.memory_stats() == {}
        print("ok")
    """
    out = subprocess.run([sys.executable, "-W", "error", "-c", textwrap.dedent(code)], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_missing_device_module_names_the_installed_types():
    with pytest.raises(AttributeError, match=r"no attribute 'nosuchdevice'.*installed device types: .*cpu"):
        tp.nosuchdevice  # noqa: B018
    with pytest.raises(AttributeError):
        tp._private_thing  # noqa: B018
    assert not hasattr(tp, "nosuchdevice")


def test_real_submodules_are_never_shadowed():
    """A submodule that exists but was not imported yet is imported, not replaced by a device module."""
    import tensorplug.nn

    assert tp.nn is tensorplug.nn and tp.cuda.__file__.endswith(os.path.join("cuda", "__init__.py"))


def test_import_stays_lazy():
    """import tensorplug imports no plugin module for the device modules' sake."""
    out = subprocess.run([sys.executable, "-c", "import sys, tensorplug; print('tensorplug_npdev' in sys.modules, "
                          "'tensorplug._device_runtime' in sys.modules)"], capture_output=True, text=True, timeout=120)
    assert out.stdout.split() == ["False", "True"], out.stderr


# --- streams and events ---------------------------------------------------------------------------
def test_stream_context_and_ordering(device):
    """Work on a side stream joined back with events gives NumPy's values; the current stream is
    the side stream inside the block and the default one after."""
    m = _module(device)
    default = m.current_stream()
    assert default == m.default_stream() and default is m.default_stream()
    side = m.Stream()
    assert side != default and side.device == tp.device(device, 0)
    x = tp.arange(10000, dtype=tp.float32, device=device)
    side.wait_stream(default)
    with m.stream(side):
        assert m.current_stream() == side
        y = (x * 3 - 1).sin()
    assert m.current_stream() == default
    default.wait_stream(side)
    z = y * 2
    expected = np.sin(np.arange(10000, dtype=np.float64) * 3 - 1) * 2
    np.testing.assert_allclose(z.cpu().numpy(), expected, rtol=1e-5, atol=1e-5)
    with side:  # a stream is its own context manager, as torch.Stream
        assert m.current_stream() == side
    side.synchronize()
    assert side.query() and default.query()


def test_set_stream_and_accelerator_view(device, monkeypatch):
    """tp.accelerator follows TENSORPLUG_ACCELERATOR and gives the device's streams and memory."""
    if device == "cpu":
        pytest.skip("the CPU is never tp.accelerator")
    monkeypatch.setenv("TENSORPLUG_ACCELERATOR", device)
    m = _module(device)
    assert tp.accelerator.current_accelerator() == tp.device(device)
    side = m.Stream()
    tp.accelerator.set_stream(side)
    try:
        assert tp.accelerator.current_stream() == side == m.current_stream()
    finally:
        tp.accelerator.set_stream(m.default_stream())
    assert tp.accelerator.current_stream() == m.default_stream()
    x = tp.ones(1 << 12, device=device)
    assert tp.accelerator.memory_allocated() == m.memory_allocated() >= x.untyped_storage().nbytes()
    tp.accelerator.synchronize()
    with pytest.raises(ValueError, match="not a device of the current accelerator"):
        tp.accelerator.set_stream(tp.cpu.Stream())


def test_event_timing_is_non_negative_and_additive(device):
    m = _module(device)
    start, middle, end = (m.Event(enable_timing=True) for _ in range(3))
    x = tp.randn(256, 256, device=device)
    start.record()
    y = x @ x
    middle.record()
    y = y @ x
    end.record()
    end.synchronize()
    assert end.query() and start.query()
    a, b, whole = start.elapsed_time(middle), middle.elapsed_time(end), start.elapsed_time(end)
    assert min(a, b, whole) >= 0.0
    assert abs(a + b - whole) <= 1e-3 + 1e-6 * whole
    assert whole < 60_000  # milliseconds, not nanoseconds


def test_event_errors(device):
    m = _module(device)
    unrecorded, timed = m.Event(enable_timing=True), m.Event(enable_timing=True)
    assert unrecorded.query()  # PyTorch: an event never recorded counts as complete
    unrecorded.synchronize()
    timed.record()
    with pytest.raises(RuntimeError, match="Both events must be recorded"):
        unrecorded.elapsed_time(timed)
    untimed = m.Event()
    untimed.record()
    with pytest.raises(RuntimeError, match="enable_timing=True"):
        untimed.elapsed_time(timed)
    with pytest.raises(NotImplementedError, match="interprocess"):
        m.Event(interprocess=True)
    if device != "cpu":
        with pytest.raises(ValueError, match="cannot be recorded on a stream of cpu"):
            m.Event().record(tp.cpu.current_stream())


@needs_opencl
@pytest.mark.parametrize("waiter", ["device", "stream", "event"])
def test_opencl_error_surfaces_at_synchronization(waiter):
    """An out-of-range index found by a kernel is raised by whichever synchronization comes next,
    on a side stream too, and the device keeps working."""
    m = tp.opencl
    side = m.Stream()
    x = tp.ones(3, device="opencl")
    side.wait_stream(m.current_stream())
    with m.stream(side):
        y = x[tp.tensor([5], device="opencl")]
        event = side.record_event()
    wait = {"device": m.synchronize, "stream": side.synchronize, "event": event.synchronize}[waiter]
    with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 0 with size 3"):
        wait()
    del y
    assert (x + 1).tolist() == [2.0, 2.0, 2.0]


@needs_opencl
def test_opencl_streams_are_separate_queues_with_their_own_pools():
    """A side stream's kernels go to its own queue; a block freed on it is reused by it, not by the
    default stream (whose queue might still be reading it otherwise)."""
    from tensorplug.backends.opencl import storage

    m = tp.opencl
    side = m.Stream()
    state = storage.devices()[0]
    assert side._handle.queue is not state.default_stream.queue
    with m.stream(side):
        assert state.queue is side._handle.queue
        t = tp.empty(1 << 18, device="opencl")
        t_pool_block = backend_storage(t).buffer
        assert state.pool is side._handle.pool
        del t, t_pool_block
        held = side._handle.pool.held_blocks
        assert held >= 1
    assert state.queue is state.default_stream.queue
    u = tp.empty(1 << 18, device="opencl")  # the default pool serves this; the side pool keeps its block
    assert side._handle.pool.held_blocks == held
    del u


@needs_opencl
def test_opencl_events_give_device_time():
    """Event timing on OpenCL comes from the queue's profiling clock: a marker recorded after a long
    kernel is later than one before it by at least the kernel's time."""
    m = tp.opencl
    x = tp.randn(512, 512, device="opencl")
    m.synchronize()
    start, end = m.Event(enable_timing=True), m.Event(enable_timing=True)
    start.record()
    for _ in range(3):
        x = x @ x / 512
    end.record()
    end.synchronize()
    assert start._handle.profile.end <= end._handle.profile.end
    assert start.elapsed_time(end) > 0.0


# --- memory ---------------------------------------------------------------------------------------
def test_memory_stats_move_with_allocation(device):
    m = _module(device)
    tp.ones(1, device=device)  # the backend is loaded
    before = m.memory_allocated()
    x = tp.empty(1 << 20, device=device)
    assert m.memory_allocated() - before == x.untyped_storage().nbytes() == 4 << 20
    assert m.max_memory_allocated() >= m.memory_allocated()
    assert m.memory_reserved() >= m.memory_allocated()
    assert m.memory_stats()["allocated_bytes"] == m.memory_allocated()
    del x
    assert m.memory_allocated() == before
    m.reset_peak_memory_stats()
    assert m.max_memory_allocated() == m.memory_allocated()
    m.empty_cache()
    assert m.memory_reserved() >= m.memory_allocated()


# --- the contract's defaults ----------------------------------------------------------------------
def test_backend_defaults_describe_a_synchronous_device():
    """A backend that fills in no runtime method: one order, events as host timestamps."""
    calls = []

    class Quiet(Backend):
        device_type = "quietdev"

        def synchronize(self, device_index):
            calls.append(device_index)

    backend = Quiet()
    default, new = backend.default_stream(0), backend.new_stream(0)
    assert default != new and backend.query_stream(0, new)
    start = backend.record_event(0, default, True)
    end = backend.record_event(0, new, True)
    assert calls == [0, 0]  # an event waits for the device before it takes its timestamp
    assert backend.query_event(0, end) and backend.event_elapsed_time(0, start, end) >= 0.0
    backend.synchronize_stream(0, new)
    assert calls == [0, 0, 0]
    assert backend.memory_stats(0) == {} and backend.autocast_dtypes == frozenset()


# --- autocast declarations ------------------------------------------------------------------------
def test_autocast_consults_the_backend_declaration(device):
    declared = tp.backends._probe.probe(device).backend.autocast_dtypes
    if device == "cpu":
        assert declared == {"bfloat16", "float16"}  # PyTorch's CPU autocast dtypes
        return
    for name in ("float16", "bfloat16", "float64"):
        dtype = getattr(tp, name)
        if name in declared:
            with tp.autocast(device, dtype=dtype):
                assert tp.is_autocast_enabled(device) and tp.get_autocast_dtype(device) is dtype
        else:
            with pytest.raises(RuntimeError, match=rf"'{device}'.*(declares no autocast dtypes|declares autocast dtypes)"):
                tp.autocast(device, dtype=dtype)
    assert tp.amp.is_autocast_available(device) == bool(declared)
    with tp.autocast(device, dtype=tp.float64, enabled=False):  # a disabled autocast checks nothing
        assert not tp.is_autocast_enabled(device)


def test_autocast_refuses_an_unknown_device_type():
    with pytest.raises(RuntimeError, match="unsupported autocast device_type 'nosuchdevice'.*installed: .*cpu"):
        tp.autocast("nosuchdevice")
    assert not tp.amp.is_autocast_available("nosuchdevice")


def test_cuda_streams_go_through_the_generic_runtime():
    """tp.cuda.Stream/Event work over a backend registered as 'cuda' (the stand-in of tests/port,
    with the contract's defaults), and say why without one."""
    if tp.cuda.is_available():
        pytest.skip("a CUDA GPU is usable here")
    with pytest.raises(RuntimeError, match="CUDA is not available: (CuPy is not installed|CuPy cannot|no CUDA device)"):
        tp.cuda.Stream()
    with pytest.raises(RuntimeError, match="CUDA is not available"):
        tp.cuda.current_stream()
    code = """
        import tensorplug as tp
        tp.backends.plugin_manager.add("cuda", "fake_cuda_backend:plugin")
        s = tp.cuda.Stream(device=1)
        assert s.device == tp.device("cuda", 1) and tp.cuda.current_stream(1) == tp.cuda.default_stream(1) != s
        with tp.cuda.stream(s):
            assert tp.cuda.current_device() == 1 and tp.cuda.current_stream() == s
        start, end = tp.cuda.Event(enable_timing=True), tp.cuda.Event(enable_timing=True)
        start.record(s)
        end.record(s)
        assert start.elapsed_time(end) >= 0 and end.query()
        print("ok")
    """
    port = os.path.join(os.path.dirname(os.path.dirname(__file__)), "port")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([port, os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-W", "error", "-c", textwrap.dedent(code)], capture_output=True, text=True,
                         env=env, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr
