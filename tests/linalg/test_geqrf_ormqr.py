"""geqrf, orgqr and ormqr (issue 13): geqrf's compact QR gives back A (its reflectors' product
times its R) and NumPy's Q; ormqr applies the full Q, or Q^H, from either side, against NumPy's
complete QR in float64 on every device; PyTorch 2.13 for the values, the gradient error and the
argument errors."""
import numpy as np
import pytest

import tensorplug as tp

R = np.random.default_rng(12)


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 4)])
def test_geqrf_reconstructs_the_matrix(device, shape):
    A = R.standard_normal(shape)
    a, tau = tp.geqrf(tp.tensor(A, device=device))
    assert a.shape == shape and tau.shape == shape[:-2] + (min(shape[-2:]),)
    m, n = shape[-2:]
    k = min(m, n)
    # Q's first k columns times R's first k rows is A.
    square = a[..., :, :k] if m >= n else a[..., :, :m]
    Q = tp.linalg.householder_product(square, tau).cpu().numpy()
    upper = np.triu(a.cpu().numpy())[..., :k, :]
    np.testing.assert_allclose(Q @ upper, A, atol=1e-12)
    np.testing.assert_allclose(np.abs(Q), np.abs(np.linalg.qr(A)[0]), atol=1e-12)


@pytest.mark.parametrize("left,transpose", [(True, False), (True, True), (False, False), (False, True)])
def test_ormqr_applies_the_full_q(device, left, transpose):
    A = R.standard_normal((5, 3)) + 1j * R.standard_normal((5, 3))
    other = R.standard_normal((5, 2) if left else (2, 5)) + 1j * R.standard_normal((5, 2) if left else (2, 5))
    a, tau = tp.geqrf(tp.tensor(A, device=device))
    Q = np.linalg.qr(A, mode="complete")[0]  # LAPACK's orgqr of the same reflectors
    op = Q.conj().T if transpose else Q
    want = op @ other if left else other @ op
    got = tp.ormqr(a, tau, tp.tensor(other, device=device), left, transpose)
    np.testing.assert_allclose(got.cpu().numpy(), want, atol=1e-12)


def test_orgqr_and_methods_match_pytorch(torch):
    A = R.standard_normal((3, 6, 4))
    ours, theirs = tp.tensor(A).geqrf(), torch.tensor(A).geqrf()
    for x, y in zip(ours, theirs):
        np.testing.assert_allclose(x.numpy(), y.numpy(), atol=1e-13)
    np.testing.assert_allclose(tp.orgqr(*ours).numpy(), torch.orgqr(*theirs).numpy(), atol=1e-13)
    C = R.standard_normal((3, 6, 2))
    np.testing.assert_allclose(ours.a.ormqr(ours.tau, tp.tensor(C), transpose=True).numpy(),
                               theirs.a.ormqr(theirs.tau, torch.tensor(C), transpose=True).numpy(), atol=1e-13)


def test_geqrf_is_not_differentiable_and_checks_its_input(torch):
    for lib in (tp, torch):
        a = lib.geqrf(lib.ones(3, 2, dtype=lib.float64, requires_grad=True)).a
        assert a.requires_grad
        with pytest.raises(RuntimeError, match="derivative for 'geqrf' is not implemented"):
            a.sum().backward()
        with pytest.raises(RuntimeError, match="input must have at least 2 dimensions"):
            lib.geqrf(lib.ones(3))
    with pytest.raises(RuntimeError, match="geqrf.*Long"):
        tp.geqrf(tp.ones(3, 3, dtype=tp.int64))


def test_ormqr_errors_name_the_shapes_before_computing(torch):
    a, tau = tp.geqrf(tp.ones(4, 3, dtype=tp.float64))
    with pytest.raises(RuntimeError, match=r"other.shape\[-2\] must be equal to input.shape\[-2\]"):
        tp.ormqr(a, tau, tp.ones(3, 2, dtype=tp.float64))
    with pytest.raises(RuntimeError, match="same dtype"):
        tp.ormqr(a, tau, tp.ones(4, 2, dtype=tp.float32))
    with pytest.raises(RuntimeError, match="batch dimensions"):
        tp.ormqr(a, tau, tp.ones(2, 4, 2, dtype=tp.float64))
    # PyTorch refuses the same calls.
    ta, ttau = torch.geqrf(torch.ones(4, 3, dtype=torch.float64))
    for other in (torch.ones(3, 2, dtype=torch.float64), torch.ones(4, 2, dtype=torch.float32)):
        with pytest.raises(RuntimeError):
            torch.ormqr(ta, ttau, other)
