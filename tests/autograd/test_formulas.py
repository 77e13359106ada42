"""First derivatives of every differentiable op: gradcheck in float64 and PyTorch on the same inputs.

Each case is ``fn(m, *inputs)`` written once for both libraries (``m`` is ``tensorplug`` or
``torch``), with inputs drawn inside the op's domain (away from kinks and discontinuities).
"""
from functools import partial

import numpy as np
import pytest

import tensorplug as tp
from autograd_reference import as_numpy, compare_with_torch, leaf, numeric_jacobian, torch_module

RNG = np.random.default_rng(20240601)


def uniform(low, high, shape):
    return RNG.uniform(low, high, shape)


def away_from_zero(shape, low=0.4, high=2.0):
    return RNG.uniform(low, high, shape) * RNG.choice([-1.0, 1.0], shape)


def gradcheck(fn, arrays):
    """tensorplug's gradcheck of ``fn(tp, ...)`` on float64 leaves made from ``arrays``."""
    assert tp.autograd.gradcheck(partial(fn, tp), [leaf(a) for a in arrays])


def against_torch(fn, arrays, **kwargs):
    torch = torch_module()
    compare_with_torch(partial(fn, tp), partial(fn, torch), arrays, **kwargs)


# --- unary -------------------------------------------------------------------------------------
UNARY_DOMAINS = {
    "neg": (-2, 2), "abs": None, "exp": (-2, 2), "exp2": (-2, 2), "log": (0.3, 3), "log2": (0.3, 3),
    "log10": (0.3, 3), "log1p": (-0.7, 3), "expm1": (-2, 2), "sqrt": (0.3, 3), "rsqrt": (0.3, 3),
    "sin": (-3, 3), "cos": (-3, 3), "tan": (-1.2, 1.2), "asin": (-0.9, 0.9), "acos": (-0.9, 0.9),
    "atan": (-3, 3), "sinh": (-2, 2), "cosh": (-2, 2), "tanh": (-2, 2), "sigmoid": (-3, 3),
    "erf": (-2, 2), "erfinv": (-0.9, 0.9), "reciprocal": None, "square": (-2, 2),
}
UNARY_INPUTS = {
    name: (away_from_zero((2, 3)) if domain is None else uniform(*domain, (2, 3)))
    for name, domain in UNARY_DOMAINS.items()
}


def unary_case(name):
    return lambda m, x: getattr(m, name)(x)


@pytest.mark.parametrize("name", sorted(UNARY_DOMAINS))
def test_unary_gradcheck(name):
    """Each unary op's analytical gradient matches finite differences inside its domain."""
    gradcheck(unary_case(name), [UNARY_INPUTS[name]])


@pytest.mark.parametrize("name", sorted(UNARY_DOMAINS))
def test_unary_matches_torch(name):
    """Each unary op's value and gradient match PyTorch's on the same inputs."""
    against_torch(unary_case(name), [UNARY_INPUTS[name]])


@pytest.mark.parametrize("name", sorted(UNARY_DOMAINS))
def test_unary_method_matches_function(name):
    """``x.op()`` records the same gradient as ``tp.op(x)``."""
    x = leaf(UNARY_INPUTS[name])
    (g_method,) = tp.autograd.grad(getattr(x, name)().sum(), x)
    (g_func,) = tp.autograd.grad(getattr(tp, name)(x).sum(), x)
    np.testing.assert_array_equal(as_numpy(g_method), as_numpy(g_func))


CLOSED_FORMS = {
    "exp": lambda x: np.exp(x), "log": lambda x: 1 / x, "sqrt": lambda x: 0.5 / np.sqrt(x),
    "tan": lambda x: 1 / np.cos(x) ** 2, "asin": lambda x: 1 / np.sqrt(1 - x * x),
    "sigmoid": lambda x: np.exp(-x) / (1 + np.exp(-x)) ** 2, "erf": lambda x: 2 / np.sqrt(np.pi) * np.exp(-x * x),
    "rsqrt": lambda x: -0.5 * x ** -1.5, "exp2": lambda x: np.log(2) * 2 ** x, "log10": lambda x: 1 / (x * np.log(10)),
}


