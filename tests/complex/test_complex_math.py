"""The elementwise complex functions (sqrt, pow, trigonometric, hyperbolic, logarithms, sigmoid,
...) on every device: values against NumPy's complex128 results (ordinary values, values on and
beside the branch cuts, signed zeros), special values (0, inf, nan) against PyTorch 2.13, and
gradients against central differences and PyTorch."""
import math
import warnings

import numpy as np
import pytest

import tensorplug as tp
from complex_gradients import numeric_gradient

DTYPES = [(tp.complex64, 2e-5), (tp.complex128, 1e-11)]
INF, NAN = math.inf, math.nan


def _sigmoid(a):
    return 1 / (1 + np.exp(-a))


# name -> NumPy function (complex128)
FUNCTIONS = {
    "sqrt": np.sqrt, "rsqrt": lambda a: 1 / np.sqrt(a), "reciprocal": lambda a: 1 / a, "square": np.square,
    "exp": np.exp, "exp2": np.exp2, "expm1": np.expm1, "log": np.log, "log2": np.log2, "log10": np.log10,
    "log1p": np.log1p, "sin": np.sin, "cos": np.cos, "tan": np.tan, "asin": np.arcsin, "acos": np.arccos,
    "atan": np.arctan, "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh, "sigmoid": _sigmoid,
}


def _ordinary(seed=1):
    rng = np.random.default_rng(seed)
    values = rng.standard_normal(24) * 2 + 1j * rng.standard_normal(24) * 2
    small = (rng.standard_normal(6) + 1j * rng.standard_normal(6)) * 1e-3  # log1p, expm1, atan near 0
    return np.concatenate([values, small])


def _on_cuts():
    """Points on and beside the real and imaginary axes, where every cut of these functions lies,
    with both signs of zero."""
    points = []
    for t in (-4.0, -1.5, -0.5, 0.5, 1.5, 4.0):
        for s in (0.0, -0.0, 1e-9, -1e-9):
            points += [complex(t, s), complex(s, t)]
    return np.array(points)


def _close(got, expected, rtol):
    """Part by part, relative to the modulus (a part near 0 of a large value is compared to the
    value's size); NaN matches NaN and an infinity itself."""
    got, expected = np.asarray(got, np.complex128), np.asarray(expected, np.complex128)
    with np.errstate(all="ignore"):  # inf - inf where both are infinite: compared by `same`
        scale = np.maximum(np.abs(expected), 1e-30)
        for g, e in ((got.real, expected.real), (got.imag, expected.imag)):
            same = (g == e) | (np.isnan(g) & np.isnan(e))
            close = np.abs(g - e) <= rtol * scale
            bad = ~(same | close)
            assert not bad.any(), f"got {got[bad]} expected {expected[bad]} (where {np.nonzero(bad)[0]})"


@pytest.mark.parametrize("dtype,rtol", DTYPES, ids=["complex64", "complex128"])
@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_values(device, name, dtype, rtol):
    """Ordinary values and values on and beside the cuts agree with NumPy's complex128 results
    (of the input rounded to the dtype)."""
    z = np.concatenate([_ordinary(), _on_cuts()])
    t = tp.tensor(z, dtype=dtype, device=device)
    result = getattr(tp, name)(t)
    assert result.dtype is dtype
    exact = t.cpu().numpy().astype(np.complex128)
    with np.errstate(all="ignore"):
        _close(result.cpu().numpy(), FUNCTIONS[name](exact), rtol * (20 if name == "tan" else 1))


@pytest.mark.parametrize("name", ["sqrt", "log", "asin", "acos", "atan", "log1p"])
def test_signed_zero_picks_the_side_of_the_cut(device, name):
    """On a cut, the sign of the zero part decides which side's value comes out, as in NumPy."""
    z = np.array([complex(-4.0, 0.0), complex(-4.0, -0.0), complex(4.0, 0.0), complex(4.0, -0.0),
                  complex(0.0, 4.0), complex(-0.0, 4.0), complex(0.0, -4.0), complex(-0.0, -4.0)])
    got = getattr(tp, name)(tp.tensor(z, dtype=tp.complex128, device=device)).cpu().numpy()
    with np.errstate(all="ignore"):
        expected = FUNCTIONS[name](z)
    _close(got, expected, 1e-12)
    # The sign of a zero result part, too (sqrt(-4 - 0i) = 0 - 2i; atan(-4 + 0i) = -1.33 + 0i).
    assert (np.signbit(got.imag) == np.signbit(expected.imag)).all()


