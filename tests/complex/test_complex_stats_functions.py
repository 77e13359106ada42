"""var/std (and var_mean/std_mean), tp.norm, nan_to_num, linspace/logspace, vdot/inner, the
inverse hyperbolic functions (real and complex) and linalg.eig/eigvals, on every device: values
against NumPy's complex128 (and float64) results, gradients against central differences of the
NumPy expression and against PyTorch 2.13."""
import math

import numpy as np
import pytest

import tensorplug as tp
from complex_gradients import numeric_gradient

DTYPES = [(tp.complex64, 1e-5), (tp.complex128, 1e-12)]
IDS = ["complex64", "complex128"]
W = 0.3 - 0.8j


def _values(shape, seed):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def _close(ours, expected, rtol):
    got = ours.cpu().numpy()
    assert got.shape == np.shape(expected)
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=rtol)


def _torch():
    return pytest.importorskip("torch", reason="PyTorch 2.13 is a reference here (pip install torch==2.13.0)")


# --- statistics and norms -------------------------------------------------------------------
def _np_var(z, axis=None, ddof=1, keepdims=False):
    # The definition: the mean of |z - mean|^2 with the correction, computed independently of NumPy's var.
    mean = z.mean(axis=axis, keepdims=True)
    n = z.size if axis is None else np.prod([z.shape[a] for a in np.atleast_1d(axis)])
    return (np.abs(z - mean) ** 2).sum(axis=axis, keepdims=keepdims) / (n - ddof)


@pytest.mark.parametrize("dtype,rtol", DTYPES, ids=IDS)
def test_var_std(device, dtype, rtol):
    """The variance of complex values is real (the part dtype): all dims, one dim, keepdim,
    correction 0 and 2, and var_mean/std_mean's complex mean."""
    z = _values((3, 5), 1)
    t = tp.tensor(z, dtype=dtype, device=device)
    z = t.cpu().numpy().astype(np.complex128)
    v = t.var()
    assert v.dtype is dtype.to_real() and v.device.type == device
    _close(v, _np_var(z), rtol * 10)
    _close(t.var(1), _np_var(z, 1), rtol * 10)
    _close(t.var(0, keepdim=True), _np_var(z, 0, keepdims=True), rtol * 10)
    _close(tp.var(t, 1, correction=0), _np_var(z, 1, ddof=0), rtol * 10)
    _close(tp.var(t, (0, 1), correction=2), _np_var(z, (0, 1), ddof=2), rtol * 10)
    _close(t.std(1), np.sqrt(_np_var(z, 1)), rtol * 10)
    np.testing.assert_allclose(np.var(z, ddof=1), _np_var(z))  # the reference agrees with NumPy's
    var, mean = tp.var_mean(t, 0)
    _close(var, _np_var(z, 0), rtol * 10)
    _close(mean, z.mean(0), rtol * 10)
    assert mean.dtype is dtype
    std, mean = tp.std_mean(t, unbiased=False)
    _close(std, np.sqrt(_np_var(z, ddof=0)), rtol * 10)
    _close(mean, z.mean(), rtol * 10)


@pytest.mark.parametrize("dtype,rtol", DTYPES, ids=IDS)
def test_norm(device, dtype, rtol):
    """tp.norm of complex values is real: p = 2 ('fro'), 1, 3, inf, -inf, 0, over dims."""
    z = _values((3, 4), 2)
    z[1, 2] = 0
    t = tp.tensor(z, dtype=dtype, device=device)
    z = t.cpu().numpy().astype(np.complex128)
    assert tp.norm(t).dtype is dtype.to_real()
    _close(tp.norm(t), np.linalg.norm(z.ravel()), rtol * 10)
    _close(t.norm(p="fro", dim=1), np.linalg.norm(z, axis=1), rtol * 10)
    for p in (1, 3, math.inf, -math.inf, 0):
        _close(tp.norm(t, p, dim=0), np.linalg.norm(z, ord=p, axis=0), rtol * 10)
    _close(tp.norm(t, 2, dim=1, keepdim=True), np.linalg.norm(z, axis=1, keepdims=True), rtol * 10)


