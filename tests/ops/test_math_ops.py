"""Math ops (lerp, nan_to_num, clamp_min/max, rsub, var/std, norm, logsumexp, count_nonzero,
addmm/addmv/outer, einsum, frac, xlogy) against NumPy float64 and PyTorch."""
import math

import numpy as np
import pytest

import tensorplug as tp
from ops_helpers import as_layout, check
from device_params import torch_or_skip

LAYOUTS = ["contiguous", "transposed", "sliced"]
FLOATS = [tp.float32, tp.float64]
TOL = {tp.float32: 2e-5, tp.float64: 1e-12, tp.float16: 5e-3}


def _f(rng, dtype, shape):
    return rng.standard_normal(shape).astype(np.dtype(dtype.name))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dim", [None, 0, -1, (0, 2), ()])
@pytest.mark.parametrize("keepdim", [False, True])
def test_var_std_match_numpy(dtype, layout, dim, keepdim, rng):
    """var/std with the default, legacy unbiased and explicit corrections equal NumPy's."""
    a = _f(rng, dtype, (3, 4, 5))
    x = as_layout(a, layout)
    axis = None if dim in (None, ()) else dim
    tol = TOL[dtype]
    check(tp.var(x, dim, keepdim=keepdim), np.var(a.astype(np.float64), axis=axis, ddof=1, keepdims=keepdim), tol, tol, dtype)
    check(x.std(dim, keepdim=keepdim, correction=0), np.std(a.astype(np.float64), axis=axis, keepdims=keepdim), tol, tol)
    check(tp.std(x, dim, unbiased=False, keepdim=keepdim), np.std(a.astype(np.float64), axis=axis, keepdims=keepdim), tol, tol)
    v, m = tp.var_mean(x, dim, keepdim=keepdim, correction=2)
    check(v, np.var(a.astype(np.float64), axis=axis, ddof=2, keepdims=keepdim), tol, tol)
    check(m, np.mean(a.astype(np.float64), axis=axis, keepdims=keepdim), tol, tol)
    s, m = tp.std_mean(x, dim, keepdim=keepdim)
    check(s, np.std(a.astype(np.float64), axis=axis, ddof=1, keepdims=keepdim), tol, tol)


def test_var_legacy_positional_and_edge_cases():
    """var(x, False) is the population variance; one element gives NaN; ints are rejected."""
    x = tp.tensor([1.0, 2.0, 4.0])
    assert tp.var(x, False).item() == pytest.approx(np.var([1.0, 2.0, 4.0]))
    with pytest.warns(UserWarning, match=r"var\(\): degrees of freedom is <= 0"):  # PyTorch's warning
        assert math.isnan(tp.var(tp.tensor([3.0])).item())
    assert tp.var(tp.tensor(2.0), correction=0).item() == 0.0
    with pytest.raises(RuntimeError, match="floating point"):
        tp.var(tp.tensor([1, 2]))
    with pytest.raises(IndexError, match="var"):
        tp.var(x, 1)
    with pytest.raises(IndexError, match="std"):
        tp.std(x, (0, -2))


@pytest.mark.parametrize("p", [2, "fro", 1, math.inf, -math.inf, 0, 3, 0.5])
@pytest.mark.parametrize("dim", [None, 1, (0, -1)])
def test_norm_matches_numpy(p, dim, rng):
    """Vector norms over dims equal NumPy's definition in float64."""
    a = rng.standard_normal((3, 4, 5))
    a[0, 0, 0] = 0.0
    x = as_layout(a, "transposed")
    axis = tuple(range(3)) if dim is None else (dim if isinstance(dim, tuple) else (dim,))
    q = 2 if p == "fro" else p
    mag = np.abs(a)
    if q == math.inf:
        want = mag.max(axis=axis)
    elif q == -math.inf:
        want = mag.min(axis=axis)
    elif q == 0:
        want = (a != 0).sum(axis=axis).astype(np.float64)
    else:
        want = (mag ** q).sum(axis=axis) ** (1 / q)
    check(tp.norm(x, p, dim), want, 1e-10, 1e-10)
    assert x.norm(p, dim, keepdim=True).ndim == 3


