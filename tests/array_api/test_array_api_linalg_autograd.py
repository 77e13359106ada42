"""The linalg extension's decompositions and solvers run through tp.linalg: on each device they
leave their results on the input's device, and their values and gradients match torch.linalg's
in float64 (losses that do not depend on the signs of singular vectors and eigenvectors)."""
import numpy as np
import pytest

import tensorplug as tp
from torch_reference import compare, torch_or_skip

R = np.random.default_rng(2024)


def _matrix(*shape):
    return R.standard_normal(shape)


def _square(*batch, n=3):
    """Well-conditioned square matrices (distinct singular values and eigenvalues)."""
    return R.standard_normal(batch + (n, n)) + 3 * np.eye(n)


def _spd(lib, a):
    """Symmetric positive definite, built inside the expression so the gradient reaches ``a``."""
    return a @ a.mT + 3 * lib.eye(a.shape[-1], dtype=a.dtype, device=a.device)


def _sym(a):
    return (a + a.mT) / 2


# name -> (the array API expression, PyTorch's, the inputs). Each expression returns a tensor or a
# tuple whose first entry is differentiated.
CASES = {
    "det": (lambda xp, a: xp.linalg.det(a), lambda t, a: t.linalg.det(a), [_square(2)]),
    "inv": (lambda xp, a: xp.linalg.inv(a), lambda t, a: t.linalg.inv(a), [_square(2)]),
    "slogdet": (lambda xp, a: tuple(reversed(xp.linalg.slogdet(a))), lambda t, a: tuple(reversed(t.linalg.slogdet(a))),
                [_square(2) * np.array([1.0, -1.0])[:, None, None]]),
    "cholesky": (lambda xp, a: xp.linalg.cholesky(_spd(tp, a)), lambda t, a: t.linalg.cholesky(_spd(t, a)),
                 [_matrix(2, 3, 3)]),
    "cholesky_upper": (lambda xp, a: xp.linalg.cholesky(_spd(tp, a), upper=True),
                       lambda t, a: t.linalg.cholesky(_spd(t, a), upper=True), [_matrix(3, 3)]),
    "eigh": (lambda xp, a: _eigen_loss(*xp.linalg.eigh(_sym(a))), lambda t, a: _eigen_loss(*t.linalg.eigh(_sym(a))),
             [_matrix(2, 4, 4)]),
    "eigvalsh": (lambda xp, a: xp.linalg.eigvalsh(_sym(a)), lambda t, a: t.linalg.eigvalsh(_sym(a)), [_matrix(4, 4)]),
    "svd": (lambda xp, a: _svd_loss(*xp.linalg.svd(a, full_matrices=False)),
            lambda t, a: _svd_loss(*t.linalg.svd(a, full_matrices=False)), [_matrix(2, 5, 3)]),
    "svdvals": (lambda xp, a: xp.linalg.svdvals(a), lambda t, a: t.linalg.svdvals(a), [_matrix(3, 4)]),
    "qr": (lambda xp, a: _qr_loss(*xp.linalg.qr(a)), lambda t, a: _qr_loss(*t.linalg.qr(a)), [_matrix(2, 5, 3)]),
    "pinv": (lambda xp, a: xp.linalg.pinv(a), lambda t, a: t.linalg.pinv(a), [_matrix(4, 3)]),
    "pinv_rtol": (lambda xp, a: xp.linalg.pinv(a, rtol=1e-3), lambda t, a: t.linalg.pinv(a, rtol=1e-3), [_matrix(3, 5)]),
    "solve_vector": (lambda xp, a, b: xp.linalg.solve(a, b), lambda t, a, b: t.linalg.solve(a, b),
                     [_square(2), _matrix(3)]),
    "solve_broadcast": (lambda xp, a, b: xp.linalg.solve(a, b), lambda t, a, b: t.linalg.solve(a, b),
                        [_square(2, 1), _matrix(3, 3, 2)]),
    # x2 of x1's batch dims and M: PyTorch reads a batch of vectors, the standard (M, K) matrices
    # broadcast against x1's batch; the reference broadcasts it by hand.
    "solve_standard_shapes": (lambda xp, a, b: xp.linalg.solve(a, b),
                              lambda t, a, b: t.linalg.solve(a, b.expand(3, 3, 3)), [_square(3), _matrix(3, 3)]),
    "matrix_norm_nuc": (lambda xp, a: xp.linalg.matrix_norm(a, ord="nuc"),
                        lambda t, a: t.linalg.matrix_norm(a, ord="nuc"), [_matrix(2, 3, 4)]),
    "matrix_norm_2": (lambda xp, a: xp.linalg.matrix_norm(a, ord=2), lambda t, a: t.linalg.matrix_norm(a, ord=2),
                      [_matrix(3, 4)]),
    "matrix_norm_-2": (lambda xp, a: xp.linalg.matrix_norm(a, ord=-2), lambda t, a: t.linalg.matrix_norm(a, ord=-2),
                       [_matrix(4, 3)]),
    "matrix_power_-2": (lambda xp, a: xp.linalg.matrix_power(a, -2), lambda t, a: t.linalg.matrix_power(a, -2),
                        [_square()]),
}