@pytest.mark.parametrize("name", sorted(CLOSED_FORMS))
def test_unary_closed_form(name):
    """d/dx of op(x) summed is the textbook derivative (an independent NumPy formula)."""
    x = leaf(UNARY_INPUTS[name])
    getattr(tp, name)(x).sum().backward()
    np.testing.assert_allclose(as_numpy(x.grad), CLOSED_FORMS[name](UNARY_INPUTS[name]), rtol=1e-12)


def test_erfinv_numpy_finite_differences():
    """erfinv's gradient matches NumPy finite differences of the inverse of math.erf (bisection-free:
    d erfinv(y) = 1 / erf'(erfinv(y)))."""
    y = UNARY_INPUTS["erfinv"]
    x = leaf(y)
    out = tp.erfinv(x)
    out.sum().backward()
    expected = np.sqrt(np.pi) / 2 * np.exp(as_numpy(out) ** 2)
    np.testing.assert_allclose(as_numpy(x.grad), expected, rtol=1e-10)


# --- binary ------------------------------------------------------------------------------------
BINARY = ["add", "sub", "mul", "div", "pow", "maximum", "minimum", "atan2", "hypot", "fmod", "remainder"]
SCALAR = {"add": 1.7, "sub": 1.7, "mul": -1.3, "div": 1.7, "pow": 2.5, "maximum": 0.3, "minimum": 0.3,
          "atan2": 0.8, "hypot": 0.8, "fmod": 1.3, "remainder": 1.3}
SCALAR_FIRST = {"pow": 1.7, "fmod": 5.3, "remainder": 5.3, "div": 2.3}


def _far_from_integer(q):
    return np.all(np.abs(q - np.round(q)) > 0.1)


def binary_inputs(name, shape_a, shape_b):
    """Operands for ``name`` inside its domain; a shape of None stands for a Python scalar."""
    for _ in range(10000):
        a = SCALAR_FIRST.get(name, 1.1) if shape_a is None else uniform(-2, 2, shape_a)
        b = SCALAR[name] if shape_b is None else uniform(-2, 2, shape_b)
        if name == "div" and shape_b is not None:
            b = away_from_zero(shape_b)
        if name == "pow" and shape_a is not None:
            a = uniform(0.4, 2.0, shape_a)
        if name in ("fmod", "remainder"):
            if shape_a is not None:
                a = uniform(-4, 4, shape_a)
            if shape_b is not None:
                b = away_from_zero(shape_b, 0.7, 2.0)
            if not _far_from_integer(np.asarray(a) / np.asarray(b)):
                continue
        if name in ("maximum", "minimum") and np.min(np.abs(np.subtract(a, b))) < 0.05:
            continue
        return a, b
    raise AssertionError("no inputs found")


FORMS = {"tensor-tensor": ((2, 3), (2, 3)), "tensor-scalar": ((2, 3), None), "scalar-tensor": (None, (2, 3)),
         "broadcast": ((3, 1), (1, 4))}


def binary_case(name, form):
    """``fn(m, *tensors)`` for one form; a scalar operand is a Python number for tensorplug and a
    0-d float64 tensor without gradient for torch (torch.maximum and others refuse numbers)."""
    shape_a, shape_b = FORMS[form]
    a, b = binary_inputs(name, shape_a, shape_b)

    def as_operand(m, v):
        return v if m is tp else m.tensor(v, dtype=m.float64)

    if shape_a is None:
        return (lambda m, y: getattr(m, name)(as_operand(m, a), y)), [b]
    if shape_b is None:
        return (lambda m, x: getattr(m, name)(x, as_operand(m, b))), [a]
    return (lambda m, x, y: getattr(m, name)(x, y)), [a, b]


BINARY_CASES = [(n, f) for n in BINARY for f in FORMS if not (f == "scalar-tensor" and n in ("atan2", "hypot"))] + [
    ("atan2", "scalar-tensor"), ("hypot", "scalar-tensor")]


