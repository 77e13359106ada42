"""matmul, mm, bmm, dot and mv against NumPy's float64 (or exact integer) products."""
import numpy as np
import pytest

import tensorplug as tp

DTYPES = [tp.float16, tp.float32, tp.float64, tp.int64, tp.int32]


def _np(dtype):
    return np.dtype(dtype.name)


def _values(rng, dtype, shape):
    if dtype.is_floating_point:
        return rng.uniform(-1, 1, shape).astype(_np(dtype))
    return rng.integers(-5, 6, shape).astype(_np(dtype))


def check_product(result, a, b, dtype):
    """``result`` equals a @ b computed in float64 (exactly for integers)."""
    assert result.dtype is dtype
    if dtype.is_floating_point:
        wide_a, wide_b = a.astype(np.float64), b.astype(np.float64)
        expected = np.matmul(wide_a, wide_b)
        assert tuple(result.shape) == np.shape(expected)
        # Error bound: a few units of rounding times the sum of |a||b| terms.
        scale = np.matmul(np.abs(wide_a), np.abs(wide_b))
        eps = {tp.float16: 2e-3, tp.float32: 2e-6, tp.float64: 1e-13}[dtype]
        np.testing.assert_array_less(np.abs(result.numpy().astype(np.float64) - expected), eps * scale + eps)
    else:
        expected = np.matmul(a.astype(np.int64), b.astype(np.int64))
        assert tuple(result.shape) == np.shape(expected)
        np.testing.assert_array_equal(result.numpy(), expected.astype(_np(dtype)))


SHAPES = [
    ((3,), (3,)),
    ((3,), (3, 4)),
    ((2, 3), (3,)),
    ((2, 3), (3, 4)),
    ((1, 1), (1, 1)),
    ((5, 2, 3), (5, 3, 4)),
    ((5, 2, 3), (3, 4)),
    ((2, 3), (5, 3, 4)),
    ((2, 1, 2, 3), (5, 3, 4)),
    ((4, 1, 2, 3), (1, 6, 3, 2)),
    ((3,), (2, 3, 4)),
    ((2, 2, 3), (3,)),
    ((0, 3), (3, 4)),
    ((2, 3), (3, 0)),
    ((0, 2, 3), (0, 3, 4)),
]


@pytest.mark.parametrize("shape_a, shape_b", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_matmul_shapes(shape_a, shape_b, dtype):
    """matmul follows NumPy's rules for 1-D operands and broadcast batch dims."""
    rng = np.random.default_rng(len(shape_a) * 10 + len(shape_b))
    a, b = _values(rng, dtype, shape_a), _values(rng, dtype, shape_b)
    check_product(tp.matmul(tp.tensor(a), tp.tensor(b)), a, b, dtype)
    check_product(tp.tensor(a) @ tp.tensor(b), a, b, dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("which", ["a", "b", "both"])
def test_matmul_transposed_operands(dtype, which):
    """Transposed (column-major) and sliced operands give the same product."""
    rng = np.random.default_rng(4)
    a_store = _values(rng, dtype, (5, 4))   # a = a_store.T: (4, 5)
    b_store = _values(rng, dtype, (6, 10))  # b = b_store[:5, ::2]: (5, 5) strided
    a_np = a_store.T if which in ("a", "both") else np.ascontiguousarray(a_store.T)
    b_np = b_store[:5, ::2] if which in ("b", "both") else np.ascontiguousarray(b_store[:5, ::2])
    ta = tp.tensor(a_store).t() if which in ("a", "both") else tp.tensor(a_np)
    tb = tp.tensor(b_store)[:5, ::2] if which in ("b", "both") else tp.tensor(b_np)
    check_product(tp.matmul(ta, tb), a_np, b_np, dtype)


@pytest.mark.parametrize("dtype", [tp.float32, tp.float64, tp.int64])
def test_batched_transposed_operands(dtype):
    """mT of batched operands and expanded (stride-0) batch dims work."""
    rng = np.random.default_rng(6)
    a = _values(rng, dtype, (3, 4, 2))
    b = _values(rng, dtype, (1, 4, 5))
    result = tp.matmul(tp.tensor(a).mT, tp.tensor(b).expand(3, 4, 5))
    check_product(result, a.swapaxes(-1, -2), np.broadcast_to(b, (3, 4, 5)), dtype)


@pytest.mark.parametrize("dtype", [tp.float32, tp.float64])
def test_large_matmul(dtype):
    """A (96, 200) @ (200, 80) product (the BLAS path) is accurate."""
    rng = np.random.default_rng(7)
    a, b = _values(rng, dtype, (96, 200)), _values(rng, dtype, (200, 80))
    check_product(tp.tensor(a) @ tp.tensor(b), a, b, dtype)


@pytest.mark.parametrize("dtype", [tp.float32, tp.float64])
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "strided"])
@pytest.mark.parametrize("shapes", [((64, 600), (600, 130)), ((130, 64), (64, 1000)), ((3, 70, 40), (3, 40, 300))])
def test_blocked_matmul(dtype, layout, shapes):
    """Products large enough to be split into blocks of rows or columns (single-threaded BLAS
    calls on the backend's threads), with transposed or strided operands and a strided output,
    equal the float64 product on one thread and on two."""
    rng = np.random.default_rng(8)
    a, b = _values(rng, dtype, shapes[0]), _values(rng, dtype, shapes[1])

    def operand(x):
        if layout == "transposed":
            return tp.tensor(np.ascontiguousarray(x.swapaxes(-1, -2))).mT
        if layout == "strided":
            wide = np.zeros(x.shape[:-1] + (2 * x.shape[-1],), x.dtype)
            wide[..., ::2] = x
            return tp.tensor(wide)[..., ::2]
        return tp.tensor(x)

    threads = tp.get_num_threads()
    try:
        for n in (1, 2):
            tp.set_num_threads(n)
            result = operand(a) @ operand(b)
            check_product(result, a, b, dtype)
            out = tp.empty(tuple(result.shape[:-1]) + (2 * result.shape[-1],), dtype=dtype)[..., ::2]
            tp.matmul(operand(a), operand(b), out=out)
            np.testing.assert_array_equal(out.numpy(), result.numpy())
    finally:
        tp.set_num_threads(threads)