def _eigen_loss(w, v):
    """Depends on the eigenvalues and on each eigenvector up to its sign."""
    return w[..., None, :] * v * v


def _svd_loss(u, s, vh):
    return ((u * u) * s[..., None, :]) @ (vh * vh)


def _qr_loss(q, r):
    # Householder QR gives the same signs in both libraries (docs/linalg.md).
    return q @ (r * r)


def _float64_on(device):
    try:
        tp.zeros(1, dtype=tp.float64, device=device)
    except TypeError as error:
        pytest.skip(str(error))


@pytest.mark.parametrize("name", list(CASES))
def test_values_and_gradients_match_torch_on_the_device(xp, device, name):
    """Values and the input gradients against torch.linalg in float64; every result stays on the
    input's device."""
    torch = torch_or_skip()
    _float64_on(device)
    ours, theirs, arrays = CASES[name]

    def both(lib, *inputs):
        if lib is torch:
            return theirs(torch, *inputs)
        result = ours(xp, *inputs)
        for r in result if isinstance(result, tuple) else (result,):
            assert r.device.type == device, f"{name}: a result on {r.device}, input on {device}"
        return result

    compare(torch, both, arrays, device=device, rtol=1e-7, atol=1e-9)


def test_results_are_the_standards_named_tuples(xp):
    """eigh, qr, slogdet and svd return the standard's field names (tp.linalg's own tuples differ
    in type name only)."""
    a = xp.asarray(_square())
    assert xp.linalg.eigh(_sym(a))._fields == ("eigenvalues", "eigenvectors")
    assert xp.linalg.qr(a)._fields == ("Q", "R")
    assert xp.linalg.slogdet(a)._fields == ("sign", "logabsdet")
    assert xp.linalg.svd(a)._fields == ("U", "S", "Vh")
    assert type(xp.linalg.svd(a)).__name__ == "SVDResult"


def test_matrix_rank_rtol_on_the_device(xp, device):
    """rtol as a number or as an array broadcast against the batch; the default integer dtype;
    against NumPy's matrix_rank (the cutoff is rtol times the largest singular value)."""
    s = np.array([[4.0, 1.0, 1e-3], [2.0, 0.5, 0.1]], dtype=np.float32)
    u, _ = np.linalg.qr(R.standard_normal((2, 3, 3)))
    v, _ = np.linalg.qr(R.standard_normal((2, 3, 3)))
    a = ((u * s[:, None, :]) @ v).astype(np.float32)
    x = xp.asarray(a, device=device)
    for rtol in (None, 0.01, 0.2):
        expected = np.linalg.matrix_rank(a, rtol=rtol)
        got = xp.linalg.matrix_rank(x, rtol=rtol)
        assert got.device.type == device and got.dtype == xp.int64
        np.testing.assert_array_equal(got.cpu().numpy(), expected)
    per_matrix = np.array([0.2, 0.01], dtype=np.float32)
    got = xp.linalg.matrix_rank(x, rtol=xp.asarray(per_matrix, device=device))
    np.testing.assert_array_equal(got.cpu().numpy(), np.linalg.matrix_rank(a, rtol=per_matrix))


def test_solve_refuses_shapes_the_standard_does_not_define(xp):
    """x2 must have x1's M in its first (1-D) or second-to-last axis: ValueError otherwise."""
    a = xp.asarray(_square(2))
    with pytest.raises(ValueError, match="does not fit"):
        xp.linalg.solve(a, xp.asarray(_matrix(2, 3)))  # PyTorch reads this as a batch of vectors
    with pytest.raises(ValueError, match="does not fit"):
        xp.linalg.solve(a, xp.asarray(_matrix(4)))
