"""diag, trace, kron and diff: NumPy float64 references on every backend (gradients too),
PyTorch 2.13 for dtypes, gradients and errors (issue 13)."""
import numpy as np
import pytest

import tensorplug as tp
from device_params import every_device, torch_or_skip


def _grad_of(fn, array, device, weights):
    """d(sum(fn(x) * weights))/dx on ``device``, as a NumPy array."""
    x = tp.tensor(array, device=device, requires_grad=True)
    (fn(x) * tp.tensor(weights, device=device)).sum().backward()
    return x.grad.cpu().numpy()


@pytest.mark.parametrize("device", every_device())
@pytest.mark.parametrize("offset", [0, 1, 2, -1, -3])
def test_diag_matches_numpy_with_gradients(device, offset, rng):
    """A vector becomes a matrix with it on diagonal ``offset``; a matrix gives that diagonal
    (a copy); the gradient of each is the other direction."""
    v = rng.normal(size=4)
    got = tp.diag(tp.tensor(v, device=device), offset)
    np.testing.assert_array_equal(got.cpu().numpy(), np.diag(v, offset))
    weights = rng.normal(size=np.diag(v, offset).shape)
    np.testing.assert_allclose(_grad_of(lambda x: tp.diag(x, offset), v, device, weights), np.diag(weights, offset))
    m = rng.normal(size=(4, 5))
    x = tp.tensor(m, device=device)
    got = x.diag(offset)
    np.testing.assert_array_equal(got.cpu().numpy(), np.diag(m, offset))
    got.fill_(0)
    assert x.cpu().numpy().tolist() == m.tolist()  # a copy, not a view
    weights = rng.normal(size=np.diag(m, offset).shape)
    expected = np.zeros_like(m)
    rows = np.arange(len(weights)) + max(-offset, 0)
    expected[rows, rows + offset] = weights
    np.testing.assert_allclose(_grad_of(lambda x: tp.diag(x, offset), m, device, weights), expected)


@pytest.mark.parametrize("device", every_device())
def test_diag_edges(device):
    """Integer and empty vectors, and offsets past the matrix."""
    assert tp.diag(tp.tensor([1, 2], device=device), 1).tolist() == [[0, 1, 0], [0, 0, 2], [0, 0, 0]]
    assert tp.diag(tp.zeros(0, device=device), 2).shape == (2, 2)
    assert tp.diag(tp.ones(2, 2, device=device), 5).shape == (0,)
    assert tp.diag(tp.ones(2, 3, device=device), -2).shape == (0,)


@pytest.mark.parametrize("device", every_device())
def test_trace_matches_numpy_with_gradient(device, rng):
    """Square and rectangular matrices; integers sum to int64; the gradient is the identity
    pattern."""
    m = rng.normal(size=(3, 4))
    assert abs(tp.trace(tp.tensor(m, device=device)).item() - np.trace(m)) < 1e-12
    ints = tp.tensor([[1, 2], [3, 4]], dtype=tp.int32, device=device)
    assert tp.trace(ints).dtype is tp.int64 and ints.trace().item() == 5
    np.testing.assert_array_equal(_grad_of(tp.trace, m, device, np.array(2.0)), 2 * np.eye(3, 4))