@pytest.mark.parametrize("name,form", BINARY_CASES)
def test_binary_gradcheck(name, form):
    """Each binary op's gradients match finite differences, for tensors, scalars and broadcasting."""
    fn, arrays = binary_case(name, form)
    gradcheck(fn, arrays)


@pytest.mark.parametrize("name,form", BINARY_CASES)
def test_binary_matches_torch(name, form):
    """Each binary op's value and gradients match PyTorch's, for tensors, scalars and broadcasting."""
    fn, arrays = binary_case(name, form)
    against_torch(fn, arrays)


@pytest.mark.parametrize("op", ["__add__", "__sub__", "__mul__", "__truediv__", "__pow__", "__radd__", "__rsub__",
                                "__rmul__", "__rtruediv__", "__rpow__", "__mod__"])
def test_operators_match_torch(op):
    """Python operators with a number on either side give PyTorch's gradients (torch has no
    derivative for ``number % tensor``: that one is checked by gradcheck)."""
    x = uniform(0.5, 2.0, (2, 3)) * np.array([1.0, 1.37, 1.91])
    against_torch(lambda m, t: getattr(t, op)(1.23), [x])


def test_broadcast_gradient_is_reduced_to_input_shape():
    """A (3,1) x (1,4) product gives gradients of shapes (3,1) and (1,4): the sums of the other operand."""
    a, b = uniform(-1, 1, (3, 1)), uniform(-1, 1, (1, 4))
    x, y = leaf(a), leaf(b)
    (x * y).sum().backward()
    assert tuple(x.grad.shape) == (3, 1) and tuple(y.grad.shape) == (1, 4)
    np.testing.assert_allclose(as_numpy(x.grad), np.broadcast_to(b.sum(), (3, 1)), rtol=1e-12)
    np.testing.assert_allclose(as_numpy(y.grad), np.broadcast_to(a.sum(), (1, 4)), rtol=1e-12)


def test_pow_numpy_finite_differences():
    """pow's gradients for both operands match NumPy finite differences of a ** b."""
    a, b = uniform(0.5, 2, (2, 3)), uniform(-2, 2, (2, 3))
    x, y = leaf(a), leaf(b)
    (x ** y).sum().backward()
    f = lambda p, q: (p ** q).sum()
    np.testing.assert_allclose(as_numpy(x.grad).reshape(-1), numeric_jacobian(f, [a, b], 0)[:, 0], rtol=1e-6)
    np.testing.assert_allclose(as_numpy(y.grad).reshape(-1), numeric_jacobian(f, [a, b], 1)[:, 0], rtol=1e-6)


def test_pow_zero_base_matches_torch():
    """x ** y at x == 0 (y > 1) has gradient 0 for both operands, as in PyTorch (no NaN)."""
    against_torch(lambda m, x, y: x ** y, [np.array([0.0, 1.0, 2.0]), np.array([2.0, 3.0, 2.5])])


@pytest.mark.parametrize("name", ["maximum", "minimum"])
def test_maximum_minimum_ties_match_torch(name):
    """At ties maximum/minimum split the gradient evenly between operands, as PyTorch does."""
    a = np.array([1.0, 2.0, 3.0, -1.0])
    b = np.array([1.0, 1.0, 4.0, -1.0])
    against_torch(lambda m, x, y: getattr(m, name)(x, y), [a, b])


# --- reductions and scans ------------------------------------------------------------------------
X234 = uniform(-2, 2, (2, 3, 4))
NONZERO = away_from_zero((2, 3), 0.5, 1.5)
ONE_ZERO = NONZERO.copy()
ONE_ZERO[0, 1] = 0.0
TWO_ZEROS_ROW = NONZERO.copy()
TWO_ZEROS_ROW[1, 0] = TWO_ZEROS_ROW[1, 2] = 0.0
TWO_ZEROS_SPREAD = NONZERO.copy()
TWO_ZEROS_SPREAD[0, 0] = TWO_ZEROS_SPREAD[1, 1] = 0.0
TIES = np.array([[1.0, 3.0, 3.0, -2.0], [0.5, 0.5, -1.0, 0.5], [2.0, 2.0, 2.0, 2.0]])

