"""amax/amin (and max/min's values) over contiguous elements run on independent chains (issue 14:
one chain made amax over a 10000-element row 40x NumPy's time). Checked against NumPy: a NaN in
any chain or in the tail gives NaN, infinities, rows shorter than, equal to and longer than the
chains, integer and 16-bit dtypes, and whole-tensor reductions split over threads."""
import numpy as np
import pytest

import tensorplug as tp


@pytest.mark.parametrize("length", [1, 5, 16, 17, 33, 1000, 10003])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "uint8"])
def test_rows_match_numpy(length, dtype):
    rng = np.random.default_rng(length)
    x = rng.standard_normal((3, length)) * 100
    x = x.astype(dtype)
    t = tp.tensor(x)
    np.testing.assert_array_equal(t.amax(1).numpy(), x.max(1))
    np.testing.assert_array_equal(t.amin(1).numpy(), x.min(1))
    np.testing.assert_array_equal(t.max(1).values.numpy(), x.max(1))
    np.testing.assert_array_equal(t.amax().numpy(), x.max())


@pytest.mark.parametrize("position", [0, 7, 15, 16, 31, 998, 999])
def test_a_nan_anywhere_gives_nan(position):
    x = np.linspace(-5, 5, 1000).astype(np.float32)
    x[position] = np.nan
    t = tp.tensor(np.stack([x, np.abs(x)]))
    assert np.isnan(t.amax(1).numpy()).all() and np.isnan(t.amin(1).numpy()).all()
    assert np.isnan(t.amax().item())


def test_infinities_and_sixteen_bit_floats():
    x = np.full((2, 40), -np.inf, dtype=np.float32)
    x[1, 37] = np.inf
    t = tp.tensor(x)
    np.testing.assert_array_equal(t.amax(1).numpy(), [-np.inf, np.inf])
    np.testing.assert_array_equal(t.amin(1).numpy(), [-np.inf, -np.inf])
    y = np.random.default_rng(0).standard_normal((4, 50)).astype(np.float32)
    for dtype in (tp.float16, tp.bfloat16):
        rounded = tp.tensor(y).to(dtype)
        want = rounded.float().numpy()
        np.testing.assert_array_equal(rounded.amax(1).float().numpy(), want.max(1))
        np.testing.assert_array_equal(rounded.amin(1).float().numpy(), want.min(1))


def test_whole_tensor_split_over_threads():
    x = np.random.default_rng(1).standard_normal(3_000_001).astype(np.float32)
    x[2_999_999] = 50.0
    t = tp.tensor(x)
    assert t.amax().item() == 50.0 and t.amin().item() == x.min()


@pytest.mark.parametrize("length", [1, 16, 33, 1000])
def test_arg_extremes_take_the_first_occurrence(length):
    """argmax/argmin and max/min(dim)'s indices: the first of tied values, the first NaN."""
    rng = np.random.default_rng(length)
    x = rng.integers(-3, 4, (5, length)).astype(np.float32)  # many ties
    if length > 2:
        x[1, length // 2] = np.nan
        x[1, length - 1] = np.nan
        x[2, :] = 0.0
        x[2, length // 3] = -0.0
    t = tp.tensor(x)
    np.testing.assert_array_equal(t.argmax(1).numpy(), np.argmax(x, 1))
    np.testing.assert_array_equal(t.argmin(1).numpy(), np.argmin(x, 1))
    values, indices = t.max(1)
    np.testing.assert_array_equal(indices.numpy(), np.argmax(x, 1))
    np.testing.assert_array_equal(values.numpy(), x[np.arange(5), np.argmax(x, 1)])
