"""tp.autograd.graph.register_multi_grad_hook: one call per backward pass with the gradients of
several tensors ("all") or the first one computed ("any"). Gradients are checked against values
worked out by hand; the sequence of calls against PyTorch where it is installed."""
import numpy as np
import pytest

import tensorplug as tp
from tensorplug.autograd.graph import register_multi_grad_hook
from tests.torch_reference import torch_or_skip


def _leaves(lib):
    return (lib.tensor([1.0, 2.0], requires_grad=True), lib.tensor([3.0, 4.0], requires_grad=True),
            lib.tensor([5.0, 6.0], requires_grad=True))


def _record(lib):
    """The calls a script of multi-grad hooks makes, as plain lists."""
    a, b, c = _leaves(lib)
    register = lib.autograd.graph.register_multi_grad_hook
    calls = []
    handle = register((a, b, c), lambda grads: calls.append([None if g is None else g.tolist() for g in grads]))
    (a * 2 + b * 3).sum().backward()  # c is not in this graph
    (a * 2).sum().backward(retain_graph=True)
    handle.remove()
    (a * b).sum().backward()  # removed: no call
    handle = register((a, b), lambda g: calls.append(("any", g.tolist())), mode="any")
    (a * 2 + b * 3).sum().backward()
    handle.remove()
    x = a * 1
    handle = register((x, b), lambda grads: calls.append([g.tolist() for g in grads]))
    (x * 2 + x * 3 + b).sum().backward()  # x's two uses are summed before its hook
    handle.remove()
    return calls


def test_calls_match_hand_computed_gradients(device):
    a, b, c = (tp.tensor(v, device=device, requires_grad=True) for v in ([1.0, 2.0], [3.0, 4.0], [5.0, 6.0]))
    calls = []
    register_multi_grad_hook((a, b, c), lambda grads: calls.append([None if g is None else g.cpu().tolist() for g in grads]))
    (a * b + c * c).sum().backward()
    # d/da sum(ab + c^2) = b, d/db = a, d/dc = 2c: one call with all three.
    assert calls == [[[3.0, 4.0], [1.0, 2.0], [10.0, 12.0]]]


def test_the_sequence_of_calls_matches_pytorch():
    torch = torch_or_skip()
    ours = _record(tp)
    assert ours == _record(torch)
    assert ours[0] == [[2.0, 2.0], [3.0, 3.0], None]


def test_all_mode_runs_when_the_last_gradient_is_ready_before_it_is_accumulated():
    a, b, _ = _leaves(tp)
    seen = []
    register_multi_grad_hook((a, b), lambda grads: seen.append((a.grad, b.grad)))
    (a * 2 + b * 3).sum().backward()
    # One of the two leaves was accumulated before the call, the other not yet (PyTorch's order).
    assert len(seen) == 1 and sum(g is None for g in seen[0]) == 1


def test_one_call_per_pass_of_a_retained_graph():
    a, b, _ = _leaves(tp)
    calls = []
    register_multi_grad_hook((a, b), lambda grads: calls.append(len(grads)))
    y = (a * b).sum()
    y.backward(retain_graph=True)
    y.backward()
    assert calls == [2, 2]
    np.testing.assert_array_equal(a.grad.numpy(), 2 * np.array([3.0, 4.0]))


class _OnlyFirstGradient(tp.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        return a * 2 + b

    @staticmethod
    def backward(ctx, grad):
        return grad * 2, None  # b is in the graph, but no gradient flows to it


def test_a_reached_tensor_without_gradient_still_gets_its_call():
    a, b, _ = _leaves(tp)
    calls = []
    register_multi_grad_hook((a, b), lambda grads: calls.append([None if g is None else g.tolist() for g in grads]))
    _OnlyFirstGradient.apply(a, b).sum().backward()
    (a * b).sum().backward()
    assert calls == [[[2.0, 2.0], None], [[3.0, 4.0], [1.0, 2.0]]]  # as PyTorch calls it


def test_bad_arguments_are_refused():
    a, _, _ = _leaves(tp)
    with pytest.raises(ValueError, match=r"Expects mode to be one of \('all', 'any'\) but got some"):
        register_multi_grad_hook((a,), lambda grads: None, mode="some")
    with pytest.raises(RuntimeError, match=r"tensors\[1\] \(shape \[2\], float32\) does not require grad"):
        register_multi_grad_hook((a, tp.ones(2)), lambda grads: None)
    with pytest.raises(TypeError, match=r"tensors\[1\] is a int"):
        register_multi_grad_hook((a, 3), lambda grads: None)


def test_the_handle_is_a_context_manager():
    a, b, _ = _leaves(tp)
    calls = []
    with register_multi_grad_hook((a, b), lambda grads: calls.append(1)):
        (a * b).sum().backward()
    (a * b).sum().backward()
    assert calls == [1]
