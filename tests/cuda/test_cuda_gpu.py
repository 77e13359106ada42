"""The CUDA backend on a real GPU: values against NumPy float64 references, asynchronous errors,
out-of-memory, streams and events. Skipped, with the reason, where CuPy or a GPU is missing."""
import time

import numpy as np
import pytest

import tensorplug as tp

pytestmark = pytest.mark.skipif(not tp.cuda.is_available(), reason=f"CUDA unavailable: {tp.cuda.unavailable_reason()}")

TOL = {"float32": 1e-5, "float64": 1e-12, "float16": 2e-3, "bfloat16": 1.6e-2}


def _cuda(array, dtype=None):
    t = tp.tensor(array)
    return (t if dtype is None else t.to(dtype)).to("cuda")


def _host(t):
    return t.float().cpu().numpy().astype(np.float64) if t.dtype in (tp.float16, tp.bfloat16) else t.cpu().numpy()


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_elementwise_and_broadcast(dtype):
    """exp, add with broadcasting and a transposed operand, and a scalar multiply match float64."""
    a = np.random.rand(33, 65) - 0.5
    b = np.random.rand(65) - 0.5
    ta, tb = _cuda(a, getattr(tp, dtype)), _cuda(b, getattr(tp, dtype))
    ra, rb = _host(ta), _host(tb)  # the values as stored in dtype
    np.testing.assert_allclose(_host(tp.exp(ta)), np.exp(ra), rtol=TOL[dtype], atol=TOL[dtype])
    np.testing.assert_allclose(_host(ta + tb), ra + rb, rtol=TOL[dtype], atol=TOL[dtype])
    np.testing.assert_allclose(_host(ta.t() * 3.0), ra.T * 3.0, rtol=TOL[dtype], atol=TOL[dtype])


