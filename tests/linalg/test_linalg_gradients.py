"""Gradients of tp.linalg: finite differences in float64 (tp.autograd.gradcheck) and PyTorch
2.13's gradients for the same loss, on every device."""
import numpy as np
import pytest

import tensorplug as tp
from linalg_inputs import general, spd


def _leaf(array, device):
    return tp.tensor(array, dtype=tp.float64, device=device, requires_grad=True)


def _sym(x):
    return x + x.mT


# Each case: the input arrays and a loss written once for both libraries (``lib`` is tp or
# torch); losses over singular vectors or eigenvectors are invariant to their signs.
CASES = {
    "inv": ([general((2, 3, 3))], lambda lib, a: (lib.linalg.inv(a) ** 2).sum()),
    "det": ([general((2, 3, 3))], lambda lib, a: lib.linalg.det(a).sum()),
    "slogdet": ([general((3, 3))], lambda lib, a: lib.linalg.slogdet(a).logabsdet),
    "solve": ([general((2, 3, 3)), np.ones((2, 3, 2)) + np.arange(2)],
              lambda lib, a, b: (lib.linalg.solve(a, b) ** 2).sum()),
    "solve_broadcast_vector": ([general((2, 3, 3)), np.arange(3.0)],
                               lambda lib, a, b: (lib.linalg.solve(a, b) ** 2).sum()),
    "solve_left_false": ([general((3, 3)), np.ones((2, 3)) + np.arange(3)],
                         lambda lib, a, b: (lib.linalg.solve(a, b, left=False) ** 2).sum()),
    "solve_triangular": ([general((3, 3)), np.ones((3, 2))],
                         lambda lib, a, b: (lib.linalg.solve_triangular(a, b, upper=True) ** 2).sum()),
    "cholesky": ([spd((2, 3, 3))], lambda lib, a: (lib.linalg.cholesky(_sym(a)) ** 3).sum()),
    "cholesky_upper": ([spd((3, 3))], lambda lib, a: (lib.linalg.cholesky(_sym(a), upper=True) ** 3).sum()),
    "qr_tall": ([np.random.default_rng(1).standard_normal((5, 3))],
                lambda lib, a: (lib.linalg.qr(a).Q ** 3).sum() + (lib.linalg.qr(a).R ** 3).sum()),
    "qr_wide": ([np.random.default_rng(2).standard_normal((3, 5))],
                lambda lib, a: (lib.linalg.qr(a).Q ** 3).sum() + (lib.linalg.qr(a).R ** 3).sum()),
    "svd_values": ([np.random.default_rng(3).standard_normal((4, 3))], lambda lib, a: lib.linalg.svdvals(a).sum()),
    "svd_tall": ([np.random.default_rng(4).standard_normal((5, 3))],
                 lambda lib, a: _svd_loss(lib, a)),
    "svd_wide": ([np.random.default_rng(5).standard_normal((3, 5))],
                 lambda lib, a: _svd_loss(lib, a)),
    "eigh": ([spd((3, 3))], lambda lib, a: _eigh_loss(lib, _sym(a))),
    "eigvalsh": ([spd((2, 3, 3))], lambda lib, a: (lib.linalg.eigvalsh(_sym(a)) ** 2).sum()),
    "pinv": ([np.random.default_rng(6).standard_normal((4, 3))], lambda lib, a: (lib.linalg.pinv(a) ** 2).sum()),
    "pinv_wide": ([np.random.default_rng(7).standard_normal((2, 4))], lambda lib, a: (lib.linalg.pinv(a) ** 2).sum()),
    "pinv_hermitian": ([spd((3, 3))], lambda lib, a: (lib.linalg.pinv(_sym(a), hermitian=True) ** 2).sum()),
    "lstsq": ([np.random.default_rng(8).standard_normal((5, 3)), np.random.default_rng(9).standard_normal((5, 2))],
              lambda lib, a, b: (lib.linalg.lstsq(a, b, driver="gelsd").solution ** 2).sum()),
    "matrix_norm_nuc": ([np.random.default_rng(10).standard_normal((4, 3))],
                        lambda lib, a: lib.linalg.matrix_norm(a, "nuc")),
    "matrix_norm_2": ([np.random.default_rng(11).standard_normal((4, 3))], lambda lib, a: lib.linalg.matrix_norm(a, 2)),
}


def _svd_loss(lib, a):
    U, S, Vh = lib.linalg.svd(a, full_matrices=False)
    return (U ** 2 * S.unsqueeze(-2)).sum() + (Vh ** 4).sum() + (S ** 2).sum()


def _eigh_loss(lib, a):
    w, V = lib.linalg.eigh(a)
    return (V ** 4).sum() + (w ** 2).sum()


@pytest.mark.parametrize("case", sorted(CASES))
def test_matches_torch(device, torch, case):
    """The gradient for every input equals PyTorch's for the same loss."""
    arrays, loss = CASES[case]
    ours = [_leaf(a, device) for a in arrays]
    theirs = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in arrays]
    loss(tp, *ours).backward()
    loss(torch, *theirs).backward()
    for o, t in zip(ours, theirs):
        assert o.grad.device.type == device
        np.testing.assert_allclose(o.grad.cpu().numpy(), t.grad.numpy(), rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("case", sorted(CASES))
def test_gradcheck(case):
    """Finite differences in float64 agree with the derivative (on the CPU)."""
    arrays, loss = CASES[case]
    assert tp.autograd.gradcheck(lambda *xs: loss(tp, *xs), [_leaf(a, "cpu") for a in arrays])


@pytest.mark.parametrize("case", ["inv", "solve", "cholesky", "det"])
def test_second_derivatives(case):
    """The derivative formulas are written with tensorplug ops: gradgradcheck passes."""
    arrays, loss = CASES[case]
    assert tp.autograd.gradgradcheck(lambda *xs: loss(tp, *xs), [_leaf(a, "cpu") for a in arrays])


def test_full_matrices_svd_differentiates_reduced_factors(torch):
    """With full_matrices=True, the gradient through U and Vh uses their first k columns/rows."""
    array = np.random.default_rng(12).standard_normal((4, 2))
    ours, theirs = _leaf(array, "cpu"), torch.tensor(array, requires_grad=True)
    for lib, x in ((tp, ours), (torch, theirs)):
        U, S, Vh = lib.linalg.svd(x, full_matrices=True)
        ((U[:, :2] ** 4).sum() + S.sum()).backward()
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-7, atol=1e-9)


def test_qr_mode_r_is_not_differentiable():
    """Without Q there is no derivative: PyTorch's message."""
    x = _leaf(np.eye(3), "cpu")
    with pytest.raises(RuntimeError, match="depends on Q, which is not computed when mode='r'"):
        tp.linalg.qr(x, mode="r").R.sum().backward()


def test_det_of_singular_matrix_has_the_cofactors_as_gradient():
    """At a singular matrix, d det / dA is still the cofactor matrix (here [[4, -2], [-2, 1]] and
    a rank-2 3x3 case checked by finite differences). PyTorch 2.13 returns zeros there: a
    deliberate difference (docs/linalg.md)."""
    x = _leaf(np.array([[1.0, 2.0], [2.0, 4.0]]), "cpu")
    tp.linalg.det(x).backward()
    np.testing.assert_allclose(x.grad.numpy(), [[4.0, -2.0], [-2.0, 1.0]], atol=1e-12)
    singular = _leaf(np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [0.5, 1.0, 4.0]]), "cpu")
    assert tp.autograd.gradcheck(tp.linalg.det, [singular])
