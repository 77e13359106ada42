"""Saved-tensor hooks (tp.autograd.graph.saved_tensors_hooks, save_on_cpu,
disable_saved_tensors_hooks): when pack and unpack run, what they receive, what backward computes
from what they return. Gradients are checked against NumPy float64 formulas written out here;
behaviour PyTorch defines (what a hook sees, which errors) against PyTorch where it is installed."""
import threading

import numpy as np
import pytest

import tensorplug as tp
from tensorplug.autograd.graph import disable_saved_tensors_hooks, save_on_cpu, saved_tensors_hooks
from tensorplug.frontend.autograd import saved_hooks
from tests.torch_reference import torch_or_skip

X = np.array([0.5, -1.25, 2.0, 0.75])
W = np.array([1.5, 0.25, -0.5, 2.0])


class Counting:
    """A pack/unpack pair that records every call and changes nothing."""

    def __init__(self):
        self.packed, self.unpacked = [], []

    def pack(self, t):
        self.packed.append(t)
        return t

    def unpack(self, t):
        self.unpacked.append(t)
        return t

    def hooks(self):
        return saved_tensors_hooks(self.pack, self.unpack)


def _leaf(values, device="cpu"):
    return tp.tensor(values, dtype=tp.float64, device=device, requires_grad=True)


def test_the_module_paths_of_pytorch_import():
    import tensorplug.autograd.graph as graph

    assert graph is tp.autograd.graph
    assert graph.saved_tensors_hooks is saved_tensors_hooks and graph.save_on_cpu is save_on_cpu


def test_every_saved_tensor_is_packed_once_and_unpacked_once_in_backward(device):
    # exp saves its output, mul both inputs, sin its input, sum nothing: 4 saved tensors.
    x = _leaf(X, device)
    spy = Counting()
    with spy.hooks():
        z = (x.exp() * x).sin().sum()
    assert len(spy.packed) == 4 and spy.unpacked == []
    z.backward()
    assert len(spy.unpacked) == 4
    u = X * np.exp(X)
    np.testing.assert_allclose(x.grad.cpu().numpy(), np.cos(u) * np.exp(X) * (1 + X), rtol=1e-12)


def test_pack_sees_inputs_as_they_are_and_outputs_with_their_node():
    x = _leaf(X)
    a = x * 2
    seen = []

    def pack(t):
        seen.append((t, t.grad_fn, t.requires_grad, tp.is_grad_enabled()))
        return t

    with saved_tensors_hooks(pack, lambda t: t):
        y = a.sin()
        e = x.exp()
    (t_sin, fn_sin, rg_sin, grad_on_sin), (t_exp, fn_exp, rg_exp, grad_on_exp) = seen
    assert t_sin is a and fn_sin is a.grad_fn and rg_sin
    assert t_exp is e and fn_exp is e.grad_fn and fn_exp.name() == "ExpBackward0" and rg_exp
    assert not grad_on_sin and not grad_on_exp  # pack hooks run with grad mode off, as in PyTorch
    assert y.grad_fn.name() == "SinBackward0"


def test_backward_computes_with_what_unpack_returns(device):
    # pack keeps a scaled copy, unpack undoes it: the gradient is the usual one.
    x = _leaf(X, device)
    with saved_tensors_hooks(lambda t: t * 4, lambda p: p / 4):
        x.sin().sum().backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), np.cos(X), rtol=1e-12)
    # unpack hands back zeros instead: sin's gradient is then cos(0) = 1 everywhere.
    y = _leaf(X, device)
    with saved_tensors_hooks(lambda t: t, lambda t: tp.zeros_like(t)):
        s = y.sin().sum()
    s.backward()
    np.testing.assert_allclose(y.grad.cpu().numpy(), np.ones(4), rtol=0)


