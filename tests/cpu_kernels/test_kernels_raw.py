"""Smoke tests of the raw C++ CPU kernels (`_kernels`) against NumPy, without the frontend.

The module is loaded straight from its file (after preloading OpenBLAS), so these tests do not
depend on `tensorplug/__init__.py`.
"""

import ctypes
import glob
import importlib.util
import math
import os

import numpy as np
import pytest

_CPU_DIR = os.path.join(os.path.dirname(__file__), "..", "..", "tensorplug", "backends", "cpu")


def _load_raw_module():
    scipy_openblas32 = pytest.importorskip("scipy_openblas32")
    lib_dir = scipy_openblas32.get_lib_dir()
    for name in sorted(os.listdir(lib_dir)):
        if name.startswith("libscipy_openblas") and ".so" in name:
            ctypes.CDLL(os.path.join(lib_dir, name), mode=ctypes.RTLD_GLOBAL)
            break
    found = glob.glob(os.path.join(_CPU_DIR, "_kernels*.so"))
    if not found:
        pytest.skip("the _kernels extension is not built (pip install -e .)")
    spec = importlib.util.spec_from_file_location("tensorplug.backends.cpu._kernels", found[0])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


K = _load_raw_module()

NP_DTYPES = {
    0: np.bool_,
    1: np.uint8,
    2: np.int8,
    3: np.int16,
    4: np.int32,
    5: np.int64,
    6: np.float16,
    7: np.float32,
    8: np.float64,
}
CODE = {np.dtype(v): k for k, v in NP_DTYPES.items()}
U, B, C, R = K.UNARY_OPS, K.BINARY_OPS, K.COMPARE_OPS, K.REDUCE_OPS


