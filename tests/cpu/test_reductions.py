"""Reductions and scans on the CPU backend against NumPy (float64 or exact integers)."""
import numpy as np
import pytest

import tensorplug as tp

FLOATS = [tp.float16, tp.float32, tp.float64]
INTS = [tp.uint8, tp.int8, tp.int16, tp.int32, tp.int64]
ALL = [tp.bool] + INTS + FLOATS
TOL = {tp.float16: (2e-3, 2e-3), tp.float32: (1e-5, 1e-5), tp.float64: (1e-12, 1e-12)}

DIMS = [None, 0, -1, 1, (0, 2), (-1, 0), (0, 1, 2), ()]
LAYOUTS = ["contiguous", "transposed", "sliced"]


def _np(dtype):
    return np.dtype(dtype.name)


def _values(rng, dtype, shape, low=-3, high=4):
    if dtype is tp.bool:
        return rng.integers(0, 2, shape).astype(bool)
    if dtype.is_floating_point:
        return (rng.integers(low * 4, high * 4, shape) / 4).astype(_np(dtype))
    return rng.integers(max(low, 0) if dtype is tp.uint8 else low, high, shape).astype(_np(dtype))


def _layout(values, layout):
    """A (2, 3, 4) tensor holding ``values`` in ``layout``."""
    if layout == "contiguous":
        return tp.tensor(values)
    if layout == "transposed":
        t = tp.tensor(np.ascontiguousarray(values.transpose(2, 1, 0))).permute(2, 1, 0)
    else:
        big = np.zeros((4, 3, 8), dtype=values.dtype)
        big[1::2, :, ::2] = values
        t = tp.tensor(big)[1::2, :, ::2]
    assert not t.is_contiguous()
    return t


def _np_axis(dim):
    if dim is None or dim == ():
        return None
    return dim


def _dim_kwargs(dim, keepdim):
    """keyword arguments that reduce over ``dim`` (all dims when None)."""
    return {"keepdim": keepdim} if dim is None else {"dim": dim, "keepdim": keepdim}


def check(result, expected, dtype):
    """``result`` has ``dtype``, ``expected``'s shape and values (dtype tolerance for floats)."""
    assert result.dtype is dtype, f"{result.dtype} != {dtype}"
    expected = np.asarray(expected)
    assert tuple(result.shape) == expected.shape
    if dtype.is_floating_point:
        rtol, atol = TOL[dtype]
        np.testing.assert_allclose(result.numpy().astype(np.float64), expected.astype(np.float64), rtol=rtol, atol=atol)
    else:
        np.testing.assert_array_equal(result.numpy(), expected.astype(_np(dtype)))


def _cases(dtypes):
    return [
        pytest.param(dtype, dim, keepdim, layout, id=f"{dtype.name}-{dim}-{'keep' if keepdim else 'drop'}-{layout}")
        for dtype in dtypes
        for dim in DIMS
        for keepdim in (False, True)
        for layout in LAYOUTS
    ]


def _input(dtype, layout, low=-3, high=4):
    rng = np.random.default_rng(5)
    values = _values(rng, dtype, (2, 3, 4), low, high)
    return _layout(values, layout), values


def _ref_sum_dtype(dtype):
    return tp.int64 if not dtype.is_floating_point else dtype


@pytest.mark.parametrize("dtype, dim, keepdim, layout", _cases(ALL))
def test_sum(dtype, dim, keepdim, layout):
    """sum over dims (None/int/negative/tuple/()) with keepdim; ints and bool sum to int64."""
    t, a = _input(dtype, layout)
    wide = a.astype(np.float64) if dtype.is_floating_point else a.astype(np.int64)
    expected = np.sum(wide, axis=_np_axis(dim), keepdims=keepdim)
    check(tp.sum(t, dim, keepdim), expected, _ref_sum_dtype(dtype))
    check(t.sum(**_dim_kwargs(dim, keepdim)), expected, _ref_sum_dtype(dtype))