def test_norm_dtype_and_errors():
    """norm(dtype=) casts first; integer inputs are rejected; 'nuc' is the sum of singular values."""
    x = tp.tensor([3, 4])
    assert tp.norm(x, dtype=tp.float64).item() == 5.0
    with pytest.raises(RuntimeError, match="floating point"):
        tp.norm(x)
    assert abs(tp.norm(tp.tensor([[3.0, 0.0], [0.0, -4.0]]), "nuc").item() - 7.0) < 1e-6
    with pytest.raises(IndexError, match="norm"):
        tp.norm(tp.ones(2), 2, 1)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("dim", [0, -1, (0, 1), None])
def test_logsumexp_stable_and_matches_numpy(dtype, dim, rng):
    """logsumexp equals log(sum(exp)) in float64 and does not overflow for large inputs."""
    a = _f(rng, dtype, (4, 6)) * 300
    x = as_layout(a, "sliced")
    axis = dim
    big = a.astype(np.float64)
    shift = big.max(axis=axis, keepdims=True)
    want = np.log(np.exp(big - shift).sum(axis=axis, keepdims=True)) + shift
    check(tp.logsumexp(x, dim, keepdim=True), want, TOL[dtype], TOL[dtype], dtype)
    check(x.logsumexp(dim), want.squeeze(axis) if axis is not None else want.reshape(()), TOL[dtype], TOL[dtype])


def test_logsumexp_infinities_and_ints():
    """All -inf gives -inf (not NaN); +inf gives +inf; integer inputs compute in float."""
    inf = float("inf")
    got = tp.logsumexp(tp.tensor([[-inf, -inf], [inf, 1.0]]), 1)
    assert got.tolist() == [-inf, inf]
    assert tp.logsumexp(tp.tensor([0, 0]), 0).item() == pytest.approx(math.log(2))
    assert tp.logsumexp(tp.ones(0, 3), 0).tolist() == [-inf] * 3
    with pytest.raises(IndexError, match="logsumexp"):
        tp.logsumexp(tp.ones(2), 1)


def test_var_logsumexp_norm_gradients():
    """Composite gradients agree with finite differences in float64."""
    x = tp.randn(3, 4, dtype=tp.float64, requires_grad=True)
    assert tp.autograd.gradcheck(lambda t: tp.var(t, 1), (x,))
    assert tp.autograd.gradcheck(lambda t: tp.std(t, 0, correction=0), (x,))
    assert tp.autograd.gradcheck(lambda t: tp.logsumexp(t, (0, 1)), (x,))
    assert tp.autograd.gradcheck(lambda t: tp.norm(t, 2, 1), (x,))
    assert tp.autograd.gradcheck(lambda t: tp.norm(t, 3, 0), (x,))
    y = tp.randn(3, 4, dtype=tp.float64, requires_grad=True)
    w = tp.rand(3, 4, dtype=tp.float64, requires_grad=True)
    assert tp.autograd.gradcheck(lambda a, b, c: tp.lerp(a, b, c), (x, y, w))