def test_nested_contexts_apply_the_innermost_pair():
    x = _leaf(X)
    outer, inner = Counting(), Counting()
    with outer.hooks():
        with inner.hooks():
            y = x * x
        z = x.sin()
    w = x.cos()
    assert len(inner.packed) == 2 and len(outer.packed) == 1
    assert saved_hooks.pushed == 0 and saved_hooks.current_hooks() is None
    (y.sum() + z.sum() + w.sum()).backward()
    assert len(inner.unpacked) == 2 and len(outer.unpacked) == 1
    np.testing.assert_allclose(x.grad.numpy(), 2 * X + np.cos(X) - np.sin(X), rtol=1e-12)


def test_only_recorded_ops_pack():
    spy = Counting()
    c = tp.tensor(X)
    with spy.hooks():
        c * c  # no input requires grad: nothing is saved
        with tp.no_grad():
            _leaf(X) * 3.0
    assert spy.packed == []


def test_custom_function_saved_tensors_go_through_the_hooks(device):
    class ExpTimes(tp.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            r = a.exp() * b
            ctx.save_for_backward(r, b)
            return r

        @staticmethod
        def backward(ctx, grad):
            r, b = ctx.saved_tensors
            return grad * r, grad * r / b

    seen = []

    def pack(t):
        seen.append(t.grad_fn)
        return t * 1

    unpacked = []
    a, b = _leaf(X, device), _leaf(W, device)
    with saved_tensors_hooks(pack, lambda t: unpacked.append(1) or t):
        out = ExpTimes.apply(a, b)
    # Saved when the node exists, as PyTorch saves them: the output carries it.
    assert len(seen) == 2 and seen[0] is out.grad_fn and seen[1] is None
    out.sum().backward()
    assert len(unpacked) == 2
    np.testing.assert_allclose(a.grad.cpu().numpy(), np.exp(X) * W, rtol=1e-12)
    np.testing.assert_allclose(b.grad.cpu().numpy(), np.exp(X), rtol=1e-12)
    # A call that records no node packs nothing.
    with saved_tensors_hooks(pack, lambda t: t):
        ExpTimes.apply(tp.tensor(X), tp.tensor(W))
    assert len(seen) == 2


def test_retained_graph_unpacks_again_and_a_freed_one_raises():
    x = _leaf(X)
    spy = Counting()
    with spy.hooks():
        y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    assert len(spy.packed) == 2 and len(spy.unpacked) == 4
    np.testing.assert_allclose(x.grad.numpy(), 4 * X, rtol=1e-12)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward()


def test_unpacked_inputs_and_outputs_still_differentiate_twice(device):
    # pack keeps detached copies: the unpacked tensors are attached to the original's edges
    # again, so create_graph differentiates through them (d2/dx2 sin = -sin, d2/dx2 exp = exp).
    x = _leaf(X, device)
    with saved_tensors_hooks(lambda t: t.detach().clone(), lambda t: t):
        s = x.sin().sum()
        e = (x * 1).exp().sum()
    (g,) = tp.autograd.grad(s, x, create_graph=True)
    g.sum().backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), -np.sin(X), rtol=1e-12)
    x.grad = None
    (g,) = tp.autograd.grad(e, x, create_graph=True)
    g.sum().backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), np.exp(X), rtol=1e-12)


def test_modifying_a_hooked_saved_tensor_is_not_checked_as_in_pytorch():
    torch = torch_or_skip()
    results = []
    for lib in (tp, torch):
        x = lib.tensor(X, requires_grad=True)
        w = lib.tensor(W)
        with lib.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
            y = (x * w).sum()
        w.add_(1.0)  # PyTorch keeps no version check for a tensor its hooks own
        y.backward()
        results.append(x.grad.detach().numpy())
    np.testing.assert_allclose(results[0], W + 1, rtol=1e-12)
    np.testing.assert_allclose(results[1], W + 1, rtol=1e-12)
    # Without hooks the check stands.
    x = _leaf(X)
    w = tp.tensor(W)
    y = (x * w).sum()
    w.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()