@pytest.mark.parametrize("dtype, dim, keepdim, layout", _cases(ALL))
def test_prod(dtype, dim, keepdim, layout):
    """prod over dims with keepdim; ints and bool multiply in int64."""
    t, a = _input(dtype, layout, -2, 3)
    wide = a.astype(np.float64) if dtype.is_floating_point else a.astype(np.int64)
    expected = np.prod(wide, axis=_np_axis(dim), keepdims=keepdim)
    check(tp.prod(t, dim, keepdim), expected, _ref_sum_dtype(dtype))


@pytest.mark.parametrize("op", ["amax", "amin"])
@pytest.mark.parametrize("dtype, dim, keepdim, layout", _cases(ALL))
def test_amax_amin(op, dtype, dim, keepdim, layout):
    """amax/amin over dims with keepdim keep the input dtype."""
    t, a = _input(dtype, layout)
    expected = getattr(np, op)(a, axis=_np_axis(dim), keepdims=keepdim)
    result = getattr(tp, op)(t, **_dim_kwargs(dim, keepdim))
    check(result, expected, dtype)


@pytest.mark.parametrize("op", ["all", "any"])
@pytest.mark.parametrize("dtype, dim, keepdim, layout", _cases(ALL))
def test_all_any(op, dtype, dim, keepdim, layout):
    """all/any treat non-zero as true and give bool."""
    t, a = _input(dtype, layout, 0, 2)
    expected = getattr(np, op)(a != 0, axis=_np_axis(dim), keepdims=keepdim)
    check(getattr(tp, op)(t, dim, keepdim), expected, tp.bool)


@pytest.mark.parametrize("dtype, dim, keepdim, layout", _cases(FLOATS))
def test_mean(dtype, dim, keepdim, layout):
    """mean over dims with keepdim, in the input's float dtype."""
    t, a = _input(dtype, layout)
    expected = np.mean(a.astype(np.float64), axis=_np_axis(dim), keepdims=keepdim)
    check(tp.mean(t, dim, keepdim), expected, dtype)


@pytest.mark.parametrize("dtype", INTS + [tp.bool])
def test_mean_of_integers_raises(dtype):
    """mean of an integer or bool tensor raises; dtype=float works."""
    t = tp.ones(3, dtype=dtype)
    with pytest.raises(RuntimeError, match="mean"):
        tp.mean(t)
    check(tp.mean(t, dtype=tp.float64), 1.0, tp.float64)


@pytest.mark.parametrize("op", ["argmax", "argmin"])
@pytest.mark.parametrize("dtype", ALL, ids=lambda d: d.name)
@pytest.mark.parametrize("dim", [None, 0, 1, -1, 2])
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_argmax_argmin(op, dtype, dim, keepdim, layout):
    """argmax/argmin give the first extreme index (ties included), as int64."""
    t, a = _input(dtype, layout, -1, 2)  # few distinct values: many ties
    if dim is None:
        expected = getattr(np, op)(a)
        if keepdim:
            expected = np.reshape(expected, (1, 1, 1))
    else:
        expected = getattr(np, op)(a, axis=dim)
        if keepdim:
            expected = np.expand_dims(expected, dim)
    check(getattr(tp, op)(t, dim, keepdim), expected, tp.int64)


@pytest.mark.parametrize("op", ["max", "min"])
@pytest.mark.parametrize("dtype", ALL, ids=lambda d: d.name)
@pytest.mark.parametrize("dim", [0, -1, 1])
@pytest.mark.parametrize("keepdim", [False, True])
def test_max_min_with_dim(op, dtype, dim, keepdim):
    """max(t, dim)/min(t, dim) return (values, indices) with the first extreme index."""
    t, a = _input(dtype, "transposed", -1, 2)
    values, indices = getattr(tp, op)(t, dim, keepdim)
    result = getattr(tp, op)(t, dim=dim, keepdim=keepdim)
    assert result.values.tolist() == values.tolist() and result.indices.tolist() == indices.tolist()
    np_extreme = np.amax if op == "max" else np.amin
    np_arg = np.argmax if op == "max" else np.argmin
    expected_values = np_extreme(a, axis=dim, keepdims=keepdim)
    expected_indices = np_arg(a, axis=dim)
    if keepdim:
        expected_indices = np.expand_dims(expected_indices, dim)
    check(values, expected_values, dtype)
    check(indices, expected_indices, tp.int64)