def test_lerp_nan_to_num_clamp_rsub(rng):
    """Elementwise composites equal PyTorch's, with broadcasting."""
    torch = pytest.importorskip("torch")
    a, b, w = rng.standard_normal((3, 4)), rng.standard_normal((4,)), rng.random((3, 1))
    T = torch.tensor
    x = as_layout(a, "transposed")
    check(tp.lerp(x, tp.tensor(b), tp.tensor(w)), torch.lerp(T(a), T(b), T(w)), 1e-12, 1e-12)
    check(x.lerp(tp.tensor(b), 0.75), torch.lerp(T(a), T(b), 0.75), 1e-12, 1e-12)
    assert tp.lerp(tp.tensor([1.0]), tp.tensor([3.0]), 1.0).item() == 3.0
    y = x.clone()
    y.lerp_(tp.tensor(b), 0.25)
    check(y, torch.lerp(T(a), T(b), 0.25), 1e-12, 1e-12)
    special = np.array([np.nan, np.inf, -np.inf, 1.5], dtype=np.float32)
    check(tp.nan_to_num(tp.tensor(special)), torch.nan_to_num(T(special)))
    check(tp.nan_to_num(tp.tensor(special), 1.0, 2.0, -3.0), torch.nan_to_num(T(special), 1.0, 2.0, -3.0))
    check(tp.nan_to_num(tp.tensor(special).to(tp.float16)).float(), torch.nan_to_num(T(special).half()).float())
    check(tp.nan_to_num(tp.tensor([1, 2])), np.array([1, 2]), dtype=tp.int64)
    check(tp.clamp_min(x, 0.1), np.maximum(a, 0.1))
    check(x.clamp_max(tp.tensor(b)), np.minimum(a, b))
    check(tp.rsub(x, 2.0, alpha=3), 2.0 - 3 * a, 1e-12, 1e-12)
    check(tp.positive(x), a)
    check(tp.frac(tp.tensor([-2.5, 1.25, 3.0])), np.array([-0.5, 0.25, 0.0]))
    with pytest.raises(RuntimeError, match="lerp"):
        tp.lerp(tp.ones(2), tp.ones(2, dtype=tp.float64), 0.5)
    with pytest.raises(RuntimeError, match="lerp"):
        tp.lerp(tp.ones(2), tp.ones(3), 0.5)
    with pytest.raises(TypeError):
        tp.positive(tp.ones(2, dtype=tp.bool))


def test_xlogy_and_count_nonzero(rng):
    """xlogy is 0 where x is 0 (unless y is NaN); count_nonzero counts per dim in int64."""
    torch = pytest.importorskip("torch")
    x = np.array([0.0, 0.0, 2.0, 3.0, 0.0])
    y = np.array([0.0, np.nan, 3.0, 0.5, np.inf])
    check(tp.xlogy(tp.tensor(x), tp.tensor(y)), torch.xlogy(torch.tensor(x), torch.tensor(y)))
    check(tp.xlogy(2, tp.tensor(y[2:])), torch.xlogy(2, torch.tensor(y[2:])))
    check(tp.xlogy(tp.tensor([1, 0]), 3), torch.xlogy(torch.tensor([1, 0]), 3), dtype=tp.float32)
    a = rng.integers(0, 3, (3, 4, 5))
    check(tp.count_nonzero(tp.tensor(a)), np.count_nonzero(a), dtype=tp.int64)
    check(tp.count_nonzero(tp.tensor(a), (0, -1)), np.count_nonzero(a, axis=(0, 2)))
    check(tp.tensor(a).count_nonzero(1), np.count_nonzero(a, axis=1))


def test_xlogy_gradient_in_x_is_log_y_even_where_x_is_zero():
    """d/dx xlogy(x, y) = log(y), also at x = 0 (PyTorch 2.13), except 0 where x and y are both 0."""
    x = tp.tensor([0.0, 0.0, 0.0, 2.0], dtype=tp.float64, requires_grad=True)
    y = tp.tensor([0.0, np.nan, 3.0, 0.5], dtype=tp.float64)
    tp.xlogy(x, y).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [0.0, np.nan, np.log(3.0), np.log(0.5)], rtol=1e-15)


