"""tp.linalg.vector_norm, matrix_norm and norm (and tp.norm's 'nuc') against PyTorch 2.13, with
gradients, on every device."""
import math

import numpy as np
import pytest

import tensorplug as tp

VECTOR_ORDS = [2, 1, 0, 3.5, -1, math.inf, -math.inf]
MATRIX_ORDS = ["fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf]


def _pair(torch, array, device, dtype="float64"):
    return (tp.tensor(array, dtype=getattr(tp, dtype), device=device, requires_grad=True),
            torch.tensor(array, dtype=getattr(torch, dtype), requires_grad=True))


def _close(ours, theirs, rtol=1e-9):
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_allclose(ours.detach().cpu().numpy(), theirs.detach().numpy(), rtol=rtol, atol=1e-10)


@pytest.mark.parametrize("ord", VECTOR_ORDS)
@pytest.mark.parametrize("dim,keepdim", [(None, False), (1, True), ((0, 2), False), (None, True)])
def test_vector_norm(device, torch, ord, dim, keepdim):
    """Values and gradients for each order over dims, all elements and keepdim."""
    array = np.random.default_rng(0).standard_normal((3, 4, 2))
    ours, theirs = _pair(torch, array, device)
    a, b = tp.linalg.vector_norm(ours, ord, dim, keepdim), torch.linalg.vector_norm(theirs, ord, dim, keepdim)
    _close(a, b)
    if ord != 0:
        a.sum().backward()
        b.sum().backward()
        _close(ours.grad, theirs.grad, rtol=1e-7)


@pytest.mark.parametrize("ord", MATRIX_ORDS)
@pytest.mark.parametrize("dim", [(-2, -1), (2, 0)])
@pytest.mark.parametrize("keepdim", [False, True])
def test_matrix_norm(device, torch, ord, dim, keepdim):
    """Values and gradients for each order, on a batch, over chosen dims."""
    array = np.random.default_rng(1).standard_normal((2, 3, 4))
    ours, theirs = _pair(torch, array, device)
    a = tp.linalg.matrix_norm(ours, ord, dim, keepdim)
    b = torch.linalg.matrix_norm(theirs, ord, dim, keepdim)
    _close(a, b)
    a.sum().backward()
    b.sum().backward()
    _close(ours.grad, theirs.grad, rtol=1e-7)


def test_float32_and_dtype_argument(device, torch):
    """float32 input; dtype= computes in a wider dtype."""
    array = np.random.default_rng(2).standard_normal((3, 3))
    ours, theirs = _pair(torch, array, device, "float32")
    _close(tp.linalg.matrix_norm(ours, "nuc"), torch.linalg.matrix_norm(theirs, "nuc"), rtol=1e-5)
    result = tp.linalg.vector_norm(ours, dtype=tp.float64)
    assert result.dtype == tp.float64
    _close(result, torch.linalg.vector_norm(theirs, dtype=torch.float64), rtol=1e-6)


@pytest.mark.parametrize("ord,dim,shape", [(None, None, (2, 3, 4)), (2, None, (5,)), ("nuc", None, (3, 4)),
                                           (math.inf, None, (3, 4)), (1, 1, (3, 4)), (-2, (0, 1), (3, 4))])
def test_norm_chooses_vector_or_matrix(device, torch, ord, dim, shape):
    """linalg.norm picks the vector or the matrix norm as PyTorch does."""
    array = np.random.default_rng(3).standard_normal(shape)
    ours, theirs = _pair(torch, array, device)
    _close(tp.linalg.norm(ours, ord, dim), torch.linalg.norm(theirs, ord, dim))


def test_top_level_norm_nuclear(torch):
    """tp.norm(p='nuc') is the nuclear norm (it needs the SVD that tp.linalg brings)."""
    array = np.random.default_rng(4).standard_normal((3, 4))
    ours, theirs = _pair(torch, array, "cpu")
    _close(tp.norm(ours, p="nuc"), torch.norm(theirs, p="nuc"))


def test_errors():
    """PyTorch's messages for bad orders, dims, dtypes and empty inputs."""
    with pytest.raises(RuntimeError, match="linalg.vector_norm: Expected a floating point or complex tensor as input. Got Long"):
        tp.linalg.vector_norm(tp.ones(2, dtype=tp.int64))
    with pytest.raises(RuntimeError, match=r"should be convertible without narrowing to the specified dtype \(Float\)"):
        tp.linalg.vector_norm(tp.ones(2, dtype=tp.float64), dtype=tp.float32)
    with pytest.raises(RuntimeError, match="linalg.vector_norm cannot compute the inf norm on an empty tensor"):
        tp.linalg.vector_norm(tp.ones(0), math.inf)
    with pytest.raises(RuntimeError, match="linalg.matrix_norm: Order 3 not supported."):
        tp.linalg.matrix_norm(tp.ones(2, 2), 3)
    with pytest.raises(RuntimeError, match=r"linalg.matrix_norm: dims must be different. Got \(0, 0\)"):
        tp.linalg.matrix_norm(tp.ones(2, 2), dim=(0, 0))
    with pytest.raises(RuntimeError, match="linalg.matrix_norm: The input tensor A must have at least 2 dimensions."):
        tp.linalg.matrix_norm(tp.ones(2))
    with pytest.raises(RuntimeError, match="linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got 3D."):
        tp.linalg.norm(tp.ones(2, 2, 2), 2)


def test_gradient_at_zero_is_zero(device, torch):
    """The norm of a zero vector has gradient 0 (PyTorch's subgradient), not NaN."""
    for ord in (2, 3):
        ours, theirs = _pair(torch, np.zeros((2, 3)), device)
        tp.linalg.vector_norm(ours, ord, 1).sum().backward()
        torch.linalg.vector_norm(theirs, ord, 1).sum().backward()
        _close(ours.grad, theirs.grad)
