"""matmul, tensordot, vecdot, matrix_transpose and the linalg extension against numpy.linalg."""
import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

from array_api_support import SETTINGS, assert_matches

floats = st.floats(-4, 4, width=64)


@SETTINGS
@given(data=st.data())
def test_matmul(xp, data):
    dtype = data.draw(st.sampled_from(["float32", "float64", "int64"]))
    n, k, m = (data.draw(st.integers(1, 4)) for _ in range(3))
    batch = data.draw(hnp.array_shapes(min_dims=0, max_dims=2, max_side=3))
    elements = st.integers(-5, 5) if dtype == "int64" else st.floats(-4, 4, width=int(dtype[-2:]))
    a = data.draw(hnp.arrays(dtype, batch + (n, k), elements=elements))
    b = data.draw(hnp.arrays(dtype, (k, m), elements=elements))
    assert_matches(xp.matmul(xp.asarray(a), xp.asarray(b)), np.matmul(a, b), rtol=1e-4 if dtype == "float32" else None)
    v = data.draw(hnp.arrays(dtype, (k,), elements=elements))
    assert_matches(xp.matmul(xp.asarray(a), xp.asarray(v)), np.matmul(a, v), rtol=1e-4 if dtype == "float32" else None)


@SETTINGS
@given(data=st.data())
def test_tensordot(xp, data):
    a = data.draw(hnp.arrays("float64", hnp.array_shapes(min_dims=0, max_dims=3, max_side=3), elements=floats))
    n = data.draw(st.integers(0, a.ndim))
    tail = a.shape[a.ndim - n:]
    b = data.draw(hnp.arrays("float64", tail + tuple(data.draw(st.lists(st.integers(1, 3), max_size=2))),
                             elements=floats))
    assert_matches(xp.tensordot(xp.asarray(a), xp.asarray(b), axes=n), np.tensordot(a, b, axes=n), atol=1e-12)
    if a.ndim >= 1:
        pair = ([a.ndim - 1], [0])
        c = data.draw(hnp.arrays("float64", (a.shape[-1], 2), elements=floats))
        assert_matches(xp.tensordot(xp.asarray(a), xp.asarray(c), axes=pair), np.tensordot(a, c, axes=pair),
                       atol=1e-12)


@SETTINGS
@given(data=st.data())
def test_vecdot(xp, data):
    s = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=1, max_dims=3, min_side=1, max_side=3))
    n = data.draw(st.integers(1, 3))
    dtype = data.draw(st.sampled_from(["float64", "int32"]))
    elements = st.integers(-5, 5) if dtype == "int32" else floats
    a = data.draw(hnp.arrays(dtype, s.input_shapes[0] + (n,), elements=elements))
    b = data.draw(hnp.arrays(dtype, s.input_shapes[1] + (n,), elements=elements))
    assert_matches(xp.vecdot(xp.asarray(a), xp.asarray(b)), np.vecdot(a, b), atol=1e-12)
    assert_matches(xp.linalg.vecdot(xp.asarray(a), xp.asarray(b), axis=-1), np.vecdot(a, b), atol=1e-12)


def _well_conditioned(data, batch=True):
    n = data.draw(st.integers(1, 4))
    shape = (data.draw(hnp.array_shapes(min_dims=0, max_dims=1, max_side=2)) if batch else ()) + (n, n)
    a = data.draw(hnp.arrays("float64", shape, elements=floats))
    return a + 10 * np.eye(n)  # diagonally dominant: invertible, positive definite after symmetrization