@pytest.mark.parametrize("dtype,rtol", DTYPES, ids=IDS)
def test_nan_to_num(device, dtype, rtol):
    """Each part is replaced on its own (PyTorch's rule): default limits are the part dtype's."""
    inf, nan = math.inf, math.nan
    z = np.array([complex(nan, inf), complex(-inf, nan), complex(1, -inf), 2 - 3j])
    t = tp.tensor(z, dtype=dtype, device=device)
    big = float(np.finfo(np.float32 if dtype is tp.complex64 else np.float64).max)
    expected = np.array([complex(0, big), complex(-big, 0), complex(1, -big), 2 - 3j])
    np.testing.assert_array_equal(tp.nan_to_num(t).cpu().numpy(), expected.astype(t.cpu().numpy().dtype))
    got = t.nan_to_num(nan=1.5, posinf=7.0, neginf=-7.0).cpu().numpy()
    np.testing.assert_array_equal(got, np.array([1.5 + 7j, -7 + 1.5j, 1 - 7j, 2 - 3j]))
    c = t.clone()
    c.nan_to_num_(0.0, 1.0, -1.0)
    np.testing.assert_array_equal(c.cpu().numpy(), np.array([1j, -1, 1 - 1j, 2 - 3j]))


# --- factories and products -----------------------------------------------------------------
def test_linspace_logspace(device):
    """Complex ends give the default complex dtype; real ends with a complex dtype are complex
    with zero imaginary parts; logspace is base ** linspace (NumPy's, which PyTorch matches)."""
    t = tp.linspace(0, 1 + 2j, 5, device=device)
    assert t.dtype is tp.complex64 and t.device.type == device
    _close(t, np.linspace(0, 1 + 2j, 5), 1e-6)
    _close(tp.linspace(-1 - 1j, 2 + 0.5j, 7, dtype=tp.complex128, device=device),
           np.linspace(-1 - 1j, 2 + 0.5j, 7), 1e-14)
    t = tp.linspace(0, 1, 3, dtype=tp.complex64, device=device)
    assert t.dtype is tp.complex64
    _close(t, np.array([0, 0.5, 1]), 0)
    _close(tp.logspace(0, 2, 3, device=device), np.array([1.0, 10.0, 100.0]), 1e-6)
    _close(tp.logspace(0, 3, 4, base=2, dtype=tp.float64, device=device), np.array([1.0, 2, 4, 8]), 1e-15)
    _close(tp.logspace(0, 1j, 4, device=device), np.logspace(0, 1j, 4), 1e-6)
    _close(tp.logspace(1 - 1j, 2j, 5, base=3.0, dtype=tp.complex128, device=device),
           np.logspace(1 - 1j, 2j, 5, base=3.0), 1e-14)
    with pytest.raises(RuntimeError, match="linspace.*complex dtype"):
        tp.linspace(0, 1j, 3, dtype=tp.float32)