SPECIAL = np.array([0j, complex(-0.0, 0.0), 1 + 0j, -1 + 0j, 1j, -1j, complex(INF, 0), complex(-INF, 0),
                    complex(INF, 1), complex(-INF, 1), complex(1, INF), complex(1, -INF), complex(1e300, 1e300),
                    complex(-1e300, 1e-300), complex(1e30, 1), complex(-1e30, 1), complex(30, 1), complex(-30, 1),
                    complex(1, 30), complex(800, 0), complex(1e-300, 1e-300)])
# Where tensorplug's answer is the mathematically right limit (C99's) and PyTorch's is NaN.
BETTER_THAN_TORCH = {"sigmoid": {complex(-INF, 1), complex(-1e30, 1), complex(-1e300, 1e-300)}, "rsqrt": {complex(1, INF), complex(1, -INF)},
                     "expm1": {complex(INF, 0), complex(800, 0)}}


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_special_values_match_pytorch(name):
    """0, infinities, huge and tiny values give PyTorch's results (infinities and NaN in the same
    places), except where PyTorch's is NaN and the limit exists (BETTER_THAN_TORCH)."""
    torch = pytest.importorskip("torch", reason="PyTorch 2.13 is a reference here (pip install torch==2.13.0)")
    z = np.array([v for v in SPECIAL if v not in BETTER_THAN_TORCH.get(name, ())])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = getattr(tp, name)(tp.tensor(z, dtype=tp.complex128)).numpy()
        expected = getattr(torch, name)(torch.tensor(z, dtype=torch.complex128)).numpy()
    _close(got, expected, 1e-12)


def test_limits_pytorch_gets_wrong():
    """The C99 limits where PyTorch 2.13 gives NaN: sigmoid(-inf + i) = 0, 1/sqrt(1 + inf i) = 0,
    expm1(inf + 0i) = inf + 0i."""
    assert tp.sigmoid(tp.tensor([complex(-INF, 1)])).tolist() == [0j]
    assert tp.rsqrt(tp.tensor([complex(1, INF)])).abs().tolist() == [0.0]
    assert tp.expm1(tp.tensor([complex(INF, 0)], dtype=tp.complex128)).tolist() == [complex(INF, 0)]


@pytest.mark.parametrize("dtype,rtol", DTYPES, ids=["complex64", "complex128"])
def test_pow(device, dtype, rtol):
    """Tensor ** number, number ** tensor and tensor ** tensor, with complex and real exponents."""
    z = _ordinary(2)[:12]
    w = _ordinary(3)[:12]
    t = tp.tensor(z, dtype=dtype, device=device)
    u = tp.tensor(w, dtype=dtype, device=device)
    real = tp.tensor(w.real, dtype=dtype.to_real(), device=device)
    z, w = t.cpu().numpy().astype(np.complex128), u.cpu().numpy().astype(np.complex128)
    wr = real.cpu().numpy().astype(np.float64)
    for exponent in (2, 3, -2, 0, 0.5, 1.7, 1 + 2j, -0.5j):
        _close((t ** exponent).cpu().numpy(), z ** exponent, rtol * 10)
    _close((2 ** t).cpu().numpy(), 2.0 ** z, rtol * 10)
    _close(((-2 + 1j) ** t).cpu().numpy(), (-2 + 1j) ** z, rtol * 10)
    _close((t ** u).cpu().numpy(), z ** w, rtol * 10)
    _close(tp.pow(t, real).cpu().numpy(), z ** wr, rtol * 10)
    _close(tp.pow(real, t).cpu().numpy(), wr.astype(np.complex128) ** z, rtol * 10)
    assert (t ** 2).dtype is dtype and (real ** (1 + 1j)).dtype is dtype
    s = t.clone()
    s.pow_(2)
    _close(s.cpu().numpy(), z ** 2, rtol * 10)


