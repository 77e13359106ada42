"""The array API namespace on complex dtypes (standard 2024.12), from the specification's text:
complex64/complex128, their promotion with real floats and Python complex scalars, isdtype,
finfo, real/imag/conj/abs/sign/round, the element-wise transcendental functions (and the special
cases the standard lists for them), the reductions, the linalg and fft extensions. Values against
NumPy 2.x's complex128 results with hypothesis-drawn shapes and values."""
import cmath
import math

import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

from array_api_support import SETTINGS, assert_matches

COMPLEX = ["complex64", "complex128"]
shapes = hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)
# Relative to the result's modulus: complex64 functions are computed from float32 parts.
TOL = {"complex64": 3e-5, "complex128": 1e-11}


def complex_arrays(dtype, shape, *, min_magnitude=0.0, max_magnitude=8.0):
    """Finite complex values of bounded modulus (where NumPy's complex128 result is a fair
    reference for both widths)."""
    width = 64 if dtype == "complex64" else 128
    elements = st.complex_numbers(min_magnitude=min_magnitude, max_magnitude=max_magnitude, width=width,
                                  allow_nan=False, allow_infinity=False)
    return hnp.arrays(dtype, shape, elements=elements)


def assert_close(got, expected, dtype):
    """Same shape and dtype (NumPy's), and |got - expected| within TOL of |expected| (or of 1
    near 0, where a relative bound is meaningless)."""
    actual = got.cpu().numpy()
    expected = np.asarray(expected)
    assert actual.shape == expected.shape and actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    scale = np.maximum(np.abs(expected.astype(np.complex128)), 1e-3)
    assert np.all(np.abs(actual.astype(np.complex128) - expected) <= TOL[dtype] * scale), (actual, expected)


# --- dtypes, promotion, inspection ----------------------------------------------------------
def test_complex_dtypes_are_in_the_namespace(xp):
    import tensorplug as tp

    assert xp.complex64 is tp.complex64 and xp.complex128 is tp.complex128
    info = xp.__array_namespace_info__()
    assert info.dtypes(kind="complex floating") == {"complex64": xp.complex64, "complex128": xp.complex128}
    assert set(info.dtypes(kind="numeric")) >= {"complex64", "complex128"}
    assert info.default_dtypes()["complex floating"] is xp.complex64  # the default float's counterpart
    for dt in (xp.complex64, xp.complex128):
        assert xp.isdtype(dt, "complex floating") and xp.isdtype(dt, "numeric")
        assert not xp.isdtype(dt, "real floating") and not xp.isdtype(dt, "integral")
    assert not xp.isdtype(xp.float64, "complex floating")


@pytest.mark.parametrize("dtype,part", [("complex64", "float32"), ("complex128", "float64")])
def test_finfo_of_complex_is_its_parts(xp, dtype, part):
    """The standard: finfo of a complex dtype describes its real-valued floating parts."""
    got, want = xp.finfo(getattr(xp, dtype)), np.finfo(part)
    assert got.dtype is getattr(xp, part)
    assert (got.bits, got.eps, got.max, got.min, got.smallest_normal) == (
        want.bits, float(want.eps), float(want.max), float(want.min), float(want.smallest_normal))


# The standard's promotion table among floating dtypes (real and complex share one lattice).
PROMOTION = {
    ("float32", "complex64"): "complex64", ("float64", "complex64"): "complex128",
    ("float32", "complex128"): "complex128", ("float64", "complex128"): "complex128",
    ("complex64", "complex64"): "complex64", ("complex64", "complex128"): "complex128",
}


@pytest.mark.parametrize("pair", sorted(PROMOTION))
def test_promotion_table(xp, pair):
    a, b = (getattr(xp, n) for n in pair)
    expected = getattr(xp, PROMOTION[pair])
    assert xp.result_type(a, b) is expected and xp.result_type(b, a) is expected
    x, y = xp.ones((2,), dtype=a), xp.ones((), dtype=b)
    assert xp.add(x, y).dtype is expected and xp.multiply(y, x).dtype is expected  # 0-d arrays promote too
    assert xp.can_cast(a, b) == (expected is b)


