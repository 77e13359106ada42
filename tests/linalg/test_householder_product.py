"""linalg.householder_product (issue 13): NumPy's own QR reflectors (``qr(mode='raw')``) must give
back its Q, and an explicit product of reflectors in float64 is the reference for any tau, on
every device; PyTorch 2.13 for gradients and errors."""
import numpy as np
import pytest

import tensorplug as tp

R = np.random.default_rng(11)


def _explicit_product(A, tau):
    m, n = A.shape
    Q = np.eye(m, dtype=np.result_type(A, tau))
    for i in range(tau.shape[0]):
        v = np.zeros(m, dtype=Q.dtype)
        v[i], v[i + 1:] = 1, A[i + 1:, i]
        Q = Q @ (np.eye(m) - tau[i] * np.outer(v, v.conj()))
    return Q[:, :n]


def test_numpys_qr_reflectors_give_its_q(device):
    A = R.normal(size=(5, 3))
    h, tau = np.linalg.qr(A, mode="raw")  # reflectors stored transposed (Fortran order)
    Q = tp.linalg.householder_product(tp.tensor(np.ascontiguousarray(h.T), device=device), tp.tensor(tau, device=device))
    np.testing.assert_allclose(Q.cpu().numpy(), np.linalg.qr(A)[0], atol=1e-13)


@pytest.mark.parametrize("shape,k,complex_", [((4, 4), 2, False), ((6, 3), 3, True), ((3, 2), 0, False)])
def test_matches_an_explicit_product(device, shape, k, complex_):
    A = R.normal(size=shape) + (1j * R.normal(size=shape) if complex_ else 0)
    tau = R.normal(size=k) + (1j * R.normal(size=k) if complex_ else 0)
    Q = tp.linalg.householder_product(tp.tensor(A, device=device), tp.tensor(tau, device=device))
    np.testing.assert_allclose(Q.cpu().numpy(), _explicit_product(A, tau), atol=1e-13)


def test_batched_gradients_match_pytorch():
    torch = pytest.importorskip("torch")
    A, tau, W = R.normal(size=(2, 4, 3)), R.normal(size=(2, 3)), R.normal(size=(2, 4, 3))
    grads = []
    for lib in (tp, torch):
        a, t = lib.tensor(A, requires_grad=True), lib.tensor(tau, requires_grad=True)
        (lib.linalg.householder_product(a, t) * lib.tensor(W)).sum().backward()
        grads.append((a.grad.numpy(), t.grad.numpy()))
    for ours, theirs in zip(*grads):
        np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("call", [
    lambda L: L.linalg.householder_product(L.ones(2, 3), L.ones(1)),
    lambda L: L.linalg.householder_product(L.ones(3, 2), L.ones(3)),
    lambda L: L.linalg.householder_product(L.ones(3, 2), L.ones(2, dtype=L.float64)),
    lambda L: L.linalg.householder_product(L.ones(2, 3, 2), L.ones(3, 2)),
    lambda L: L.linalg.householder_product(L.ones(3), L.ones(1)),
])
def test_errors_as_pytorch(call):
    with pytest.raises(RuntimeError, match="householder_product") as ours:
        call(tp)
    torch = pytest.importorskip("torch")
    with pytest.raises(RuntimeError) as theirs:
        call(torch)
    assert str(ours.value).split(": ")[-1] == str(theirs.value).split(": ")[-1]