REDUCTIONS = {
    "sum": (lambda m, x: x.sum(), X234),
    "sum-dim1": (lambda m, x: x.sum(dim=1), X234),
    "sum-dims-keepdim": (lambda m, x: m.sum(x, dim=(0, 2), keepdim=True), X234),
    "sum-neg-dim-keepdim": (lambda m, x: x.sum(-1, keepdim=True), X234),
    "mean": (lambda m, x: x.mean(), X234),
    "mean-dim1": (lambda m, x: m.mean(x, 1), X234),
    "mean-dims-keepdim": (lambda m, x: x.mean(dim=(0, 2), keepdim=True), X234),
    "prod": (lambda m, x: x.prod(), NONZERO),
    "prod-dim1": (lambda m, x: m.prod(x, 1), NONZERO),
    "prod-dim0-keepdim": (lambda m, x: x.prod(0, keepdim=True), NONZERO),
    "prod-one-zero": (lambda m, x: x.prod(), ONE_ZERO),
    "prod-one-zero-dim1": (lambda m, x: x.prod(1), ONE_ZERO),
    "prod-one-zero-dim0": (lambda m, x: x.prod(0), ONE_ZERO),
    "prod-two-zeros": (lambda m, x: x.prod(), TWO_ZEROS_ROW),
    "prod-two-zeros-same-row-dim1": (lambda m, x: x.prod(1), TWO_ZEROS_ROW),
    "prod-two-zeros-spread": (lambda m, x: x.prod(), TWO_ZEROS_SPREAD),
    "prod-two-zeros-spread-dim1": (lambda m, x: x.prod(dim=1, keepdim=True), TWO_ZEROS_SPREAD),
    "amax": (lambda m, x: x.amax(), X234),
    "amax-dim1": (lambda m, x: m.amax(x, 1), X234),
    "amax-dims-keepdim": (lambda m, x: x.amax(dim=(0, 2), keepdim=True), X234),
    "amin": (lambda m, x: m.amin(x), X234),
    "amin-dim-2": (lambda m, x: x.amin(-1), X234),
    "max": (lambda m, x: x.max(), X234),
    "min": (lambda m, x: m.min(x), X234),
    "max-dim": (lambda m, x: m.max(x, 1)[0], X234),
    "max-dim-keepdim": (lambda m, x: x.max(dim=2, keepdim=True)[0], X234),
    "min-dim": (lambda m, x: x.min(0)[0], X234),
    "min-dim-keepdim": (lambda m, x: m.min(x, dim=-1, keepdim=True).values, X234),
    "cumsum-0": (lambda m, x: x.cumsum(0), X234),
    "cumsum-2": (lambda m, x: m.cumsum(x, dim=2), X234),
    "cumprod-1": (lambda m, x: x.cumprod(1), NONZERO),
    "cumprod-0": (lambda m, x: m.cumprod(x, 0), NONZERO),
    "cumprod-one-zero": (lambda m, x: x.cumprod(1), ONE_ZERO),
    "cumprod-two-zeros": (lambda m, x: x.cumprod(1), TWO_ZEROS_ROW),
}


def test_rmod_gradcheck():
    """``number % tensor`` differentiates with respect to the divisor."""
    gradcheck(lambda m, x: 5.3 % x, [np.array([[0.8, 1.9, 1.4], [-0.8, -1.9, -1.4]])])


@pytest.mark.parametrize("case", sorted(REDUCTIONS))
def test_reduction_gradcheck(case):
    """Reductions and scans match finite differences (prod and cumprod with one and two zeros too)."""
    fn, x = REDUCTIONS[case]
    gradcheck(fn, [x])


@pytest.mark.parametrize("case", sorted(REDUCTIONS))
def test_reduction_matches_torch(case):
    """Reductions and scans give PyTorch's values and gradients, over dims, keepdim and zeros."""
    fn, x = REDUCTIONS[case]
    against_torch(fn, [x])