def test_python_complex_scalars(xp):
    """A complex scalar takes a complex array's dtype, and a real floating array's precision."""
    assert xp.result_type(xp.complex64, 1j) is xp.complex64
    assert xp.result_type(xp.complex128, 1 + 2j) is xp.complex128
    assert xp.result_type(xp.float32, 1j) is xp.complex64
    assert xp.result_type(xp.float64, 1j) is xp.complex128
    assert xp.result_type(xp.complex64, 2.5) is xp.complex64 and xp.result_type(xp.complex64, 2) is xp.complex64
    z = xp.asarray([1 + 1j, 2 - 1j], dtype=xp.complex64)
    assert_matches(xp.multiply(z, 2j), np.array([1 + 1j, 2 - 1j], np.complex64) * np.complex64(2j))
    assert_matches(xp.add(xp.asarray([1.0], dtype=xp.float32), 1j), np.array([1 + 1j], np.complex64))
    assert xp.asarray([1j, 2]).dtype is xp.complex64
    assert xp.asarray(1 + 0j).dtype is xp.complex64
    assert xp.full((2,), 1j).dtype is xp.complex64


def test_astype_complex(xp):
    """Real to complex: a zero imaginary part; complex to bool: either part nonzero; complex to a
    real numeric dtype "should not be permitted" (the standard)."""
    x = xp.asarray([0.0, 1.5, -2.0], dtype=xp.float64)
    assert_matches(xp.astype(x, xp.complex64), np.array([0, 1.5, -2], np.complex64))
    z = xp.asarray([0j, 1j, 1 + 0j, 0.5 - 2j])
    assert_matches(xp.astype(z, xp.bool), np.array([False, True, True, True]))
    assert_matches(xp.astype(z, xp.complex128), z.numpy().astype(np.complex128))
    assert_matches(xp.astype(xp.asarray([True, False]), xp.complex64), np.array([1 + 0j, 0j], np.complex64))
    with pytest.raises(TypeError, match="imaginary part"):
        xp.astype(z, xp.float32)


# hypothesis warns that uint16/uint32/uint64 are absent (tensorplug has no such tensors) and leaves them out.
@pytest.mark.filterwarnings("ignore:Array module tensorplug.array_api does not have the following dtypes")
def test_hypothesis_strategies_accept_the_namespace(xp):
    """hypothesis's array API strategies need the complex dtypes for scalar_dtypes/numeric_dtypes."""
    from hypothesis.extra.array_api import make_strategies_namespace

    xps = make_strategies_namespace(xp)

    @SETTINGS
    @given(dtype=xps.scalar_dtypes(), data=st.data())
    def check(dtype, data):
        x = data.draw(xps.arrays(dtype, (2,)))
        assert x.dtype is dtype

    check()


# --- element-wise functions -----------------------------------------------------------------
# name -> (NumPy reference, smallest modulus, largest modulus): the standard defines these for
# complex input (with C99's branch cuts).
UNARY = {
    "abs": (np.abs, 0, 8), "acos": (np.arccos, 0, 8), "acosh": (np.arccosh, 0, 8), "asin": (np.arcsin, 0, 8),
    "asinh": (np.arcsinh, 0, 8), "atan": (np.arctan, 0, 8), "atanh": (np.arctanh, 0, 8), "conj": (np.conj, 0, 8),
    "cos": (np.cos, 0, 8), "cosh": (np.cosh, 0, 8), "exp": (np.exp, 0, 8), "expm1": (np.expm1, 0, 8),
    "imag": (np.imag, 0, 8), "log": (np.log, 1e-3, 8), "log1p": (np.log1p, 0, 0.9), "log2": (np.log2, 1e-3, 8),
    "log10": (np.log10, 1e-3, 8), "negative": (np.negative, 0, 8), "positive": (np.positive, 0, 8),
    "real": (np.real, 0, 8), "reciprocal": (np.reciprocal, 1e-3, 8), "sign": (np.sign, 0, 8),
    "sin": (np.sin, 0, 8), "sinh": (np.sinh, 0, 8), "sqrt": (np.sqrt, 0, 8), "square": (np.square, 0, 8),
    "tan": (np.tan, 0, 8), "tanh": (np.tanh, 0, 8), "round": (np.round, 0, 8),
}


@pytest.mark.parametrize("name", sorted(UNARY))
@SETTINGS
@given(data=st.data())
def test_unary_complex(xp, name, data):
    reference, smallest, largest = UNARY[name]
    dtype = data.draw(st.sampled_from(COMPLEX))
    values = data.draw(complex_arrays(dtype, data.draw(shapes), min_magnitude=smallest, max_magnitude=largest))
    if name == "round":
        # rounding is discontinuous at halves: compare exactly, away from them
        values = (np.floor(values.real) + 0.25) + 1j * (np.floor(values.imag) + 0.75)
        values = values.astype(dtype)
    with np.errstate(all="ignore"):
        expected = reference(values.astype(np.complex128)).astype(reference(values).dtype)
    assert_close(getattr(xp, name)(xp.asarray(values)), expected, dtype)