def test_linspace_logspace_match_pytorch():
    torch = _torch()
    for args, kwargs in (((0, 1 + 2j, 5), {}), ((-1 - 1j, 2 + 0.5j, 7), {"dtype": "complex128"}),
                         ((0, 1, 3), {"dtype": "complex64"})):
        ours = tp.linspace(*args, **{k: getattr(tp, v) for k, v in kwargs.items()})
        theirs = torch.linspace(*args, **{k: getattr(torch, v) for k, v in kwargs.items()})
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6, atol=1e-7)
        assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    np.testing.assert_allclose(tp.logspace(0, 1j, 4).numpy(), torch.logspace(0, 1j, 4).numpy(), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(tp.logspace(0, 2, 5, base=2).numpy(), torch.logspace(0, 2, 5, base=2).numpy(), rtol=1e-6)


@pytest.mark.parametrize("dtype,rtol", DTYPES, ids=IDS)
def test_vdot_inner(device, dtype, rtol):
    """vdot conjugates its first argument, inner conjugates neither (as NumPy and PyTorch)."""
    a, b = _values(4, 3), _values(4, 4)
    A, B = tp.tensor(a, dtype=dtype, device=device), tp.tensor(b, dtype=dtype, device=device)
    a, b = A.cpu().numpy().astype(np.complex128), B.cpu().numpy().astype(np.complex128)
    _close(tp.vdot(A, B), np.vdot(a, b), rtol * 10)
    _close(A.vdot(B), np.vdot(a, b), rtol * 10)
    _close(tp.inner(A, B), np.inner(a, b), rtol * 10)
    m, n = _values((2, 3, 4), 5), _values((5, 4), 6)
    M, N = tp.tensor(m, dtype=dtype, device=device), tp.tensor(n, dtype=dtype, device=device)
    m, n = M.cpu().numpy().astype(np.complex128), N.cpu().numpy().astype(np.complex128)
    _close(tp.inner(M, N), np.inner(m, n), rtol * 10)
    _close(tp.inner(M[0, 0, 0], N), m[0, 0, 0] * n, rtol * 10)
    _close(tp.vdot(tp.tensor([1.0, 2.0], device=device), tp.tensor([3.0, 4.0], device=device)), np.float32(11), 0)
    with pytest.raises(RuntimeError, match="vdot.*same dtype"):
        tp.vdot(A, tp.ones(4, device=device))
    with pytest.raises(RuntimeError, match="inner.*last dimension"):
        tp.inner(M, N[:, :3])


# --- inverse hyperbolic functions -----------------------------------------------------------
INF, NAN = math.inf, math.nan
# Ordinary values, both sides of every cut (signed zeros), near 0 and 1, large, infinite.
SPECIAL = np.array([
    0.5 + 0.3j, -2 + 1j, 3 - 4j, 0.5 + 0j, 0.5 - 0j, -0.5 + 0j, -0.5 - 0j, 2 + 0j, 2 - 0j, -2 + 0j, -2 - 0j,
    1e-8 + 1e-9j, 1e10 + 1j, -1e10 - 1j, 3j, -3j, complex(-0.0, 3), complex(-0.0, -3), 0.5j, 0j, complex(-0.0, 0.0),
    1 + 0j, -1 + 0j, complex(INF, 1), complex(-INF, 1), complex(1, INF), complex(INF, INF), complex(-INF, -INF),
    complex(0, -INF),
])
REAL_SPECIAL = np.array([0.0, -0.0, 1e-9, 0.3, -0.7, 1.0, -1.0, 1 + 1e-12, 1.5, 3.0, 1e30, -1e30, INF, -INF, NAN])


def _same_values(got, expected, rtol):
    """Equal to ``rtol``, NaNs where expected, and the signs of zero and infinite parts equal."""
    for part in ((lambda v: v.real), (lambda v: v.imag)) if np.iscomplexobj(expected) else ((lambda v: v),):
        g, e = part(got), part(expected)
        np.testing.assert_allclose(g, e, rtol=rtol, atol=0, equal_nan=True)
        exact = (e == 0) | np.isinf(e)
        np.testing.assert_array_equal(np.signbit(g[exact]), np.signbit(e[exact]))


@pytest.mark.parametrize("name,reference", [("asinh", np.arcsinh), ("acosh", np.arccosh), ("atanh", np.arctanh)])
def test_inverse_hyperbolic_complex(device, name, reference):
    """Against NumPy's complex128 functions (C99's cuts and special values) on and beside the
    cuts and at infinities; complex64 at ordinary values."""
    t = tp.tensor(SPECIAL, dtype=tp.complex128, device=device)
    with np.errstate(all="ignore"):
        expected = reference(SPECIAL)
    _same_values(getattr(tp, name)(t).cpu().numpy(), expected, 1e-12)
    ordinary = _values(20, 9) * 2
    got = getattr(tp.tensor(ordinary, dtype=tp.complex64, device=device), name)()
    assert got.dtype is tp.complex64
    np.testing.assert_allclose(got.cpu().numpy(), reference(ordinary.astype(np.complex64)), rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("name,reference", [("asinh", np.arcsinh), ("acosh", np.arccosh), ("atanh", np.arctanh)])
def test_inverse_hyperbolic_real(device, name, reference):
    """The real functions (new in tensorplug): float64 and float32 against NumPy, integers in
    the default float dtype, the aliases arcsinh/arccosh/arctanh, out= and in place."""
    with np.errstate(all="ignore"):
        expected = reference(REAL_SPECIAL)
    _same_values(getattr(tp, name)(tp.tensor(REAL_SPECIAL, device=device)).cpu().numpy().astype(np.float64),
                 expected.astype(np.float32).astype(np.float64), 1e-6)
    _same_values(getattr(tp, name)(tp.tensor(REAL_SPECIAL, dtype=tp.float64, device=device)).cpu().numpy(), expected, 1e-14)
    ints = tp.tensor([1, 2, 3], device=device)
    got = getattr(tp, name)(ints)
    assert got.dtype is tp.float32
    with np.errstate(all="ignore"):
        np.testing.assert_allclose(got.cpu().numpy(), reference(np.array([1.0, 2, 3], np.float32)), rtol=1e-6)
    assert getattr(tp, "arc" + name[1:]) is getattr(tp, name)
    x = tp.tensor([0.25, 0.5], dtype=tp.float64, device=device)
    out = tp.empty(2, dtype=tp.float64, device=device)
    getattr(tp, name)(x + 1.0 if name == "acosh" else x, out=out)
    with np.errstate(all="ignore"):
        want = reference(np.array([0.25, 0.5]) + (1.0 if name == "acosh" else 0.0))
    np.testing.assert_allclose(out.cpu().numpy(), want, rtol=1e-14)
    y = x + 1.0 if name == "acosh" else x.clone()
    getattr(y, name + "_")()
    np.testing.assert_allclose(y.cpu().numpy(), want, rtol=1e-14)


def test_inverse_hyperbolic_refuse_non_tensors():
    with pytest.raises(TypeError, match="asinh.*Tensor"):
        tp.asinh(0.5)


# --- gradients ------------------------------------------------------------------------------


_WEIGHTS = np.arange(1.0, 13.0).reshape(3, 4) / 7


def _gauge_free_eig(L, z):
    """A loss of the eigenvalues and of |V|^2 (independent of the eigenvectors' phases)."""
    values, vectors = L.linalg.eig(z[:3, :3] if z.ndim == 2 else z)
    weights = L.tensor(_WEIGHTS[:, :3], device=z.device) if hasattr(L, "Tensor") else _WEIGHTS[:, :3]
    return (values * W).real.sum() + (vectors.abs() ** 2 * weights).sum()


def _np_gauge_free_eig(z):
    values, vectors = np.linalg.eig(z[:3, :3])
    return (values * W).real.sum() + (np.abs(vectors) ** 2 * _WEIGHTS[:, :3]).sum()


# name -> (tensorplug/torch expression of a real loss of z (3, 4), the NumPy expression)
CASES = {
    "var": (lambda L, z: z.var(1).sum() + z.var(), lambda z: _np_var(z, 1).sum() + _np_var(z)),
    "std": (lambda L, z: (z.std(0) * L.tensor([1.0, 2.0, 3.0, 4.0], dtype=L.float64, device=z.device)).sum(),
            lambda z: (np.sqrt(_np_var(z, 0)) * np.array([1.0, 2, 3, 4])).sum()),
    "var_mean": (lambda L, z: (L.var_mean(z, 1)[0] + (L.var_mean(z, 1)[1] * W).real).sum(),
                 lambda z: (_np_var(z, 1) + (z.mean(1) * W).real).sum()),
    "norm2": (lambda L, z: L.norm(z), lambda z: np.sqrt((np.abs(z) ** 2).sum())),
    "norm3": (lambda L, z: L.norm(z, 3, dim=1).sum(), lambda z: ((np.abs(z) ** 3).sum(1) ** (1 / 3)).sum()),
    "nan_to_num": (lambda L, z: (L.nan_to_num(z) * W).real.sum(), lambda z: (z * W).real.sum()),
    "vdot": (lambda L, z: (L.vdot(z[0], z[1] * 2) * W).real, lambda z: (np.vdot(z[0], z[1] * 2) * W).real),
    "inner": (lambda L, z: (L.inner(z[:2], z) * W).imag.sum(), lambda z: (np.inner(z[:2], z) * W).imag.sum()),
    "asinh": (lambda L, z: (L.asinh(z) * W).real.sum(), lambda z: (np.arcsinh(z) * W).real.sum()),
    "acosh": (lambda L, z: (L.acosh(z) * W).real.sum(), lambda z: (np.arccosh(z) * W).real.sum()),
    "atanh": (lambda L, z: (L.atanh(z) * W).imag.sum(), lambda z: (np.arctanh(z) * W).imag.sum()),
    "eig": (_gauge_free_eig, _np_gauge_free_eig),
    "eigvals": (lambda L, z: (L.linalg.eigvals(z[:3, :3]) ** 2 * W).real.sum(),
                lambda z: (np.linalg.eigvals(z[:3, :3]) ** 2 * W).real.sum()),
}
# The real versions: the same losses with a real input (var, norm, eig of real matrices, ...).
REAL_CASES = {
    "asinh": (lambda L, z: (L.asinh(z) * 1.5).sum(), lambda z: (np.arcsinh(z) * 1.5).sum()),
    "acosh": (lambda L, z: (L.acosh(z.abs() + 1.1) * 1.5).sum(), lambda z: (np.arccosh(np.abs(z) + 1.1) * 1.5).sum()),
    "atanh": (lambda L, z: L.atanh(z * 0.3).sum(), lambda z: np.arctanh(z * 0.3).sum()),
    "eig": (_gauge_free_eig, _np_gauge_free_eig),
    "eigvals": (lambda L, z: (L.linalg.eigvals(z[:3, :3]) ** 2 * W).real.sum(),
                lambda z: (np.linalg.eigvals(z[:3, :3]) ** 2 * W).real.sum()),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradient_matches_finite_differences(device, name):
    expression, reference = CASES[name]
    z = _values((3, 4), 7) * 0.8
    t = tp.tensor(z, dtype=tp.complex128, device=device, requires_grad=True)
    expression(tp, t).backward()
    assert t.grad.dtype is tp.complex128
    np.testing.assert_allclose(t.grad.cpu().numpy(), numeric_gradient(reference, z), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name", sorted(REAL_CASES))
def test_real_gradient_matches_finite_differences(device, name):
    expression, reference = REAL_CASES[name]
    z = np.random.default_rng(11).standard_normal((3, 4))
    t = tp.tensor(z, dtype=tp.float64, device=device, requires_grad=True)
    expression(tp, t).backward()
    assert t.grad.dtype is tp.float64
    np.testing.assert_allclose(t.grad.cpu().numpy(), numeric_gradient(reference, z), rtol=1e-6, atol=1e-7)


# PyTorch 2.13 refuses these gradients ("nan_to_num does not support automatic differentiation
# for outputs with complex dtype"); tensorplug's follow from the real ops (central differences above).
NOT_IN_PYTORCH = {"nan_to_num"}


@pytest.mark.parametrize("name", sorted(set(CASES) - NOT_IN_PYTORCH))
def test_gradient_matches_pytorch(name):
    torch = _torch()
    expression, _ = CASES[name]
    z = _values((3, 4), 8) * 0.8
    ours = tp.tensor(z, dtype=tp.complex128, requires_grad=True)
    theirs = torch.tensor(z, dtype=torch.complex128, requires_grad=True)
    expression(tp, ours).backward()
    expression(torch, theirs).backward()
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.resolve_conj().numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", sorted(REAL_CASES))
def test_real_gradient_matches_pytorch(name):
    torch = _torch()
    expression, _ = REAL_CASES[name]
    z = np.random.default_rng(12).standard_normal((3, 4))
    ours = tp.tensor(z, dtype=tp.float64, requires_grad=True)
    theirs = torch.tensor(z, dtype=torch.float64, requires_grad=True)
    expression(tp, ours).backward()
    expression(torch, theirs).backward()
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_var_of_equal_values_has_zero_std_gradient(device):
    """std of equal complex values: 0 with gradient 0 (PyTorch's), not NaN."""
    t = tp.tensor([1 + 1j, 1 + 1j], dtype=tp.complex128, device=device, requires_grad=True)
    t.std().backward()
    np.testing.assert_array_equal(t.grad.cpu().numpy(), [0, 0])


# --- eig ------------------------------------------------------------------------------------
def _same_set(got, expected, tol):
    """Each eigenvalue of ``got`` is one of ``expected`` and the other way round (per matrix):
    the order of LAPACK's eigenvalues is not part of the contract."""
    distance = np.abs(got[..., :, None] - expected[..., None, :])
    assert distance.min(-1).max() <= tol * (1 + np.abs(expected).max())
    assert distance.min(-2).max() <= tol * (1 + np.abs(expected).max())


@pytest.mark.parametrize("dtype,rtol", [(tp.float32, 1e-4), (tp.float64, 1e-10)] + DTYPES[:1] + [(tp.complex128, 1e-10)],
                         ids=["float32", "float64", "complex64", "complex128"])
def test_eig_values(device, dtype, rtol):
    """Complex eigenvalues and unit-norm eigenvectors, also for real input (a rotation has
    eigenvalues +-i): A V = V diag(L), the eigenvalues are NumPy's (as a set), batches."""
    a = np.random.default_rng(3).standard_normal((2, 4, 4))
    if dtype.is_complex:
        a = a + 1j * np.random.default_rng(4).standard_normal((2, 4, 4))
    A = tp.tensor(a, dtype=dtype, device=device)
    a = A.cpu().numpy().astype(np.complex128)
    L, V = tp.linalg.eig(A)
    assert L.dtype is dtype.to_complex() and V.dtype is dtype.to_complex() and L.device.type == device
    l, v = L.cpu().numpy(), V.cpu().numpy()
    np.testing.assert_allclose(a @ v, v * l[..., None, :], rtol=rtol * 10, atol=rtol * 10)
    np.testing.assert_allclose(np.linalg.norm(v, axis=-2), 1, rtol=rtol)
    expected = np.linalg.eigvals(a)
    _same_set(l, expected, rtol * 100)
    _same_set(tp.linalg.eigvals(A).cpu().numpy(), expected, rtol * 100)
    rotation = tp.linalg.eigvals(tp.tensor([[0.0, -1.0], [1.0, 0.0]], device=device))
    _same_set(rotation.cpu().numpy(), np.array([-1j, 1j]), 1e-7)
    assert tp.linalg.eig(tp.eye(2, device=device)).eigenvalues.dtype is tp.complex64


def test_eig_errors():
    with pytest.raises(RuntimeError, match="linalg.eig: A must be batches of square matrices"):
        tp.linalg.eig(tp.ones(2, 3))
    with pytest.raises(RuntimeError, match="linalg.eigvals: Expected a floating point or complex tensor"):
        tp.linalg.eigvals(tp.ones(2, 2, dtype=tp.int64))
    A = tp.tensor(_values((3, 3), 5), dtype=tp.complex128, requires_grad=True)
    # A loss that depends on the eigenvectors' phases has no gradient.
    with pytest.raises(RuntimeError, match="linalg.eig.*phase"):
        tp.linalg.eig(A).eigenvectors[0].real.sum().backward()


def test_eig_matches_pytorch():
    """The same LAPACK routine (geev) as PyTorch on the CPU: the same eigenvalues in the same
    order and the same eigenvectors (unit norm, largest component real)."""
    torch = _torch()
    a = np.random.default_rng(5).standard_normal((4, 4))
    for x in (a, a + 1j * np.random.default_rng(6).standard_normal((4, 4))):
        L, V = tp.linalg.eig(tp.tensor(x))
        L2, V2 = torch.linalg.eig(torch.tensor(x))
        np.testing.assert_allclose(L.numpy(), L2.numpy(), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(V.numpy(), V2.numpy(), rtol=1e-8, atol=1e-10)