def _half_values(rng, dtype, shape):
    """float64 values exactly representable in ``dtype`` (rounded through the library itself)."""
    return tp.tensor(rng.uniform(-1, 1, shape), dtype=tp.float32).to(dtype).double().numpy()


@pytest.mark.parametrize("dtype", [tp.float16, tp.bfloat16], ids=lambda d: d.name)
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "strided"])
@pytest.mark.parametrize("shapes", [((64, 600), (600, 130)), ((3, 17, 33), (3, 33, 65)), ((5, 1), (1, 900))])
def test_half_precision_matmul_rounds_once(dtype, layout, shapes):
    """float16/bfloat16 products above the tiny size run as float32 sgemm on widened copies
    (autocast's matmuls): each result is the float64 product of the operands rounded once to
    ``dtype``, within the float32 accumulation's error, for any operand layout and a strided out."""
    rng = np.random.default_rng(9)
    a, b = _half_values(rng, dtype, shapes[0]), _half_values(rng, dtype, shapes[1])

    def operand(x):
        if layout == "transposed":
            return tp.tensor(np.ascontiguousarray(x.swapaxes(-1, -2)), dtype=dtype).mT
        if layout == "strided":
            wide = np.zeros(x.shape[:-1] + (2 * x.shape[-1],))
            wide[..., ::2] = x
            return tp.tensor(wide, dtype=dtype)[..., ::2]
        return tp.tensor(x, dtype=dtype)

    expected = a @ b
    result = operand(a) @ operand(b)
    assert result.dtype is dtype
    spacing = 2.0 ** -8 if dtype is tp.bfloat16 else 2.0 ** -11
    accumulation = 1e-6 * (np.abs(a) @ np.abs(b))  # float32 sums of at most 600 terms
    np.testing.assert_array_less(np.abs(result.double().numpy() - expected), spacing * np.abs(expected) + accumulation
                                 + 1e-7)
    out = tp.empty(tuple(result.shape[:-1]) + (2 * result.shape[-1],), dtype=dtype)[..., ::2]
    tp.matmul(operand(a), operand(b), out=out)
    np.testing.assert_array_equal(out.double().numpy(), result.double().numpy())


