"""The compiled autograd core (csrc/autograd_core.cpp): the graphs it records and runs are the
ones the Python kernels and engine make, and the cases it hands back to Python still behave.

References are NumPy float64 formulas written out by hand."""
import numpy as np
import pytest

import tensorplug as tp
from tensorplug import _autograd_core
from tensorplug.frontend.autograd.derivatives import FormulaNode
from tensorplug.frontend.autograd.graph import AccumulateGrad

A = np.array([0.5, -1.5, 2.0, 3.25])
B = np.array([1.0, 2.0, -0.75, 0.5])


def _leaves():
    return tp.tensor(A, dtype=tp.float64, requires_grad=True), tp.tensor(B, dtype=tp.float64, requires_grad=True)


def test_the_recorded_node_is_a_formula_node_with_accumulator_edges():
    a, b = _leaves()
    y = a * b
    assert type(y.grad_fn) is FormulaNode and y.grad_fn.name() == "MulBackward0"
    (ea, na), (eb, nb) = y.grad_fn.next_functions
    assert type(ea) is AccumulateGrad and ea.variable is a and na == 0
    assert type(eb) is AccumulateGrad and eb.variable is b and nb == 0
    assert y.requires_grad and not y.is_leaf
    # One leaf used twice in one graph has one accumulator.
    z = a * a
    assert z.grad_fn.next_functions[0][0] is z.grad_fn.next_functions[1][0]


def test_gradients_and_accumulation_match_numpy():
    a, b = _leaves()
    for step in range(1, 4):
        ((a * b).exp() * a).sum().backward()
        # d/da sum(exp(ab) a) = exp(ab)(1 + ab); d/db = exp(ab) a^2
        np.testing.assert_allclose(a.grad.numpy(), step * np.exp(A * B) * (1 + A * B), rtol=1e-12)
        np.testing.assert_allclose(b.grad.numpy(), step * np.exp(A * B) * A * A, rtol=1e-12)


def test_a_gradient_shared_by_two_leaves_is_not_aliased():
    # add's formula hands the same tensor to both inputs: each leaf must own its .grad.
    a, b = _leaves()
    (a + b).sum().backward()
    a.grad.add_(1.0)
    np.testing.assert_array_equal(b.grad.numpy(), np.ones(4))
    np.testing.assert_array_equal(a.grad.numpy(), np.full(4, 2.0))


def test_a_gradient_that_is_a_view_is_copied_into_grad():
    a = tp.tensor(A, dtype=tp.float64, requires_grad=True)
    a.sum().backward()  # the sum formula's gradient is an expanded view of one number
    assert a.grad._base is None and a.grad.stride() == (1,)
    a.grad.mul_(3.0)
    np.testing.assert_array_equal(a.grad.numpy(), np.full(4, 3.0))


def test_a_stolen_gradient_has_the_leafs_layout():
    w = tp.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    x = tp.tensor(np.ones((3, 4)))
    (w @ x).sum().backward()
    assert w.grad.shape == (2, 3) and w.grad.stride() == w.stride()
    np.testing.assert_array_equal(w.grad.numpy(), np.full((2, 3), 4.0))


def test_leaf_hooks_and_retain_grad_take_the_python_path():
    a, b = _leaves()
    seen = []
    a.register_hook(lambda g: seen.append(g.numpy().copy()) or g * 2)
    y = a * b
    y.retain_grad()
    y.sum().backward()
    np.testing.assert_allclose(seen[0], B)
    np.testing.assert_allclose(a.grad.numpy(), 2 * B)
    np.testing.assert_allclose(y.grad.numpy(), np.ones(4))


def test_a_modified_saved_input_raises_pytorchs_message():
    a, b = _leaves()
    c = b * 1.0
    y = a * c
    c.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_saved_tensors_are_released_unless_the_graph_is_retained():
    a, b = _leaves()
    y = (a * b).sum()
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_allclose(a.grad.numpy(), 2 * B)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward()


def test_an_error_in_a_formula_propagates_and_the_engine_recovers():
    class Boom(tp.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1.0

        @staticmethod
        def backward(ctx, grad):
            raise ValueError("boom")

    a, b = _leaves()
    with pytest.raises(ValueError, match="boom"):
        (Boom.apply(a) * b).sum().backward()
    (a * b).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), B)


def test_create_graph_gives_second_derivatives():
    a = tp.tensor(A, dtype=tp.float64, requires_grad=True)
    (g,) = tp.autograd.grad((a * a * a).sum(), a, create_graph=True)
    g.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), 6 * A, rtol=1e-12)


