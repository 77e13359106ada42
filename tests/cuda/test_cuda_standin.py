"""The CUDA backend's Python over a stand-in for CuPy (fake_runtime.py): runs without a GPU.

Each test runs in its own process, because the stand-in must be in place before the backend's
first use and a process keeps the backend it loaded.
"""
import os
import subprocess
import sys
import textwrap

HERE = os.path.dirname(os.path.abspath(__file__))
_SETUP = """
    import numpy as np
    import tensorplug as tp
    from tensorplug.backends.api import backend_storage
    from tensorplug.backends.cuda import storage, kernels
    from fake_runtime import FakeRuntime
    rt = FakeRuntime(**RUNTIME_ARGS)
    storage.use_runtime(rt)
"""


def run(code: str, **runtime_args) -> str:
    script = textwrap.dedent(_SETUP).replace("RUNTIME_ARGS", repr(runtime_args)) + textwrap.dedent(code)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([HERE, os.environ.get("PYTHONPATH", "")]))
    result = subprocess.run([sys.executable, "-W", "error", "-c", script], capture_output=True, text=True, env=env,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_tp_cuda_reports_the_standin_device():
    """tp.cuda's queries reach the backend: availability, count, name, capability, properties."""
    run("""
        assert tp.cuda.is_available() and tp.cuda.device_count() == 2
        assert tp.cuda.get_device_name() == "Fake H100 0" and tp.cuda.get_device_name(1) == "Fake H100 1"
        assert tp.cuda.get_device_capability(0) == (9, 0)
        assert tp.cuda.get_device_properties(0).total_memory == rt.memory_limit
        assert tp.cuda.mem_get_info()[1] == rt.memory_limit
        tp.cuda.set_device(1)
        assert tp.cuda.current_device() == 1
        tp.cuda.set_device(0)
        try:
            tp.zeros(2, device="cuda:7")
        except RuntimeError as exc:
            assert "cuda:7" in str(exc) or "7" in str(exc), exc
        else:
            raise AssertionError("cuda:7 was accepted")
    """, devices=2)


def test_host_copies_round_trip_and_views():
    """Tensor.cuda()/.to("cuda")/.cpu() copy values both ways, strided views included."""
    run("""
        x = tp.arange(12, dtype=tp.float32).reshape(3, 4)
        y = x.cuda()
        assert y.device == tp.device("cuda", 0) and y.is_cuda
        np.testing.assert_array_equal(y.cpu().numpy(), np.arange(12, dtype=np.float64).reshape(3, 4))
        np.testing.assert_array_equal(y.t().cpu().numpy(), np.arange(12, dtype=np.float64).reshape(3, 4).T)
        np.testing.assert_array_equal(y[:, 1::2].cpu().numpy(), np.arange(12).reshape(3, 4)[:, 1::2])
        assert tp.tensor([True, False], device="cuda").tolist() == [True, False]
    """)


def test_elementwise_op_launches_the_contiguous_kernel():
    """a + b on contiguous float32 picks add_tt, one thread per element in 256-thread blocks, with
    pointers, offsets, numbers and the count packed in the kernel's own argument types."""
    run("""
        a = tp.ones(1000, device="cuda")
        b = tp.ones(1000, device="cuda")
        rt.launches.clear()
        c = a + b
        (launch,) = rt.launches
        assert launch.name == "add_tt", rt.launches
        assert launch.grid == (4, 1, 1) and launch.block == (256, 1, 1)
        out, oo, pa, oa, pb, ob, sa, sb, n, err = launch.args
        assert (out, pa, pb) == (backend_storage(c).buffer, backend_storage(a).buffer, backend_storage(b).buffer)
        assert (oo, oa, ob, sa, sb, n) == (0, 0, 0, 0.0, 0.0, 1000)
        assert err == storage.devices()[0].error_flag
        d = tp.ones(4, 5, device="cuda")
        rt.launches.clear()
        d[:, 1:] * 2.5
        (launch,) = rt.launches
        # the strided kernel: a's offset 1, the number in sb, mode 2 (b is a number), 16 elements
        assert launch.name == "mul_s" and launch.args[3] == 1 and launch.args[7:10] == (2.5, 2, 16), launch
        assert launch.args[11:14] == (2, 4, 4), launch  # two dims of 4 after coalescing
        src = next(s for s in rt.sources if "add_tt" in s)
        # The OpenCL program behind the CUDA preamble (which defines __kernel as extern "C" __global__).
        assert '#define __kernel extern "C" __global__' in src and "__kernel void add_tt(" in src
        assert "__device__ long tp_wrap_index(" in src
    """)


def test_fused_relu_and_adam_are_one_launch():
    """relu runs the fused relu_c kernel, and an Adam step one adam_step launch per parameter."""
    run("""
        x = tp.ones(10, device="cuda")
        rt.launches.clear()
        tp.relu(x)
        assert [l.name for l in rt.launches] == ["relu_c"], rt.launches
        w = tp.ones(3, 4, device="cuda", requires_grad=True)
        b = tp.ones(4, device="cuda", requires_grad=True)
        w.grad, b.grad = tp.ones(3, 4, device="cuda"), tp.ones(4, device="cuda")
        opt = tp.optim.Adam([w, b], lr=0.1)
        rt.launches.clear()
        opt.step()
        assert [l.name for l in rt.launches].count("adam_step") == 2, rt.launches
    """)


def test_a_training_step_reads_the_device_once():
    """An MLP step with cross_entropy and Adam reads the device once (the loss's target range
    check, both extremes in one read); gather and scatter on the checked target read nothing."""
    run("""
        reads = []
        real = storage.to_host
        def counting(src):
            reads.append(tuple(src.shape))
            return real(src)
        storage.to_host = counting
        import tensorplug.backends.cuda as backend
        for name in dir(backend):
            if getattr(backend, name) is real:
                setattr(backend, name, counting)
        nn = tp.nn
        model = nn.Sequential(nn.Linear(6, 5), nn.ReLU(), nn.Linear(5, 3)).cuda()
        x, y = tp.randn(4, 6, device="cuda"), tp.randint(0, 3, (4,), device="cuda")
        opt = tp.optim.Adam(model.parameters(), lr=1e-3)
        for _ in range(2):
            reads.clear()
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            assert reads == [(2,)], reads
    """)


def test_kernels_compile_once_per_family_and_dtype():
    """The second op of a family and dtype reuses the compiled program; a new dtype compiles its own."""
    run("""
        a = tp.ones(8, device="cuda")
        a + a; a * a; a - 1
        n = len(rt.sources)
        a + a; a / 3
        assert len(rt.sources) == n
        b = tp.ones(8, dtype=tp.int64, device="cuda")
        b + b
        assert len(rt.sources) == n + 1
    """)


def test_matmul_goes_to_one_gemm_for_every_layout_the_frontend_makes():
    """float32 matmuls, with transposed, batched and broadcast operands, are one strided-batched
    GEMM each with the right transposes and leading dimensions: the stand-in computes the GEMM
    with cuBLAS's column-major meaning, and the results match NumPy."""
    run("""
        rng = np.random.default_rng(0)
        cases = [((5, 3), (3, 4), False, False), ((5, 3), (3, 4), True, False), ((5, 3), (3, 4), False, True),
                 ((5, 3), (3, 4), True, True), ((2, 5, 3), (2, 3, 4), True, False), ((2, 5, 3), (3, 4), False, True),
                 ((1, 3), (3, 1), False, False), ((5, 1), (1, 4), True, True), ((3,), (3, 4), False, True)]
        for shape_a, shape_b, ta, tb in cases:
            a = rng.standard_normal(shape_a).astype(np.float32)
            b = rng.standard_normal(shape_b).astype(np.float32)
            # A transposed operand is a view of a transposed copy: what nn.Linear's weight.t() is.
            xa = tp.tensor(np.swapaxes(a, -1, -2).copy(), device="cuda").transpose(-1, -2) if ta and a.ndim > 1 \
                else tp.tensor(a, device="cuda")
            xb = tp.tensor(np.swapaxes(b, -1, -2).copy(), device="cuda").transpose(-1, -2) if tb \
                else tp.tensor(b, device="cuda")
            rt.launches.clear()
            before = len(rt.gemms)
            got = (xa @ xb).cpu().numpy()
            assert len(rt.gemms) == before + 1, (shape_a, shape_b, ta, tb)
            assert not [l for l in rt.launches if l.name == "matmul"], rt.launches
            np.testing.assert_allclose(got, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-5, atol=1e-6,
                                       err_msg=str((shape_a, shape_b, ta, tb)))
    """)


def test_blas_layout_refuses_what_cublas_cannot_read():
    """Rows or columns must be contiguous with a leading dimension at least the other size."""
    from tensorplug.backends.cuda.kernels import blas_layout

    assert blas_layout(4, 3, 3, 1) == ("N", 3)
    assert blas_layout(4, 3, 1, 4) == ("T", 4)
    assert blas_layout(4, 3, 6, 2) is None  # every other column
    assert blas_layout(4, 3, 0, 1) is None  # rows broadcast
    assert blas_layout(1, 3, 7, 1) == ("N", 3) and blas_layout(4, 1, 2, 9) == ("N", 2)


def test_index_error_surfaces_at_the_next_host_read():
    """A gather marks the flag as possibly set; a kernel's recorded error raises IndexError at the
    next host read, which clears it, so the process keeps working."""
    run("""
        import ctypes
        x = tp.zeros(4, device="cuda")
        idx = tp.tensor([0, 9], device="cuda")
        y = x.gather(0, idx)
        device = storage.devices()[0]
        assert device.error_possible
        # What tp_raise writes on the GPU: {code, value, dim, size}.
        flag = np.array([1, 9, 0, 4], dtype=np.int64)
        ctypes.memmove(device.error_flag, flag.ctypes.data, 32)
        try:
            y.cpu().numpy()
        except IndexError as exc:
            assert str(exc) == "index 9 is out of bounds for dimension 0 with size 4", exc
        else:
            raise AssertionError("no IndexError")
        assert y.cpu().numpy().shape == (2,)  # cleared: the next read works
    """)


def test_memory_statistics_follow_storages():
    """allocated bytes rise with a tensor and fall the moment it dies; the peak stays until reset."""
    run("""
        tp.cuda.init()
        tp.empty(1, device="cuda")
        base = tp.cuda.memory_allocated()  # the device's error flag
        assert base == 32
        x = tp.empty(1000, device="cuda")
        assert tp.cuda.memory_allocated() == base + 4000
        del x
        assert tp.cuda.memory_allocated() == base
        assert tp.cuda.max_memory_allocated() >= base + 4000
        tp.cuda.reset_peak_memory_stats()
        assert tp.cuda.max_memory_allocated() == base
        assert tp.cuda.memory_reserved() >= base
        tp.cuda.empty_cache()
        assert rt.freed_cache >= 1
    """)


def test_out_of_memory_is_a_clean_runtime_error():
    """An allocation the pool cannot serve (even after emptying the cache) raises
    tp.cuda.OutOfMemoryError naming the request; later allocations work."""
    run("""
        assert issubclass(tp.cuda.OutOfMemoryError, RuntimeError)
        small = tp.empty(10, device="cuda")
        try:
            tp.empty(1 << 20, device="cuda")
        except tp.cuda.OutOfMemoryError as exc:
            text = str(exc)
            assert "Tried to allocate 4.00 MiB" in text and "allocated" in text and "cached" in text, text
        else:
            raise AssertionError("no OutOfMemoryError")
        assert rt.freed_cache == 1
        assert tp.ones(10, device="cuda").shape == (10,)
    """, memory_limit=1 << 16)


def test_streams_and_events():
    """tp.cuda.Stream makes a runtime stream; work inside ``with tp.cuda.stream(s)`` launches on it;
    events time through the runtime."""
    run("""
        a = tp.ones(4, device="cuda")
        s = tp.cuda.Stream()
        with tp.cuda.stream(s):
            rt.launches.clear()
            a + 1
            assert rt.launches[-1].stream == rt.streams[-1].ptr != 0
        rt.launches.clear()
        a + 1
        assert rt.launches[-1].stream == 0
        start, end = tp.cuda.Event(enable_timing=True), tp.cuda.Event(enable_timing=True)
        start.record(); end.record(); end.synchronize()
        assert start.elapsed_time(end) == 1.5
        tp.cuda.synchronize()
        s.synchronize()
    """)


def test_cuda_tensor_mixed_with_cpu_is_refused():
    """Mixing devices gives the frontend's device-mismatch error before any kernel runs."""
    run("""
        a = tp.ones(3, device="cuda")
        rt.launches.clear()
        try:
            a + tp.ones(3)
        except RuntimeError as exc:
            assert "cuda" in str(exc) and "cpu" in str(exc), exc
        else:
            raise AssertionError("mixed devices were accepted")
        assert not rt.launches
    """)


def test_import_does_not_import_cupy():
    """import tensorplug (and the cuda backend package) leaves CuPy unimported."""
    code = "import sys, tensorplug, tensorplug.cuda, tensorplug.backends.cuda; assert 'cupy' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_elementwise_plans_launch_what_the_shared_adapters_launch():
    """The cached launch plans of binary, unary, copy and reduction ops launch the same kernel, grid and arguments
    as the shared OpenCL adapters, for flat, strided, broadcast, number and many-dim operands, and
    integer division keeps its host check and its error flag."""
    run("""
        from tensorplug.backends.opencl import kernels as shared
        table = kernels.table()
        device = storage.devices()[0]

        def launches(kernel, *args):
            rt.launches.clear()
            kernel(*args)
            return [(l.name, l.grid, l.block, l.args) for l in rt.launches]

        x = tp.ones(4, 6, device="cuda")
        y = tp.ones(6, device="cuda")
        cases = [
            ("add", tp.empty(4, 6, device="cuda"), x, tp.ones(4, 6, device="cuda")),  # flat
            ("add", tp.empty(4, 6, device="cuda"), x, y.expand(4, 6)),  # broadcast: strided
            ("mul", tp.empty(6, 4, device="cuda"), x.t(), 2.5),  # transposed and a number
            ("sub", tp.empty(4, 6, device="cuda"), 3, x),  # a number first
            ("lt", tp.empty(4, 6, dtype=tp.bool, device="cuda"), x, x),  # compare
            ("add", tp.empty(0, 6, device="cuda"), x[:0], x[:0]),  # nothing to launch
            ("add", tp.empty(*[2] * 9, device="cuda"),  # more dims than a kernel takes
             tp.ones(*[3] * 9, device="cuda")[(slice(0, 2),) * 9], tp.ones(*[2] * 9, device="cuda")),
        ]
        for name, out, a, b in cases:
            for _ in range(2):  # the second call runs from the cached plan
                assert launches(table[name], out, a, b) == launches(shared._binary(name), out, a, b), name
        for name, out, a in [("exp", tp.empty(4, 6, device="cuda"), x), ("neg", tp.empty(6, 4, device="cuda"), x.t())]:
            for _ in range(2):
                assert launches(table[name], out, a) == launches(shared._unary(name), out, a), name
        copies = [(tp.empty(4, 6, device="cuda"), x), (tp.empty(6, 4, dtype=tp.int64, device="cuda"), x.t()),
                  (tp.empty(4, 6, dtype=tp.float64, device="cuda"), y.expand(4, 6))]
        for dst, src in copies:
            for _ in range(2):
                assert launches(table["copy_"], dst, src) == launches(shared._copy, dst, src)
        z = tp.ones(2, 3, 4, device="cuda")
        big = tp.ones(1 << 16, device="cuda")
        # The frontend hands reductions an output that keeps the reduced dims (as size 1).
        reductions = [("sum", tp.empty(2, 1, 4, device="cuda"), z, [1]),
                      ("sum", tp.empty(1, 3, 1, device="cuda"), z, [0, 2]),
                      ("amax", tp.empty(2, 1, 3, device="cuda"), z.transpose(1, 2), [1]),
                      ("argmax", tp.empty(2, 1, 4, dtype=tp.int64, device="cuda"), z, [1]),
                      ("sum", tp.empty(1, device="cuda"), big, [0]),  # split in two passes
                      ("sum", tp.empty(2, 1, 4, device="cuda"), z[:, :0], [1])]  # empty: filled
        for name, out, a, dims in reductions:
            for _ in range(2):
                assert launches(table[name], out, a, dims) == launches(shared._reduce(name), out, a, dims), name

        i = tp.ones(5, dtype=tp.int64, device="cuda")
        out = tp.empty(5, dtype=tp.int64, device="cuda")
        device.error_possible = False
        assert launches(table["floor_divide"], out, i, i) == launches(shared._binary("floor_divide"), out, i, i)
        device.error_possible = False
        table["floor_divide"](out, i, i)
        assert device.error_possible
        try:
            table["floor_divide"](out, i, 0)
        except ZeroDivisionError:
            pass
        else:
            raise AssertionError("an integer division by the number 0 was launched")
    """)
