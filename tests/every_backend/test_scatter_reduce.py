"""Tensor.scatter_reduce / tp.scatter_reduce (issue 13): every reduction, with and without self, on every backend."""
import numpy as np
import pytest

import tensorplug as tp

try:
    import torch
except ImportError:  # CI has no torch
    torch = None

REDUCTIONS = ["sum", "prod", "mean", "amax", "amin"]


def _reference(x, dim, index, src, reduce, include_self):
    """A loop over index's elements in float64 (integer means round down, as PyTorch's)."""
    groups = {}
    for pos in np.ndindex(*index.shape):
        target = list(pos)
        target[dim] = index[pos]
        groups.setdefault(tuple(target), []).append(src[pos])
    out = x.astype(np.float64).copy()
    for target, values in groups.items():
        values = values + ([x[target]] if include_self else [])
        if reduce == "mean":
            total = np.sum(values, dtype=np.float64)
            out[target] = np.floor(total / len(values)) if x.dtype.kind == "i" else total / len(values)
        else:
            out[target] = {"sum": np.sum, "prod": np.prod, "amax": np.max, "amin": np.min}[reduce](values)
    return out


@pytest.mark.parametrize("reduce", REDUCTIONS)
@pytest.mark.parametrize("include_self", [True, False])
def test_values_against_numpy(device, reduce, include_self):
    """Float and int64 results match a NumPy loop, along dim 0 and dim 1, with an index smaller than src."""
    rng = np.random.default_rng(0)
    for dtype, np_dtype in ((tp.float32, np.float32), (tp.int64, np.int64)):
        x = rng.integers(-4, 5, (3, 4)).astype(np_dtype)
        src = rng.integers(-4, 5, (5, 4)).astype(np_dtype)
        for dim, index in ((0, rng.integers(0, 3, (4, 3))), (1, rng.integers(0, 4, (2, 4)))):
            got = tp.tensor(x, device=device).scatter_reduce(dim, tp.tensor(index, device=device), tp.tensor(src, device=device),
                                                             reduce, include_self=include_self)
            assert got.dtype is dtype
            expected = _reference(x, dim, index, src, reduce, include_self)
            np.testing.assert_allclose(got.cpu().numpy(), expected, rtol=1e-6)


@pytest.mark.skipif(torch is None, reason="PyTorch is not installed (the reference for scatter_reduce's gradients)")
@pytest.mark.parametrize("reduce", REDUCTIONS)
@pytest.mark.parametrize("include_self", [True, False])
def test_gradients_match_pytorch(device, reduce, include_self):
    """Gradients in self and src are PyTorch's, ties of amax/amin shared evenly included."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 4)).astype(np.float32)
    src = rng.standard_normal((4, 4)).astype(np.float32)
    src[1, 2] = src[0, 2]  # a tie, sent to the same place below
    index = rng.integers(0, 3, (4, 4))
    index[1, 2] = index[0, 2]
    weight = rng.standard_normal((3, 4)).astype(np.float32)
    xt, st = torch.tensor(x, requires_grad=True), torch.tensor(src, requires_grad=True)
    (xt.scatter_reduce(0, torch.tensor(index), st, reduce, include_self=include_self) * torch.tensor(weight)).sum().backward()
    a, b = tp.tensor(x, device=device, requires_grad=True), tp.tensor(src, device=device, requires_grad=True)
    out = tp.scatter_reduce(a, 0, tp.tensor(index, device=device), b, reduce=reduce, include_self=include_self)
    (out * tp.tensor(weight, device=device)).sum().backward()
    np.testing.assert_allclose(a.grad.cpu().numpy(), xt.grad.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(b.grad.cpu().numpy(), st.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_in_place_and_errors():
    """scatter_reduce_ writes into self; PyTorch's errors for a bad reduce, mixed dtypes and bad indices."""
    x = tp.tensor([1.0, 2.0, 3.0])
    assert x.scatter_reduce_(0, tp.tensor([0, 0]), tp.tensor([5.0, 7.0]), "amax") is x
    assert x.tolist() == [7.0, 2.0, 3.0]
    with pytest.raises(RuntimeError, match="reduce argument must be either sum, prod, mean, amax or amin"):
        x.scatter_reduce(0, tp.tensor([0]), tp.tensor([1.0]), "max")
    with pytest.raises(RuntimeError, match="dtype"):
        x.scatter_reduce(0, tp.tensor([0]), tp.tensor([1]), "sum")
    with pytest.raises(IndexError, match="out of bounds"):  # tensorplug's gather/scatter convention
        x.scatter_reduce(0, tp.tensor([5]), tp.tensor([1.0]), "sum")
    assert x.scatter_reduce(0, tp.tensor([], dtype=tp.int64), tp.tensor([]), "sum").tolist() == [7.0, 2.0, 3.0]