def test_hook_errors_match_pytorch():
    torch = torch_or_skip()
    for lib in (tp, torch):
        x = lib.tensor(X, requires_grad=True)
        with pytest.raises(RuntimeError, match="pack hook is modifying its input in place"):
            with lib.autograd.graph.saved_tensors_hooks(lambda t: t.add_(1), lambda t: t):
                (x * 1).sin()
        with lib.autograd.graph.saved_tensors_hooks(lambda t: 5, lambda p: p):
            y = x.sin().sum()
        with pytest.raises(TypeError, match="unpack_hook expected to be a Tensor but got result of type int"):
            y.backward()
        with pytest.raises(ValueError, match="pack failed"):
            with lib.autograd.graph.saved_tensors_hooks(_failing_pack, lambda t: t):
                x.sin()
    with pytest.raises(TypeError, match="pack_hook and unpack_hook must be callable, got int and int"):
        with saved_tensors_hooks(1, 2):
            pass
    assert saved_hooks.pushed == 0


def _failing_pack(t):
    raise ValueError("pack failed")


def test_the_context_is_popped_when_its_body_raises():
    with pytest.raises(KeyError):
        with saved_tensors_hooks(lambda t: t, lambda t: t):
            raise KeyError("body")
    assert saved_hooks.pushed == 0 and saved_hooks.current_hooks() is None
    x = _leaf(X)
    y = x * _leaf(W)  # the compiled kernel records again: the tensor itself is kept
    assert y.grad_fn.saved[0]._tensor is x and y.grad_fn.saved[0]._hooked is None


def test_hooks_belong_to_the_thread_that_pushed_them():
    spy = Counting()
    other_thread = []

    def run():
        a = _leaf(X)
        other_thread.append((a * a).sum())

    with spy.hooks():
        worker = threading.Thread(target=run)
        worker.start()
        worker.join()
        here = (_leaf(X) * _leaf(W)).sum()
    assert len(spy.packed) == 2  # this thread's mul only
    other_thread[0].backward()
    here.backward()
    assert len(spy.unpacked) == 2


def test_composite_ops_recorded_in_c_pack_too():
    # linear and the losses record through the compiled composite kernel when no hooks are on.
    x = tp.tensor(X.reshape(2, 2), requires_grad=True)
    w = tp.tensor(W.reshape(2, 2), requires_grad=True)
    spy = Counting()
    with spy.hooks():
        y = tp.nn.functional.linear(x, w).sum()
    assert any(t is x for t in spy.packed) and any(t is w for t in spy.packed)
    y.backward()
    assert len(spy.unpacked) == len(spy.packed)
    np.testing.assert_allclose(x.grad.numpy(), np.ones((2, 2)) @ W.reshape(2, 2), rtol=1e-12)
    np.testing.assert_allclose(w.grad.numpy(), np.ones((2, 2)).T @ X.reshape(2, 2), rtol=1e-12)


@pytest.mark.parametrize("op", ["mul", "add", "sub", "div", "exp", "sin", "tanh", "sigmoid", "sum", "mm", "square"])
def test_pack_and_unpack_counts_match_pytorch(op):
    torch = torch_or_skip()
    a, b = np.array([[0.5, 1.5], [2.0, -0.5]]), np.array([[1.0, -2.0], [0.25, 3.0]])
    fns = {
        "mul": lambda x, y: x * y, "add": lambda x, y: x + y, "sub": lambda x, y: x - y, "div": lambda x, y: x / y,
        "exp": lambda x, y: x.exp(), "sin": lambda x, y: x.sin(), "tanh": lambda x, y: x.tanh(),
        "sigmoid": lambda x, y: x.sigmoid(), "sum": lambda x, y: x.sum(), "mm": lambda x, y: x @ y,
        "square": lambda x, y: x ** 2,
    }
    counts = []
    for lib in (tp, torch):
        x, y = lib.tensor(a, requires_grad=True), lib.tensor(b, requires_grad=True)
        calls = {"pack": 0, "unpack": 0}

        def pack(t):
            calls["pack"] += 1
            return t

        def unpack(t):
            calls["unpack"] += 1
            return t

        with lib.autograd.graph.saved_tensors_hooks(pack, unpack):
            out = fns[op](x, y)
        out.sum().backward()
        counts.append(calls)
    assert counts[0] == counts[1]