TIE_CASES = {
    "amax": lambda m, x: x.amax(),
    "amax-dim1": lambda m, x: x.amax(1),
    "amin-dim0-keepdim": lambda m, x: x.amin(0, keepdim=True),
    "max": lambda m, x: x.max(),
    "min": lambda m, x: x.min(),
    "max-dim1": lambda m, x: x.max(1)[0],
    "min-dim0": lambda m, x: x.min(0)[0],
    "min-dim1": lambda m, x: x.min(1)[0],
    "max-dim1-keepdim": lambda m, x: x.max(1, keepdim=True)[0],
}


@pytest.mark.parametrize("case", sorted(TIE_CASES))
def test_extreme_ties_match_torch(case):
    """With ties, amax/amin/max()/min() share the gradient evenly and max(dim)/min(dim) give it to
    the returned index, exactly as PyTorch does."""
    against_torch(TIE_CASES[case], [TIES])


def test_scatter_src_larger_than_index_gradcheck():
    """scatter with a src larger than its index: the unread part of src gets a zero gradient."""
    gradcheck(lambda m, x, s: x.scatter(1, m.tensor(SCATTER_INDEX), s), [X34, uniform(-1, 1, (3, 3))])


def test_max_dim_indices_have_no_gradient():
    """max(dim).indices is an int64 tensor that does not require grad."""
    x = leaf(X234)
    values, indices = tp.max(x, 1)
    assert values.requires_grad and not indices.requires_grad
    assert indices.dtype == tp.int64


def test_prod_closed_form_with_one_zero():
    """d prod / dx_i is the product of the others: nonzero only at the zero's position."""
    x = leaf(ONE_ZERO)
    x.prod().backward()
    expected = np.zeros_like(ONE_ZERO)
    expected[0, 1] = np.prod(np.delete(ONE_ZERO.reshape(-1), 1))
    np.testing.assert_allclose(as_numpy(x.grad), expected, rtol=1e-12)


def test_cumsum_numpy_finite_differences():
    """cumsum's vector-Jacobian product matches NumPy finite differences."""
    x_np = uniform(-1, 1, (5,))
    w = uniform(-1, 1, (5,))
    x = leaf(x_np)
    (x.cumsum(0) * leaf(w, False)).sum().backward()
    jac = numeric_jacobian(lambda v: (np.cumsum(v) * w).sum(), [x_np], 0)
    np.testing.assert_allclose(as_numpy(x.grad), jac[:, 0], rtol=1e-6)


# --- matmul --------------------------------------------------------------------------------------
MATMUL = {
    "1d@1d": ((3,), (3,)), "2d@1d": ((2, 3), (3,)), "1d@2d": ((3,), (3, 4)), "2d@2d": ((2, 3), (3, 4)),
    "batched": ((2, 2, 3), (2, 3, 4)), "broadcast-3d@2d": ((2, 2, 3), (3, 4)),
    "broadcast-batch": ((2, 1, 2, 3), (3, 3, 2)), "1d@3d": ((3,), (2, 3, 4)),
}
LINALG = {f"matmul-{k}": (lambda m, a, b: m.matmul(a, b), shapes) for k, shapes in MATMUL.items()}
LINALG.update({
    "matmul-operator": (lambda m, a, b: a @ b, ((2, 3), (3, 2))),
    "mm": (lambda m, a, b: m.mm(a, b), ((2, 3), (3, 4))),
    "mm-transposed": (lambda m, a, b: m.mm(a.t(), b), ((3, 2), (3, 4))),
    "bmm": (lambda m, a, b: m.bmm(a, b), ((2, 2, 3), (2, 3, 4))),
    "dot": (lambda m, a, b: m.dot(a, b), ((4,), (4,))),
    "mv": (lambda m, a, b: m.mv(a, b), ((3, 4), (4,))),
})
LINALG_INPUTS = {k: [uniform(-1, 1, s) for s in shapes] for k, (_, shapes) in LINALG.items()}


@pytest.mark.parametrize("case", sorted(LINALG))
def test_linalg_gradcheck(case):
    """matmul (1-D, 2-D, batched, broadcast), mm, bmm, dot and mv match finite differences."""
    gradcheck(LINALG[case][0], LINALG_INPUTS[case])


