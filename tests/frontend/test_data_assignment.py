"""Assigning to Tensor.data: `t.data = x` and `p.data += -lr * p.grad` (makemore's SGD step).

Python runs `p.data += d` as `p.data = p.data.__iadd__(d)`, so the augmented form needs the
setter too. The new data replaces the tensor's values (any shape, dtype or device) while the
object, its requires_grad flag, grad and grad_fn stay, as in PyTorch; a non-tensor, or integer data
for a tensor that requires grad, is refused before anything changes.
"""
import numpy as np
import pytest

import tensorplug as tp
from tests.torch_reference import torch_or_skip


def test_augmented_data_update_is_manual_sgd(device):
    """Hand-written SGD through `p.data += -lr * p.grad` matches NumPy's float64 gradient descent."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((5, 3))
    y = rng.standard_normal(5)
    w0 = rng.standard_normal(3)
    lr = 0.1

    w = tp.tensor(w0.astype(np.float32), device=device, requires_grad=True)
    xs, ys = tp.tensor(x.astype(np.float32), device=device), tp.tensor(y.astype(np.float32), device=device)
    expected = w0.copy()
    for _ in range(3):
        loss = ((xs @ w - ys) ** 2).mean()
        w.grad = None
        loss.backward()
        same_object = w
        w.data += -lr * w.grad
        assert w is same_object and w.is_leaf and w.requires_grad and w.grad_fn is None
        expected -= lr * (2.0 / len(y)) * x.T @ (x @ expected - y)
        np.testing.assert_allclose(w.detach().cpu().numpy(), expected, rtol=1e-5, atol=1e-6)


def test_data_assignment_keeps_identity_and_autograd_state(device):
    """Another shape and dtype may be assigned; requires_grad, grad and grad_fn stay (as PyTorch)."""
    leaf = tp.ones(3, device=device, requires_grad=True)
    leaf.sum().backward()
    leaf.data = tp.tensor([[1.5, 2.5], [3.5, 4.5]], dtype=tp.float64, device=device)
    assert leaf.shape == (2, 2) and leaf.dtype is tp.float64 and leaf.device.type == device
    assert leaf.requires_grad and leaf.is_leaf
    np.testing.assert_array_equal(leaf.detach().cpu().numpy(), [[1.5, 2.5], [3.5, 4.5]])
    np.testing.assert_array_equal(leaf.grad.cpu().numpy(), np.ones(3))  # PyTorch keeps the old grad

    x = tp.ones(2, device=device, requires_grad=True)
    y = x * 2
    node = y.grad_fn
    y.data = tp.zeros(2, device=device)
    assert y.grad_fn is node and y.requires_grad
    np.testing.assert_array_equal(y.detach().cpu().numpy(), np.zeros(2))

    plain = tp.zeros(2, device=device)
    plain.data = tp.arange(4, device=device)  # no grad required: any dtype
    assert plain.dtype is tp.int64 and plain.tolist() == [0, 1, 2, 3] and not plain.requires_grad


def test_data_assignment_shares_the_new_datas_memory():
    """After `t.data = x`, t views x's memory: an in-place change through x shows through t."""
    t = tp.zeros(3)
    x = tp.ones(3)
    t.data = x
    x.add_(1)
    assert t.tolist() == [2.0, 2.0, 2.0]


def test_data_assignment_refuses_bad_values_before_changing_anything():
    """A non-tensor raises TypeError, integer data for a tensor that requires grad RuntimeError;
    the tensor (a plain one or a Parameter) keeps its values either way."""
    for t in (tp.ones(3, requires_grad=True), tp.nn.Parameter(tp.ones(3))):
        with pytest.raises(TypeError, match=r"Tensor\.data.*int"):
            t.data = 5
        with pytest.raises(RuntimeError, match=r"Tensor\.data.*floating point or complex.*int64"):
            t.data = tp.arange(3)
        assert t.dtype is tp.float32 and t.tolist() == [1.0, 1.0, 1.0] and t.requires_grad


def test_data_assignment_matches_pytorch():
    """The same assignments give PyTorch's shapes, dtypes, flags, values and exception types."""
    torch = torch_or_skip()

    def run(lib):
        leaf = lib.ones(3, requires_grad=True)
        leaf.grad = lib.full((3,), 2.0)
        leaf.data += -0.25 * leaf.grad
        after_step = (leaf.detach().numpy().tolist(), leaf.requires_grad, leaf.is_leaf)
        leaf.data = lib.zeros(2, 2, dtype=lib.float64)
        reshaped = (tuple(leaf.shape), str(leaf.dtype).split(".")[-1], leaf.requires_grad, leaf.grad.tolist())
        errors = []
        for bad in (5, lib.arange(3)):
            try:
                leaf.data = bad
                errors.append(None)
            except (TypeError, RuntimeError) as exc:
                errors.append(type(exc).__name__)
        plain = lib.zeros(2)
        plain.data = lib.arange(2)
        return after_step, reshaped, errors, (str(plain.dtype).split(".")[-1], plain.requires_grad)

    assert run(tp) == run(torch)