def test_anomaly_mode_still_records_the_forward_trace():
    a, b = _leaves()
    with tp.autograd.set_detect_anomaly(True):
        y = a * b
    assert y.grad_fn._forward_trace is not None


def test_run_graph_refuses_what_is_not_a_graph():
    with pytest.raises(TypeError, match="roots must be autograd nodes"):
        _autograd_core.run_graph([object()], {}, False, False)
    with pytest.raises(TypeError, match="run_graph"):
        _autograd_core.run_graph((), {}, False, False)


# --- composite ops with explicit derivatives (RecordingKernel(composite=True), CompositeOp) ------
def _linear_leaves():
    x = tp.tensor(np.arange(6.0).reshape(3, 2) / 4, dtype=tp.float64, requires_grad=True)
    w = tp.tensor([[0.5, -1.0], [2.0, 0.25]], dtype=tp.float64, requires_grad=True)
    b = tp.tensor([0.1, -0.2], dtype=tp.float64, requires_grad=True)
    return x, w, b


def test_a_composite_node_recorded_in_c_is_its_formula_node():
    """linear's node: edges to the three accumulators, saved arguments, the op's name."""
    x, w, b = _linear_leaves()
    y = tp.nn.functional.linear(x, w, b)
    node = y.grad_fn
    assert type(node) is FormulaNode and node.name() == "LinearBackward0"
    assert [edge[0].variable for edge in node.next_functions] == [x, w, b]
    assert node.extra == {} and len(node.saved) == 3
    assert y.requires_grad and not y.is_leaf


def test_composite_gradients_match_numpy_on_every_path():
    """The C recording and anomaly mode's Python kernel agree."""
    X, W, B = (t.detach().numpy() for t in _linear_leaves())
    G = np.array([[1.0, -2.0], [0.5, 0.0], [3.0, 1.5]])
    for call in ("positional", "anomaly"):
        x, w, b = _linear_leaves()
        if call == "positional":
            y = tp.nn.functional.linear(x, w, b)
        else:
            with tp.autograd.set_detect_anomaly(True):
                y = tp.nn.functional.linear(x, w, b)
        y.backward(tp.tensor(G))
        np.testing.assert_allclose(y.detach().numpy(), X @ W.T + B, rtol=1e-12)
        np.testing.assert_allclose(x.grad.numpy(), G @ W, rtol=1e-12)
        np.testing.assert_allclose(w.grad.numpy(), G.T @ X, rtol=1e-12)
        np.testing.assert_allclose(b.grad.numpy(), G.sum(0), rtol=1e-12)


def test_a_composite_without_inputs_that_need_grad_records_nothing():
    """No node, and the ops inside the kernel below do not record either (the mask is restored)."""
    x = tp.ones(2, 2, dtype=tp.float64)
    y = tp.nn.functional.linear(x, tp.ones(3, 2, dtype=tp.float64), tp.ones(3, dtype=tp.float64))
    assert y.grad_fn is None and not y.requires_grad
    z = tp.ones(2, requires_grad=True) * 2
    assert z.requires_grad  # the thread's mask still has Autograd


def test_a_composite_error_restores_the_mask():
    """An error raised below the composite's Autograd kernel leaves grad mode as it was."""
    x = tp.ones(2, 3, requires_grad=True)
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        tp.nn.functional._linear(x, tp.ones(4, 2), None)  # the op itself, without linear()'s checks
    assert (x * 2).requires_grad


def test_composite_op_objects_keep_their_python_identity():
    """The C composite call exposes the op, the wrapped decomposition and the docstring."""
    import inspect

    fn = tp.nn.functional._losses._smooth_l1_grad
    assert fn.op.name == "smooth_l1_loss_backward"
    assert list(inspect.signature(fn).parameters) == ["grad", "input", "target", "reduction", "beta"]
    assert fn.__doc__ == fn.op.decomposition.__doc__ and "gradient" in fn.__doc__


def test_a_bias_gradient_becomes_grad_without_a_copy_or_view():
    """sum(0) in linear's backward returns no view, so the engine keeps it as the leaf's .grad."""
    fc = tp.nn.Linear(3, 2)
    tp.nn.functional.smooth_l1_loss(fc(tp.randn(5, 3)), tp.randn(5, 2)).backward()
    assert fc.bias.grad._base is None and fc.bias.grad.shape == (2,)
    assert fc.bias.grad.stride() == fc.bias.stride()
