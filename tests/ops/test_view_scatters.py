"""select_scatter, slice_scatter, diagonal_scatter and as_strided_scatter: NumPy float64
references for values and gradients on every backend, PyTorch 2.13 for errors (issue 13)."""
import numpy as np
import pytest

import tensorplug as tp
from device_params import every_device, torch_or_skip


def _as_strided_positions(shape, size, stride, offset):
    """Row-major flat positions in an array of ``shape`` that as_strided(size, stride, offset) reads."""
    grid = np.indices(size).reshape(len(size), -1) if size else np.zeros((0, 1), dtype=np.int64)
    return offset + (np.asarray(stride, dtype=np.int64)[:, None] * grid).sum(axis=0)


# (name, tensorplug call, NumPy key into the input that the call writes)
CASES = [
    ("select", lambda x, s: tp.select_scatter(x, s, 1, 2), (slice(None), 2)),
    ("select_negative", lambda x, s: x.select_scatter(s, -1, -1), (Ellipsis, -1)),
    ("slice", lambda x, s: tp.slice_scatter(x, s, 1, 1, 5, 2), (slice(None), slice(1, 5, 2))),
    ("slice_default", lambda x, s: x.slice_scatter(s, start=2), (slice(2, None),)),
    ("diagonal", lambda x, s: tp.diagonal_scatter(x, s), "diag0"),
    ("diagonal_offset", lambda x, s: x.diagonal_scatter(s, 1, 1, 0), "diag1_t"),
]


def _numpy_view(array, key):
    if key == "diag0":
        n = min(array.shape)
        return (np.arange(n), np.arange(n))
    if key == "diag1_t":  # diagonal(offset=1, dim1=1, dim2=0): elements [j + 1, j]
        n = min(array.shape[0] - 1, array.shape[1])
        return (np.arange(n) + 1, np.arange(n))
    return key


@pytest.mark.parametrize("device", every_device())
@pytest.mark.parametrize("name,call,key", CASES, ids=[c[0] for c in CASES])
def test_values_and_gradients_match_numpy(device, name, call, key, rng):
    base = rng.normal(size=(4, 5))
    key = _numpy_view(base, key)
    src = rng.normal(size=base[key].shape)
    expected = base.copy()
    expected[key] = src
    x = tp.tensor(base, device=device, requires_grad=True)
    s = tp.tensor(src, device=device, requires_grad=True)
    got = call(x, s)
    np.testing.assert_array_equal(got.detach().cpu().numpy(), expected)
    np.testing.assert_array_equal(x.detach().cpu().numpy(), base)  # out of place
    weights = rng.normal(size=base.shape)
    (got * tp.tensor(weights, device=device)).sum().backward()
    expected_input_grad = weights.copy()
    expected_input_grad[key] = 0
    np.testing.assert_allclose(x.grad.cpu().numpy(), expected_input_grad)
    np.testing.assert_allclose(s.grad.cpu().numpy(), weights[key])


@pytest.mark.parametrize("device", every_device())
@pytest.mark.parametrize("size,stride,offset", [((2, 2), (1, 2), 1), ((3,), (4,), None), ((2, 3), (5, 1), 2)])
def test_as_strided_scatter_matches_numpy(device, size, stride, offset, rng):
    base = rng.normal(size=(3, 4))
    src = rng.normal(size=size)
    positions = _as_strided_positions(base.shape, size, stride, offset or 0)
    expected = base.reshape(-1).copy()
    expected[positions] = src.reshape(-1)
    x = tp.tensor(base, device=device, requires_grad=True)
    s = tp.tensor(src, device=device, requires_grad=True)
    got = tp.as_strided_scatter(x, s, size, stride, offset)
    np.testing.assert_array_equal(got.detach().cpu().numpy().reshape(-1), expected)
    weights = rng.normal(size=base.shape)
    (got * tp.tensor(weights, device=device)).sum().backward()
    expected_input_grad = weights.reshape(-1).copy()
    expected_input_grad[positions] = 0
    np.testing.assert_allclose(x.grad.cpu().numpy().reshape(-1), expected_input_grad)
    np.testing.assert_allclose(s.grad.cpu().numpy().reshape(-1), weights.reshape(-1)[positions])


def test_as_strided_scatter_follows_a_transposed_inputs_layout():
    """Offsets address the copy's storage, which keeps the input's (dense) strides."""
    base = np.arange(6.0).reshape(2, 3)
    got = tp.as_strided_scatter(tp.tensor(base).t(), tp.tensor([-1.0, -2.0]), (2,), (1,), 1)
    storage = base.reshape(-1).copy()  # the transposed view's storage order is base's row-major order
    storage[1:3] = [-1.0, -2.0]
    np.testing.assert_array_equal(got.numpy(), storage.reshape(2, 3).T)
    assert got.stride() == (1, 3)


def test_src_dtype_is_cast_to_the_inputs():
    got = tp.select_scatter(tp.zeros(2, 3), tp.tensor([1, 2, 3]), 0, 0)
    assert got.dtype == tp.float32
    assert got.tolist() == [[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]]


BAD = [
    ("select_scatter", lambda m: m.select_scatter(m.ones(3), 0, 1), RuntimeError, "src size = \\[3\\], slice size = \\[4\\]"),
    ("select_scatter", lambda m: m.select_scatter(m.ones(4), 0, 5), IndexError, "index 5 out of range"),
    ("slice_scatter", lambda m: m.slice_scatter(m.ones(3, 3), 1, 0, 4, 2), RuntimeError, "slice size = \\[3, 2\\]"),
    ("slice_scatter", lambda m: m.slice_scatter(m.ones(3, 2), 1, 0, 4, 0), RuntimeError, "step must be positive"),
    ("diagonal_scatter", lambda m: m.diagonal_scatter(m.ones(2), 1), RuntimeError, "slice size = \\[3\\]"),
    ("as_strided_scatter", lambda m: m.as_strided_scatter(m.ones(2, 3), (2, 2), (1, 2), 1), RuntimeError,
     "slice size = \\[2, 2\\]"),
    ("as_strided_scatter", lambda m: m.as_strided_scatter(m.ones(2, 2), (2, 2), (1, 2), 11), RuntimeError, "storage"),
]


class _Maker:
    """``m.ones(...)`` and ``m.select_scatter(...)`` for one library, so a case runs on both."""

    def __init__(self, lib):
        self.lib, self.base = lib, lib.zeros(3, 4)

    def ones(self, *shape):
        return self.lib.ones(*shape)

    def __getattr__(self, name):
        return lambda *args: getattr(self.lib, name)(self.base, *args)


@pytest.mark.parametrize("name,call,error,match", BAD, ids=[f"{b[0]}-{i}" for i, b in enumerate(BAD)])
def test_bad_arguments_raise_as_pytorch(name, call, error, match):
    with pytest.raises(error, match=match):
        call(_Maker(tp))
    torch = pytest.importorskip("torch")
    with pytest.raises(error):
        call(_Maker(torch))