@pytest.mark.parametrize("dtype", FLOATS)
def test_addmm_addmv_outer(dtype, rng):
    """Fused products equal NumPy's with beta/alpha, broadcast input and beta=0 ignoring NaN."""
    tol = TOL[dtype]
    m1, m2, v = _f(rng, dtype, (3, 4)), _f(rng, dtype, (4, 5)), _f(rng, dtype, (4,))
    bias = _f(rng, dtype, (5,))
    A, B = as_layout(m1, "transposed"), tp.tensor(m2)
    check(tp.addmm(tp.tensor(bias), A, B, beta=0.5, alpha=2.0), 0.5 * bias + 2.0 * (m1 @ m2), tol, tol, dtype)
    nan_input = tp.full((3, 5), float("nan"), dtype=dtype)
    check(tp.addmm(nan_input, A, B, beta=0), m1 @ m2, tol, tol)
    check(tp.addmv(tp.ones(3, dtype=dtype), A, tp.tensor(v), alpha=-1), 1 - m1 @ v, tol, tol)
    check(tp.outer(tp.tensor(v), tp.tensor(bias)), np.outer(v, bias), tol, tol)
    check(tp.ones(3, 5, dtype=dtype).addmm(A, B), 1 + m1 @ m2, tol, tol)
    with pytest.raises(RuntimeError, match="addmm"):
        tp.addmm(tp.ones(5, dtype=dtype), A, A)
    with pytest.raises(RuntimeError, match="addmm"):
        tp.addmm(tp.ones(4, dtype=dtype), A, B)
    with pytest.raises(RuntimeError, match="addmv"):
        tp.addmv(tp.ones(3, dtype=dtype), A, tp.ones(5, dtype=dtype))
    with pytest.raises(RuntimeError, match="outer"):
        tp.outer(A, tp.tensor(v))


def test_addmm_gradient():
    """addmm's gradient reaches input, mat1 and mat2."""
    inp = tp.randn(3, 1, dtype=tp.float64, requires_grad=True)
    a = tp.randn(3, 2, dtype=tp.float64, requires_grad=True)
    b = tp.randn(2, 4, dtype=tp.float64, requires_grad=True)
    assert tp.autograd.gradcheck(lambda i, x, y: tp.addmm(i, x, y, beta=0.5, alpha=-2.0), (inp, a, b))
    inp2 = tp.randn(3, dtype=tp.float64, requires_grad=True)
    assert tp.autograd.gradcheck(lambda i, x, y: tp.addmv(i, x, y, beta=2.0, alpha=0.5), (inp2, a, b[:, 0].detach()))


@pytest.mark.parametrize("beta,alpha", [(0, 0), (0, 1), (1, 0), (0.5, 2.0)])
@pytest.mark.parametrize("op", ["addmm", "addmv"])
def test_addmm_addmv_gradients_at_edge_values_match_pytorch(op, beta, alpha):
    """PyTorch's formulas (issue 16): the input gets grad * beta even when beta = 0 (zeros, not
    no gradient); the matrices get (grad @ other) * alpha, so an inf operand gives NaN under
    alpha = 0; a broadcast input's gradient is summed to its shape."""
    torch = pytest.importorskip("torch", reason="PyTorch 2.13 is the reference for these gradients")
    inf, nan = math.inf, math.nan
    mat = [[inf, 1.0, -2.0], [0.5, nan, 3e38], [1.0, 2.0, -1.0]]
    other = [[1.0, -inf], [2.0, 0.5], [3e38, 1.0]] if op == "addmm" else [1.0, -inf, 2.0]
    bias = [[nan, 2.0]] if op == "addmm" else [nan]
    grads = []
    for lib in (torch, tp):
        leaves = [lib.tensor(v, dtype=lib.float32, requires_grad=True) for v in (bias, mat, other)]
        result = getattr(lib, op)(*leaves, beta=beta, alpha=alpha)
        weights = lib.arange(result.numel(), dtype=lib.float32).reshape(result.shape) - 1.5
        (result * weights).sum().backward()
        grads.append([leaf.grad.numpy() for leaf in leaves])
    for got, expected in zip(grads[1], grads[0]):
        np.testing.assert_allclose(got, expected, rtol=1e-6)


