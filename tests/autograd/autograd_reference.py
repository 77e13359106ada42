"""Reference helpers for the autograd tests: float64 leaves, NumPy finite differences, PyTorch."""
from __future__ import annotations

import numpy as np
import pytest

import tensorplug as tp


def leaf(array, requires_grad=True):
    """A float64 tensorplug leaf holding a copy of ``array``."""
    return tp.tensor(np.asarray(array, dtype=np.float64), dtype=tp.float64, requires_grad=requires_grad)


def as_numpy(t):
    """The values of a tensorplug tensor (detached) as a float64 NumPy array."""
    return np.asarray(t.detach().numpy(), dtype=np.float64)


def torch_module():
    """PyTorch, or a skip when it is not installed."""
    return pytest.importorskip("torch", reason="PyTorch is the reference for these gradients")


def torch_leaf(array, requires_grad=True):
    torch = torch_module()
    return torch.tensor(np.asarray(array, dtype=np.float64), dtype=torch.float64, requires_grad=requires_grad)


def outputs_of(result):
    """The tensor outputs of a function result (a tensor, or a tuple of tensors and others)."""
    if isinstance(result, (tuple, list)):
        return [r for r in result if hasattr(r, "shape") and hasattr(r, "requires_grad")]
    return [result]


def compare_with_torch(tp_fn, torch_fn, arrays, *, requires_grad=None, atol=1e-10, rtol=1e-7):
    """Run ``tp_fn`` and ``torch_fn`` on the same float64 inputs, backpropagate the same random
    output gradients, and assert that outputs and input gradients agree (None vs None included)."""
    torch = torch_module()
    requires_grad = requires_grad or [True] * len(arrays)
    tp_in = [leaf(a, r) for a, r in zip(arrays, requires_grad)]
    th_in = [torch_leaf(a, r) for a, r in zip(arrays, requires_grad)]
    tp_outs = outputs_of(tp_fn(*tp_in))
    th_outs = outputs_of(torch_fn(*th_in))
    assert len(tp_outs) == len(th_outs)
    rng = np.random.default_rng(1234)
    tp_pairs, th_pairs = [], []
    for a, b in zip(tp_outs, th_outs):
        assert tuple(a.shape) == tuple(b.shape)
        np.testing.assert_allclose(as_numpy(a), b.detach().numpy(), atol=atol, rtol=rtol)
        assert a.requires_grad == b.requires_grad
        if b.requires_grad:
            seed = rng.standard_normal(tuple(b.shape))
            tp_pairs.append((a, tp.tensor(seed, dtype=a.dtype)))
            th_pairs.append((b, torch.tensor(seed, dtype=b.dtype)))
    if not th_pairs:
        return
    th_leaves = [t for t in th_in if t.requires_grad]
    tp_leaves = [t for t in tp_in if t.requires_grad]
    th_grads = torch.autograd.grad([o for o, _ in th_pairs], th_leaves, [g for _, g in th_pairs], allow_unused=True)
    tp_grads = tp.autograd.grad([o for o, _ in tp_pairs], tp_leaves, [g for _, g in tp_pairs], allow_unused=True)
    for i, (a, b) in enumerate(zip(tp_grads, th_grads)):
        if b is None:
            assert a is None or not as_numpy(a).any(), f"input {i}: torch has no gradient"
            continue
        if a is None:
            # None is how tensorplug says "zero"; PyTorch materializes zeros in some cases (zero_).
            assert not b.numpy().any(), f"input {i}: tensorplug gave no gradient"
            continue
        assert tuple(a.shape) == tuple(b.shape)
        np.testing.assert_allclose(as_numpy(a), b.numpy(), atol=atol, rtol=rtol, err_msg=f"gradient of input {i}")


def numeric_jacobian(fn, arrays, index, eps=1e-6):
    """Central finite differences of ``fn`` (NumPy in, NumPy out) with respect to input ``index``."""
    arrays = [np.array(a, dtype=np.float64) for a in arrays]
    x = arrays[index]
    out_size = np.asarray(fn(*arrays)).size
    jac = np.zeros((x.size, out_size))
    flat = x.reshape(-1)
    for k in range(x.size):
        orig = flat[k]
        flat[k] = orig + eps
        plus = np.asarray(fn(*arrays), dtype=np.float64).reshape(-1)
        flat[k] = orig - eps
        minus = np.asarray(fn(*arrays), dtype=np.float64).reshape(-1)
        flat[k] = orig
        jac[k] = (plus - minus) / (2 * eps)
    return jac