def test_real_imag_conj_return_new_arrays(xp):
    z = xp.asarray([1 + 2j, -3 - 4j], dtype=xp.complex128)
    for fn in (xp.real, xp.imag, xp.conj):
        out = fn(z)
        out[0] = 9  # a new array: z is unchanged
    assert_matches(z, np.array([1 + 2j, -3 - 4j]))
    assert xp.real(z).dtype is xp.float64 and xp.imag(xp.astype(z, xp.complex64)).dtype is xp.float32


BINARY = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide, "pow": np.power,
          "equal": np.equal, "not_equal": np.not_equal}


@pytest.mark.parametrize("name", sorted(BINARY))
@SETTINGS
@given(data=st.data())
def test_binary_complex(xp, name, data):
    dtype = data.draw(st.sampled_from(COMPLEX))
    shape = data.draw(shapes)
    a = data.draw(complex_arrays(dtype, shape, min_magnitude=0.1, max_magnitude=4))
    b = data.draw(complex_arrays(dtype, shape, min_magnitude=0.1, max_magnitude=2))
    if name in ("equal", "not_equal"):
        b = np.where(np.arange(b.size).reshape(b.shape) % 2 == 0, a, b) if b.size else b  # some equal pairs
    expected = BINARY[name](a.astype(np.complex128), b.astype(np.complex128))
    got = getattr(xp, name)(xp.asarray(a), xp.asarray(b))
    if expected.dtype == np.bool_:
        assert_matches(got, expected)
    else:
        assert_close(got, expected.astype(dtype), dtype)


INF, NAN = math.inf, math.nan


def _special(xp, name, z, dtype):
    return complex(getattr(xp, name)(xp.asarray([z], dtype=getattr(xp, dtype))).cpu().numpy()[0])


def _same(got: complex, want: complex, signs: bool = True) -> bool:
    for g, w in ((got.real, want.real), (got.imag, want.imag)):
        if math.isnan(w):
            if not math.isnan(g):
                return False
        elif not (g == w or math.isclose(g, w, rel_tol=1e-6)) or (signs and math.copysign(1, g) != math.copysign(1, w)):
            return False
    return True


# (function, argument, result) from the special cases the standard lists for complex arguments;
# None in a result part means "unspecified" there (compared only where the standard fixes it).
SPECIAL_CASES = [
    ("abs", complex(INF, NAN), complex(INF, 0)), ("abs", complex(NAN, -INF), complex(INF, 0)),
    ("abs", complex(NAN, 1.0), complex(NAN, 0)), ("abs", complex(-0.0, 0.0), complex(0, 0)),
    ("exp", complex(0.0, 0.0), complex(1, 0)), ("exp", complex(-0.0, 0.0), complex(1, 0)),
    ("exp", complex(INF, 0.0), complex(INF, 0)), ("exp", complex(1.0, INF), complex(NAN, NAN)),
    ("exp", complex(-INF, 1.0), 0.0 * cmath.exp(1j)),
    ("sqrt", complex(0.0, 0.0), complex(0, 0)), ("sqrt", complex(-0.0, 0.0), complex(0, 0)),
    ("sqrt", complex(1.0, INF), complex(INF, INF)), ("sqrt", complex(NAN, INF), complex(INF, INF)),
    ("sqrt", complex(-INF, 1.0), complex(0, INF)), ("sqrt", complex(INF, 1.0), complex(INF, 0)),
    ("sqrt", complex(-4.0, -0.0), complex(0, -2)),
    ("log", complex(-0.0, 0.0), complex(-INF, math.pi)), ("log", complex(0.0, 0.0), complex(-INF, 0)),
    ("log", complex(INF, INF), complex(INF, math.pi / 4)), ("log", complex(-INF, 1.0), complex(INF, math.pi)),
    ("log", complex(1.0, INF), complex(INF, math.pi / 2)),
    ("log1p", complex(-1.0, 0.0), complex(-INF, 0)), ("log1p", complex(0.0, 0.0), complex(0, 0)),
    ("sinh", complex(0.0, 0.0), complex(0, 0)), ("cosh", complex(0.0, 0.0), complex(1, 0)),
    ("tanh", complex(0.0, 0.0), complex(0, 0)), ("tanh", complex(INF, 1.0), complex(1, 0.0)),
    ("tanh", complex(-0.0, 0.0), complex(-0.0, 0)),
    ("asinh", complex(0.0, 0.0), complex(0, 0)), ("asinh", complex(INF, 1.0), complex(INF, 0)),
    ("acosh", complex(0.0, 0.0), complex(0, math.pi / 2)), ("acosh", complex(-INF, 1.0), complex(INF, math.pi)),
    ("acosh", complex(INF, 1.0), complex(INF, 0)), ("acosh", complex(INF, INF), complex(INF, math.pi / 4)),
    ("atanh", complex(0.0, 0.0), complex(0, 0)), ("atanh", complex(1.0, 0.0), complex(INF, 0)),
    ("atanh", complex(INF, 1.0), complex(0, math.pi / 2)), ("atanh", complex(1.0, INF), complex(0, math.pi / 2)),
    ("sign", complex(0.0, 0.0), complex(0, 0)), ("sign", complex(-0.0, 0.0), complex(0, 0)),
    ("isnan", complex(NAN, 0.0), True), ("isnan", complex(INF, NAN), True), ("isinf", complex(NAN, INF), True),
    ("isfinite", complex(1.0, INF), False), ("isfinite", complex(1.0, -2.0), True),
]


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("case", SPECIAL_CASES, ids=lambda c: f"{c[0]}({c[1]})" if isinstance(c, tuple) else None)
def test_special_cases(xp, case, dtype):
    name, z, want = case
    out = getattr(xp, name)(xp.asarray([z], dtype=getattr(xp, dtype)))
    if isinstance(want, bool):
        assert bool(out.cpu().numpy()[0]) is want
        return
    got = complex(out.cpu().numpy()[0])
    # The standard writes the zeros of abs and sign(0) unsigned; the other results fix their signs.
    assert _same(got, want, signs=name not in ("abs", "sign")), (name, z, got, want)