def test_integer_and_bool_ops():
    """int64 arithmetic wraps and floor-divides as NumPy does; comparisons give bool."""
    a = np.array([7, -7, 2**62, -3], dtype=np.int64)
    b = np.array([2, 2, 4, 5], dtype=np.int64)
    ta, tb = _cuda(a), _cuda(b)
    np.testing.assert_array_equal((ta // tb).cpu().numpy(), a // b)
    np.testing.assert_array_equal((ta % tb).cpu().numpy(), a % b)
    np.testing.assert_array_equal((ta * tb).cpu().numpy(), a * b)
    np.testing.assert_array_equal((ta > tb).cpu().numpy(), a > b)


@pytest.mark.parametrize("shape,dims", [((1_000_003,), (0,)), ((37, 513), (1,)), ((64, 33, 17), (0, 2))])
def test_reductions(shape, dims):
    """sum, amax and argmax (float32) against float64 NumPy, on a large vector and partial dims."""
    a = np.random.randn(*shape)
    t = _cuda(a, tp.float32)
    r = t.cpu().numpy().astype(np.float64)
    np.testing.assert_allclose(t.sum(dim=dims).cpu().numpy(), r.sum(axis=dims), rtol=1e-4, atol=1e-3)
    np.testing.assert_array_equal(t.amax(dim=dims).cpu().numpy(), r.max(axis=dims))
    if len(dims) == 1:
        np.testing.assert_array_equal(t.argmax(dim=dims[0]).cpu().numpy(), r.argmax(axis=dims[0]))


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int64"])
def test_matmul(dtype):
    """A batched matmul with a transposed operand matches float64 (integers exactly)."""
    if dtype == "int64":
        a, b = np.random.randint(-5, 5, (3, 17, 40)), np.random.randint(-5, 5, (3, 23, 40))
    else:
        a, b = np.random.randn(3, 17, 40), np.random.randn(3, 23, 40)
    ta, tb = _cuda(a, getattr(tp, dtype)), _cuda(b, getattr(tp, dtype))
    got = _host(ta @ tb.transpose(1, 2))
    ref = _host(ta) @ _host(tb).transpose(0, 2, 1)
    tol = {"float32": 1e-4, "float64": 1e-10, "float16": 1e-2, "bfloat16": 3e-2, "int64": 0}[dtype]
    np.testing.assert_allclose(got, ref, rtol=tol, atol=tol * 10)


def test_sort_and_index_ops():
    """sort (NaN last), gather and index_put_ with accumulation."""
    a = np.array([3.0, np.nan, -1.0, 2.0])
    values, indices = _cuda(a, tp.float32).sort()
    np.testing.assert_array_equal(values.cpu().numpy()[:3], [-1.0, 2.0, 3.0])
    assert np.isnan(values.cpu().numpy()[3]) and indices.cpu().numpy().tolist() == [2, 3, 0, 1]
    x = _cuda(np.arange(10.0), tp.float32)
    np.testing.assert_array_equal(x.gather(0, _cuda([9, 0, 4])).cpu().numpy(), [9.0, 0.0, 4.0])
    y = tp.zeros(4, device="cuda")
    y.index_put_((_cuda([1, 1, 3]),), _cuda([1.0, 2.0, 5.0], tp.float32), accumulate=True)
    np.testing.assert_array_equal(y.cpu().numpy(), [0.0, 3.0, 0.0, 5.0])


def test_gather_refuses_a_bad_index_before_any_kernel():
    """gather (like index_select, scatter, nll_loss) checks its index range on the host first."""
    x = tp.zeros(4, device="cuda")
    with pytest.raises(IndexError, match=r"gather\(\): index 9 is out of bounds for dimension 0 with size 4"):
        x.gather(0, _cuda([0, 9]))


def test_index_error_is_raised_at_synchronization_and_the_process_goes_on():
    """Advanced indexing has no host-side range check: its kernel records the bad index in the
    device error flag, the next host read raises IndexError, and later work is unaffected."""
    x = tp.zeros(4, device="cuda")
    y = x[_cuda([0, 9])]  # queued; nothing is read back yet
    with pytest.raises(IndexError, match="index 9 is out of bounds for dimension 0 with size 4"):
        y.cpu()
    np.testing.assert_array_equal(x[_cuda([0, -1])].cpu().numpy(), np.zeros(2, dtype=np.float32))
    assert (x + 1).sum().item() == 4.0


def test_integer_division_by_zero_tensor():
    """A zero tensor divisor raises ZeroDivisionError at synchronization."""
    r = _cuda([4, 5]) // _cuda([2, 0])
    with pytest.raises(ZeroDivisionError):
        tp.cuda.synchronize()
    assert r.shape == (2,)


def test_random_numbers_match_the_cpu_bit_for_bit():
    """The same seed gives the same uniform numbers on cuda and cpu (Philox everywhere)."""
    tp.manual_seed(123)
    a = tp.rand(1000)
    tp.manual_seed(123)
    b = tp.rand(1000, device="cuda")
    np.testing.assert_array_equal(a.numpy(), b.cpu().numpy())


def test_autograd_matches_the_cpu():
    """A small MLP's loss and gradients on cuda match the same model on cpu."""
    tp.manual_seed(0)
    cpu_model = tp.nn.Sequential(tp.nn.Linear(20, 16), tp.nn.ReLU(), tp.nn.Linear(16, 3))
    x, target = tp.randn(8, 20), tp.randint(0, 3, (8,))
    gpu_model = tp.nn.Sequential(tp.nn.Linear(20, 16), tp.nn.ReLU(), tp.nn.Linear(16, 3))
    gpu_model.load_state_dict(cpu_model.state_dict())
    gpu_model = gpu_model.cuda()
    losses = []
    for model, dev in ((cpu_model, "cpu"), (gpu_model, "cuda")):
        loss = tp.nn.functional.cross_entropy(model(x.to(dev)), target.to(dev))
        loss.backward()
        losses.append(loss.item())
    assert abs(losses[0] - losses[1]) < 1e-5
    for p_cpu, p_gpu in zip(cpu_model.parameters(), gpu_model.parameters()):
        np.testing.assert_allclose(p_gpu.grad.cpu().numpy(), p_cpu.grad.numpy(), rtol=1e-4, atol=1e-6)


def test_out_of_memory_then_recovery():
    """Asking for more than the GPU has raises tp.cuda.OutOfMemoryError; memory stays usable."""
    total = tp.cuda.get_device_properties(0).total_memory
    with pytest.raises(tp.cuda.OutOfMemoryError, match="Tried to allocate"):
        tp.empty(total // 2, dtype=tp.float64, device="cuda")
    assert tp.ones(1000, device="cuda").sum().item() == 1000.0


def test_memory_statistics_and_empty_cache():
    """allocated bytes follow a tensor's life; empty_cache lowers reserved memory."""
    tp.cuda.synchronize()
    before = tp.cuda.memory_allocated()
    x = tp.empty(1 << 20, device="cuda")
    assert tp.cuda.memory_allocated() == before + 4 * (1 << 20)
    assert tp.cuda.max_memory_allocated() >= before + 4 * (1 << 20)
    del x
    assert tp.cuda.memory_allocated() == before
    tp.cuda.empty_cache()
    assert tp.cuda.memory_reserved() <= tp.cuda.mem_get_info()[1]


def test_streams_events_and_device_queries():
    """Events time work on a side stream; the queries answer with the GPU's values."""
    assert tp.cuda.device_count() >= 1 and isinstance(tp.cuda.get_device_name(), str)
    assert tp.cuda.get_device_capability()[0] >= 3
    free, total = tp.cuda.mem_get_info()
    assert 0 < free <= total
    s = tp.cuda.Stream()
    start, end = tp.cuda.Event(enable_timing=True), tp.cuda.Event(enable_timing=True)
    x = tp.ones(1 << 22, device="cuda")
    tp.cuda.current_stream().synchronize()
    with tp.cuda.stream(s):
        start.record()
        for _ in range(10):
            x = x * 1.0001
        end.record()
    end.synchronize()
    assert start.elapsed_time(end) > 0
    assert abs(x[0].item() - 1.0001 ** 10) < 1e-5


def test_host_runs_ahead_of_the_gpu():
    """Queuing 100 large multiplies returns long before they finish: no hidden synchronization."""
    x = tp.ones(1 << 26, device="cuda")
    (x * 2).sum().item()  # compile and warm up
    started = time.perf_counter()
    for _ in range(100):
        x = x * 1.0
    queued = time.perf_counter() - started
    tp.cuda.synchronize()
    finished = time.perf_counter() - started
    assert queued < 0.5 * finished, (queued, finished)


def test_fused_adam_step_matches_the_formula():
    """Three Adam steps (weight decay, amsgrad) on cuda follow torch.optim.Adam's formula in float64."""
    rng = np.random.default_rng(0)
    p0, grads = rng.standard_normal(1000), [rng.standard_normal(1000) for _ in range(3)]
    param = tp.tensor(p0, dtype=tp.float32, device="cuda", requires_grad=True)
    opt = tp.optim.Adam([param], lr=0.01, betas=(0.9, 0.99), eps=1e-8, weight_decay=0.1, amsgrad=True)
    p, m, v, vmax = p0.astype(np.float32).astype(np.float64), np.zeros(1000), np.zeros(1000), np.zeros(1000)
    for step, g in enumerate(grads, start=1):
        param.grad = tp.tensor(g, dtype=tp.float32, device="cuda")
        opt.step()
        g = g.astype(np.float32).astype(np.float64) + 0.1 * p
        m = 0.9 * m + 0.1 * g
        v = 0.99 * v + 0.01 * g * g
        vmax = np.maximum(vmax, v)
        p = p - 0.01 / (1 - 0.9**step) * m / (np.sqrt(vmax) / np.sqrt(1 - 0.99**step) + 1e-8)
    np.testing.assert_allclose(param.detach().cpu().numpy(), p, rtol=1e-5, atol=1e-6)


def test_fused_max_pool2d_and_its_gradient():
    """max_pool2d (2x2, stride 2) and its gradient match a NumPy reference."""
    x = np.random.default_rng(1).standard_normal((2, 3, 6, 8))
    t = tp.tensor(x, dtype=tp.float32, device="cuda", requires_grad=True)
    y = tp.nn.functional.max_pool2d(t, 2)
    windows = x.astype(np.float32).astype(np.float64).reshape(2, 3, 3, 2, 4, 2)
    np.testing.assert_array_equal(y.detach().cpu().numpy(), windows.max(axis=(3, 5)))
    y.sum().backward()
    flat = windows.transpose(0, 1, 2, 4, 3, 5).reshape(2, 3, 3, 4, 4)
    first = flat.argmax(axis=-1)  # PyTorch: the first maximum of each window takes the gradient
    grad = np.zeros_like(flat)
    np.put_along_axis(grad, first[..., None], 1.0, axis=-1)
    expected = grad.reshape(2, 3, 3, 4, 2, 2).transpose(0, 1, 2, 4, 3, 5).reshape(2, 3, 6, 8)
    np.testing.assert_array_equal(t.grad.cpu().numpy(), expected)


def _conv_reference(x, w, stride, pad, dil, groups):
    """float64 conv2d by direct summation over kernel offsets."""
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad[0], pad[0]), (pad[1], pad[1])))
    oh = (h + 2 * pad[0] - dil[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (wd + 2 * pad[1] - dil[1] * (kw - 1) - 1) // stride[1] + 1
    out = np.zeros((n, o, oh, ow))
    og = o // groups
    for g in range(groups):
        for i in range(kh):
            for j in range(kw):
                patch = xp[:, g * cg:(g + 1) * cg, i * dil[0]:i * dil[0] + stride[0] * (oh - 1) + 1:stride[0],
                           j * dil[1]:j * dil[1] + stride[1] * (ow - 1) + 1:stride[1]]
                out[:, g * og:(g + 1) * og] += np.einsum("ncyx,oc->noyx", patch, w[g * og:(g + 1) * og, :, i, j])
    return out


@pytest.mark.parametrize("stride,pad,dil,groups", [((1, 1), (1, 1), (1, 1), 1), ((2, 1), (0, 2), (2, 1), 2)])
def test_conv2d_and_its_gradients(stride, pad, dil, groups):
    """conv2d (im2col + one GEMM) and its input and weight gradients match float64 NumPy; the
    gradients are checked through the linear map's adjoint: <conv(x, w), G> differentiated."""
    rng = np.random.default_rng(0)
    x, w, b = rng.standard_normal((2, 4, 9, 8)), rng.standard_normal((6, 4 // groups, 3, 2)), rng.standard_normal(6)
    tx = _cuda(x, tp.float64).requires_grad_()
    tw = _cuda(w, tp.float64).requires_grad_()
    out = tp.nn.functional.conv2d(tx, tw, _cuda(b, tp.float64), stride=stride, padding=pad, dilation=dil, groups=groups)
    ref = _conv_reference(x, w, stride, pad, dil, groups) + b.reshape(1, -1, 1, 1)
    np.testing.assert_allclose(out.cpu().detach().numpy(), ref, rtol=1e-12, atol=1e-12)
    g = rng.standard_normal(ref.shape)
    out.backward(_cuda(g, tp.float64))
    grad_w = np.zeros_like(w)
    for idx in np.ndindex(w.shape):
        e = np.zeros_like(w)
        e[idx] = 1.0
        grad_w[idx] = (_conv_reference(x, e, stride, pad, dil, groups) * g).sum()
    grad_x = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[idx] = 1.0
        grad_x[idx] = (_conv_reference(e, w, stride, pad, dil, groups) * g).sum()
    np.testing.assert_allclose(tw.grad.cpu().numpy(), grad_w, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(tx.grad.cpu().numpy(), grad_x, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_cross_entropy_and_its_gradient(dtype):
    """cross_entropy with ignore_index (mean over the kept targets) and its gradient match float64."""
    rng = np.random.default_rng(1)
    logits = rng.standard_normal((7, 5)) * 3
    target = np.array([0, 4, 2, -100, 1, 3, 4])
    x = _cuda(logits, getattr(tp, dtype)).requires_grad_()
    loss = tp.nn.functional.cross_entropy(x, _cuda(target), ignore_index=-100)
    loss.backward()
    shifted = logits - logits.max(1, keepdims=True)
    log_p = shifted - np.log(np.exp(shifted).sum(1, keepdims=True))
    kept = target != -100
    rows = np.arange(7)[kept]
    ref = -log_p[rows, target[kept]].mean()
    grad = np.exp(log_p)
    grad[rows, target[kept]] -= 1.0
    grad[~kept] = 0.0
    grad /= kept.sum()
    tol = TOL[dtype]
    assert abs(loss.item() - ref) <= tol * max(1.0, abs(ref))
    np.testing.assert_allclose(x.grad.cpu().numpy(), grad, rtol=tol, atol=tol)
    with pytest.raises(IndexError, match=r"cross_entropy\(\): index 5 is out of bounds for dimension 1 with size 5"):
        tp.nn.functional.cross_entropy(x, _cuda([0, 5, 1, 1, 1, 1, 1]))