@pytest.mark.parametrize("op", ["max", "min"])
def test_max_min_without_dim_and_with_other(op):
    """max(t) is the overall extreme (0-d); max(t, other) is the elementwise maximum."""
    a = np.array([[3.0, -1.0], [7.5, 2.0]])
    t = tp.tensor(a)
    check(getattr(tp, op)(t), (np.max if op == "max" else np.min)(a), tp.float64)
    other = tp.tensor([[0.0, 0.0], [10.0, 0.0]])
    elementwise = np.maximum if op == "max" else np.minimum
    check(getattr(tp, op)(t, other), elementwise(a, other.numpy()), tp.float64)


@pytest.mark.parametrize("op, np_op", [("cumsum", np.cumsum), ("cumprod", np.cumprod)])
@pytest.mark.parametrize("dtype", ALL, ids=lambda d: d.name)
@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_scans(op, np_op, dtype, dim, layout):
    """cumsum/cumprod along a dim; ints and bool scan in int64."""
    t, a = _input(dtype, layout, -2, 3)
    wide = a.astype(np.float64) if dtype.is_floating_point else a.astype(np.int64)
    check(getattr(tp, op)(t, dim), np_op(wide, axis=dim), _ref_sum_dtype(dtype))


def test_scan_with_dtype_and_zero_dim():
    """cumsum(dtype=...) converts first; a 0-d input gives a 0-d copy."""
    check(tp.cumsum(tp.tensor([1, 2, 3], dtype=tp.int8), 0, dtype=tp.float64), [1.0, 3.0, 6.0], tp.float64)
    z = tp.ones((), dtype=tp.float32)
    check(tp.cumsum(z, 0), 1.0, tp.float32)


def test_sum_with_dtype_argument():
    """sum(dtype=...) accumulates in the asked dtype (no int8 overflow)."""
    t = tp.full((100,), 100, dtype=tp.int8)
    check(tp.sum(t, dtype=tp.int64), 10000, tp.int64)
    check(tp.sum(t, dtype=tp.float64), 10000.0, tp.float64)


@pytest.mark.parametrize("dtype", [tp.float32, tp.float64, tp.int64, tp.int32])
@pytest.mark.parametrize("dim", [None, 0, 1])
def test_large_reductions_cross_the_threshold(dtype, dim):
    """Reductions of 60k-element tensors (parallel kernels) match NumPy along every dim."""
    rng = np.random.default_rng(11)
    a = _values(rng, dtype, (300, 200), -5, 6)
    t = tp.tensor(a)
    wide = a.astype(np.float64) if dtype.is_floating_point else a.astype(np.int64)
    check(tp.sum(t, dim) if dim is not None else tp.sum(t), np.sum(wide, axis=dim), _ref_sum_dtype(dtype))
    check(tp.amax(t, dim) if dim is not None else tp.amax(t), np.amax(a, axis=dim), dtype)
    check(tp.argmin(t, dim), np.argmin(a, axis=dim), tp.int64)
    check(tp.cumsum(t, 0 if dim is None else dim), np.cumsum(wide, axis=0 if dim is None else dim), _ref_sum_dtype(dtype))
    tt = t.t()
    check(tp.sum(tt, dim) if dim is not None else tp.sum(tt), np.sum(wide.T, axis=dim), _ref_sum_dtype(dtype))


def test_float32_sum_of_a_million_is_accurate():
    """A 1e6-element float32 sum is within 1e-6 relative of the float64 sum (no naive accumulation)."""
    rng = np.random.default_rng(3)
    a = rng.uniform(0, 1, 1_000_000).astype(np.float32)
    result = tp.sum(tp.tensor(a)).item()
    reference = np.sum(a.astype(np.float64))
    assert abs(result - reference) <= 1e-6 * reference
    mean = tp.mean(tp.tensor(a)).item()
    assert abs(mean - reference / a.size) <= 1e-6 * reference / a.size


