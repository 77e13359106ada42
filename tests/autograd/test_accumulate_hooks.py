"""Post-accumulate-grad hooks and end-of-backward callbacks (what DistributedDataParallel needs)."""
import numpy as np
import pytest

import tensorplug as tp
from tensorplug.frontend.autograd import engine
from tests.torch_reference import torch_or_skip


def test_post_accumulate_hook_sees_the_accumulated_grad():
    """The hook runs after .grad holds the new sum, once per backward, with the leaf itself."""
    w = tp.tensor([1.0, 2.0], requires_grad=True)
    seen = []
    w.register_post_accumulate_grad_hook(lambda p: seen.append(p.grad.tolist()))
    (w * 3).sum().backward()
    (w * w).sum().backward()
    assert seen == [[3.0, 3.0], [5.0, 7.0]]  # 3 + 2*w accumulated


def test_post_accumulate_hook_refuses_non_leaves_and_can_be_removed():
    w = tp.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="non-leaf"):
        (w * 2).register_post_accumulate_grad_hook(lambda p: None)
    calls = []
    handle = w.register_post_accumulate_grad_hook(lambda p: calls.append(1))
    handle.remove()
    w.sum().backward()
    assert calls == []


def _hook_order(L):
    """What each hook of a layer sees, in firing order: over two backwards of one retained graph
    (the second accumulating) and a backward of a new graph."""
    seen = []
    layer = L.nn.Linear(2, 1)
    weight = layer.weight

    def grad_sum():
        return None if weight.grad is None else weight.grad.sum().item()

    weight.register_hook(lambda grad: seen.append(("tensor hook", grad_sum())))
    weight.register_post_accumulate_grad_hook(lambda p: seen.append(("post-accumulate", grad_sum())))
    layer.register_full_backward_pre_hook(lambda module, grad_output: seen.append(("module pre", grad_sum())))
    layer.register_full_backward_hook(lambda module, grad_input, grad_output: seen.append(("module", grad_sum())))
    x = L.ones(3, 2, requires_grad=True)
    x.register_hook(lambda grad: seen.append(("input hook", grad_sum())))
    loss = layer(x).sum()
    loss.backward(retain_graph=True)
    loss.backward()
    layer(x).sum().backward()
    return seen


def test_hook_order_and_accumulated_grad_match_pytorch():
    """Module pre-hook, the leaf's tensor hook (before accumulation), its post-accumulate hook
    (after), the module's full backward hook, then the input's hook: PyTorch 2.13's order."""
    torch = torch_or_skip()
    assert _hook_order(tp) == _hook_order(torch)


def test_post_accumulate_hook_must_return_none():
    torch = torch_or_skip()
    for L in (torch, tp):
        w = L.ones(2, requires_grad=True)
        w.register_post_accumulate_grad_hook(lambda p: L.zeros(2))
        with pytest.raises(RuntimeError, match="should return None"):
            w.sum().backward()


def test_queued_callback_runs_after_every_leaf_is_accumulated():
    """A callback queued from a hook runs once, when the whole pass is done."""
    a = tp.ones(3, requires_grad=True)
    b = tp.ones(3, requires_grad=True)
    order = []

    def hook(p):
        order.append("hook")
        if len(order) == 1:
            engine.queue_callback(lambda: order.append(("done", a.grad.tolist(), b.grad.tolist())))

    a.register_post_accumulate_grad_hook(hook)
    b.register_post_accumulate_grad_hook(hook)
    (a * 2 + b * 5).sum().backward()
    assert order == ["hook", "hook", ("done", [2.0] * 3, [5.0] * 3)]
    np.testing.assert_array_equal(a.grad.numpy(), [2.0] * 3)


def test_queue_callback_outside_backward_raises():
    with pytest.raises(RuntimeError, match="during the backward pass"):
        engine.queue_callback(lambda: None)