def test_disable_saved_tensors_hooks_raises_its_message():
    torch = torch_or_skip()
    for lib in (tp, torch):
        graph = lib.autograd.graph
        with graph.disable_saved_tensors_hooks("no hooks here"):
            with pytest.raises(RuntimeError, match="no hooks here"):
                with graph.saved_tensors_hooks(lambda t: t, lambda t: t):
                    pass
            x = lib.tensor(X, requires_grad=True)
            (x * x).sum().backward()  # autograd itself is unaffected
            np.testing.assert_allclose(x.grad.detach().numpy(), 2 * X, rtol=1e-12)
        with graph.disable_saved_tensors_hooks("outer"):
            with graph.disable_saved_tensors_hooks("inner"):
                with pytest.raises(RuntimeError, match="inner"):
                    graph.saved_tensors_hooks(lambda t: t, lambda t: t).__enter__()
            with pytest.raises(RuntimeError, match="outer"):
                graph.saved_tensors_hooks(lambda t: t, lambda t: t).__enter__()
        # Disabling while hooks are active is refused, with the message given.
        with graph.saved_tensors_hooks(lambda t: t, lambda t: t):
            with pytest.raises(RuntimeError, match="too late"):
                with graph.disable_saved_tensors_hooks("too late"):
                    pass
        with graph.saved_tensors_hooks(lambda t: t, lambda t: t):
            pass  # allowed again once the regions ended


def test_disable_saved_tensors_hooks_as_a_decorator():
    @disable_saved_tensors_hooks("not inside f")
    def f():
        with saved_tensors_hooks(lambda t: t, lambda t: t):
            pass

    with pytest.raises(RuntimeError, match="not inside f"):
        f()
    with saved_tensors_hooks(lambda t: t, lambda t: t):
        pass


def test_save_on_cpu_keeps_host_copies_and_gives_the_device_back(device):
    x = _leaf(X, device)
    hooks = save_on_cpu()
    packed = hooks.pack_hook(x)
    assert packed[1].device.type == "cpu"
    restored = hooks.unpack_hook(packed)
    assert restored.device == x.device
    np.testing.assert_array_equal(restored.detach().cpu().numpy(), X)
    with save_on_cpu(pin_memory=True):
        z = (x.exp() * x).sin().sum()
    z.backward()
    u = X * np.exp(X)
    np.testing.assert_allclose(x.grad.cpu().numpy(), np.cos(u) * np.exp(X) * (1 + X), rtol=1e-12)


def test_save_on_cpu_shares_a_cpu_tensor_as_pytorch_does():
    torch = torch_or_skip()
    grads = []
    for lib in (tp, torch):
        x = lib.tensor(X, requires_grad=True)
        with lib.autograd.graph.save_on_cpu():
            a = x * 1
            y = (a * a).sum()
        with lib.no_grad():
            a.add_(1.0)  # the saved CPU tensor is `a` itself: backward sees the new values
        y.backward()
        grads.append(x.grad.detach().numpy())
    np.testing.assert_allclose(grads[0], 2 * (X + 1), rtol=1e-12)
    np.testing.assert_allclose(grads[1], 2 * (X + 1), rtol=1e-12)


def test_checkpoint_inside_hooks_still_computes_the_gradient():
    from tensorplug.utils.checkpoint import checkpoint

    x = _leaf(X)
    spy = Counting()
    with spy.hooks():
        y = checkpoint(lambda t: (t.exp() * t).sin(), x, use_reentrant=False).sum()
    y.backward()
    u = X * np.exp(X)
    np.testing.assert_allclose(x.grad.numpy(), np.cos(u) * np.exp(X) * (1 + X), rtol=1e-12)