@SETTINGS
@given(data=st.data())
def test_decompositions(xp, data):
    a = _well_conditioned(data)
    spd = a @ np.swapaxes(a, -1, -2)
    t = xp.asarray(a)
    assert_matches(xp.linalg.inv(t), np.linalg.inv(a), atol=1e-12)
    assert_matches(xp.linalg.det(t), np.linalg.det(a), rtol=1e-10)
    sign, logabs = xp.linalg.slogdet(t)
    assert_matches(sign, np.linalg.slogdet(a).sign)
    assert_matches(logabs, np.linalg.slogdet(a).logabsdet, rtol=1e-10)
    assert_matches(xp.linalg.cholesky(xp.asarray(spd)), np.linalg.cholesky(spd), atol=1e-10)
    assert_matches(xp.linalg.cholesky(xp.asarray(spd), upper=True),
                   np.swapaxes(np.linalg.cholesky(spd), -1, -2), atol=1e-10)
    assert_matches(xp.linalg.eigvalsh(xp.asarray(spd)), np.linalg.eigvalsh(spd), rtol=1e-10)
    w, v = xp.linalg.eigh(xp.asarray(spd))
    np.testing.assert_allclose(v.numpy() @ (w.numpy()[..., None] * np.swapaxes(v.numpy(), -1, -2)), spd, atol=1e-8)
    b = np.ones(a.shape[:-1])
    assert_matches(xp.linalg.solve(t, xp.asarray(b[..., None])), np.linalg.solve(a, b[..., None]), atol=1e-12)
    q, r = xp.linalg.qr(t)
    np.testing.assert_allclose(q.numpy() @ r.numpy(), a, atol=1e-10)
    u, s, vh = xp.linalg.svd(t, full_matrices=False)
    np.testing.assert_allclose((u.numpy() * s.numpy()[..., None, :]) @ vh.numpy(), a, atol=1e-10)
    assert_matches(xp.linalg.svdvals(t), np.linalg.svd(a, compute_uv=False), rtol=1e-10)
    assert_matches(xp.linalg.pinv(t), np.linalg.pinv(a), atol=1e-10)
    assert_matches(xp.linalg.matrix_rank(t), np.linalg.matrix_rank(a).astype("int64"))
    for n in (-2, 0, 1, 3):
        assert_matches(xp.linalg.matrix_power(t, n), np.linalg.matrix_power(a, n), rtol=1e-9, atol=1e-9)


@SETTINGS
@given(data=st.data())
def test_norms_trace_diagonal(xp, data):
    # no subnormals: squaring them underflows in NumPy, while vector_norm scales first and keeps them
    a = data.draw(hnp.arrays("float64", hnp.array_shapes(min_dims=2, max_dims=3, min_side=1, max_side=4),
                             elements=st.floats(-4, 4, allow_subnormal=False)))
    t = xp.asarray(a)
    for ord in ("fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf):
        assert_matches(xp.linalg.matrix_norm(t, ord=ord), np.linalg.matrix_norm(a, ord=ord), rtol=1e-9, atol=1e-12)
    assert_matches(xp.linalg.matrix_norm(t, keepdims=True), np.linalg.matrix_norm(a, keepdims=True), rtol=1e-12)
    axis = data.draw(st.none() | st.integers(-a.ndim, a.ndim - 1) | st.just((0, 1)))
    for ord in (2, 1, 0, 3, np.inf, -np.inf):
        assert_matches(xp.linalg.vector_norm(t, axis=axis, ord=ord), np.linalg.vector_norm(a, axis=axis, ord=ord),
                       rtol=1e-10)
    offset = data.draw(st.integers(-2, 2))
    assert_matches(xp.linalg.diagonal(t, offset=offset), np.linalg.diagonal(a, offset=offset))
    assert_matches(xp.linalg.trace(t, offset=offset), np.linalg.trace(a, offset=offset), atol=1e-12)
    v = a.reshape(-1)
    assert_matches(xp.linalg.outer(xp.asarray(v), xp.asarray(v[:2])), np.linalg.outer(v, v[:2]))


def test_vector_norm_extremes(xp):
    x = xp.asarray([2e38, 3e38], dtype=xp.float32)
    assert xp.linalg.vector_norm(x).numpy() == np.inf  # the true norm, 3.6e38, is beyond float32
    y = xp.asarray([3e30, 4e30], dtype=xp.float32)
    np.testing.assert_allclose(xp.linalg.vector_norm(y).numpy(), 5e30, rtol=1e-6)
    assert xp.linalg.vector_norm(xp.asarray([1.0, -np.inf])).numpy() == np.inf


@SETTINGS
@given(data=st.data())
def test_cross(xp, data):
    s = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=2, max_side=3))
    a = data.draw(hnp.arrays("float64", s.input_shapes[0] + (3,), elements=floats))
    b = data.draw(hnp.arrays("float64", s.input_shapes[1] + (3,), elements=floats))
    assert_matches(xp.linalg.cross(xp.asarray(a), xp.asarray(b)), np.linalg.cross(a, b), atol=1e-12)


def test_linalg_errors(xp):
    with pytest.raises(ValueError, match="square"):
        xp.linalg.inv(xp.ones((2, 3)))
    with pytest.raises(TypeError, match="floating-point"):
        xp.linalg.det(xp.ones((2, 2), dtype=xp.int64))
    with pytest.raises(ValueError, match="3 elements"):
        xp.linalg.cross(xp.ones(2), xp.ones(2))
    with pytest.raises(ValueError, match="contracted axes differ"):
        xp.tensordot(xp.ones((2, 3)), xp.ones((2, 3)), axes=1)