# --- reductions -----------------------------------------------------------------------------
@SETTINGS
@given(data=st.data())
def test_statistical_complex(xp, data):
    """sum/prod/mean/cumulative_* keep the complex dtype; var/std are real (PyTorch's: the mean
    of |x - mean|^2; the standard leaves complex input to the implementation)."""
    dtype = data.draw(st.sampled_from(COMPLEX))
    values = data.draw(complex_arrays(dtype, (3, 4), max_magnitude=2))
    x = xp.asarray(values)
    v = values.astype(np.complex128)
    assert_close(xp.sum(x, axis=1), v.sum(1).astype(dtype), dtype)
    assert_close(xp.prod(x, axis=0), v.prod(0).astype(dtype), dtype)
    assert_close(xp.mean(x), np.asarray(v.mean()).astype(dtype), dtype)
    assert_close(xp.cumulative_sum(x, axis=1, include_initial=True),
                 np.concatenate([np.zeros((3, 1)), np.cumsum(v, 1)], 1).astype(dtype), dtype)
    assert_close(xp.cumulative_prod(x, axis=0), np.cumprod(v, 0).astype(dtype), dtype)
    part = "float32" if dtype == "complex64" else "float64"
    variance = (np.abs(v - v.mean(0)) ** 2).sum(0) / (3 - 1)
    assert_close(xp.var(x, axis=0, correction=1), variance.astype(part), dtype)
    assert_close(xp.std(x, axis=0, correction=1), np.sqrt(variance).astype(part), dtype)


# --- linalg extension -----------------------------------------------------------------------
def _matrices(seed, shape, dtype):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)