def test_float16_matmul_accumulates_in_float32():
    """2048 products of float16 ones sum to 2048 exactly, and 4096 to 4096."""
    a = tp.ones(1, 4096, dtype=tp.float16)
    b = tp.ones(4096, 1, dtype=tp.float16)
    assert (a @ b).item() == 4096.0


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_k_zero_gives_zeros(dtype):
    """Inner dimension 0 gives a zero matrix of the outer shape."""
    result = tp.matmul(tp.ones(3, 0, dtype=dtype), tp.ones(0, 4, dtype=dtype))
    assert result.shape == (3, 4) and result.dtype is dtype
    np.testing.assert_array_equal(result.numpy(), np.zeros((3, 4)))
    assert tp.dot(tp.ones(0, dtype=dtype), tp.ones(0, dtype=dtype)).item() == 0


@pytest.mark.parametrize("dtype", [tp.float32, tp.int64])
def test_mm_bmm_dot_mv(dtype):
    """mm, bmm, dot and mv give NumPy's products for their shapes."""
    rng = np.random.default_rng(8)
    a, b = _values(rng, dtype, (2, 3)), _values(rng, dtype, (3, 4))
    check_product(tp.mm(tp.tensor(a), tp.tensor(b)), a, b, dtype)
    ba, bb = _values(rng, dtype, (4, 2, 3)), _values(rng, dtype, (4, 3, 5))
    check_product(tp.bmm(tp.tensor(ba), tp.tensor(bb)), ba, bb, dtype)
    u, v = _values(rng, dtype, (7,)), _values(rng, dtype, (7,))
    check_product(tp.dot(tp.tensor(u), tp.tensor(v)), u, v, dtype)
    m, x = _values(rng, dtype, (3, 7)), _values(rng, dtype, (7,))
    check_product(tp.mv(tp.tensor(m), tp.tensor(x)), m, x, dtype)
    check_product(tp.tensor(a).matmul(tp.tensor(b)), a, b, dtype)


@pytest.mark.parametrize(
    "shape_a, shape_b, pattern",
    [((2, 3), (4, 5), r"2x3.*4x5"), ((3,), (4,), r"3.*4"), ((2, 3), (2,), r"2x3.*2"), ((5, 2, 3), (5, 4, 3), r"2x3.*4x3")],
    ids=str,
)
def test_matmul_shape_mismatch_names_both_shapes(shape_a, shape_b, pattern):
    """A contraction mismatch raises RuntimeError naming both operands' shapes."""
    with pytest.raises(RuntimeError, match=pattern):
        tp.matmul(tp.ones(*shape_a), tp.ones(*shape_b))


def test_matmul_batch_mismatch_raises():
    """Batch dims that do not broadcast raise RuntimeError."""
    with pytest.raises(RuntimeError):
        tp.matmul(tp.ones(2, 2, 3), tp.ones(3, 3, 4))


def test_mm_bmm_dot_argument_errors():
    """mm needs 2-D, bmm 3-D with equal batches, dot 1-D of one length, same dtypes."""
    with pytest.raises(RuntimeError):
        tp.mm(tp.ones(2, 3, 4), tp.ones(4, 2))
    with pytest.raises(RuntimeError):
        tp.mm(tp.ones(2, 3), tp.ones(4, 2))
    with pytest.raises(RuntimeError):
        tp.bmm(tp.ones(2, 3, 4), tp.ones(3, 4, 2))
    with pytest.raises(RuntimeError):
        tp.dot(tp.ones(3), tp.ones(4))
    with pytest.raises(RuntimeError, match="float32.*float64|float64.*float32"):
        tp.matmul(tp.ones(2, 2), tp.ones(2, 2, dtype=tp.float64))
    with pytest.raises(RuntimeError):
        tp.matmul(tp.ones(()), tp.ones(2))


@pytest.mark.parametrize("dtype", [tp.float32, tp.float64, tp.int64], ids=lambda d: d.name)
def test_matmul_with_stride_zero_operands(dtype):
    """2-D operands made by expand() (stride 0 rows or columns) multiply correctly."""
    rng = np.random.default_rng(14)
    col = _values(rng, dtype, (3, 1))
    row = _values(rng, dtype, (1, 5))
    a = tp.tensor(col).expand(3, 4)
    b = tp.tensor(row).expand(4, 5)
    check_product(a @ b, np.broadcast_to(col, (3, 4)), np.broadcast_to(row, (4, 5)), dtype)
