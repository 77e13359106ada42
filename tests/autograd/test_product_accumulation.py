"""A product of two leaves that have a .grad adds both gradients in one op where the backend has a
kernel for it (issue 14; OpenCL does): gradients exactly as the unfused ops give them, and every
case the engine must leave to the ordinary path still right."""
import numpy as np
import pytest

import tensorplug as tp
from tensorplug.frontend.autograd import product_accumulation


def _np(t) -> np.ndarray:
    return t.detach().cpu().numpy()


def _leaves(device, dtype, n=37, seed=0):
    rng = np.random.default_rng(seed)
    a_np, b_np = (rng.standard_normal(n).astype(np.dtype(dtype.name)) for _ in range(2))
    a = tp.tensor(a_np, device=device, requires_grad=True)
    b = tp.tensor(b_np, device=device, requires_grad=True)
    return a, b, a_np, b_np


@pytest.mark.parametrize("dtype", [tp.float32, tp.float64])
def test_sum_of_product_accumulates_bit_for_bit(device, dtype):
    # The reference rounds as the unfused ops do: each product to the dtype, then the sum.
    a, b, a_np, b_np = _leaves(device, dtype)
    (a * b).sum().backward()
    (a * b).sum().backward()
    (a * b).sum().backward()
    one = np.ones((), a_np.dtype)
    expected_a, expected_b = one * b_np, one * a_np
    for _ in range(2):
        expected_a = expected_a + one * b_np
        expected_b = expected_b + one * a_np
    np.testing.assert_array_equal(_np(a.grad), expected_a)
    np.testing.assert_array_equal(_np(b.grad), expected_b)


@pytest.mark.parametrize("dtype", [tp.float32, tp.float64])
def test_a_full_upstream_gradient_accumulates_bit_for_bit(device, dtype):
    a, b, a_np, b_np = _leaves(device, dtype)
    g_np = np.random.default_rng(1).standard_normal(a_np.shape).astype(a_np.dtype)
    start_a = np.random.default_rng(2).standard_normal(a_np.shape).astype(a_np.dtype)
    start_b = np.random.default_rng(3).standard_normal(a_np.shape).astype(a_np.dtype)
    a.grad = tp.tensor(start_a, device=device)
    b.grad = tp.tensor(start_b, device=device)
    grad_a_before = a.grad
    version = a.grad._version
    (a * b).backward(tp.tensor(g_np, device=device))
    np.testing.assert_array_equal(_np(a.grad), start_a + g_np * b_np)
    np.testing.assert_array_equal(_np(b.grad), start_b + g_np * a_np)
    assert a.grad is grad_a_before and a.grad._version > version  # in place, as PyTorch without create_graph


def test_matches_torch_accumulation():
    torch = pytest.importorskip("torch")
    a, b, a_np, b_np = _leaves("cpu", tp.float32)
    ta = torch.tensor(a_np, requires_grad=True)
    tb = torch.tensor(b_np, requires_grad=True)
    for _ in range(3):
        (a * b).sum().backward()
        (ta * tb).sum().backward()
    np.testing.assert_array_equal(_np(a.grad), ta.grad.numpy())
    np.testing.assert_array_equal(_np(b.grad), tb.grad.numpy())


