"""nn.Embedding(sparse=True) and F.embedding(..., sparse=True) (issue 13): the weight's gradient is
a sparse COO tensor as PyTorch gives it (one entry per looked-up position, padding_idx left out,
uncoalesced; accumulating joins the entries), its dense form is the ordinary gradient (NumPy), and
its structure matches torch's."""
import numpy as np
import pytest

import tensorplug as tp
import tensorplug.nn.functional as F

INDEX = [[1, 2, 4], [4, 7, 1]]


def _devices():
    status = {s.device_type: s for s in tp.backends.status()}
    params = []
    for name in ("cpu", "opencl", "npdev"):
        state = status.get(name)
        ok = state is not None and state.state in ("ready", "loaded")
        params.append(name if ok else pytest.param(name, marks=pytest.mark.skip(reason=f"{name} unavailable here")))
    return params


def _dense_gradient(index, rows, cols, weights, padding_idx=None):
    g = np.zeros((rows, cols))
    for k, row in enumerate(np.asarray(index).reshape(-1)):
        if row != padding_idx:
            g[row] += weights[k]
    return g


@pytest.mark.parametrize("device", _devices())
def test_sparse_gradient_entries_and_dense_form(device):
    """One entry per looked-up position except padding_idx; to_dense() is the dense gradient."""
    emb = tp.nn.Embedding(10, 3, sparse=True, padding_idx=2).to(device)
    out = emb(tp.tensor(INDEX, device=device))
    weights = np.arange(18.0).reshape(6, 3)
    (out * tp.tensor(weights, dtype=tp.float32, device=device).reshape(2, 3, 3)).sum().backward()
    g = emb.weight.grad
    assert g.is_sparse and g.layout is tp.sparse_coo and not g.is_coalesced()
    assert g.shape == (10, 3) and g.sparse_dim() == 1 and g.dense_dim() == 1
    assert g._indices().cpu().tolist() == [[1, 4, 4, 7, 1]] and g._nnz() == 5
    np.testing.assert_allclose(g.to_dense().cpu().numpy(), _dense_gradient(INDEX, 10, 3, weights, padding_idx=2))
    coalesced = g.coalesce()
    assert coalesced.indices().cpu().tolist() == [[1, 4, 7]]
    assert emb.weight.layout is tp.strided


@pytest.mark.parametrize("device", _devices())
def test_gradients_accumulate_and_mix(device):
    """A second backward joins the entries; a dense use of the same weight makes the sum dense;
    autograd.grad returns the sparse gradient; a weight computed from a leaf gets a dense one."""
    emb = tp.nn.Embedding(10, 3, sparse=True).to(device)
    emb(tp.tensor(INDEX, device=device)).sum().backward()
    emb(tp.tensor([3], device=device)).sum().backward()
    assert emb.weight.grad._nnz() == 7
    np.testing.assert_allclose(emb.weight.grad.to_dense().sum(1).cpu().numpy(), [0, 6, 3, 3, 6, 0, 0, 3, 0, 0])

    w = tp.randn(10, 3, device=device, requires_grad=True)
    (F.embedding(tp.tensor(INDEX, device=device), w, sparse=True).sum() + (w * 2).sum()).backward()
    assert isinstance(w.grad, tp.Tensor)
    np.testing.assert_allclose(w.grad.sum(1).cpu().numpy(), [6, 12, 9, 6, 12, 6, 6, 9, 6, 6])

    w = tp.randn(10, 3, device=device, requires_grad=True)
    (g,) = tp.autograd.grad(F.embedding(tp.tensor(INDEX, device=device), w, sparse=True).sum(), w)
    assert g.is_sparse and g._nnz() == 6

    leaf = tp.randn(10, 3, device=device, requires_grad=True)
    F.embedding(tp.tensor([1, 1], device=device), leaf * 1, sparse=True).sum().backward()
    assert isinstance(leaf.grad, tp.Tensor) and leaf.grad.sum().item() == 6.0


def test_zero_grad_without_none_empties_the_sparse_gradient():
    """zero_grad(set_to_none=False) leaves a sparse gradient with no entries, as PyTorch."""
    emb = tp.nn.Embedding(5, 2, sparse=True)
    opt = tp.optim.SGD(emb.parameters(), lr=0.1)
    emb(tp.tensor([1, 3])).sum().backward()
    opt.zero_grad(set_to_none=False)
    assert emb.weight.grad.is_sparse and emb.weight.grad._nnz() == 0 and emb.weight.grad.shape == (5, 2)
    emb(tp.tensor([4])).sum().backward()
    assert emb.weight.grad._indices().tolist() == [[4]]


def test_structure_matches_pytorch():
    """Indices, values, shape and coalescing as torch's sparse gradient, with max_norm too."""
    torch = pytest.importorskip("torch", reason="PyTorch is the reference for the gradient's structure")
    grads = []
    for L in (torch, tp):
        L.manual_seed(0)
        emb = L.nn.Embedding(10, 3, sparse=True, padding_idx=4, max_norm=1.0)
        with L.no_grad():
            emb.weight.copy_(L.tensor(np.random.default_rng(1).standard_normal((10, 3)), dtype=L.float32))
        out = emb(L.tensor(INDEX))
        (out * L.arange(18.0).reshape(2, 3, 3)).sum().backward()
        g = emb.weight.grad
        grads.append((g._indices().tolist(), g._values().detach().numpy(), tuple(g.shape), g.is_coalesced(),
                      emb.weight.detach().numpy()))
    (ti, tv, ts, tc, tw), (i, v, s, c, w) = grads
    assert (i, s, c) == (ti, ts, tc)
    np.testing.assert_allclose(v, tv)
    np.testing.assert_allclose(w, tw, rtol=1e-6)  # max_norm renormalized the same rows
