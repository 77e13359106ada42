"""argwhere, unique_consecutive and renorm against PyTorch 2.13 (values, dtypes, gradients,
errors) on every backend (issue 13)."""
import numpy as np
import pytest

import tensorplug as tp
from device_params import torch_or_skip


@pytest.mark.parametrize("values", [[[1, 0, 3], [0, 0, 2]], [0.0, -1.5, np.nan], 3, 0, [[True, False]], np.zeros((2, 0, 3))])
def test_argwhere_matches_torch(device, values):
    """Coordinates of non-zeros as (count, ndim) int64, 0-d and empty inputs included."""
    torch = torch_or_skip()
    array = np.asarray(values)
    got = tp.argwhere(tp.tensor(array, device=device))
    expected = torch.argwhere(torch.tensor(array))
    assert got.dtype is tp.int64 and got.shape == tuple(expected.shape)
    assert got.cpu().tolist() == expected.tolist()
    assert tp.tensor(array, device=device).argwhere().cpu().tolist() == expected.tolist()


@pytest.mark.parametrize("dim", [None, 0, 1, -1])
@pytest.mark.parametrize("inverse, counts", [(False, False), (True, False), (False, True), (True, True)])
def test_unique_consecutive_matches_torch(device, dim, inverse, counts):
    """Runs collapse along the flattened input or along ``dim``, with inverse indices and counts."""
    torch = torch_or_skip()
    array = np.array([[1, 1, 2, 2], [1, 1, 2, 3], [1, 1, 2, 3], [4, 4, 4, 4]])
    got = tp.unique_consecutive(tp.tensor(array, device=device), return_inverse=inverse, return_counts=counts, dim=dim)
    expected = torch.unique_consecutive(torch.tensor(array), return_inverse=inverse, return_counts=counts, dim=dim)
    got, expected = (got, expected) if isinstance(expected, tuple) else ((got,), (expected,))
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert g.shape == tuple(e.shape) and g.cpu().tolist() == e.tolist()


@pytest.mark.parametrize("values", [5, [], [1.0, np.nan, np.nan, 2.0, 2.0]])
def test_unique_consecutive_edges_match_torch(device, values):
    """A 0-d input, an empty one, and NaN (never equal to its neighbour)."""
    torch = torch_or_skip()
    array = np.asarray(values, dtype=np.float32)
    got = tp.tensor(array, device=device).unique_consecutive(return_inverse=True, return_counts=True)
    expected = torch.unique_consecutive(torch.tensor(array), return_inverse=True, return_counts=True)
    for g, e in zip(got, expected):
        assert g.shape == tuple(e.shape)
        np.testing.assert_array_equal(g.cpu().numpy(), e.numpy())


def test_unique_consecutive_bad_dim():
    """A dim outside the input raises IndexError, as PyTorch."""
    with pytest.raises(IndexError, match="Dimension out of range"):
        tp.unique_consecutive(tp.tensor([[1, 2]]), dim=2)


@pytest.mark.parametrize("p, dim, maxnorm", [(2, 0, 3.0), (1, 1, 2.5), (float("inf"), -1, 1.0), (3.5, 2, 0.5), (2, 0, 100.0)])
def test_renorm_matches_torch_with_gradient(device, p, dim, maxnorm, rng):
    """Values and the gradient (through the clipping factor) of each slice's rescaling, float64."""
    torch = torch_or_skip()
    array = rng.normal(size=(3, 4, 2))
    weights = rng.normal(size=array.shape)
    x = tp.tensor(array, device=device, requires_grad=True)
    got = tp.renorm(x, p, dim, maxnorm)
    (got * tp.tensor(weights, device=device)).sum().backward()
    xt = torch.tensor(array, requires_grad=True)
    expected = torch.renorm(xt, p, dim, maxnorm)
    (expected * torch.tensor(weights)).sum().backward()
    np.testing.assert_allclose(got.detach().cpu().numpy(), expected.detach().numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(x.grad.cpu().numpy(), xt.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_renorm_method_inplace_and_float32(device):
    """renorm_ writes in place; float32 stays float32 and matches PyTorch."""
    torch = torch_or_skip()
    array = np.array([[1.0, 2.0], [3.0, 4.0]], dtype=np.float32)
    x = tp.tensor(array, device=device)
    assert x.renorm_(2, 0, 3).dtype is tp.float32
    expected = torch.tensor(array).renorm_(2, 0, 3)
    np.testing.assert_allclose(x.cpu().numpy(), expected.numpy(), rtol=1e-6)
    np.testing.assert_allclose(tp.tensor(array, device=device).renorm(1, 1, 2).cpu().numpy(),
                               torch.tensor(array).renorm(1, 1, 2).numpy(), rtol=1e-6)


@pytest.mark.parametrize("call, exc, match", [
    (lambda: tp.renorm(tp.tensor([[1, 2]]), 2, 0, 3), RuntimeError, "Expected a floating point or complex tensor"),
    (lambda: tp.renorm(tp.tensor([1.0, 2.0]), 2, 0, 3), RuntimeError, "at least 2 dimensions, got 1"),
    (lambda: tp.renorm(tp.tensor([[1.0, 2.0]]), 0, 0, 3), RuntimeError, "non-positive-norm not supported"),
    (lambda: tp.renorm(tp.tensor([[1.0, 2.0]]), 2, 0, -3), RuntimeError, "expected maxnorm to be >= 0 but got -3"),
    (lambda: tp.renorm(tp.tensor([[1.0, 2.0]]), 2, 3, 3), IndexError, "Dimension out of range"),
])
def test_renorm_errors(call, exc, match):
    """PyTorch's errors for integer inputs, vectors, non-positive p and maxnorm, bad dims."""
    with pytest.raises(exc, match=match):
        call()