@pytest.mark.parametrize("device", every_device())
@pytest.mark.parametrize("shapes", [((2, 3), (4, 5)), ((3,), (2, 2)), ((2, 1, 3), (3, 2)), ((), (3,))])
def test_kron_matches_numpy_with_gradients(device, shapes, rng):
    """Products of every rank combination equal np.kron; gradients equal the transposed
    contraction (computed here from NumPy's definition)."""
    a, b = rng.normal(size=shapes[0]), rng.normal(size=shapes[1])
    expected = np.kron(a, b)
    x, y = tp.tensor(a, device=device, requires_grad=True), tp.tensor(b, device=device, requires_grad=True)
    got = tp.kron(x, y)
    np.testing.assert_allclose(got.detach().cpu().numpy(), expected, rtol=1e-12)
    weights = rng.normal(size=expected.shape)
    (got * tp.tensor(weights, device=device)).sum().backward()
    # d/da_i sum(w * kron(a, b)) = sum over the block of a_i of w * b; likewise for b.
    eps = 1e-6
    for value, grad, other, first in ((a, x.grad, b, True), (b, y.grad, a, False)):
        numeric = np.zeros(value.size)
        for i in range(value.size):
            bumped = value.copy().reshape(-1)
            bumped[i] += eps
            pair = (bumped.reshape(value.shape), other) if first else (other, bumped.reshape(value.shape))
            numeric[i] = ((np.kron(*pair) - expected) * weights).sum() / eps
        np.testing.assert_allclose(grad.cpu().numpy().reshape(-1), numeric, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("device", every_device())
@pytest.mark.parametrize("n", [0, 1, 2, 5])
@pytest.mark.parametrize("dim", [0, -1])
def test_diff_matches_numpy_with_gradients(device, n, dim, rng):
    """n-th differences along either dim, with prepend and append, as np.diff; gradients as the
    adjoint of the difference operator."""
    a = rng.normal(size=(4, 3))
    before = rng.normal(size=(2, 3) if dim == 0 else (4, 1))
    after = rng.normal(size=(1, 3) if dim == 0 else (4, 2))
    x = tp.tensor(a, device=device)
    got = tp.diff(x, n, dim, prepend=tp.tensor(before, device=device), append=tp.tensor(after, device=device))
    expected = np.diff(a, n, axis=dim, prepend=before, append=after)
    assert got.shape == expected.shape
    np.testing.assert_allclose(got.cpu().numpy(), expected, rtol=1e-12, atol=1e-12)
    weights = rng.normal(size=np.diff(a, n, axis=dim).shape)
    grad = _grad_of(lambda t: t.diff(n, dim), a, device, weights)
    # The adjoint of one forward difference: g[i] = w[i-1] - w[i] (missing terms are 0).
    adjoint = weights
    for _ in range(min(n, a.shape[dim])):
        pad = [(0, 0), (0, 0)]
        pad[dim] = (1, 1)
        padded = np.pad(adjoint, pad)
        adjoint = -np.diff(padded, axis=dim)
    np.testing.assert_allclose(grad, adjoint if n <= a.shape[dim] else np.zeros_like(a), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("device", every_device())
def test_diff_of_bools_and_integers(device):
    """Bool differences tell where neighbours differ; integers stay integers; joining a float
    prepend promotes as cat does."""
    assert tp.diff(tp.tensor([True, False, False], device=device)).tolist() == [True, False]
    ints = tp.diff(tp.tensor([1, 3, 6], device=device), n=2)
    assert ints.dtype is tp.int64 and ints.tolist() == [1]
    assert tp.diff(tp.tensor([1, 3, 6], device=device), n=5).shape == (0,)
    assert tp.diff(tp.tensor([1, 3, 6], device=device), prepend=tp.tensor([0.5], device=device)).tolist() == [0.5, 2.0, 3.0]


def test_matrix_ops_match_torch_values_dtypes_and_gradients(rng):
    """diag, trace, kron and diff give PyTorch's values, dtypes and gradients."""
    torch = torch_or_skip()
    m = rng.normal(size=(3, 3))
    v = rng.normal(size=3)
    cases = [
        (lambda lib, x: lib.diag(x, 1), v), (lambda lib, x: lib.diag(x, -1), m), (lambda lib, x: lib.trace(x), m),
        (lambda lib, x: lib.kron(x, x[:2]), m), (lambda lib, x: lib.diff(x, 2, 0), m),
        (lambda lib, x: lib.diff(x, 1, -1, prepend=x[:, :1] * 2), m),
    ]
    for fn, array in cases:
        ours, theirs = tp.tensor(array, requires_grad=True), torch.tensor(array, requires_grad=True)
        out_a, out_b = fn(tp, ours), fn(torch, theirs)
        np.testing.assert_allclose(out_a.detach().numpy(), out_b.detach().numpy(), rtol=1e-12)
        out_a.square().sum().backward()
        out_b.square().sum().backward()
        np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-12, atol=1e-12)
    for fn in (lambda lib: lib.kron(lib.tensor([1, 2]), lib.tensor([1.5])), lambda lib: lib.diff(lib.tensor([1, 4]), prepend=lib.tensor([0.5])),
               lambda lib: lib.trace(lib.tensor([[1, 2], [3, 4]], dtype=lib.int16))):
        assert fn(tp).dtype.name == str(fn(torch).dtype).split(".")[1]


def test_matrix_op_errors():
    """PyTorch's checks and messages."""
    for call, message in [
        (lambda: tp.diag(tp.tensor(1.0)), r"Supports 1D or 2D tensors. Got 0D"),
        (lambda: tp.diag(tp.zeros(2, 2, 2)), r"Supports 1D or 2D tensors. Got 3D"),
        (lambda: tp.trace(tp.ones(2)), "expected a matrix, but got tensor with dim 1"),
        (lambda: tp.trace(tp.ones(2, 2, dtype=tp.bool)), "not implemented for 'bool'"),
        (lambda: tp.diff(tp.tensor(1.0)), "at least one-dimensional"),
        (lambda: tp.diff(tp.ones(3), n=-1), "order must be non-negative but got -1"),
        (lambda: tp.diff(tp.ones(3), prepend=tp.ones(1, 1)), "same dimension as input"),
        (lambda: tp.diff(tp.ones(1, 3), dim=0, append=tp.ones(1, 2)), r"input.size\(1\) = 3, but got tensor.size\(1\) = 2"),
    ]:
        with pytest.raises(RuntimeError, match=message):
            call()
    with pytest.raises(TypeError, match="prepend"):
        tp.diff(tp.ones(3), prepend=2)
    with pytest.raises(TypeError, match="kron"):
        tp.kron(tp.ones(2), 2)
