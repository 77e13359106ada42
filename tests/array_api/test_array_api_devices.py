"""One call of every namespace function on each device, checked against NumPy on the host.

The per-function tests run on the CPU with hypothesis; here fixed small inputs make sure that each
function's composite of tp ops (or its host round trip) works on every backend and leaves the
result on the input's device.
"""
import numpy as np
import pytest

from array_api_support import assert_matches

A = np.array([[1.5, -2.0, 0.0], [3.0, 0.5, -1.0]], dtype=np.float32)
B = np.array([[0.5, 1.0, -3.0], [2.0, -0.5, 4.0]], dtype=np.float32)
I = np.array([[3, 1, 3], [0, 2, 1]], dtype=np.int32)
SQUARE = (np.array([[4.0, 1.0], [1.0, 3.0]], dtype=np.float32))

UNARY = ["abs", "acos", "acosh", "asin", "asinh", "atan", "atanh", "ceil", "conj", "cos", "cosh", "exp", "expm1",
         "floor", "imag", "isfinite", "isinf", "isnan", "log", "log1p", "log2", "log10", "negative", "positive",
         "real", "reciprocal", "round", "sign", "signbit", "sin", "sinh", "square", "sqrt", "tan", "tanh", "trunc"]
NUMPY_NAMES = {"acos": "arccos", "acosh": "arccosh", "asin": "arcsin", "asinh": "arcsinh", "atan": "arctan",
               "atanh": "arctanh", "atan2": "arctan2", "pow": "power", "bitwise_invert": "invert",
               "bitwise_left_shift": "left_shift", "bitwise_right_shift": "right_shift"}
BINARY = ["add", "atan2", "copysign", "divide", "equal", "floor_divide", "greater", "greater_equal", "hypot",
          "less", "less_equal", "logaddexp", "maximum", "minimum", "multiply", "nextafter", "not_equal", "pow",
          "remainder", "subtract"]
INT_BINARY = ["bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift"]


def _np(name):
    return getattr(np, NUMPY_NAMES.get(name, name))


def _on(xp, device, value):
    return xp.asarray(value, device=device)


def _check(got, expected, device, **kw):
    assert got.device.type == device
    assert_matches(got, expected, **kw)


@pytest.mark.parametrize("name", UNARY)
def test_unary(xp, device, name):
    with np.errstate(all="ignore"):
        _check(getattr(xp, name)(_on(xp, device, A)), _np(name)(A), device, rtol=3e-5, atol=1e-6)


@pytest.mark.parametrize("name", BINARY)
def test_binary(xp, device, name):
    divisor = np.where(B == 0, 1, B).astype(B.dtype)
    with np.errstate(all="ignore"):
        expected = _np(name)(np.abs(A) if name == "pow" else A, divisor)
    got = getattr(xp, name)(_on(xp, device, np.abs(A) if name == "pow" else A), _on(xp, device, divisor))
    _check(got, expected, device, rtol=3e-5, atol=1e-6)


@pytest.mark.parametrize("name", INT_BINARY + ["logical_and", "logical_or", "logical_xor", "bitwise_invert",
                                               "logical_not"])
def test_integer_and_logical(xp, device, name):
    args = (I > 1, I < 3) if name.startswith("logical") else (I, I)
    if name in ("bitwise_invert", "logical_not"):
        args = args[:1]
    _check(getattr(xp, name)(*[_on(xp, device, a) for a in args]), _np(name)(*args), device)


def test_clip_where_and_promotion(xp, device):
    _check(xp.clip(_on(xp, device, A), -1.0, 1.0), np.clip(A, -1.0, 1.0), device)
    _check(xp.where(_on(xp, device, A > 0), _on(xp, device, A), 0.0), np.where(A > 0, A, np.float32(0)), device)
    _check(xp.add(_on(xp, device, I), xp.asarray(1, dtype=xp.int64, device=device)), I + np.int64(1), device)


@pytest.mark.parametrize("name", ["sum", "prod", "max", "min", "mean", "std", "var", "all", "any"])
def test_reductions(xp, device, name):
    x = _on(xp, device, A)
    _check(getattr(xp, name)(x, axis=1), getattr(np, name)(A, axis=1), device, rtol=1e-5)
    _check(getattr(xp, name)(x, axis=(0, 1), keepdims=True), getattr(np, name)(A, axis=(0, 1), keepdims=True),
           device, rtol=1e-5)


def test_cumulative_and_diff(xp, device):
    x = _on(xp, device, A)
    _check(xp.cumulative_sum(x, axis=1, include_initial=True), np.cumulative_sum(A, axis=1, include_initial=True),
           device, rtol=1e-6)
    _check(xp.cumulative_prod(x, axis=0), np.cumulative_prod(A, axis=0), device, rtol=1e-6)
    _check(xp.diff(x, axis=1), np.diff(A, axis=1), device)


