"""Sparse COO matrices (issue 13): construction, coalescing, to_dense, to_sparse and sparse @ dense
with gradients, on every backend, against NumPy float64 (and PyTorch where installed)."""
import numpy as np
import pytest

import tensorplug as tp

INDICES = [[0, 1, 1, 0, 3], [2, 0, 2, 2, 1]]
VALUES = [3.0, 4.0, 5.0, 1.0, -2.0]
SHAPE = (4, 3)


def _dense_reference():
    dense = np.zeros(SHAPE)
    for r, c, v in zip(*INDICES, VALUES):
        dense[r, c] += v
    return dense


def test_to_dense_sums_repeated_indices(device):
    s = tp.sparse_coo_tensor(tp.tensor(INDICES, device=device), tp.tensor(VALUES, device=device), SHAPE)
    assert s.is_sparse and s.shape == SHAPE and s._nnz() == 5
    np.testing.assert_allclose(s.to_dense().cpu().numpy(), _dense_reference())
    c = s.coalesce()
    assert c.is_coalesced() and c._nnz() == 4
    assert c.indices().cpu().tolist() == [[0, 1, 1, 3], [2, 0, 2, 1]]
    np.testing.assert_allclose(c.values().cpu().numpy(), [4.0, 4.0, 5.0, -2.0])
    with pytest.raises(RuntimeError, match="uncoalesced"):
        s.values()