def test_cases_the_engine_leaves_to_the_ordinary_path(device):
    a, b, a_np, b_np = _leaves(device, tp.float32, n=5)
    # The first backward: no .grad yet.
    (a * b).sum().backward()
    # One leaf twice: x * x sums both gradients into one .grad.
    x = tp.tensor(a_np, device=device, requires_grad=True)
    x.grad = tp.zeros(5, device=device)
    (x * x).sum().backward()
    np.testing.assert_allclose(_np(x.grad), 2 * a_np.astype(np.float64), rtol=1e-6)
    # Broadcasting: b's gradient is summed back to one element.
    c = tp.tensor(np.float32(1.5).reshape(1), device=device, requires_grad=True)
    c.grad = tp.zeros(1, device=device)
    a.grad = tp.zeros(5, device=device)
    (a * c).sum().backward()
    np.testing.assert_allclose(_np(c.grad), [a_np.astype(np.float64).sum()], rtol=1e-5)
    np.testing.assert_allclose(_np(a.grad), np.full(5, 1.5), rtol=1e-6)
    # A leaf fed by two nodes: a's gradient is the sum of both before it is added.
    a.grad = tp.zeros(5, device=device)
    b.grad = tp.zeros(5, device=device)
    ((a * b).sum() + a.sum()).backward()  # a.sum()'s gradient arrives first, and waits
    np.testing.assert_allclose(_np(a.grad), b_np.astype(np.float64) + 1, rtol=1e-6)
    a.grad = tp.zeros(5, device=device)
    (a.sum() + (a * b).sum()).backward()  # the product's arrives first
    np.testing.assert_allclose(_np(a.grad), b_np.astype(np.float64) + 1, rtol=1e-6)
    np.testing.assert_allclose(_np(b.grad), a_np.astype(np.float64) * 2, rtol=1e-6)
    # A hook on a leaf sees its gradient.
    b.grad = tp.zeros(5, device=device)
    seen = []
    b.register_hook(lambda grad: seen.append(_np(grad)))
    (a * b).sum().backward()
    np.testing.assert_allclose(seen[0], a_np, rtol=1e-6)
    np.testing.assert_allclose(_np(b.grad), a_np, rtol=1e-6)


def test_retain_graph_and_modified_inputs(device):
    a, b, a_np, b_np = _leaves(device, tp.float32, n=6)
    a.grad = tp.zeros(6, device=device)
    b.grad = tp.zeros(6, device=device)
    loss = (a * b).sum()
    loss.backward(retain_graph=True)
    loss.backward()
    np.testing.assert_allclose(_np(a.grad), 2 * b_np.astype(np.float64), rtol=1e-6)
    with pytest.raises(RuntimeError):
        loss.backward()  # the saved tensors were released after the second pass
    loss = (a * b).sum()
    with tp.no_grad():
        b.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()


def test_the_helper_declines_what_it_does_not_cover():
    a, b, _, _ = _leaves("cpu", tp.float32, n=3)
    ga, gb = tp.zeros(3), tp.zeros(3)
    grad = tp.ones(3)
    # The CPU has no kernel of its own for the op: the engine keeps its ordinary path.
    assert product_accumulation.accumulate_product(ga, gb, grad, a, b) is False
    assert product_accumulation.accumulate_product(ga, ga, grad, a, b) is False
    assert product_accumulation.accumulate_product(ga, gb, grad, a, b[:2]) is False
    np.testing.assert_array_equal(_np(ga), np.zeros(3, np.float32))


def test_opencl_runs_one_kernel_for_the_product_and_both_accumulations():
    pytest.importorskip("pyopencl")
    ok, reason = tp.backends.opencl.OpenCLBackend().is_available()
    if not ok:
        pytest.skip(f"OpenCL backend unavailable: {reason}")
    a, b, a_np, b_np = _leaves("opencl", tp.float32, n=4)
    a.grad = tp.zeros(4, device="opencl")
    b.grad = tp.zeros(4, device="opencl")
    grad = tp.ones((), device="opencl").expand(4)
    assert product_accumulation.accumulate_product(a.grad, b.grad, grad, a.detach(), b.detach()) is True
    np.testing.assert_array_equal(_np(a.grad), b_np)
    np.testing.assert_array_equal(_np(b.grad), a_np)
    # float16 is not fused (the kernel would skip rounding each product), yet still right.
    h = tp.tensor(a_np, device="opencl", dtype=tp.float16)
    target, other = tp.zeros(4, device="opencl", dtype=tp.float16), tp.zeros(4, device="opencl", dtype=tp.float16)
    ones = tp.ones(4, device="opencl", dtype=tp.float16)
    assert product_accumulation.accumulate_product(target, other, ones, h, h.clone()) is True
    np.testing.assert_array_equal(_np(target), a_np.astype(np.float16))
