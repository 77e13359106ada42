"""linalg.multi_dot, chain_matmul and linalg.matrix_exp against PyTorch 2.13 and SciPy float64
(values, gradients, errors) on every backend (issue 13)."""
import warnings

import numpy as np
import pytest

import tensorplug as tp


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


def _torch():
    return pytest.importorskip("torch", reason="PyTorch 2.13 is the reference here (pip install torch==2.13.0)")


@pytest.mark.parametrize("shapes", [[(3,), (3, 2), (2,)], [(2, 3), (3, 4), (4, 5), (5, 2)], [(3,), (3,)], [(2, 3), (3,)],
                                    [(4,), (4, 2)]])
def test_multi_dot_matches_torch_with_gradients(device, shapes, rng):
    """1-D first and last tensors become row and column vectors and are dropped from the result."""
    torch = _torch()
    arrays = [rng.normal(size=s) for s in shapes]
    xs = [tp.tensor(a, device=device, requires_grad=True) for a in arrays]
    got = tp.linalg.multi_dot(xs)
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    expected = torch.linalg.multi_dot(ts)
    assert got.shape == tuple(expected.shape)
    np.testing.assert_allclose(got.detach().cpu().numpy(), expected.detach().numpy(), rtol=1e-12)
    weights = rng.normal(size=tuple(expected.shape))
    (got * tp.tensor(weights, device=device)).sum().backward()
    (expected * torch.tensor(weights)).sum().backward()
    for x, t in zip(xs, ts):
        np.testing.assert_allclose(x.grad.cpu().numpy(), t.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_multi_dot_integers():
    """Integer matrices multiply exactly (as PyTorch's)."""
    got = tp.linalg.multi_dot([tp.ones(2, 3, dtype=tp.int64), tp.ones(3, dtype=tp.int64)])
    assert got.dtype is tp.int64 and got.tolist() == [3, 3]


@pytest.mark.parametrize("make", [
    lambda m: m.linalg.multi_dot([m.ones(3)]),
    lambda m: m.linalg.multi_dot([]),
    lambda m: m.linalg.multi_dot([m.ones(2, 3, 3), m.ones(3, 2)]),
    lambda m: m.linalg.multi_dot([m.ones(3, 3), m.ones(2, 3, 3)]),
    lambda m: m.linalg.multi_dot([m.ones(3), m.ones(2, 3, 3), m.ones(3)]),
    lambda m: m.linalg.multi_dot([m.ones(2, 3), m.ones(2, 2)]),
    lambda m: m.linalg.multi_dot([m.ones(2, 3), m.ones(3, 2, dtype=m.float64)]),
    lambda m: m.linalg.multi_dot([m.ones(3, dtype=m.int64), m.ones(3, dtype=m.int32)]),
])
def test_multi_dot_errors_match_torch(make):
    """PyTorch's RuntimeErrors, word for word."""
    torch = _torch()
    with pytest.raises(RuntimeError) as expected:
        make(torch)
    with pytest.raises(RuntimeError) as got:
        make(tp)
    assert str(got.value) == str(expected.value)


def test_chain_matmul_warns_and_multiplies():
    """The deprecated spelling warns as PyTorch does, then multiplies; one matrix is copied."""
    with pytest.warns(UserWarning, match="chain_matmul is deprecated"):
        got = tp.chain_matmul(tp.ones(2, 3), tp.ones(3, 4), tp.ones(4, 1))
    assert got.tolist() == [[12.0], [12.0]]
    one = tp.ones(2, 2)
    with pytest.warns(UserWarning, match="chain_matmul is deprecated"):
        copy = tp.chain_matmul(one)
    copy.fill_(0)
    assert one.tolist() == [[1.0, 1.0], [1.0, 1.0]]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(RuntimeError, match="Tensor dimension is 1, expected 2 instead"):
            tp.chain_matmul(tp.ones(3), tp.ones(3, 2))
        with pytest.raises(RuntimeError, match="Expected one or more matrices"):
            tp.chain_matmul()


@pytest.mark.parametrize("scale", [0.01, 1.0, 8.0, 40.0])
def test_matrix_exp_matches_scipy_float64(device, scale, rng):
    """A batch of matrices of very different norms (each scaled on its own) against scipy's expm."""
    sl = pytest.importorskip("scipy.linalg", reason="SciPy's expm is the float64 reference")
    A = rng.normal(size=(3, 4, 4)) * scale
    A[1] *= 0.05
    expected = np.stack([sl.expm(a) for a in A])
    got = tp.linalg.matrix_exp(tp.tensor(A, device=device)).cpu().numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-12 * max(scale, 1) ** 2, atol=1e-13 * np.abs(expected).max())
    if scale > 8:
        return  # exp of these overflows float32
    got32 = tp.tensor(A.astype(np.float32), device=device).matrix_exp()
    assert got32.dtype is tp.float32
    np.testing.assert_allclose(got32.cpu().numpy(), expected, rtol=1e-4, atol=1e-5 * np.abs(expected).max())


def test_matrix_exp_complex(rng):
    """Complex matrices (CPU) against scipy."""
    sl = pytest.importorskip("scipy.linalg", reason="SciPy's expm is the float64 reference")
    C = rng.normal(size=(2, 3, 3)) + 1j * rng.normal(size=(2, 3, 3))
    np.testing.assert_allclose(tp.matrix_exp(tp.tensor(C)).numpy(), np.stack([sl.expm(c) for c in C]), rtol=1e-12, atol=1e-13)


def test_matrix_exp_gradient_matches_torch(device, rng):
    """The gradient of the composition equals PyTorch's Fréchet-derivative gradient."""
    torch = _torch()
    A = rng.normal(size=(2, 3, 3)) * 2
    weights = rng.normal(size=A.shape)
    x = tp.tensor(A, device=device, requires_grad=True)
    (tp.linalg.matrix_exp(x) * tp.tensor(weights, device=device)).sum().backward()
    t = torch.tensor(A, requires_grad=True)
    (torch.linalg.matrix_exp(t) * torch.tensor(weights)).sum().backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), t.grad.numpy(), rtol=1e-10, atol=1e-10)


def test_matrix_exp_edges_and_errors():
    """Empty matrices, and PyTorch's errors for non-square, vector and integer inputs."""
    assert tp.linalg.matrix_exp(tp.ones(0, 0)).shape == (0, 0)
    assert tp.matrix_exp(tp.zeros(2, 2)).tolist() == [[1.0, 0.0], [0.0, 1.0]]
    with pytest.raises(RuntimeError, match="A must be batches of square matrices, but they are 2 by 3 matrices"):
        tp.linalg.matrix_exp(tp.ones(2, 3))
    with pytest.raises(RuntimeError, match="must have at least 2 dimensions"):
        tp.linalg.matrix_exp(tp.ones(3))
    with pytest.raises(RuntimeError, match="Expected a floating point or complex tensor as input. Got Long"):
        tp.linalg.matrix_exp(tp.ones(3, 3, dtype=tp.int64))