@pytest.mark.parametrize("case", sorted(LINALG))
def test_linalg_matches_torch(case):
    """matmul (1-D, 2-D, batched, broadcast), mm, bmm, dot and mv give PyTorch's gradients."""
    against_torch(LINALG[case][0], LINALG_INPUTS[case])


def test_mm_closed_form():
    """For L = sum(A @ B): dL/dA = 1 B^T and dL/dB = A^T 1 (NumPy)."""
    a_np, b_np = uniform(-1, 1, (2, 3)), uniform(-1, 1, (3, 4))
    a, b = leaf(a_np), leaf(b_np)
    (a @ b).sum().backward()
    np.testing.assert_allclose(as_numpy(a.grad), np.ones((2, 4)) @ b_np.T, rtol=1e-12)
    np.testing.assert_allclose(as_numpy(b.grad), a_np.T @ np.ones((2, 4)), rtol=1e-12)


# --- where, clamp, relu ----------------------------------------------------------------------------
COND = np.array([[True, False, True], [False, False, True]])
X23 = uniform(-2, 2, (2, 3))
Y23 = uniform(-2, 2, (2, 3))
AWAY = np.array([[-1.5, -0.7, 0.3], [0.9, 1.6, -0.2]])  # no element within 0.1 of 0, +-0.5 or 1

SELECTION = {
    "where": (lambda m, x, y: m.where(m.tensor(COND), x, y), [X23, Y23]),
    "where-scalar": (lambda m, x: m.where(m.tensor(COND), x, 0.5), [X23]),
    "where-broadcast": (lambda m, x, y: m.where(m.tensor(COND), x, y), [uniform(-1, 1, (1, 3)), uniform(-1, 1, (2, 1))]),
    "clamp-min": (lambda m, x: x.clamp(min=-0.5), [AWAY]),
    "clamp-max": (lambda m, x: m.clamp(x, max=0.5), [AWAY]),
    "clamp-both": (lambda m, x: m.clamp(x, -0.5, 1.0), [AWAY]),
    "relu": (lambda m, x: m.relu(x), [AWAY]),
    "relu-method": (lambda m, x: x.relu(), [AWAY]),
}


@pytest.mark.parametrize("case", sorted(SELECTION))
def test_selection_gradcheck(case):
    """where, clamp and relu match finite differences away from their kinks."""
    fn, arrays = SELECTION[case]
    gradcheck(fn, arrays)


@pytest.mark.parametrize("case", sorted(SELECTION))
def test_selection_matches_torch(case):
    """where, clamp and relu give PyTorch's gradients away from their kinks."""
    fn, arrays = SELECTION[case]
    against_torch(fn, arrays)


@pytest.mark.parametrize("case", ["clamp-min", "clamp-max", "clamp-both", "relu"])
def test_clamp_relu_at_the_boundary_match_torch(case):
    """At x == min or x == max clamp passes the gradient (1) and relu at 0 gives 0, as in PyTorch."""
    x = np.array([-0.5, 0.0, 0.5, 1.0, -1.0, 2.0])
    fn = {
        "clamp-min": lambda m, t: t.clamp(min=-0.5), "clamp-max": lambda m, t: t.clamp(max=0.5),
        "clamp-both": lambda m, t: t.clamp(-0.5, 1.0), "relu": lambda m, t: m.relu(t),
    }[case]
    against_torch(fn, [x])


# --- gather, scatter, index_select, indexing ---------------------------------------------------------
X34 = uniform(-2, 2, (3, 4))
GATHER_INDEX = [[0, 0, 3], [1, 2, 1], [3, 3, 3]]  # repeats: the gradient adds up
SCATTER_INDEX = [[2, 0], [1, 3], [0, 1]]  # unique per row: scatter is deterministic