@pytest.mark.parametrize("dtype", COMPLEX)
def test_linalg_complex(xp, dtype):
    """The linalg extension on complex arrays: results against NumPy's complex LAPACK; the
    eigenvalues of Hermitian matrices, singular values, logabsdet and norms are real."""
    part = "float32" if dtype == "complex64" else "float64"
    a = _matrices(1, (2, 3, 3), dtype) + 3 * np.eye(3, dtype=dtype)
    b = _matrices(2, (2, 3, 2), dtype)
    A, B = xp.asarray(a), xp.asarray(b)
    h = a @ np.conj(np.swapaxes(a, -1, -2)) + np.eye(3, dtype=dtype)
    H = xp.asarray(h)
    assert_close(xp.linalg.inv(A), np.linalg.inv(a), dtype)
    assert_close(xp.linalg.solve(A, B), np.linalg.solve(a, b), dtype)
    assert_close(xp.linalg.det(A), np.linalg.det(a), dtype)
    sign, logabs = xp.linalg.slogdet(A)
    want_sign, want_log = np.linalg.slogdet(a)
    assert_close(sign, want_sign, dtype)
    assert_close(logabs, want_log, dtype)
    assert logabs.dtype is getattr(xp, part)
    assert_close(xp.linalg.cholesky(H), np.linalg.cholesky(h), dtype)
    w, v = xp.linalg.eigh(H)
    assert w.dtype is getattr(xp, part)
    assert_close(w, np.linalg.eigvalsh(h), dtype)
    assert_close(xp.linalg.eigvalsh(H), np.linalg.eigvalsh(h), dtype)
    assert_close(xp.matmul(H, v), v.numpy() * w.numpy()[..., None, :], dtype)
    s = xp.linalg.svdvals(A)
    assert s.dtype is getattr(xp, part)
    assert_close(s, np.linalg.svd(a, compute_uv=False), dtype)
    q, r = xp.linalg.qr(A)
    assert_close(xp.matmul(q, r), a, dtype)
    assert_close(xp.linalg.pinv(A), np.linalg.pinv(a), dtype)
    assert_matches(xp.linalg.matrix_rank(A), np.linalg.matrix_rank(a))
    for ord_ in ("fro", "nuc", 1, 2, -math.inf):
        got = xp.linalg.matrix_norm(A, ord=ord_)
        assert got.dtype is getattr(xp, part)
        assert_close(got, np.linalg.matrix_norm(a, ord=ord_), dtype)
    for ord_ in (2, 1, 3, math.inf, 0):
        assert_close(xp.linalg.vector_norm(A, axis=-1, ord=ord_), np.linalg.vector_norm(a, axis=-1, ord=ord_), dtype)
    # vecdot conjugates its first argument (the standard's definition)
    assert_close(xp.vecdot(A, B[..., :1].mT), np.linalg.vecdot(a, np.swapaxes(b[..., :1], -1, -2)), dtype)
    assert_close(xp.linalg.vecdot(A, A, axis=-2), np.sum(np.conj(a) * a, axis=-2), dtype)
    assert_close(xp.linalg.outer(A[0, 0], A[0, 1]), np.outer(a[0, 0], a[0, 1]), dtype)
    assert_close(xp.linalg.trace(A), np.trace(a, axis1=-2, axis2=-1), dtype)
    assert_close(xp.linalg.cross(A, B[..., :1].mT), np.cross(a, np.swapaxes(b[..., :1], -1, -2)), dtype)
    assert_close(xp.tensordot(A, B, axes=([1, 2], [1, 0])) if False else xp.tensordot(A[0], B[0], axes=1),
                 np.tensordot(a[0], b[0], axes=1), dtype)


# --- fft extension --------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", COMPLEX)
def test_fft_extension(xp, dtype):
    """Every function of the extension against numpy.fft (itself array API compatible), with the
    standard's result dtypes: complex in, complex of the same precision out; real in (rfft,
    ihfft), complex of matching precision; irfft/hfft real."""
    import tensorplug as tp

    part = "float32" if dtype == "complex64" else "float64"
    z = _matrices(3, (3, 8), dtype)
    r = np.random.default_rng(4).standard_normal((3, 8)).astype(part)
    Z, R = xp.asarray(z), xp.asarray(r)
    assert xp.fft.fft(Z).dtype is getattr(xp, dtype)
    for norm in ("backward", "ortho", "forward"):
        assert_close(xp.fft.fft(Z, norm=norm), np.fft.fft(z, norm=norm), dtype)
        assert_close(xp.fft.ifft(Z, n=5, axis=0, norm=norm), np.fft.ifft(z, n=5, axis=0, norm=norm), dtype)
    assert_close(xp.fft.fftn(Z), np.fft.fftn(z), dtype)
    assert_close(xp.fft.fftn(Z, s=(4, -1), axes=(0, 1)), np.fft.fftn(z, s=(4, 8), axes=(0, 1)), dtype)
    assert_close(xp.fft.ifftn(Z, s=(6,)), np.fft.ifftn(z, s=(6,), axes=(1,)), dtype)
    assert_close(xp.fft.rfft(R), np.fft.rfft(r), dtype)
    assert xp.fft.rfft(R).dtype is getattr(xp, dtype)
    assert_close(xp.fft.irfft(Z, n=10), np.fft.irfft(z, n=10).astype(part), dtype)
    assert xp.fft.irfft(Z).dtype is getattr(xp, part)
    assert_close(xp.fft.rfftn(R, axes=(0, 1)), np.fft.rfftn(r, axes=(0, 1)), dtype)
    assert_close(xp.fft.irfftn(Z, s=(3, -1)), np.fft.irfftn(z, s=(3, 14), axes=(0, 1)).astype(part), dtype)
    assert_close(xp.fft.hfft(Z), np.fft.hfft(z).astype(part), dtype)
    assert_close(xp.fft.ihfft(R), np.fft.ihfft(r), dtype)
    assert_matches(xp.fft.fftfreq(7, d=0.5), np.fft.fftfreq(7, d=0.5).astype(np.float32))
    assert_matches(xp.fft.rfftfreq(8, dtype=xp.float64), np.fft.rfftfreq(8))
    assert_matches(xp.fft.fftshift(Z, axes=1), np.fft.fftshift(z, axes=1))
    assert_matches(xp.fft.ifftshift(Z), np.fft.ifftshift(z))
    assert xp.fft.fft(R).dtype is getattr(xp, dtype)  # a real array is taken as complex
    with pytest.raises(TypeError, match="rfft needs a real"):
        xp.fft.rfft(Z)
    with pytest.raises(ValueError, match="positive"):
        xp.fft.fft(Z, n=0)
    with pytest.raises(ValueError, match="norm"):
        xp.fft.fft(Z, norm="none")
    with pytest.raises(TypeError, match="fftfreq.*real floating"):
        xp.fft.fftfreq(4, dtype=xp.complex64)
    assert "fft" in dir(xp) and xp.fft.fft.__module__ == "tensorplug.array_api.fft"
    assert tp.ones(1).__array_namespace__().fft is xp.fft


