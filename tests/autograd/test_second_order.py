"""Higher-order gradients: gradgradcheck of the elementwise ops and matmul, create_graph vs PyTorch."""
import numpy as np
import pytest

import tensorplug as tp
from autograd_reference import as_numpy, leaf, torch_module

RNG = np.random.default_rng(7)

UNARY_DOMAINS = {
    "neg": (-2, 2), "abs": (0.3, 2), "exp": (-2, 2), "exp2": (-2, 2), "log": (0.3, 3), "log2": (0.3, 3),
    "log10": (0.3, 3), "log1p": (-0.7, 3), "expm1": (-2, 2), "sqrt": (0.3, 3), "rsqrt": (0.3, 3),
    "sin": (-3, 3), "cos": (-3, 3), "tan": (-1.2, 1.2), "asin": (-0.9, 0.9), "acos": (-0.9, 0.9),
    "atan": (-3, 3), "sinh": (-2, 2), "cosh": (-2, 2), "tanh": (-2, 2), "sigmoid": (-3, 3),
    "erf": (-2, 2), "erfinv": (-0.9, 0.9), "reciprocal": (0.4, 2), "square": (-2, 2),
}


@pytest.mark.parametrize("name", sorted(UNARY_DOMAINS))
def test_unary_gradgradcheck(name):
    """Each unary op's backward is itself differentiable, and correctly so."""
    x = leaf(RNG.uniform(*UNARY_DOMAINS[name], (2, 3)))
    assert tp.autograd.gradgradcheck(getattr(tp, name), [x])


def binary_inputs(name):
    a, b = RNG.uniform(-2, 2, (2, 3)), RNG.uniform(-2, 2, (2, 3))
    if name == "pow":
        a = RNG.uniform(0.4, 2, (2, 3))
    if name == "div":
        b = RNG.uniform(0.4, 2, (2, 3)) * np.array([1, -1, 1])
    if name in ("fmod", "remainder"):
        b = np.array([[1.3, -1.7, 1.1], [0.9, 1.5, -1.2]])
        a = b * np.array([[1.3, -0.4, 2.6], [0.7, -1.5, 0.2]])
    if name in ("maximum", "minimum"):
        b = a + np.array([[0.5, -0.5, 0.3], [-0.3, 0.7, -0.7]])
    return a, b


BINARY = ["add", "sub", "mul", "div", "pow", "maximum", "minimum", "atan2", "hypot", "fmod", "remainder"]


@pytest.mark.parametrize("name", BINARY)
def test_binary_gradgradcheck(name):
    """Each binary op's backward is differentiable with respect to both operands and the gradient."""
    a, b = binary_inputs(name)
    assert tp.autograd.gradgradcheck(getattr(tp, name), [leaf(a), leaf(b)])


@pytest.mark.parametrize("name", ["mul", "div", "pow"])
def test_binary_broadcast_gradgradcheck(name):
    """Double backward through a broadcast (3,1) x (1,4) binary op is correct."""
    a, b = RNG.uniform(0.5, 2, (3, 1)), RNG.uniform(0.5, 2, (1, 4))
    assert tp.autograd.gradgradcheck(getattr(tp, name), [leaf(a), leaf(b)])


@pytest.mark.parametrize("shapes", [((3,), (3,)), ((2, 3), (3, 4)), ((2, 2, 3), (2, 3, 2)), ((2, 2, 3), (3, 2)), ((3,), (3, 2))])
def test_matmul_gradgradcheck(shapes):
    """matmul's backward is differentiable (1-D, 2-D, batched and broadcast)."""
    a, b = (leaf(RNG.uniform(-1, 1, s)) for s in shapes)
    assert tp.autograd.gradgradcheck(tp.matmul, [a, b])


@pytest.mark.parametrize("fn", ["sum", "mean", "prod", "cumsum", "amax", "gather", "index"])
def test_reductions_and_indexing_gradgradcheck(fn):
    """Reductions, scans and indexing have differentiable backwards."""
    x = leaf(RNG.uniform(0.5, 2, (2, 3)) + np.arange(6).reshape(2, 3))
    f = {
        "sum": lambda t: (t * t).sum(1), "mean": lambda t: (t * t).mean(), "prod": lambda t: t.prod(1),
        "cumsum": lambda t: (t * t).cumsum(1), "amax": lambda t: (t * t).amax(0),
        "gather": lambda t: (t * t).gather(1, tp.tensor([[0, 0], [2, 1]])), "index": lambda t: (t * t)[[1, 1, 0]],
    }[fn]
    assert tp.autograd.gradgradcheck(f, [x])