def test_float16_sum_accumulates_in_float32():
    """Summing 4096 float16 ones gives 4096 (a float16 accumulator would stop at 2048)."""
    t = tp.ones(4096, dtype=tp.float16)
    assert tp.sum(t).item() == 4096.0
    assert tp.cumsum(tp.ones(3000, dtype=tp.float16), 0)[-1].item() == 3000.0


@pytest.mark.parametrize("op", ["amax", "amin", "argmax", "argmin"])
def test_reduction_over_an_empty_dim_raises(op):
    """amax/amin/argmax/argmin over an empty dim raise IndexError; over a non-empty dim they work."""
    t = tp.zeros(0, 3)
    with pytest.raises(IndexError):
        getattr(tp, op)(t, 0)
    assert getattr(tp, op)(t, 1).shape == (0,)
    with pytest.raises((IndexError, RuntimeError)):
        getattr(tp, op)(t)


def test_empty_reductions_have_identities():
    """sum of nothing is 0, prod 1, all True, any False."""
    t = tp.zeros(0, 3)
    check(tp.sum(t), 0.0, tp.float32)
    check(tp.sum(t, 0), np.zeros(3), tp.float32)
    check(tp.prod(t, 0), np.ones(3), tp.float32)
    check(tp.all(t), True, tp.bool)
    check(tp.any(t), False, tp.bool)
    check(tp.cumsum(t, 0), np.zeros((0, 3)), tp.float32)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("size", [10, 50_000])
def test_nan_propagates_in_amax_amin_sum(dtype, size):
    """A nan anywhere makes amax, amin, max, sum and prod nan; argmax points at the first nan."""
    a = np.linspace(-1, 1, size).astype(_np(dtype))
    a[size // 3] = np.nan
    a[size // 2] = np.nan
    t = tp.tensor(a)
    for op in ("amax", "amin", "sum", "prod", "max", "min"):
        assert np.isnan(getattr(tp, op)(t).item()), op
    assert tp.argmax(t).item() == size // 3
    assert tp.argmin(t).item() == size // 3
    rows = tp.tensor(a.reshape(-1, 2 if size == 10 else 100))
    expected = np.amax(a.reshape(rows.shape).astype(np.float64), axis=1)
    check(tp.amax(rows, 1), expected, dtype)
    check(tp.amax(rows.t(), 0), expected, dtype)


def test_reduction_dim_errors():
    """Out-of-range dims raise IndexError; a repeated dim raises RuntimeError."""
    t = tp.zeros(2, 3)
    with pytest.raises(IndexError):
        tp.sum(t, 2)
    with pytest.raises(IndexError):
        tp.amax(t, -3)
    with pytest.raises(RuntimeError):
        tp.sum(t, (0, 0))
    with pytest.raises(IndexError):
        tp.cumsum(t, 5)


def test_zero_dim_reductions():
    """Reducing a 0-d tensor over dim 0 or -1 returns its value."""
    z = tp.full((), 4.5)
    check(tp.sum(z), 4.5, tp.float32)
    check(tp.sum(z, 0), 4.5, tp.float32)
    check(tp.amax(z, -1), 4.5, tp.float32)
    check(tp.argmax(z), 0, tp.int64)


def test_reductions_of_expanded_inputs():
    """Reducing a stride-0 (expanded) tensor counts every broadcast element."""
    col = np.array([[1], [2], [3]], dtype=np.int64)
    t = tp.tensor(col).expand(3, 4)
    expected = np.broadcast_to(col, (3, 4))
    check(tp.sum(t, 1), expected.sum(1), tp.int64)
    check(tp.sum(t), expected.sum(), tp.int64)
    check(tp.cumsum(t, 1), np.cumsum(expected, 1), tp.int64)
    check(tp.argmax(t, 0), np.argmax(expected, 0), tp.int64)