def test_mm_and_its_gradients(device):
    rng = np.random.default_rng(0)
    dense = rng.standard_normal((3, 2))
    values = tp.tensor(VALUES, device=device, requires_grad=True)
    x = tp.tensor(dense, dtype=tp.float32, device=device, requires_grad=True)
    s = tp.sparse_coo_tensor(tp.tensor(INDICES, device=device), values, SHAPE)
    out = tp.sparse.mm(s, x)
    np.testing.assert_allclose(out.detach().cpu().numpy(), _dense_reference() @ dense, rtol=1e-5, atol=1e-6)
    weights = rng.standard_normal((4, 2))
    (out * tp.tensor(weights, dtype=tp.float32, device=device)).sum().backward()
    # d/dx of sum(W * (A x)) = A^T W; d/dv_k = (W x^T)[r_k, c_k]
    np.testing.assert_allclose(x.grad.cpu().numpy(), _dense_reference().T @ weights, rtol=1e-5, atol=1e-6)
    expected_v = [(weights @ dense.T)[r, c] for r, c in zip(*INDICES)]
    np.testing.assert_allclose(values.grad.cpu().numpy(), expected_v, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose((s @ x).detach().cpu().numpy(), out.detach().cpu().numpy())


def test_to_sparse_round_trip(device):
    dense = tp.tensor([[0.0, 2.0, 0.0], [1.0, 0.0, 0.0]], device=device)
    s = dense.to_sparse()
    assert s.indices().cpu().tolist() == [[0, 1], [1, 0]] and s.values().cpu().tolist() == [2.0, 1.0]
    np.testing.assert_array_equal(s.to_dense().cpu().numpy(), dense.cpu().numpy())
    np.testing.assert_array_equal(s.t().to_dense().cpu().numpy(), dense.cpu().numpy().T)


def test_bad_input_is_refused_before_any_kernel(device):
    with pytest.raises(RuntimeError, match="out of range"):
        tp.sparse_coo_tensor(tp.tensor([[0, 5], [0, 0]], device=device), tp.ones(2, device=device), (2, 2))
    with pytest.raises(RuntimeError, match="values have shape"):
        tp.sparse_coo_tensor(tp.tensor([[0], [0]], device=device), tp.ones(2, device=device), (2, 2))
    s = tp.sparse_coo_tensor(tp.tensor(INDICES, device=device), tp.tensor(VALUES, device=device), SHAPE)
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        tp.sparse.mm(s, tp.ones(4, 2, device=device))


def test_sparse_sum_over_dims_and_its_gradient(device):
    """sparse.sum: every dim gives a 0-d tensor, every sparse dim a dense one, a sparse dim alone a
    coalesced sparse tensor (a graph's degrees); gradients reach the values."""
    values = tp.tensor(VALUES, device=device, requires_grad=True)
    s = tp.sparse_coo_tensor(tp.tensor(INDICES, device=device), values, SHAPE)
    dense = _dense_reference()
    assert tp.sparse.sum(s).item() == pytest.approx(dense.sum())
    assert tp.sparse.sum(s, dim=(0, 1)).shape == () and tp.sparse.sum(s, dim=[1, -2]).item() == pytest.approx(11.0)
    rows = tp.sparse.sum(s, dim=1)
    assert rows.is_sparse and rows.is_coalesced() and rows.shape == (4,)
    assert rows.indices().cpu().tolist() == [[0, 1, 3]]
    np.testing.assert_allclose(rows.to_dense().detach().cpu().numpy(), dense.sum(1))
    np.testing.assert_allclose(tp.sparse.sum(s, dim=-2).to_dense().detach().cpu().numpy(), dense.sum(0))
    weights = np.array([1.0, 2.0, 3.0, 4.0])
    (rows.to_dense() * tp.tensor(weights, dtype=tp.float32, device=device)).sum().backward()
    np.testing.assert_allclose(values.grad.cpu().numpy(), weights[INDICES[0]])


def test_sparse_sum_dtypes_dense_dims_and_errors(device):
    """Integer sums of every sparse dim give int64, partial ones keep the dtype; dense dims sum
    inside the values; PyTorch's errors for a bad or repeated dim and a strided input."""
    ints = tp.sparse_coo_tensor(tp.tensor(INDICES, device=device), tp.tensor([3, 4, 5, 1, -2], dtype=tp.int32,
                                                                            device=device), SHAPE)
    assert tp.sparse.sum(ints).dtype == tp.int64 and tp.sparse.sum(ints).item() == 11
    assert tp.sparse.sum(ints, 1).dtype == tp.int32
    assert tp.sparse.sum(ints, 1, dtype=tp.float64).values().dtype == tp.float64
    assert tp.sparse.sum(ints, ()) is ints
    blocks = np.arange(10.0).reshape(5, 2)
    s3 = tp.sparse_coo_tensor(tp.tensor(INDICES, device=device), tp.tensor(blocks, dtype=tp.float32, device=device),
                              SHAPE + (2,))
    full = np.zeros(SHAPE + (2,))
    for k, (r, c) in enumerate(zip(*INDICES)):
        full[r, c] += blocks[k]
    np.testing.assert_allclose(tp.sparse.sum(s3, 2).to_dense().cpu().numpy(), full.sum(2))
    np.testing.assert_allclose(tp.sparse.sum(s3, (0, 1)).cpu().numpy(), full.sum((0, 1)))
    np.testing.assert_allclose(tp.sparse.sum(s3, (1, 2)).to_dense().cpu().numpy(), full.sum((1, 2)))
    with pytest.raises(IndexError, match=r"expected to be in range of \[-2, 1\], but got 2"):
        tp.sparse.sum(ints, 2)
    with pytest.raises(RuntimeError, match="dim 1 appears multiple times"):
        tp.sparse.sum(ints, (1, -1))
    with pytest.raises(RuntimeError, match="sparse COO"):
        tp.sparse.sum(tp.ones(2, device=device))


def test_mm_and_matmul_take_a_sparse_operand(device):
    """tp.mm/tp.matmul/@ with a sparse operand on either side (a GCN's torch.mm(adj, x)), a 1-D
    vector for matmul, out=; sparse @ sparse and a 3-D dense operand are refused."""
    s = tp.sparse_coo_tensor(tp.tensor(INDICES, device=device), tp.tensor(VALUES, device=device), SHAPE)
    dense = _dense_reference()
    x = np.arange(6.0).reshape(3, 2)
    y = np.arange(8.0).reshape(2, 4)
    tx, ty = tp.tensor(x, dtype=tp.float32, device=device), tp.tensor(y, dtype=tp.float32, device=device)
    np.testing.assert_allclose(tp.mm(s, tx).cpu().numpy(), dense @ x)
    np.testing.assert_allclose(tp.matmul(s, tx).cpu().numpy(), dense @ x)
    np.testing.assert_allclose(tp.mm(ty, s).cpu().numpy(), y @ dense)
    np.testing.assert_allclose((ty @ s).cpu().numpy(), y @ dense)
    np.testing.assert_allclose(tp.matmul(s, tx[:, 0]).cpu().numpy(), dense @ x[:, 0])
    np.testing.assert_allclose(tp.matmul(ty[0, :3].contiguous() * 0 + 1, s.t()).cpu().numpy(), np.ones(3) @ dense.T)
    out = tp.empty(4, 2, device=device)
    assert tp.mm(s, tx, out=out) is out
    np.testing.assert_allclose(out.cpu().numpy(), dense @ x)
    with pytest.raises(NotImplementedError, match="two sparse"):
        tp.mm(s, s.t())
    with pytest.raises(RuntimeError, match="2-D dense"):
        tp.matmul(s, tp.ones(2, 3, 2, device=device))


def test_addmm_transpose_scaling_and_conversions(device):
    """sparse.addmm, transpose, * and / by a number, sum(), cpu(), float()/double()."""
    s = tp.sparse_coo_tensor(tp.tensor(INDICES, device=device), tp.tensor(VALUES, device=device), SHAPE)
    dense = _dense_reference()
    x = np.arange(6.0).reshape(3, 2)
    base = np.ones((4, 2))
    result = tp.sparse.addmm(tp.tensor(base, dtype=tp.float32, device=device), s,
                             tp.tensor(x, dtype=tp.float32, device=device), beta=0.5, alpha=2)
    np.testing.assert_allclose(result.cpu().numpy(), 0.5 * base + 2 * dense @ x)
    np.testing.assert_allclose(s.transpose(0, 1).to_dense().cpu().numpy(), dense.T)
    np.testing.assert_allclose(s.transpose(-1, 0).to_dense().cpu().numpy(), dense.T)
    np.testing.assert_allclose((s / 4).to_dense().cpu().numpy(), dense / 4)
    np.testing.assert_allclose(s.mul(3).to_dense().cpu().numpy(), dense * 3)
    np.testing.assert_allclose((s * tp.tensor(2.0, device=device)).to_dense().cpu().numpy(), dense * 2)
    assert s.sum().item() == pytest.approx(dense.sum())
    np.testing.assert_allclose(s.sum(0).to_dense().cpu().numpy(), dense.sum(0))
    assert s.cpu().device.type == "cpu" and s.cpu().to_dense().tolist() == s.to_dense().cpu().tolist()
    assert s.double().dtype is tp.float64 and s.double().float().dtype is tp.float32
    with pytest.raises(IndexError, match="out of range"):
        s.transpose(0, 2)


@pytest.mark.parametrize("log", [False, True])
def test_sparse_softmax_over_stored_entries(device, log):
    """sparse.softmax/log_softmax normalise each row's (or column's) stored entries only, as a
    dense softmax with -inf where nothing is stored; gradients reach the values."""
    rng = np.random.default_rng(1)
    values_np = rng.standard_normal(5)
    values = tp.tensor(values_np, dtype=tp.float32, device=device, requires_grad=True)
    s = tp.sparse_coo_tensor(tp.tensor(INDICES, device=device), values, SHAPE)
    coalesced = {}
    for r, c, v in zip(*INDICES, values_np):
        coalesced[(r, c)] = coalesced.get((r, c), 0.0) + v
    for dim in (1, 0, -1):
        fn = tp.sparse.log_softmax if log else tp.sparse.softmax
        out = fn(s, dim)
        assert out.is_sparse and out.is_coalesced()
        dense = np.full(SHAPE, -np.inf)
        for (r, c), v in coalesced.items():
            dense[r, c] = v
        d = dim % 2
        with np.errstate(invalid="ignore", divide="ignore"):  # row 2 stores nothing: all -inf
            shifted = dense - dense.max(axis=d, keepdims=True)
            expected = np.exp(shifted) / np.exp(shifted).sum(axis=d, keepdims=True)
            if log:
                expected = np.log(expected)
        got = out.to_dense().detach().cpu().numpy()
        stored = np.isfinite(dense)
        np.testing.assert_allclose(got[stored], expected[stored], rtol=1e-5, atol=1e-6)
        assert (got[~stored] == 0).all()
    # gradient of sum(w * softmax_row): y_i (w_i - sum_j y_j w_j), then summed over repeated indices
    weights = rng.standard_normal(SHAPE)
    out = tp.sparse.softmax(s, 1)
    (out.to_dense() * tp.tensor(weights, dtype=tp.float32, device=device)).sum().backward()
    probs = np.zeros(SHAPE)
    for (r, c), v in coalesced.items():
        row = [coalesced[(r2, c2)] for (r2, c2) in coalesced if r2 == r]
        probs[r, c] = np.exp(v) / np.exp(row).sum()
    grad_dense = probs * (weights - (probs * weights).sum(1, keepdims=True))
    np.testing.assert_allclose(values.grad.cpu().numpy(), [grad_dense[r, c] for r, c in zip(*INDICES)],
                               rtol=1e-5, atol=1e-6)
    with pytest.raises(RuntimeError, match="floating-point"):
        tp.sparse.softmax(tp.sparse_coo_tensor(tp.tensor(INDICES, device=device), tp.ones(5, dtype=tp.int64,
                                                                                         device=device), SHAPE), 1)


def test_matches_pytorch_where_installed():
    torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")
    ours = tp.sparse_coo_tensor(tp.tensor(INDICES), tp.tensor(VALUES), SHAPE)
    theirs = torch.sparse_coo_tensor(torch.tensor(INDICES), torch.tensor(VALUES), SHAPE, check_invariants=True)
    assert ours.coalesce().indices().tolist() == theirs.coalesce().indices().tolist()
    x = np.arange(6.0).reshape(3, 2)
    np.testing.assert_allclose(tp.sparse.mm(ours, tp.tensor(x, dtype=tp.float32)).numpy(),
                               torch.sparse.mm(theirs, torch.tensor(x, dtype=torch.float32)).numpy(), rtol=1e-6)