INDEXING = {
    "gather-dim1": (lambda m, x: m.gather(x, 1, m.tensor(GATHER_INDEX)), [X34]),
    "gather-dim0": (lambda m, x: x.gather(0, m.tensor([[0, 2, 2, 1], [1, 1, 0, 2]])), [X34]),
    "scatter": (lambda m, x, s: m.scatter(x, 1, m.tensor(SCATTER_INDEX), s), [X34, uniform(-1, 1, (3, 2))]),
    "scatter-method": (lambda m, x, s: x.scatter(0, m.tensor([[2, 0, 1, 1]]), s), [X34, uniform(-1, 1, (1, 4))]),
    "scatter-add": (lambda m, x, s: m.scatter_add(x, 1, m.tensor(GATHER_INDEX), s), [X34, uniform(-1, 1, (3, 3))]),
    "scatter-add-dim0": (lambda m, x, s: x.scatter_add(0, m.tensor([[0, 2, 2, 0]]), s), [X34, uniform(-1, 1, (1, 4))]),
    "index-select-0": (lambda m, x: m.index_select(x, 0, m.tensor([2, 0, 2])), [X34]),
    "index-select-1": (lambda m, x: x.index_select(1, m.tensor([3, 1])), [X34]),
    "slice": (lambda m, x: x[1:, ::2], [X34]),
    "negative-slice": (lambda m, x: x[-2:, 1:3], [X34]),
    "int": (lambda m, x: x[1], [X34]),
    "int-int": (lambda m, x: x[2, -1], [X34]),
    "int-slice": (lambda m, x: x[:, 2], [X34]),
    "ellipsis-none": (lambda m, x: x[None, ..., 1:3], [X34]),
    "int-list-repeats": (lambda m, x: x[[0, 2, 0, 0]], [X34]),
    "int-list-dim1": (lambda m, x: x[:, [3, 1, 3]], [X34]),
    "two-int-lists": (lambda m, x: x[[0, 2, 2], [1, 3, 1]], [X34]),
    "int-tensor": (lambda m, x: x[m.tensor([[1, 0], [2, 2]])], [X34]),
    "bool-mask": (lambda m, x: x[m.tensor(X34 > 0)], [X34]),
    "bool-mask-rows": (lambda m, x: x[m.tensor([True, False, True])], [X34]),
}


@pytest.mark.parametrize("case", sorted(INDEXING))
def test_indexing_gradcheck(case):
    """gather, scatter, scatter_add, index_select and x[...] match finite differences."""
    fn, arrays = INDEXING[case]
    gradcheck(fn, arrays)


@pytest.mark.parametrize("case", sorted(INDEXING))
def test_indexing_matches_torch(case):
    """gather, scatter, scatter_add, index_select and x[...] give PyTorch's gradients (repeated
    indices accumulate)."""
    fn, arrays = INDEXING[case]
    against_torch(fn, arrays)


def test_repeated_index_accumulates_closed_form():
    """x[[0, 0, 0]].sum() gives 3 at position 0 and 0 elsewhere."""
    x = leaf(np.arange(4.0))
    x[[0, 0, 0, 2]].sum().backward()
    np.testing.assert_array_equal(as_numpy(x.grad), [3.0, 0.0, 1.0, 0.0])


# --- cat, stack, views, dtype casts ----------------------------------------------------------------
A23, B13, C23 = uniform(-1, 1, (2, 3)), uniform(-1, 1, (1, 3)), uniform(-1, 1, (2, 3))