def test_pow_at_zero(device):
    """0 ** b: 0 for Re(b) > 0 (also with a tensor exponent, where exp(b log 0) would be NaN),
    inf + nan i for Re(b) < 0, and 1 for b = 0 (NumPy's answer and PyTorch's for a number)."""
    zero = tp.zeros(3, dtype=tp.complex128, device=device)
    assert (zero ** 2).tolist() == [0j] * 3
    assert (zero ** 0).tolist() == [1 + 0j] * 3
    assert (zero ** 1.5).tolist() == [0j] * 3
    assert (zero ** tp.tensor([2.0, 0.5 + 1j, 0.0], dtype=tp.complex128, device=device)).tolist() == [0j, 0j, 1 + 0j]
    got = (zero ** tp.tensor([-1.0, -1.0, -1.0], dtype=tp.complex128, device=device)).cpu().numpy()
    assert np.isinf(got.real).all() and np.isnan(got.imag).all()
    assert (0 ** tp.tensor([2 + 1j], device=device)).tolist() == [0j]


def test_pow_at_zero_as_pytorch_except_zero_to_the_zero():
    """Issue 13: every form of a complex 0 ** b (tensor ** tensor, tensor ** number, number **
    tensor) gives PyTorch 2.13's value, up to the sign of a zero part, except 0 ** 0 with a tensor
    exponent, which PyTorch gives as NaN and tensorplug as 1 (docs/deviations.md)."""
    torch = pytest.importorskip("torch", reason="PyTorch 2.13 is a reference here (pip install torch==2.13.0)")
    exponents = [1j, -1 + 0j, -1j, 1 + 1j, 0.5 + 0j, 2 + 0j, -0.5 + 2j]
    forms = {
        "tensor ** tensor": lambda L: L.zeros(len(exponents), dtype=L.complex128) ** L.tensor(exponents, dtype=L.complex128),
        "number ** tensor": lambda L: 0 ** L.tensor(exponents, dtype=L.complex128),
        "tensor ** number": lambda L: L.stack([L.zeros(1, dtype=L.complex128) ** e for e in exponents]).reshape(-1),
        "tensor ** 0": lambda L: L.zeros(2, dtype=L.complex64) ** 0,
        "tensor ** 0j": lambda L: L.zeros(2, dtype=L.complex64) ** 0j,
    }
    for name, form in forms.items():
        got, want = form(tp).cpu().numpy(), form(torch).numpy()
        np.testing.assert_array_equal(got, want + 0.0, err_msg=name)  # (+ 0.0: -0 and 0 compare equal anyway)
    zero_exponent = tp.zeros(1, dtype=tp.complex128) ** tp.zeros(1, dtype=tp.complex128)
    assert zero_exponent.tolist() == [np.power(np.complex128(0), np.complex128(0))] == [1 + 0j]


def test_classification(device):
    """isnan, isinf, isfinite look at both parts, as NumPy."""
    z = np.array([1 + 1j, complex(NAN, 0), complex(0, NAN), complex(INF, 0), complex(1, -INF), complex(NAN, INF)])
    t = tp.tensor(z, dtype=tp.complex64, device=device)
    assert t.isnan().tolist() == np.isnan(z).tolist()
    assert t.isinf().tolist() == np.isinf(z).tolist()
    assert t.isfinite().tolist() == np.isfinite(z).tolist()


def test_inplace_and_out(device):
    """The in-place and out= forms of the new functions write complex results."""
    z = _ordinary(4)[:5]
    t = tp.tensor(z, dtype=tp.complex128, device=device)
    t.sqrt_()
    _close(t.cpu().numpy(), np.sqrt(z), 1e-12)
    out = tp.empty(5, dtype=tp.complex128, device=device)
    tp.tanh(tp.tensor(z, dtype=tp.complex128, device=device), out=out)
    _close(out.cpu().numpy(), np.tanh(z), 1e-12)


def test_refused_ops_name_themselves():
    """sign stays refused for complex input (PyTorch: use sgn), before any kernel runs."""
    with pytest.raises(TypeError, match="sign.*complex64"):
        tp.sign(tp.tensor([1 + 1j]))


# --- gradients ------------------------------------------------------------------------------


# name -> (tensorplug/torch expression of a real loss, the NumPy expression)
GRADIENT_CASES = {name: (lambda L, z, n=name: (getattr(L, n)(z) * (0.7 - 0.4j)).real.sum(),
                         lambda z, f=f: (f(z) * (0.7 - 0.4j)).real.sum()) for name, f in FUNCTIONS.items()}