CREATE_GRAPH = {
    "cube": (lambda m, x: x ** 3, lambda x: 6 * x),
    "sin": (lambda m, x: m.sin(x), lambda x: -np.sin(x)),
    "exp": (lambda m, x: m.exp(x), lambda x: np.exp(x)),
    "tanh": (lambda m, x: m.tanh(x), lambda x: -2 * np.tanh(x) * (1 - np.tanh(x) ** 2)),
    "sigmoid": (lambda m, x: m.sigmoid(x), None),
    "log": (lambda m, x: m.log(x), lambda x: -1 / x ** 2),
    "sqrt": (lambda m, x: m.sqrt(x), lambda x: -0.25 * x ** -1.5),
    "reciprocal": (lambda m, x: 1 / x, lambda x: 2 / x ** 3),
    "x-times-sin": (lambda m, x: x * m.sin(x), lambda x: 2 * np.cos(x) - x * np.sin(x)),
}


def second_derivative(m, fn, x):
    (g,) = m.autograd.grad(fn(m, x).sum(), x, create_graph=True)
    (gg,) = m.autograd.grad(g.sum(), x)
    return g, gg


@pytest.mark.parametrize("case", sorted(CREATE_GRAPH))
def test_second_derivative_matches_torch_and_closed_form(case):
    """d2/dx2 via create_graph=True matches PyTorch and, where written, the closed form."""
    torch = torch_module()
    fn, closed = CREATE_GRAPH[case]
    x_np = RNG.uniform(0.3, 2, (5,))
    g, gg = second_derivative(tp, fn, leaf(x_np))
    tg, tgg = second_derivative(torch, fn, torch.tensor(x_np, requires_grad=True))
    np.testing.assert_allclose(as_numpy(g), tg.detach().numpy(), rtol=1e-10)
    np.testing.assert_allclose(as_numpy(gg), tgg.numpy(), rtol=1e-10)
    if closed is not None:
        np.testing.assert_allclose(as_numpy(gg), closed(x_np), rtol=1e-10)


def test_third_derivative_of_cube():
    """d3/dx3 of x**3 is 6 everywhere (three nested create_graph passes)."""
    x = leaf([-1.5, 0.5, 2.0])
    (g,) = tp.autograd.grad((x ** 3).sum(), x, create_graph=True)
    (gg,) = tp.autograd.grad(g.sum(), x, create_graph=True)
    (ggg,) = tp.autograd.grad(gg.sum(), x)
    np.testing.assert_allclose(as_numpy(g), 3 * np.array([-1.5, 0.5, 2.0]) ** 2)
    np.testing.assert_allclose(as_numpy(gg), 6 * np.array([-1.5, 0.5, 2.0]))
    np.testing.assert_allclose(as_numpy(ggg), [6.0, 6.0, 6.0])


def test_mixed_partial_matches_torch():
    """d/dy (d/dx sum(x * y**2 * sin(x))) matches PyTorch."""
    torch = torch_module()
    a, b = RNG.uniform(-1, 1, (4,)), RNG.uniform(-1, 1, (4,))
    results = []
    for m, mk in ((tp, leaf), (torch, lambda v: torch.tensor(v, requires_grad=True))):
        x, y = mk(a), mk(b)
        (gx,) = m.autograd.grad((x * y ** 2 * m.sin(x)).sum(), x, create_graph=True)
        (gxy,) = m.autograd.grad(gx.sum(), y)
        results.append(np.asarray(gxy.detach().numpy()))
    np.testing.assert_allclose(results[0], results[1], rtol=1e-10)


def test_hessian_vector_product_of_mlp_matches_torch():
    """A Hessian-vector product through matmul, tanh and sum matches PyTorch."""
    torch = torch_module()
    w_np, x_np, v_np = RNG.uniform(-1, 1, (3, 4)), RNG.uniform(-1, 1, (5, 3)), RNG.uniform(-1, 1, (3, 4))
    results = []
    for m, mk in ((tp, leaf), (torch, lambda v: torch.tensor(v, requires_grad=True))):
        w = mk(w_np)
        loss = (m.tanh(m.tensor(x_np, dtype=m.float64) @ w) ** 2).mean()
        (g,) = m.autograd.grad(loss, w, create_graph=True)
        (hv,) = m.autograd.grad((g * m.tensor(v_np, dtype=m.float64)).sum(), w)
        results.append(np.asarray(hv.detach().numpy()))
    np.testing.assert_allclose(results[0], results[1], rtol=1e-9, atol=1e-12)


def test_backward_create_graph_makes_grad_differentiable():
    """backward(create_graph=True) leaves a .grad with a grad_fn; differentiating it gives d2."""
    x = leaf([1.0, 2.0])
    (x ** 3).sum().backward(create_graph=True)
    assert x.grad.requires_grad and x.grad.grad_fn is not None
    (gg,) = tp.autograd.grad(x.grad.sum(), x)
    np.testing.assert_allclose(as_numpy(gg), [6.0, 12.0])


def test_grad_without_create_graph_is_not_differentiable():
    """Without create_graph the returned gradient does not require grad."""
    x = leaf([1.0, 2.0])
    (g,) = tp.autograd.grad((x ** 3).sum(), x)
    assert not g.requires_grad and g.grad_fn is None