def test_creation_complex(xp):
    assert_matches(xp.linspace(0, 1 + 2j, 5), np.linspace(0, 1 + 2j, 5).astype(np.complex64), rtol=1e-6)
    assert_matches(xp.linspace(-1j, 1j, 4, dtype=xp.complex128, endpoint=False),
                   np.linspace(-1j, 1j, 4, endpoint=False))
    assert_matches(xp.zeros((2,), dtype=xp.complex128), np.zeros(2, np.complex128))
    assert_matches(xp.eye(2, dtype=xp.complex64), np.eye(2, dtype=np.complex64))
    assert_matches(xp.full((2,), 1 - 1j, dtype=xp.complex128), np.full(2, 1 - 1j))
    assert_matches(xp.full_like(xp.zeros((2,), dtype=xp.complex64), 2j), np.full(2, 2j, np.complex64))
    with pytest.raises(TypeError, match="complex dtype"):
        xp.linspace(0, 1j, 3, dtype=xp.float32)


def test_complex_functions_on_each_device(xp, device):
    """One call of each family on every device (the values are computed by the same real ops)."""
    z = np.array([1 + 2j, -0.5 + 0.25j, 3 - 1j], dtype=np.complex64)
    x = xp.asarray(z, device=device)
    assert x.device.type == device
    for name in ("exp", "log", "sqrt", "asinh", "acosh", "atanh", "tanh", "sign", "abs", "real", "conj"):
        reference = UNARY[name][0]
        out = getattr(xp, name)(x)
        assert out.device.type == device
        assert_close(out, reference(z.astype(np.complex128)).astype(reference(z).dtype), "complex64")
    assert_close(xp.fft.fft(x), np.fft.fft(z), "complex64")
    assert_close(xp.linalg.vector_norm(x), np.asarray(np.linalg.norm(z)), "complex64")
    assert_close(xp.var(x), np.asarray(np.var(z.astype(np.complex128))).astype(np.float32), "complex64")


@pytest.mark.parametrize("name", ["less", "less_equal", "greater", "greater_equal", "maximum", "minimum", "atan2",
                                  "hypot", "copysign", "logaddexp", "nextafter", "remainder", "floor_divide"])
def test_real_only_binary_functions_refuse_complex(xp, name):
    """The standard defines these for real-valued arrays only: refused naming the function."""
    z = xp.asarray([1 + 2j])
    with pytest.raises(TypeError, match=f"{name} is defined for real-valued arrays only"):
        getattr(xp, name)(z, xp.asarray([1.0]))


@pytest.mark.parametrize("name", ["floor", "ceil", "trunc", "signbit", "clip"])
def test_real_only_unary_functions_refuse_complex(xp, name):
    with pytest.raises(TypeError, match=f"{name} is defined for real-valued arrays only"):
        getattr(xp, name)(xp.asarray([1 + 2j]))