GRADIENT_CASES.update({
    "pow_number": (lambda L, z: (z ** 3).imag.sum(), lambda z: (z ** 3).imag.sum()),
    "pow_half": (lambda L, z: (z ** 0.5 + z ** 1.3).real.sum(), lambda z: (z ** 0.5 + z ** 1.3).real.sum()),
    "pow_complex_number": (lambda L, z: (z ** (1 - 1j)).real.sum(), lambda z: (z ** (1 - 1j)).real.sum()),
    "rpow": (lambda L, z: ((2 + 1j) ** z).imag.sum(), lambda z: ((2 + 1j) ** z).imag.sum()),
    "pow_tensors": (lambda L, z: (z ** z.flip(0)).real.sum(), lambda z: (z ** z[::-1]).real.sum()),
})


@pytest.mark.parametrize("name", sorted(GRADIENT_CASES))
def test_gradient_matches_finite_differences(device, name):
    """The gradient (dL/dx + i dL/dy) equals NumPy central differences of the same loss."""
    expression, reference = GRADIENT_CASES[name]
    z = _ordinary(5)[:6] * 0.6
    t = tp.tensor(z, dtype=tp.complex128, device=device, requires_grad=True)
    expression(tp, t).backward()
    assert t.grad.dtype is tp.complex128
    np.testing.assert_allclose(t.grad.cpu().numpy(), numeric_gradient(reference, z), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name", sorted(GRADIENT_CASES))
def test_gradient_matches_pytorch(name):
    """The same gradient as PyTorch 2.13's."""
    torch = pytest.importorskip("torch", reason="PyTorch 2.13 is a reference here (pip install torch==2.13.0)")
    expression, _ = GRADIENT_CASES[name]
    z = _ordinary(6)[:6] * 0.6
    ours = tp.tensor(z, dtype=tp.complex128, requires_grad=True)
    theirs = torch.tensor(z, dtype=torch.complex128, requires_grad=True)
    expression(tp, ours).backward()
    expression(torch, theirs).backward()
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.resolve_conj().numpy(), rtol=1e-9, atol=1e-12)


def test_gradient_of_pow_at_zero_base():
    """d(z^2)/dz at 0 is 0 (PyTorch's), not the NaN of exp(2 log z)."""
    t = tp.zeros(2, dtype=tp.complex128, requires_grad=True)
    (t ** 2).real.sum().backward()
    assert t.grad.tolist() == [0j, 0j]
    u = tp.zeros(2, dtype=tp.complex128, requires_grad=True)
    (u ** tp.tensor([2.0, 3.0], dtype=tp.complex128)).real.sum().backward()
    assert u.grad.tolist() == [0j, 0j]


# Found by tools/fuzz_native.py: sqrt of a complex64 with subnormal parts was 0 (halving the
# parts rounded them away), and with parts near the largest float inf (|z| overflowed). NumPy's
# sqrt in complex128, rounded to the dtype, is the reference.
@pytest.mark.parametrize("np_dtype,rel", [(np.complex64, 2e-7), (np.complex128, 4e-16)])
def test_sqrt_of_tiny_and_huge_complex_numbers(np_dtype, rel):
    info = np.finfo(np.float32 if np_dtype == np.complex64 else np.float64)
    tiny, big = float(info.smallest_subnormal), float(info.max)
    values = [complex(tiny, 0), complex(0, tiny), complex(-tiny, 0), complex(1e-40, 1e-40), complex(-1e-30, 1e-39),
              complex(big * 0.9, big * 0.9), complex(-big * 0.9, 1.0), complex(1.0, -big * 0.9), complex(-4, -0.0)]
    z = np.array(values, dtype=np_dtype)
    got = np.asarray(tp.sqrt(tp.tensor(z)).tolist(), dtype=np.complex128)
    want = np.sqrt(z.astype(np.complex128)).astype(np_dtype).astype(np.complex128)
    np.testing.assert_allclose(got.real, want.real, rtol=rel, atol=0)
    np.testing.assert_allclose(got.imag, want.imag, rtol=rel, atol=0)
    assert np.signbit(got.imag).tolist() == np.signbit(want.imag).tolist()
