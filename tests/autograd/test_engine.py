"""The backward engine: long chains, accumulation, retain_graph, inputs=, grad(), graph structure."""
import numpy as np
import pytest

import tensorplug as tp
from autograd_reference import as_numpy, leaf, torch_module


def test_100k_op_chain_backward():
    """A chain of 100,000 multiplications backpropagates without a recursion error."""
    x = leaf([1.0])
    y = x
    for _ in range(100_000):
        y = y * 1.00001
    y.sum().backward()
    np.testing.assert_allclose(as_numpy(x.grad), [1.00001 ** 100_000], rtol=1e-9)
    del y  # freeing the long graph must not overflow the C stack either


def test_100k_op_chain_autograd_grad():
    """autograd.grad also walks a 100,000-op chain (mixed ops) iteratively."""
    x = leaf([0.5])
    y = x
    for _ in range(50_000):
        y = (y + 1.0) - 1.0
    (g,) = tp.autograd.grad(y.sum(), x)
    np.testing.assert_allclose(as_numpy(g), [1.0])


def test_gradients_accumulate_across_backward_calls():
    """Two backward calls add into .grad (and a new graph each time needs no retain_graph)."""
    x = leaf([1.0, 2.0, 3.0])
    (x * x).sum().backward()
    (x * x).sum().backward()
    np.testing.assert_allclose(as_numpy(x.grad), 4 * np.array([1.0, 2.0, 3.0]))


def test_grad_is_accumulated_in_place_after_first_backward():
    """After the first backward, later ones add into the same .grad tensor (as PyTorch does)."""
    x = leaf([1.0, 2.0])
    (x * 3).sum().backward()
    first = x.grad
    (x * 3).sum().backward()
    assert x.grad is first
    np.testing.assert_allclose(as_numpy(first), [6.0, 6.0])


def test_second_backward_without_retain_graph_raises():
    """Backward twice through a graph with saved tensors raises PyTorch's message."""
    x = leaf([1.0, 2.0])
    y = (x * x).exp().sum()
    y.backward()
    with pytest.raises(RuntimeError, match=r"Trying to backward through the graph a second time"):
        y.backward()


def test_retain_graph_allows_second_backward():
    """retain_graph=True keeps saved tensors: a second backward works and accumulates."""
    x = leaf([1.0, 2.0])
    y = (x * x).exp().sum()
    y.backward(retain_graph=True)
    first = as_numpy(x.grad).copy()
    y.backward()
    np.testing.assert_allclose(as_numpy(x.grad), 2 * first)
    with pytest.raises(RuntimeError, match=r"Trying to backward through the graph a second time"):
        y.backward()


def test_autograd_grad_frees_the_graph_too():
    """autograd.grad without retain_graph frees saved tensors; retain_graph=True keeps them."""
    x = leaf([1.0, 2.0])
    y = (x * x).sum()
    tp.autograd.grad(y, x, retain_graph=True)
    tp.autograd.grad(y, x)
    with pytest.raises(RuntimeError, match=r"Trying to backward through the graph a second time"):
        tp.autograd.grad(y, x)


def test_backward_inputs_only_accumulates_those():
    """backward(inputs=[x]) fills x.grad and leaves the other leaves' .grad as None."""
    x, w = leaf([1.0, 2.0]), leaf([3.0, 4.0])
    (x * w).sum().backward(inputs=[x])
    np.testing.assert_allclose(as_numpy(x.grad), [3.0, 4.0])
    assert w.grad is None


def test_backward_inputs_with_a_non_leaf():
    """backward(inputs=[h]) on an intermediate fills h.grad, not the leaf's."""
    x = leaf([1.0, 2.0])
    h = x * 2
    (h * h).sum().backward(inputs=[h])
    np.testing.assert_allclose(as_numpy(h.grad), [4.0, 8.0])
    assert x.grad is None


def test_autograd_grad_does_not_touch_dot_grad():
    """autograd.grad returns gradients and leaves .grad untouched."""
    x = leaf([1.0, 2.0])
    (g,) = tp.autograd.grad((x * x).sum(), [x])
    np.testing.assert_allclose(as_numpy(g), [2.0, 4.0])
    assert x.grad is None