EINSUM_CASES = [
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("i,i->", [(6,), (6,)]),
    ("i,j->ij", [(3,), (4,)]),
    ("ij->ji", [(3, 4)]),
    ("ii->i", [(4, 4)]),
    ("ii", [(4, 4)]),
    ("...ij,...jk->...ik", [(2, 3, 4), (4, 5)]),
    ("...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 2)]),
    ("bhqd,bhkd->bhqk", [(2, 3, 4, 5), (2, 3, 6, 5)]),
    ("ij,jk", [(3, 4), (4, 5)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
    ("bij->j", [(2, 3, 4)]),
    ("i j , j k -> i k", [(2, 3), (3, 4)]),
    ("ij,ij->ij", [(3, 4), (3, 4)]),
    ("...i->...", [(2, 3, 4)]),
]


@pytest.mark.parametrize("equation,shapes", EINSUM_CASES)
def test_einsum_matches_numpy(equation, shapes, rng):
    """einsum equals np.einsum in float64 (matmul, batch, dot, outer, transpose, diagonal, ...)."""
    arrays = [rng.standard_normal(s) for s in shapes]
    operands = [as_layout(a, "transposed") for a in arrays]
    check(tp.einsum(equation, *operands), np.einsum(equation.replace(" ", ""), *arrays), 1e-10, 1e-10)
    check(tp.einsum(equation, operands), np.einsum(equation.replace(" ", ""), *arrays), 1e-10, 1e-10)


def test_einsum_errors_and_gradient():
    """Bad equations are rejected before anything runs; gradients flow through matmul."""
    a, b = tp.randn(3, 4, dtype=tp.float64, requires_grad=True), tp.randn(4, 2, dtype=tp.float64, requires_grad=True)
    with pytest.raises(ValueError, match="einsum"):
        tp.einsum("ij,jk->ik", a)
    with pytest.raises(RuntimeError, match="einsum"):
        tp.einsum("ijk,jk->i", a, b)
    with pytest.raises(ValueError, match="einsum"):
        tp.einsum("ij,jk->iz", a, b)
    with pytest.raises(RuntimeError, match="einsum"):
        tp.einsum("ij,ij->i", a, b)
    assert tp.autograd.gradcheck(lambda x, y: tp.einsum("ij,jk->ik", x, y), (a, b))
    assert tp.autograd.gradcheck(lambda x: tp.einsum("ii->", x[:, :3]), (a,))


# Issue 13, probe batch (f): the sublist form of einsum, and max/min(dim)'s result type names.
def test_einsum_sublist_form_as_pytorch():
    torch = torch_or_skip()
    a, b = np.random.default_rng(0).standard_normal((3, 4)), np.random.default_rng(1).standard_normal((4, 2))
    for lib, make in ((torch, torch.tensor), (tp, tp.tensor)):
        A, B = make(a), make(b)
        got = (lib.einsum(A, [0, 1], B, [1, 2], [0, 2]), lib.einsum(A, [0, 1], B, [1, 2]), lib.einsum(A, [30, 1]),
               lib.einsum(A, [Ellipsis, 1], [1]))
        if lib is torch:
            want = [g.numpy() for g in got]
        else:
            for ours, theirs in zip(got, want):
                np.testing.assert_allclose(ours.numpy(), theirs, rtol=1e-12)
    with pytest.raises(ValueError, match=r"\[0, 52\)"):
        tp.einsum(tp.ones(2), [52])


def test_max_and_min_with_dim_are_named_as_pytorchs_return_types():
    torch = torch_or_skip()
    x = np.arange(6.0).reshape(2, 3)
    for op in ("max", "min"):
        ours, theirs = getattr(tp, op)(tp.tensor(x), 1), getattr(torch, op)(torch.tensor(x), 1)
        assert type(ours).__name__ == type(theirs).__name__ == op
        assert ours.values.tolist() == theirs.values.tolist() and ours.indices.tolist() == theirs.indices.tolist()
