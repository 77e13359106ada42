"""index_reduce / index_reduce_ on every backend (GraphSAGE-style mean and max aggregation of
messages per node), against a NumPy loop; gradients as PyTorch's (issue 13)."""
import numpy as np
import pytest

import tensorplug as tp

REDUCE = {"prod": np.prod, "mean": np.mean, "amax": np.max, "amin": np.min}


def _reference(base, dim, index, source, reduce, include_self):
    """Slice by slice: each destination reduces what is sent to it (and itself when included)."""
    out = np.moveaxis(base.copy(), dim, 0)
    src = np.moveaxis(source, dim, 0)
    for target in set(index.tolist()):
        sent = [src[i] for i in range(len(index)) if index[i] == target]
        if include_self:
            sent.append(out[target])
        out[target] = REDUCE[reduce](np.stack(sent), axis=0)
    return np.moveaxis(out, 0, dim)


@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("reduce", sorted(REDUCE))
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_values_match_the_loop(device, reduce, dim, include_self):
    """Every reduction along every dim, with and without self; untouched slices keep their values."""
    rng = np.random.default_rng(0)
    base = rng.uniform(0.5, 1.5, (4, 5, 3))
    d = dim % 3
    index = np.array([2, 0, 2, 3, 2, 0][: base.shape[d] + 1]) % base.shape[d]
    shape = list(base.shape)
    shape[d] = len(index)
    source = rng.uniform(0.5, 1.5, shape)
    t = tp.tensor(base, dtype=tp.float32, device=device)
    got = t.index_reduce(dim, tp.tensor(index, device=device), tp.tensor(source, dtype=tp.float32, device=device),
                         reduce, include_self=include_self)
    expected = _reference(base, d, index, source, reduce, include_self)
    np.testing.assert_allclose(got.cpu().numpy(), expected, rtol=1e-5, atol=1e-6)
    assert t.index_reduce_(dim, tp.tensor(index, device=device), tp.tensor(source, dtype=tp.float32, device=device),
                           reduce, include_self=include_self) is t
    np.testing.assert_allclose(t.cpu().numpy(), expected, rtol=1e-5, atol=1e-6)


def test_integer_mean_rounds_down_and_int32_index(device):
    """An integer mean rounds down as PyTorch's; an int32 index is accepted, as there."""
    base = tp.tensor([[5, 7], [1, 1]], device=device)
    got = tp.index_reduce(base, 0, tp.tensor([0, 0], dtype=tp.int32, device=device),
                          tp.tensor([[2, 2], [3, 3]], device=device), "mean")
    assert got.cpu().tolist() == [[3, 4], [1, 1]]


def test_gradients(device):
    """amax shares the gradient between tied maxima (self included), mean divides it by the count,
    prod passes the product of the others, as PyTorch's IndexReduceBackward."""
    x = tp.tensor([[5.0, 0.0]], device=device, requires_grad=True)
    s = tp.tensor([[5.0, 1.0], [5.0, 1.0]], device=device, requires_grad=True)
    x.index_reduce(0, tp.tensor([0, 0], device=device), s, "amax").sum().backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), [[1 / 3, 0.0]], rtol=1e-6)
    np.testing.assert_allclose(s.grad.cpu().numpy(), [[1 / 3, 0.5], [1 / 3, 0.5]], rtol=1e-6)
    x = tp.tensor([[1.0, 5.0], [2.0, 3.0]], device=device, requires_grad=True)
    s = tp.tensor([[5.0, 2.0], [3.0, 2.0]], device=device, requires_grad=True)
    x.index_reduce(0, tp.tensor([0, 0], device=device), s, "prod").sum().backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), [[15.0, 4.0], [1.0, 1.0]])
    np.testing.assert_allclose(s.grad.cpu().numpy(), [[3.0, 10.0], [5.0, 10.0]])
    x = tp.tensor([[1.0, 5.0], [0.0, 0.0]], device=device, requires_grad=True)
    s = tp.tensor([[5.0, 2.0], [3.0, 2.0]], device=device, requires_grad=True)
    weights = tp.tensor([[1.0, 2.0], [3.0, 4.0]], device=device)
    (x.index_reduce(0, tp.tensor([0, 0], device=device), s, "mean") * weights).sum().backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), [[1 / 3, 2 / 3], [3.0, 4.0]], rtol=1e-6)
    np.testing.assert_allclose(s.grad.cpu().numpy(), [[1 / 3, 2 / 3], [1 / 3, 2 / 3]], rtol=1e-6)


def test_errors(device):
    """PyTorch's errors: reduce "sum", a 2-D index, a count that is not source.size(dim), mismatched
    dtypes or shapes, an index out of range, a bad dim."""
    x, s, i = tp.zeros(3, 4, device=device), tp.ones(3, 4, device=device), tp.tensor([0, 2, 0], device=device)
    with pytest.raises(RuntimeError, match="Expected reduce to be one of prod, mean, amax or amin but got sum"):
        x.index_reduce(0, i, s, "sum")
    with pytest.raises(IndexError, match="Index is supposed to be a vector"):
        x.index_reduce(0, i.view(3, 1), s, "amax")
    with pytest.raises(RuntimeError, match=r"Number of indices \(3\) should be equal to source.size\(dim\): \(4\)"):
        x.index_reduce(1, i, s, "amax")
    with pytest.raises(RuntimeError, match="must have the same scalar type"):
        x.index_reduce(0, i, s.double(), "amax")
    with pytest.raises(RuntimeError, match="source tensor shape must match self tensor shape"):
        x.index_reduce(0, i, tp.ones(3, 5, device=device), "amax")
    with pytest.raises(IndexError):
        x.index_reduce(0, tp.tensor([0, 5, 0], device=device), s, "amax").cpu()
    with pytest.raises(IndexError, match="Dimension out of range"):
        x.index_reduce(2, i, s, "amax")