def test_searching_sorting_sets(xp, device):
    x = _on(xp, device, I)
    _check(xp.argmax(x, axis=1), np.argmax(I, axis=1), device)
    _check(xp.argmin(x), np.argmin(I), device)
    _check(xp.count_nonzero(x, axis=0), np.count_nonzero(I, axis=0).astype(np.int64), device)
    for g, e in zip(xp.nonzero(x), np.nonzero(I)):
        _check(g, e.astype(np.int64), device)
    _check(xp.sort(x, axis=1), np.sort(I, axis=1), device)
    _check(xp.argsort(x, axis=1, descending=True), np.array([[0, 2, 1], [1, 2, 0]]), device)
    hay = np.array([0.0, 1.0, 2.5], dtype=np.float32)
    _check(xp.searchsorted(_on(xp, device, hay), _on(xp, device, A)), np.searchsorted(hay, A).astype(np.int64), device)
    ref = np.unique_all(I)
    got = xp.unique_all(x)
    for g, e in zip(got, ref):
        _check(g, e.astype(np.int64) if e.dtype.kind == "i" and e is not ref.values else e, device)
    _check(xp.unique_values(x), np.unique(I), device)
    _check(xp.unique_counts(x).counts, np.unique_counts(I).counts.astype(np.int64), device)
    _check(xp.unique_inverse(x).inverse_indices, np.unique_inverse(I).inverse_indices.astype(np.int64), device)
    idx = np.array([2, 0, -1], dtype=np.int64)
    _check(xp.take(x, _on(xp, device, idx), axis=1), np.take(I, idx, axis=1), device)
    along = np.array([[2, 0], [1, 1]], dtype=np.int64)
    _check(xp.take_along_axis(x, _on(xp, device, along), axis=1), np.take_along_axis(I, along, axis=1), device)


def test_manipulation(xp, device):
    x = _on(xp, device, A)
    _check(xp.concat([x, _on(xp, device, B)], axis=0), np.concat([A, B]), device)
    _check(xp.stack([x, x], axis=1), np.stack([A, A], axis=1), device)
    _check(xp.expand_dims(x, axis=1), np.expand_dims(A, 1), device)
    _check(xp.flip(x, axis=1), np.flip(A, 1), device)
    _check(xp.moveaxis(x, 0, 1), np.moveaxis(A, 0, 1), device)
    _check(xp.permute_dims(x, (1, 0)), A.T, device)
    _check(xp.repeat(x, 2, axis=1), np.repeat(A, 2, axis=1), device)
    _check(xp.repeat(x, _on(xp, device, np.array([1, 0, 2])), axis=1), np.repeat(A, [1, 0, 2], axis=1), device)
    _check(xp.reshape(x, (3, 2)), A.reshape(3, 2), device)
    _check(xp.roll(x, 1, axis=1), np.roll(A, 1, axis=1), device)
    _check(xp.roll(x, 2), np.roll(A, 2), device)
    _check(xp.squeeze(xp.expand_dims(x, axis=0), axis=0), A, device)
    _check(xp.tile(x, (2, 1)), np.tile(A, (2, 1)), device)
    _check(xp.unstack(x, axis=1)[2], A[:, 2], device)
    _check(xp.broadcast_to(x[:1], (2, 3)), np.broadcast_to(A[:1], (2, 3)), device)
    _check(xp.broadcast_arrays(x, x[:1])[1], np.broadcast_to(A[:1], (2, 3)), device)


def test_linear_algebra(xp, device):
    x, s = _on(xp, device, A), _on(xp, device, SQUARE)
    _check(xp.matmul(x, xp.matrix_transpose(x)), A @ A.T, device, rtol=1e-5)
    _check(xp.tensordot(x, x, axes=([1], [1])), np.tensordot(A, A, axes=([1], [1])), device, rtol=1e-5)
    _check(xp.vecdot(x, _on(xp, device, B)), np.vecdot(A, B), device, rtol=1e-5)
    _check(xp.linalg.inv(s), np.linalg.inv(SQUARE), device, rtol=1e-5)
    _check(xp.linalg.det(s), np.linalg.det(SQUARE), device, rtol=1e-5)
    _check(xp.linalg.cholesky(s), np.linalg.cholesky(SQUARE), device, rtol=1e-5)
    _check(xp.linalg.eigvalsh(s), np.linalg.eigvalsh(SQUARE), device, rtol=1e-5)
    _check(xp.linalg.solve(s, s), np.eye(2, dtype=np.float32), device, rtol=1e-5, atol=1e-6)
    _check(xp.linalg.svdvals(x), np.linalg.svd(A, compute_uv=False), device, rtol=1e-5)
    _check(xp.linalg.matrix_norm(x, ord=1), np.linalg.matrix_norm(A, ord=1), device)
    _check(xp.linalg.vector_norm(x, axis=1), np.linalg.vector_norm(A, axis=1), device, rtol=1e-6)
    _check(xp.linalg.trace(s), np.trace(SQUARE), device)
    _check(xp.linalg.outer(x[0], x[1]), np.outer(A[0], A[1]), device)
    _check(xp.linalg.cross(x, _on(xp, device, B)), np.cross(A, B), device, rtol=1e-6)
    _check(xp.linalg.matrix_power(s, 3), np.linalg.matrix_power(SQUARE, 3), device, rtol=1e-5)


def test_creation_and_dtypes(xp, device):
    _check(xp.eye(3, k=1, device=device), np.eye(3, k=1, dtype=np.float32), device)
    _check(xp.tril(_on(xp, device, A)), np.tril(A), device)
    _check(xp.triu(_on(xp, device, A), k=1), np.triu(A, k=1), device)
    _check(xp.meshgrid(_on(xp, device, A[0]), _on(xp, device, B[0]))[1], np.meshgrid(A[0], B[0])[1], device)
    _check(xp.astype(_on(xp, device, A), xp.int32), A.astype(np.int32), device)
    _check(xp.full_like(_on(xp, device, I), 7), np.full_like(I, 7), device)