def test_autograd_grad_allow_unused_returns_none():
    """An input not used by the output gives None with allow_unused=True."""
    x, unused = leaf([1.0]), leaf([2.0])
    gx, gu = tp.autograd.grad((x * 3).sum(), [x, unused], allow_unused=True)
    np.testing.assert_allclose(as_numpy(gx), [3.0])
    assert gu is None


def test_autograd_grad_unused_input_raises():
    """An input not used by the output raises without allow_unused."""
    x, unused = leaf([1.0]), leaf([2.0])
    with pytest.raises(RuntimeError, match=r"appears to not have been used in the graph"):
        tp.autograd.grad((x * 3).sum(), [x, unused])


def test_autograd_grad_materialize_grads():
    """materialize_grads=True turns the unused input's None into zeros."""
    x, unused = leaf([1.0]), leaf([2.0, 5.0])
    _, gu = tp.autograd.grad((x * 3).sum(), [x, unused], materialize_grads=True)
    np.testing.assert_array_equal(as_numpy(gu), [0.0, 0.0])


def test_autograd_grad_of_multiple_outputs_with_grad_outputs():
    """grad of two outputs with explicit grad_outputs sums their vector-Jacobian products."""
    x = leaf([1.0, 2.0])
    a, b = x * 2, x * x
    (g,) = tp.autograd.grad([a, b], [x], [leaf([1.0, 10.0], False), leaf([1.0, 1.0], False)])
    np.testing.assert_allclose(as_numpy(g), [2.0 + 2.0, 20.0 + 4.0])


def test_non_scalar_backward_without_gradient_raises():
    """backward() on a non-scalar output needs an explicit gradient."""
    x = leaf([1.0, 2.0])
    with pytest.raises(RuntimeError, match=r"grad can be implicitly created only for scalar outputs"):
        (x * 2).backward()
    with pytest.raises(RuntimeError, match=r"grad can be implicitly created only for scalar outputs"):
        tp.autograd.grad(x * 2, x)


def test_non_scalar_backward_with_gradient_matches_torch():
    """backward(gradient=v) on a non-scalar output gives PyTorch's vector-Jacobian product."""
    torch = torch_module()
    x_np, v = np.array([[1.0, -2.0], [0.5, 3.0]]), np.array([[1.0, 0.5], [-2.0, 4.0]])
    x, tx = leaf(x_np), torch.tensor(x_np, requires_grad=True)
    (x.sin() * x).backward(leaf(v, False))
    (tx.sin() * tx).backward(torch.tensor(v))
    np.testing.assert_allclose(as_numpy(x.grad), tx.grad.numpy(), rtol=1e-12)


def test_gradient_of_wrong_shape_raises():
    """backward(gradient=...) with a gradient of another shape raises RuntimeError."""
    x = leaf([1.0, 2.0])
    with pytest.raises(RuntimeError, match=r"Mismatch in shape"):
        (x * 2).backward(leaf([1.0, 2.0, 3.0], False))


def test_one_element_non_scalar_backward():
    """A one-element output of shape (1, 1) may call backward() without a gradient, as in PyTorch."""
    x = leaf([[2.0]])
    (x * x).backward()
    np.testing.assert_allclose(as_numpy(x.grad), [[4.0]])


@pytest.mark.parametrize("op", ["gt", "lt", "eq", "ne", "ge", "le"])
def test_comparisons_do_not_require_grad(op):
    """A comparison of tensors requiring grad gives a bool tensor that does not require grad."""
    x, y = leaf([1.0, 2.0]), leaf([2.0, 2.0])
    out = getattr(tp, op)(x, y)
    assert out.dtype == tp.bool and not out.requires_grad and out.grad_fn is None


@pytest.mark.parametrize("fn", ["argmax", "argmin", "long", "int", "bool", "isnan", "sign-bool"])
def test_integer_and_bool_outputs_do_not_require_grad(fn):
    """Integer and bool results of a tensor requiring grad do not require grad (as in PyTorch)."""
    x = leaf([1.0, -2.0, 3.0])
    out = {
        "argmax": lambda: x.argmax(), "argmin": lambda: tp.argmin(x), "long": lambda: x.long(),
        "int": lambda: x.to(tp.int32), "bool": lambda: x.bool(), "isnan": lambda: tp.isnan(x),
        "sign-bool": lambda: x.sign() > 0,
    }[fn]()
    assert not out.dtype.is_floating_point
    assert not out.requires_grad and out.grad_fn is None