SHAPES = {
    "cat-0": (lambda m, a, b: m.cat([a, b], 0), [A23, B13]),
    "cat-1": (lambda m, a, c: m.cat((a, c, a), dim=1), [A23, C23]),
    "cat-neg": (lambda m, a, c: m.cat([a, c], -1), [A23, C23]),
    "stack-0": (lambda m, a, c: m.stack([a, c]), [A23, C23]),
    "stack-2": (lambda m, a, c: m.stack((a, c, a), dim=2), [A23, C23]),
    "reshape": (lambda m, x: x.reshape(4, 3), [X34]),
    "reshape-fn": (lambda m, x: m.reshape(x.t(), (2, -1)), [X34]),
    "view": (lambda m, x: x.view(2, 6), [X34]),
    "view-minus-one": (lambda m, x: x.view(-1), [X34]),
    "transpose": (lambda m, x: x.transpose(0, 1), [X34]),
    "transpose-3d": (lambda m, x: m.transpose(x, 0, 2), [X234]),
    "permute": (lambda m, x: x.permute(2, 0, 1), [X234]),
    "expand": (lambda m, x: x.expand(2, 3, 4), [uniform(-1, 1, (3, 1))]),
    "expand-minus-one": (lambda m, x: x.expand(-1, 4), [uniform(-1, 1, (3, 1))]),
    "squeeze": (lambda m, x: x.squeeze(), [uniform(-1, 1, (3, 1, 2, 1))]),
    "squeeze-dim": (lambda m, x: m.squeeze(x, 1), [uniform(-1, 1, (3, 1, 2))]),
    "unsqueeze": (lambda m, x: x.unsqueeze(1), [X34]),
    "unsqueeze-neg": (lambda m, x: m.unsqueeze(x, -1), [X34]),
    "flatten": (lambda m, x: x.flatten(), [X234]),
    "flatten-range": (lambda m, x: m.flatten(x, 1), [X234]),
    "select": (lambda m, x: x.select(1, 2), [X234]),
    "select-neg": (lambda m, x: m.select(x, -1, 0), [X234]),
    "narrow": (lambda m, x: x.narrow(1, 1, 2), [X34]),
    "diagonal": (lambda m, x: x.diagonal(), [X34]),
    "diagonal-offset": (lambda m, x: m.diagonal(x, 1), [X34]),
    "t": (lambda m, x: x.t(), [X34]),
    "t-fn": (lambda m, x: m.t(x), [X34]),
    "T": (lambda m, x: x.T, [X34]),
    "T-of-view": (lambda m, x: x[1].T, [X234]),
    "view-chain": (lambda m, x: x.t().reshape(-1)[2:9].view(7, 1).expand(7, 2) * 3, [X34]),
    "to-float64": (lambda m, x: x.to(m.float64) * x, [X34]),
}


@pytest.mark.parametrize("case", sorted(SHAPES))
def test_shape_ops_gradcheck(case):
    """cat, stack and every view op match finite differences."""
    fn, arrays = SHAPES[case]
    gradcheck(fn, arrays)


@pytest.mark.parametrize("case", sorted(SHAPES))
def test_shape_ops_match_torch(case):
    """cat, stack and every view op give PyTorch's gradients."""
    fn, arrays = SHAPES[case]
    against_torch(fn, arrays)


def test_float32_to_float64_gradient_keeps_leaf_dtype():
    """A float32 leaf cast to float64 gets a float32 gradient with PyTorch's values."""
    torch = torch_module()
    x_np = uniform(-1, 1, (5,)).astype(np.float32)
    x = tp.tensor(x_np, requires_grad=True)
    tx = torch.tensor(x_np, requires_grad=True)
    (x.to(tp.float64) ** 2).sum().backward()
    (tx.to(torch.float64) ** 2).sum().backward()
    assert x.grad.dtype == tp.float32
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-6)


def test_float64_to_float32_and_back_gradient_keeps_leaf_dtype():
    """A float64 leaf cast to float32 and back gets a float64 gradient with PyTorch's values."""
    torch = torch_module()
    x_np = uniform(-1, 1, (5,))
    x = leaf(x_np)
    tx = torch.tensor(x_np, requires_grad=True)
    (x.to(tp.float32).to(tp.float64) * 3).sum().backward()
    (tx.to(torch.float32).to(torch.float64) * 3).sum().backward()
    assert x.grad.dtype == tp.float64
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-7)


@pytest.mark.parametrize("method", ["float", "double"])
def test_cast_methods_are_differentiable(method):
    """x.float() and x.double() pass the gradient through (converted to the leaf's dtype)."""
    x = leaf(uniform(-1, 1, (3,)))
    getattr(x, method)().sum().backward()
    assert x.grad.dtype == tp.float64
    np.testing.assert_array_equal(as_numpy(x.grad), np.ones(3))
