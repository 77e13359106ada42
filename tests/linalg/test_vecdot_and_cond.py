"""linalg.vecdot and linalg.cond (issue 13): NumPy float64 values and finite-difference
gradients on every device, PyTorch 2.13 for the edge values and errors."""
import math

import numpy as np
import pytest

import tensorplug as tp

R = np.random.default_rng(3)


def test_vecdot_conjugates_x_and_broadcasts(device):
    x = R.normal(size=(2, 1, 5)) + 1j * R.normal(size=(2, 1, 5))
    y = R.normal(size=(3, 5)) + 1j * R.normal(size=(3, 5))
    got = tp.linalg.vecdot(tp.tensor(x, device=device), tp.tensor(y, device=device))
    np.testing.assert_allclose(got.cpu().numpy(), (np.conj(x) * y).sum(-1), rtol=1e-12)
    a, b = R.normal(size=(4, 3)), R.normal(size=(4, 1))
    ta = tp.tensor(a, device=device, requires_grad=True)
    tb = tp.tensor(b, device=device, requires_grad=True)
    got = tp.linalg.vecdot(ta, tb, dim=0)
    np.testing.assert_allclose(got.detach().cpu().numpy(), (a * b).sum(0), rtol=1e-12)
    got.sum().backward()
    np.testing.assert_allclose(ta.grad.cpu().numpy(), np.broadcast_to(b, a.shape))
    np.testing.assert_allclose(tb.grad.cpu().numpy(), a.sum(1, keepdims=True))


@pytest.mark.parametrize("call", [
    lambda L: L.linalg.vecdot(L.ones(3), L.ones(3, dtype=L.float64)),
    lambda L: L.linalg.vecdot(L.ones(3, dtype=L.int64), L.ones(3, dtype=L.int64)),
    lambda L: L.linalg.vecdot(L.ones(2, 3), L.ones(4, 3)),
    lambda L: L.linalg.vecdot(L.ones(2, 3), L.ones(3), dim=2),
])
def test_vecdot_errors_as_pytorch(call):
    with pytest.raises((RuntimeError, IndexError)) as ours:
        call(tp)
    torch = pytest.importorskip("torch")
    with pytest.raises(ours.type):
        call(torch)


ORDERS = [None, 2, -2, "fro", "nuc", math.inf, -math.inf, 1, -1]


@pytest.mark.parametrize("p", ORDERS, ids=str)
def test_cond_matches_numpy(device, p):
    A = R.normal(size=(3, 4, 4))
    got = tp.linalg.cond(tp.tensor(A, device=device), p)
    np.testing.assert_allclose(got.cpu().numpy(), np.linalg.cond(A, p), rtol=1e-10)


@pytest.mark.parametrize("p", [None, -2, "fro", 1, math.inf], ids=str)
def test_cond_gradient_matches_finite_differences(p):
    A = R.normal(size=(3, 3)) + 3 * np.eye(3)
    t = tp.tensor(A, requires_grad=True)
    tp.linalg.cond(t, p).backward()
    step, numeric = 1e-6, np.zeros_like(A)
    for index in np.ndindex(A.shape):
        bumped = [A.copy(), A.copy()]
        bumped[0][index] += step
        bumped[1][index] -= step
        numeric[index] = (np.linalg.cond(bumped[0], p) - np.linalg.cond(bumped[1], p)) / (2 * step)
    np.testing.assert_allclose(t.grad.numpy(), numeric, rtol=1e-5, atol=1e-6)


def test_cond_of_singular_complex_rectangular_and_empty():
    singular = tp.tensor([[[1.0, 0.0], [0.0, 0.0]], [[2.0, 1.0], [1.0, 1.0]]])
    for p in ("fro", 1, math.inf, None):
        got = tp.linalg.cond(singular, p).tolist()
        assert got[0] == math.inf and math.isfinite(got[1])
    complex_eye = tp.linalg.cond(tp.eye(2, dtype=tp.complex64), 1)
    assert complex_eye.dtype == tp.float32 and complex_eye.item() == 1.0
    wide = R.normal(size=(2, 3))
    np.testing.assert_allclose(tp.linalg.cond(tp.tensor(wide)).item(), np.linalg.cond(wide), rtol=1e-10)
    assert tp.linalg.cond(tp.zeros(0, 0)).item() == 0.0 and tp.linalg.cond(tp.zeros(0, 0), 1).item() == 0.0


@pytest.mark.parametrize("call,match", [
    (lambda L: L.linalg.cond(L.ones(2, 3), 1), "square"),
    (lambda L: L.linalg.cond(L.ones(2, 2), 3), "invalid norm type"),
    (lambda L: L.linalg.cond(L.ones(3)), "at least 2 dimensions"),
])
def test_cond_errors_as_pytorch(call, match):
    with pytest.raises(RuntimeError, match=match):
        call(tp)
    torch = pytest.importorskip("torch")
    with pytest.raises(RuntimeError, match=match):
        call(torch)