def test_backward_on_comparison_raises():
    """backward() through a bool output raises: it does not require grad."""
    x = leaf([1.0, 2.0])
    with pytest.raises(RuntimeError, match=r"does not require grad"):
        (x > 1).sum().backward()


def test_backward_on_tensor_not_requiring_grad_raises():
    """backward() on a tensor with no graph raises PyTorch's message."""
    with pytest.raises(RuntimeError, match=r"element 0 of tensors does not require grad and does not have a grad_fn"):
        tp.ones(2).sum().backward()


def test_results_are_deterministic_across_runs():
    """The same graph (a fan-out with many shared uses) gives bit-identical gradients every run."""
    x_np = np.random.default_rng(3).uniform(-1, 1, (50,))
    grads = []
    for _ in range(3):
        x = leaf(x_np)
        terms = [(x * (k + 1)).sin() for k in range(20)]
        total = terms[0]
        for t in terms[1:]:
            total = total + t * x
        total.sum().backward()
        grads.append(as_numpy(x.grad))
    np.testing.assert_array_equal(grads[0], grads[1])
    np.testing.assert_array_equal(grads[0], grads[2])


def test_diamond_graph_matches_torch():
    """A value used along several paths collects the sum of their gradients, as in PyTorch."""
    torch = torch_module()
    x_np = np.array([0.3, -1.2, 2.0])
    results = []
    for m, mk in ((tp, leaf), (torch, lambda v: torch.tensor(v, requires_grad=True))):
        x = mk(x_np)
        h = x * x
        out = (h.sin() + h.exp() * h + x).sum()
        out.backward()
        results.append(np.asarray(x.grad.numpy()))
    np.testing.assert_allclose(results[0], results[1], rtol=1e-12)


def test_next_functions_structure():
    """grad_fn.next_functions has (node, input_nr) edges; leaves end in one shared AccumulateGrad."""
    x = leaf([1.0, 2.0])
    w = leaf([3.0, 4.0], requires_grad=False)
    y = x * w + x
    assert y.grad_fn.name() == "AddBackward0"
    (mul_edge, acc_edge) = y.grad_fn.next_functions
    assert mul_edge[0].name() == "MulBackward0" and mul_edge[1] == 0
    assert type(acc_edge[0]).__name__ == "AccumulateGrad" and acc_edge[1] == 0
    assert acc_edge[0].variable is x
    x_edge = mul_edge[0].next_functions[0]
    assert x_edge[0] is acc_edge[0]  # one accumulator per leaf


def test_next_functions_edge_for_input_without_grad_is_none_pair():
    """An input that needs no gradient appears as (None, 0) in next_functions, as in PyTorch."""
    x = leaf([1.0, 2.0])
    w = leaf([3.0, 4.0], requires_grad=False)
    y = x * w
    assert y.grad_fn.next_functions[1] == (None, 0)


def test_leaf_and_grad_fn_flags():
    """Leaves have no grad_fn and is_leaf True; results of ops on them are non-leaves."""
    x = leaf([1.0])
    c = tp.ones(1)
    y = x * 2
    assert x.is_leaf and x.grad_fn is None and x.requires_grad
    assert c.is_leaf and not c.requires_grad
    assert not y.is_leaf and y.grad_fn is not None and y.requires_grad
    assert (c * 2).is_leaf


def test_backward_on_leaf_itself():
    """Calling backward on a leaf sets its own .grad to the gradient passed."""
    x = leaf([1.0, 2.0])
    x.backward(leaf([5.0, 6.0], False))
    np.testing.assert_array_equal(as_numpy(x.grad), [5.0, 6.0])


def test_non_leaf_grad_is_none_by_default():
    """An intermediate's .grad stays None after backward unless retain_grad was called."""
    x = leaf([1.0])
    h = x * 2
    (h * 3).sum().backward()
    assert h.grad is None


def test_multi_output_max_dim_backward():
    """Backward through max(dim).values works when indices are also used (non-differentiably)."""
    x = leaf([[1.0, 5.0, 2.0], [7.0, 0.0, 3.0]])
    values, indices = tp.max(x, 1)
    (values * indices.to(tp.float64)).sum().backward()
    np.testing.assert_array_equal(as_numpy(x.grad), [[0.0, 1.0, 0.0], [0.0, 0.0, 0.0]])