def operand(view, base=None):
    """(storage, offset, strides) for a NumPy view of the C-contiguous array `base`."""
    base = view if base is None else base
    assert base.flags.c_contiguous
    storage = K.wrap(base)
    item = view.itemsize
    offset = (view.__array_interface__["data"][0] - base.__array_interface__["data"][0]) // item
    return (storage, offset, tuple(s // item for s in view.strides))


def empty(shape, dtype):
    return np.zeros(shape, dtype=dtype)


def sample(shape, dtype, rng, low=-5, high=6):
    if np.dtype(dtype) == np.bool_:
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    if np.issubdtype(dtype, np.unsignedinteger):
        return rng.integers(0, high + 5, size=shape).astype(dtype)
    if np.issubdtype(dtype, np.integer):
        return rng.integers(low, high, size=shape).astype(dtype)
    return rng.uniform(low, high, size=shape).astype(dtype)


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.mark.parametrize("code", sorted(NP_DTYPES))
@pytest.mark.parametrize("op", ["add", "mul"])
def test_binary_add_mul_every_dtype(code, op, rng):
    """add and mul match NumPy for every dtype, contiguous operands."""
    dt = NP_DTYPES[code]
    a, b = sample((3, 5), dt, rng), sample((3, 5), dt, rng)
    out = empty((3, 5), dt)
    K.binary(B[op], code, (3, 5), operand(out), operand(a), operand(b))
    expected = (np.logical_or(a, b) if op == "add" else np.logical_and(a, b)) if dt == np.bool_ else getattr(np, {"add": "add", "mul": "multiply"}[op])(a, b)
    np.testing.assert_array_equal(out, expected.astype(dt))


def test_binary_strided_broadcast_and_scalar(rng):
    """Transposed, broadcast (stride 0) and scalar operands."""
    base = sample((6, 4), np.float32, rng)
    a = base.T  # (4, 6), non-contiguous
    row_base = sample((6,), np.float32, rng)
    b = np.broadcast_to(row_base, (4, 6))
    out = empty((4, 6), np.float32)
    K.binary(B["sub"], 7, (4, 6), operand(out), operand(a, base), operand(b, row_base))
    np.testing.assert_allclose(out, a - b)
    K.binary(B["mul"], 7, (4, 6), operand(out), operand(a, base), 2.5)
    np.testing.assert_allclose(out, a * np.float32(2.5))
    K.binary(B["div"], 7, (4, 6), operand(out), 1.0, operand(a, base))
    np.testing.assert_allclose(out, np.float32(1.0) / a, rtol=1e-6)


def test_binary_big_parallel_matches_numpy(rng):
    """A large op (threads, GIL released) equals NumPy exactly."""
    a = sample((300, 257), np.float32, rng)
    b = sample((257,), np.float32, rng)
    out = empty((300, 257), np.float32)
    K.binary(B["add"], 7, (300, 257), operand(out), operand(a), operand(np.broadcast_to(b, a.shape), b))
    np.testing.assert_array_equal(out, a + b)


@pytest.mark.parametrize("op", ["floor_divide", "remainder", "fmod", "pow", "maximum", "minimum", "atan2",
                                "copysign", "hypot"])
def test_binary_float_ops(op, rng):
    """Float ops follow NumPy (Python floor/remainder semantics, NaN-propagating max/min)."""
    a = sample((50,), np.float64, rng)
    b = sample((50,), np.float64, rng)
    b[b == 0] = 1.5
    a[3] = np.nan
    if op == "pow":
        a = np.abs(a)
    out = empty((50,), np.float64)
    K.binary(B[op], 8, (50,), operand(out), operand(a), operand(b))
    ref = {"floor_divide": np.floor_divide, "remainder": np.remainder, "fmod": np.fmod, "pow": np.power,
           "maximum": np.maximum, "minimum": np.minimum, "atan2": np.arctan2, "copysign": np.copysign,
           "hypot": np.hypot}[op]
    np.testing.assert_allclose(out, ref(a, b), rtol=1e-12, equal_nan=True)


@pytest.mark.parametrize("code", [1, 2, 3, 4, 5])
def test_integer_division_semantics(code, rng):
    """Integer floor_divide/remainder/fmod follow Python/C semantics like NumPy."""
    dt = NP_DTYPES[code]
    a = sample((40,), dt, rng, -20, 20)
    b = sample((40,), dt, rng, -7, 7)
    b[b == 0] = 3
    for op, ref in [("floor_divide", np.floor_divide), ("remainder", np.remainder), ("fmod", np.fmod)]:
        out = empty((40,), dt)
        K.binary(B[op], code, (40,), operand(out), operand(a), operand(b))
        np.testing.assert_array_equal(out, ref(a, b))


@pytest.mark.parametrize("op", ["floor_divide", "remainder", "fmod"])
def test_integer_division_by_zero_raises(op):
    """Integer division by zero raises ZeroDivisionError naming the op (no SIGFPE)."""
    a = np.array([1, 2, 3], dtype=np.int64)
    b = np.array([1, 0, 3], dtype=np.int64)
    out = empty((3,), np.int64)
    with pytest.raises(ZeroDivisionError, match=f"integer division by zero in {op}"):
        K.binary(B[op], 5, (3,), operand(out), operand(a), operand(b))
    with pytest.raises(ZeroDivisionError):
        K.binary(B[op], 4, (3,), operand(out.astype(np.int32)), operand(a.astype(np.int32)), 0)


def test_integer_min_by_minus_one_and_pow():
    """INT_MIN // -1 wraps instead of trapping; a negative integer power gives 1 for base 1, +-1
    for base -1 and 0 for any other base (the contract's rule, as PyTorch), without raising."""
    a = np.array([np.iinfo(np.int64).min, 7], dtype=np.int64)
    out = empty((2,), np.int64)
    K.binary(B["floor_divide"], 5, (2,), operand(out), operand(a), -1)
    assert out[0] == np.iinfo(np.int64).min and out[1] == -7
    K.binary(B["remainder"], 5, (2,), operand(out), operand(a), -1)
    assert list(out) == [0, 0]
    K.binary(B["pow"], 5, (2,), operand(out), operand(np.array([3, -2], dtype=np.int64)), 3)
    assert list(out) == [27, -8]
    bases = np.array([1, -1, -1, 0, 5, np.iinfo(np.int64).min], dtype=np.int64)
    exponents = np.array([-3, -3, -2, -1, -1, -1], dtype=np.int64)
    six = empty((6,), np.int64)
    K.binary(B["pow"], 5, (6,), operand(six), operand(bases), operand(exponents))
    assert list(six) == [1, -1, 1, 0, 0, 0]


def test_unsupported_combination_raises():
    """div on ints and neg on bool are refused with ValueError."""
    a = np.ones(3, dtype=np.int32)
    with pytest.raises(ValueError):
        K.binary(B["div"], 4, (3,), operand(empty((3,), np.int32)), operand(a), operand(a))
    with pytest.raises(ValueError):
        K.unary(U["neg"], 0, (3,), operand(empty((3,), np.bool_)), operand(np.ones(3, np.bool_)))


@pytest.mark.parametrize("name", ["neg", "abs", "sign", "exp", "log", "sqrt", "sin", "tanh", "sigmoid", "erf",
                                  "floor", "round", "trunc", "reciprocal", "square", "expm1", "log1p", "erfinv",
                                  "relu"])
def test_unary_float64(name, rng):
    """Unary float64 ops match NumPy/math."""
    a = rng.uniform(-0.99, 0.99, size=64) * (1 if name in ("erfinv",) else 4)
    a[:4] = [0.999999999, -0.9999999999999, 1e-300, -0.5] if name == "erfinv" else [0.5, 1.5, 2.5, -2.5]
    if name in ("log", "sqrt", "log1p"):
        a = np.abs(a) + 0.1
    out = empty((64,), np.float64)
    K.unary(U[name], 8, (64,), operand(out), operand(a))
    ref = {
        "neg": np.negative, "abs": np.abs, "sign": np.sign, "exp": np.exp, "log": np.log, "sqrt": np.sqrt,
        "sin": np.sin, "tanh": np.tanh, "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
        "erf": np.vectorize(math.erf), "floor": np.floor, "round": np.round, "trunc": np.trunc,
        "reciprocal": np.reciprocal, "square": np.square, "expm1": np.expm1, "log1p": np.log1p,
        "erfinv": None, "relu": lambda x: np.maximum(x, 0),
    }[name]
    if name == "erfinv":
        back = np.vectorize(math.erf)(out)
        np.testing.assert_allclose(back, a, rtol=1e-13, atol=1e-300)
    else:
        np.testing.assert_allclose(out, ref(a), rtol=1e-14, atol=1e-300)


def test_unary_bool_outputs_and_float16(rng):
    """isnan/isinf/isfinite write bool; float16 is computed in float32 and rounded."""
    a = np.array([0.0, np.nan, np.inf, -np.inf, 1.0], dtype=np.float32)
    out = empty((5,), np.bool_)
    K.unary(U["isnan"], 7, (5,), operand(out), operand(a))
    np.testing.assert_array_equal(out, np.isnan(a))
    K.unary(U["isfinite"], 7, (5,), operand(out), operand(a))
    np.testing.assert_array_equal(out, np.isfinite(a))
    h = sample((33,), np.float16, rng)
    outh = empty((33,), np.float16)
    K.unary(U["exp"], 6, (33,), operand(outh), operand(h))
    np.testing.assert_array_equal(outh, np.exp(h.astype(np.float32)).astype(np.float16))


@pytest.mark.parametrize("code", sorted(NP_DTYPES))
def test_compare_every_dtype(code, rng):
    """compare ops write bool and match NumPy, NaN compares like IEEE."""
    dt = NP_DTYPES[code]
    a, b = sample((20,), dt, rng), sample((20,), dt, rng)
    if np.issubdtype(dt, np.floating):
        a[0] = np.nan
    out = empty((20,), np.bool_)
    for name, ref in [("eq", np.equal), ("ne", np.not_equal), ("lt", np.less), ("le", np.less_equal),
                      ("gt", np.greater), ("ge", np.greater_equal)]:
        K.compare(C[name], code, (20,), operand(out), operand(a), operand(b))
        np.testing.assert_array_equal(out, ref(a, b))


def test_where(rng):
    """where picks a or b by a bool condition; scalars allowed."""
    cond = rng.integers(0, 2, size=(4, 5)).astype(np.bool_)
    a = sample((4, 5), np.float32, rng)
    out = empty((4, 5), np.float32)
    K.where(7, (4, 5), operand(out), operand(cond), operand(a), -1.0)
    np.testing.assert_array_equal(out, np.where(cond, a, np.float32(-1)))


@pytest.mark.parametrize("src", sorted(NP_DTYPES))
@pytest.mark.parametrize("dst", sorted(NP_DTYPES))
def test_copy_casts(src, dst, rng):
    """copy converts between every pair of dtypes like NumPy's astype (in-range values)."""
    a = sample((3, 7), NP_DTYPES[src], rng, 0 if dst == 1 else -5, 6)
    if np.issubdtype(NP_DTYPES[src], np.floating) and dst != 0:
        a = np.trunc(a) if dst not in (6, 7, 8) else a
    out = empty((7, 3), NP_DTYPES[dst])
    K.copy((3, 7), dst, operand(out.T, out), src, operand(a))
    np.testing.assert_array_equal(out.T, a.astype(NP_DTYPES[dst]))


def test_copy_special_values():
    """float -> int truncates toward zero; NaN -> bool is True; fill from a scalar; float64 -> float16 RNE."""
    a = np.array([-2.7, -0.5, 0.5, 2.7, np.nan], dtype=np.float64)
    out = empty((5,), np.bool_)
    K.copy((5,), 0, operand(out), 8, operand(a))
    assert list(out) == [True, True, True, True, True]
    ints = empty((4,), np.int32)
    K.copy((4,), 4, operand(ints), 8, operand(a[:4], a))
    assert list(ints) == [-2, 0, 0, 2]
    vals = np.random.default_rng(1).standard_normal(1000) * 100
    h = empty((1000,), np.float16)
    K.copy((1000,), 6, operand(h), 8, operand(vals))
    np.testing.assert_array_equal(h, vals.astype(np.float16))
    K.fill(7, (2, 3), operand(f := empty((2, 3), np.float32)), 4.25)
    assert (f == 4.25).all()
    K.copy((2, 3), 7, operand(f), 5, 3)
    assert (f == 3).all()


def test_bfloat16_round_trip():
    """float32 -> bfloat16 rounds to nearest even; bfloat16 -> float32 is exact."""
    x = np.array([1.0, 1.00390625, 1.01171875, -3.1415926, 1e38, np.inf], dtype=np.float32)
    bits = empty((6,), np.uint16)
    K.copy((6,), 9, operand(bits), 7, operand(x))
    u = x.view(np.uint32)
    expected = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    np.testing.assert_array_equal(bits, expected)
    back = empty((6,), np.float32)
    K.copy((6,), 7, operand(back), 9, operand(bits))
    np.testing.assert_array_equal(back.view(np.uint32), bits.astype(np.uint32) << 16)


def reduce_np(op, in_code, out_code, a, dims, base=None):
    shape = a.shape
    out_shape = tuple(1 if d in dims else s for d, s in enumerate(shape))
    out = empty(out_shape, NP_DTYPES[out_code])
    strides = tuple(0 if d in dims else s // out.itemsize for d, s in enumerate(out.strides))
    K.reduce(R[op], in_code, out_code, shape, operand(a, base), (K.wrap(out), 0, strides), tuple(dims))
    return out


@pytest.mark.parametrize("dims", [(1,), (0,), (0, 1), (0, 2), (2,)])
def test_reduce_sum_float32(dims, rng):
    """float32 sums over last/first/all/mixed dims are close to a float64 reference."""
    a = sample((37, 19, 41), np.float32, rng)
    got = reduce_np("sum", 7, 7, a, dims)
    ref = a.astype(np.float64).sum(axis=dims, keepdims=True)
    np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-4)


def test_reduce_large_contiguous_sum_accuracy(rng):
    """A long float32 sum is accurate (blocked/double accumulation) and uses threads."""
    a = rng.uniform(0, 1, size=1_000_003).astype(np.float32)
    got = reduce_np("sum", 7, 7, a, (0,))
    assert abs(float(got[0]) - a.astype(np.float64).sum()) < 1e-6 * a.size
    big = rng.uniform(0, 1, size=(3000, 300)).astype(np.float32)
    got = reduce_np("sum", 7, 7, big, (0,))
    np.testing.assert_allclose(got[0], big.astype(np.float64).sum(0), rtol=1e-6)
    got = reduce_np("mean", 7, 7, big, (1,))
    np.testing.assert_allclose(got[:, 0], big.astype(np.float64).mean(1), rtol=1e-6)


def test_reduce_strided_input(rng):
    """Reductions read non-contiguous inputs."""
    base = sample((8, 12), np.float64, rng)
    view = base.T[::2]  # (6, 8), strides (2, 12)
    got = reduce_np("sum", 8, 8, view, (1,), base)
    np.testing.assert_allclose(got[:, 0], view.sum(1))


def test_reduce_int_sum_prod_all_any(rng):
    """int sums go to int64; all/any write bool; empty reductions give the identity."""
    a = sample((5, 6), np.int8, rng)
    np.testing.assert_array_equal(reduce_np("sum", 2, 5, a, (1,))[:, 0], a.astype(np.int64).sum(1))
    np.testing.assert_array_equal(reduce_np("prod", 2, 5, a, (0,))[0], a.astype(np.int64).prod(0))
    b = a > 0
    np.testing.assert_array_equal(reduce_np("all", 0, 0, b, (1,))[:, 0], b.all(1))
    np.testing.assert_array_equal(reduce_np("any", 0, 0, b, (0, 1)).ravel(), [b.any()])
    e = np.zeros((3, 0), np.float32)
    np.testing.assert_array_equal(reduce_np("sum", 7, 7, e, (1,))[:, 0], [0, 0, 0])
    np.testing.assert_array_equal(reduce_np("prod", 7, 7, e, (1,))[:, 0], [1, 1, 1])
    with pytest.raises(ValueError, match="amax"):
        reduce_np("amax", 7, 7, e, (1,))


def test_reduce_amax_argmax_nan(rng):
    """amax/amin propagate NaN; argmax/argmin give the first occurrence, the first NaN wins."""
    a = np.array([[1.0, 3.0, 3.0, -1.0], [2.0, np.nan, 5.0, np.nan], [0.0, 0.0, 0.0, 0.0]], np.float32)
    np.testing.assert_array_equal(reduce_np("amax", 7, 7, a, (1,))[:, 0], [3.0, np.nan, 0.0])
    np.testing.assert_array_equal(reduce_np("amin", 7, 7, a, (1,))[:, 0], [-1.0, np.nan, 0.0])
    np.testing.assert_array_equal(reduce_np("argmax", 7, 5, a, (1,))[:, 0], [1, 1, 0])
    np.testing.assert_array_equal(reduce_np("argmin", 7, 5, a, (1,))[:, 0], [3, 1, 0])
    b = sample((50, 70), np.int32, rng)
    np.testing.assert_array_equal(reduce_np("argmax", 4, 5, b, (0,))[0], b.argmax(0))
    np.testing.assert_array_equal(reduce_np("amax", 4, 4, b, (0,))[0], b.max(0))


def test_cumulative(rng):
    """cumsum/cumprod along a dim, in place allowed."""
    a = sample((4, 6), np.float64, rng)
    out = empty((4, 6), np.float64)
    K.cumulative(0, 8, (4, 6), operand(out), operand(a), 1)
    np.testing.assert_allclose(out, np.cumsum(a, 1))
    K.cumulative(1, 8, (4, 6), operand(out), operand(a), 0)
    np.testing.assert_allclose(out, np.cumprod(a, 0))
    i = sample((10,), np.int64, rng)
    ref = np.cumsum(i)
    K.cumulative(0, 5, (10,), operand(i), operand(i), 0)
    np.testing.assert_array_equal(i, ref)


def mm_operand(view, base=None):
    st, off, strides = operand(view, base)
    return (st, off, strides if len(strides) == 3 else (0,) + strides)


@pytest.mark.parametrize("ta", [False, True])
@pytest.mark.parametrize("tb", [False, True])
def test_matmul_float32_transposed(ta, tb, rng):
    """float32 matmul through BLAS with transposed operands matches NumPy."""
    m, n, k = 33, 47, 29
    abase = sample((k, m) if ta else (m, k), np.float32, rng)
    bbase = sample((n, k) if tb else (k, n), np.float32, rng)
    a = abase.T if ta else abase
    b = bbase.T if tb else bbase
    out = empty((m, n), np.float32)
    K.matmul(7, 1, m, n, k, mm_operand(out), mm_operand(a, abase), mm_operand(b, bbase))
    np.testing.assert_allclose(out, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-4, atol=1e-3)


def test_matmul_batched_strided_and_ints(rng):
    """Batched float64 with a broadcast operand, a non-BLAS layout, int64 and k == 0."""
    a = sample((3, 20, 30), np.float64, rng)
    b = sample((30, 25), np.float64, rng)
    out = empty((3, 20, 25), np.float64)
    K.matmul(8, 3, 20, 25, 30, operand(out), operand(a), (K.wrap(b), 0, (0, 25, 1)))
    np.testing.assert_allclose(out, a @ b)
    abase = sample((40, 60), np.float64, rng)
    a2 = abase[::2, ::2]  # no unit stride: copied to a temporary
    out2 = empty((20, 25), np.float64)
    K.matmul(8, 1, 20, 25, 30, mm_operand(out2), mm_operand(a2, abase), mm_operand(b))
    np.testing.assert_allclose(out2, a2 @ b)
    ai, bi = sample((2, 5, 7), np.int64, rng), sample((2, 7, 3), np.int64, rng)
    outi = empty((2, 5, 3), np.int64)
    K.matmul(5, 2, 5, 3, 7, operand(outi), operand(ai), operand(bi))
    np.testing.assert_array_equal(outi, ai @ bi)
    z = np.full((4, 5), 7.0, np.float32)
    K.matmul(7, 1, 4, 5, 0, mm_operand(z), mm_operand(empty((4, 0), np.float32)), mm_operand(empty((0, 5), np.float32)))
    assert (z == 0).all()
    h = sample((6, 8), np.float16, rng)
    hb = sample((8, 4), np.float16, rng)
    outh = empty((6, 4), np.float16)
    K.matmul(6, 1, 6, 4, 8, mm_operand(outh), mm_operand(h), mm_operand(hb))
    np.testing.assert_allclose(outh, (h.astype(np.float32) @ hb.astype(np.float32)).astype(np.float16), rtol=2e-3)


def test_gather_scatter(rng):
    """gather/scatter along a dim with negative indices; scatter add accumulates duplicates."""
    a = sample((3, 5), np.float32, rng)
    idx = np.array([[0, 4, -1], [1, 1, 2], [3, 0, -5]], dtype=np.int64)
    out = empty((3, 3), np.float32)
    K.gather(7, 1, (3, 3), operand(out), operand(a), (3, 5), operand(idx))
    np.testing.assert_array_equal(out, np.take_along_axis(a, idx % 5, 1))
    selfv = np.zeros((3, 5), np.float32)
    src = np.ones((3, 3), np.float32)
    K.scatter(7, 1, 1, (3, 3), operand(selfv), (3, 5), operand(idx), operand(src))
    ref = np.zeros((3, 5), np.float32)
    np.add.at(ref, (np.arange(3)[:, None].repeat(3, 1), idx % 5), 1)
    np.testing.assert_array_equal(selfv, ref)
    K.scatter(7, 1, 0, (3, 3), operand(selfv), (3, 5), operand(idx), 9.0)
    assert selfv[0, 4] == 9.0 and selfv[1, 1] == 9.0


def test_gather_scatter_bounds():
    """Out-of-range indices raise IndexError with the value, dim and size; self is untouched."""
    a = np.zeros((2, 5), np.float32)
    idx = np.array([[0, 7]], dtype=np.int64)
    with pytest.raises(IndexError, match="gather: index 7 is out of bounds for dimension 1 with size 5"):
        K.gather(7, 1, (1, 2), operand(empty((1, 2), np.float32)), operand(a), (2, 5), operand(idx))
    with pytest.raises(IndexError, match="scatter: index 7 is out of bounds for dimension 1 with size 5"):
        K.scatter(7, 1, 0, (1, 2), operand(a), (2, 5), operand(idx), 1.0)
    assert (a == 0).all()
    with pytest.raises(IndexError, match="index -6 is out of bounds"):
        K.gather(7, 1, (1, 1), operand(empty((1, 1), np.float32)), operand(a), (2, 5),
                 operand(np.array([[-6]], dtype=np.int64)))


def test_index_get_put(rng):
    """Advanced indexing over leading dims, with trailing dims and accumulation."""
    x = sample((4, 3, 2), np.float64, rng)
    i0 = np.array([3, 0, -1, 3], dtype=np.int64)
    out = empty((4, 2), np.float64)
    i1 = np.array([0, 2, 1, 0], dtype=np.int64)
    K.index_get(8, operand(out), operand(x), (4, 3, 2), [operand(i0), operand(i1)], (4,))
    np.testing.assert_array_equal(out, x[i0, i1])
    outr = empty((4, 3, 2), np.float64)
    K.index_get(8, operand(outr), operand(x), (4, 3, 2), [operand(i0)], (4,))
    np.testing.assert_array_equal(outr, x[i0])
    y = np.zeros((4, 3), np.float64)
    K.index_put(8, operand(y), (4, 3), [operand(i0)], (4,), 1.0, True)
    ref = np.zeros((4, 3))
    np.add.at(ref, i0, 1.0)
    np.testing.assert_array_equal(y, ref)
    with pytest.raises(IndexError, match="index 10 is out of bounds for dimension 0 with size 4"):
        K.index_put(8, operand(y), (4, 3), [operand(np.array([10], np.int64))], (1,), 1.0, False)


def test_operand_validation():
    """Bad dtype codes, stride counts and out-of-storage extents raise instead of crashing."""
    a = np.zeros(4, np.float32)
    out = np.zeros(4, np.float32)
    with pytest.raises(ValueError, match="dtype"):
        K.binary(0, 42, (4,), operand(out), operand(a), operand(a))
    with pytest.raises(ValueError, match="strides"):
        K.binary(0, 7, (4,), operand(out), (K.wrap(a), 0, (1, 1)), operand(a))
    with pytest.raises(ValueError, match="storage"):
        K.binary(0, 7, (5,), (K.wrap(out), 0, (1,)), operand(a), operand(a))
    with pytest.raises(ValueError, match="storage"):
        K.binary(0, 7, (4,), operand(out), (K.wrap(a), 1, (1,)), operand(a))
    with pytest.raises(TypeError):
        K.binary(0, 7, (4,), operand(out), ("x", 0, (1,)), operand(a))
    with pytest.raises(ValueError, match="dims"):
        K.fill(7, (1,) * (K.MAX_DIMS + 1), operand(out), 0.0)
    ro = np.zeros(4, np.float32)
    ro.flags.writeable = False
    st = K.wrap(ro)
    assert st.readonly
    with pytest.raises(ValueError, match="read-only"):
        K.fill(7, (4,), (st, 0, (1,)), 1.0)
    K.binary(0, 7, (0, 3), (K.wrap(out), 0, (3, 1)), 1.0, 2.0)  # empty: nothing happens


def test_alloc_errors_and_buffer():
    """alloc validates sizes; a Storage exposes a writable buffer that keeps it alive."""
    with pytest.raises(ValueError):
        K.alloc(-1)
    with pytest.raises(MemoryError, match="cannot allocate"):
        K.alloc(2**62)
    assert K.alloc(0).nbytes == 0
    s = K.alloc(40)
    view = np.frombuffer(s, dtype=np.float64)
    del s
    view[:] = 3.0
    assert view.sum() == 15.0


def test_memory_stats_show_reuse():
    """A freed block is reused for the next request of the same size."""
    s = K.alloc(123_456)
    before = K.memory_stats()
    del s
    after_free = K.memory_stats()
    assert after_free["num_frees"] == before["num_frees"] + 1
    assert after_free["allocated_bytes"] < before["allocated_bytes"]
    s2 = K.alloc(123_456)
    after = K.memory_stats()
    assert after["num_cache_hits"] == after_free["num_cache_hits"] + 1
    assert after["reserved_bytes"] >= after["allocated_bytes"]
    del s2
    K.empty_cache()
    assert K.memory_stats()["reserved_bytes"] == K.memory_stats()["allocated_bytes"]


def test_philox_known_answers():
    """Philox4x32-10 matches the Random123 known-answer vectors."""
    assert K.philox4x32((0, 0), (0, 0, 0, 0)) == (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)
    assert K.philox4x32((0xFFFFFFFF, 0xFFFFFFFF), (0xFFFFFFFF,) * 4) == (0x408F276D, 0x41C83B0E, 0xA20BC7C6,
                                                                          0x6D5451FD)
    assert K.philox4x32((0xA4093822, 0x299F31D0), (0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344)) == (
        0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)


def test_random_mapping_and_determinism():
    """uniform/normal/randint follow the documented Philox mapping and do not depend on threads."""
    seed, offset = 1234, 10
    out = empty((9,), np.float32)
    K.uniform(7, operand(out), 9, seed, offset, -1.0, 3.0)
    for i in range(9):
        w = K.philox4x32(seed, offset + i // 4)[i % 4]
        u = np.float32((w >> 8) * 2.0**-24)
        assert out[i] == np.float32(-1.0) + np.float32(4.0) * u
    d = empty((3,), np.float64)
    K.uniform(8, operand(d), 3, seed, offset, 0.0, 1.0)
    w = K.philox4x32(seed, offset + 1)
    assert d[2] == (((w[1] << 32) | w[0]) >> 11) * 2.0**-53
    z = empty((4,), np.float64)
    K.normal(8, operand(z), 4, seed, offset, 0.0, 1.0)
    w = K.philox4x32(seed, offset)
    u1, u2 = ((w[2] >> 8) + 1) * 2.0**-24, (w[3] >> 8) * 2.0**-24
    assert z[3] == pytest.approx(math.sqrt(-2 * math.log(u1)) * math.sin(2 * math.pi * u2), rel=1e-14)
    big = empty((1_000_000,), np.float32)
    K.set_num_threads(1)
    K.normal(7, operand(big), big.size, 7, 0, 2.0, 3.0)
    single = big.copy()
    K.set_num_threads(2)
    K.normal(7, operand(big), big.size, 7, 0, 2.0, 3.0)
    np.testing.assert_array_equal(big, single)
    assert abs(big.mean() - 2.0) < 0.02 and abs(big.std() - 3.0) < 0.02
    r = empty((1000,), np.int64)
    K.randint(5, operand(r), 1000, 3, 0, -5, 5)
    assert r.min() == -5 and r.max() == 4
    K.randint(5, operand(r), 1000, 3, 0, 0, 2**40)
    assert r.min() >= 0 and r.max() < 2**40 and r.max() > 2**32
    with pytest.raises(ValueError):
        K.randint(5, operand(r), 1000, 3, 0, 5, 5)


def test_tables_and_threads():
    """The op tables carry the documented codes; thread count round-trips."""
    assert U["relu"] == 35 and B["bitwise_right_shift"] == 20 and C["ge"] == 5 and R["mean"] == 8
    n = K.get_num_threads()
    K.set_num_threads(1)
    assert K.get_num_threads() == 1
    K.set_num_threads(n)
