"""Strided float32 conv2d on the CPU's direct kernel (conv_direct.cpp: stride phases of the input
read in place by an AVX-512 micro-kernel; im2col elsewhere): each result is the float64
convolution within float32 summation, at every geometry the phases must handle."""
import numpy as np
import pytest

import tensorplug as tp


def _reference(x, w, b, stride, padding, dilation):
    """The float64 convolution from sliding windows."""
    (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
    kh, kw = w.shape[2:]
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    windows = np.lib.stride_tricks.sliding_window_view(xp, ((kh - 1) * dh + 1, (kw - 1) * dw + 1), axis=(2, 3))
    out = np.einsum("ncyxij,ocij->noyx", windows[:, :, ::sh, ::sw, ::dh, ::dw], w)
    return out if b is None else out + b[None, :, None, None]


@pytest.mark.parametrize("shape, weight, stride, padding, dilation", [
    ((3, 32, 28, 28), (64, 32, 3, 3), (2, 2), (1, 1), (1, 1)),   # bench_ops.py's stride-2 row
    ((2, 3, 17, 13), (10, 3, 3, 5), (2, 3), (1, 2), (1, 1)),     # two strides, odd sizes
    ((2, 5, 9, 11), (3, 5, 2, 2), (2, 2), (0, 0), (2, 1)),       # dilation, no padding
    ((3, 1, 8, 8), (17, 1, 1, 1), (3, 3), (0, 0), (1, 1)),       # 1x1 taps, one phase read
    ((1, 4, 6, 7), (9, 4, 3, 3), (2, 2), (3, 3), (1, 1)),        # padding past the kernel
    ((2, 3, 6, 41), (20, 3, 2, 3), (1, 2), (1, 2), (1, 1)),      # rows over 16 phase columns, 20 channels
], ids=["bench", "stride-2x3", "dilated", "1x1-stride-3", "wide-padding", "wide-rows"])
def test_strided_conv2d_matches_float64(shape, weight, stride, padding, dilation):
    rng = np.random.default_rng(7)
    x, w, b = rng.standard_normal(shape), rng.standard_normal(weight), rng.standard_normal(weight[0])
    expected = _reference(x.astype(np.float32).astype(np.float64), w.astype(np.float32).astype(np.float64),
                          b.astype(np.float32).astype(np.float64), stride, padding, dilation)
    result = tp.nn.functional.conv2d(tp.tensor(x, dtype=tp.float32), tp.tensor(w, dtype=tp.float32),
                                     tp.tensor(b, dtype=tp.float32), stride=stride, padding=padding,
                                     dilation=dilation)
    assert tuple(result.shape) == expected.shape
    np.testing.assert_allclose(result.numpy(), expected, rtol=1e-5, atol=1e-5 * np.abs(expected).max())


def test_strided_conv2d_reads_a_strided_input():
    """A channel-sliced, column-reversed input is read at its strides."""
    rng = np.random.default_rng(8)
    base = rng.standard_normal((2, 8, 11, 12)).astype(np.float32)
    x = tp.tensor(base)[:, ::2].flip(3)
    w = rng.standard_normal((6, 4, 3, 3)).astype(np.float32)
    result = tp.nn.functional.conv2d(x, tp.tensor(w), stride=2, padding=1)
    expected = _reference(base[:, ::2, :, ::-1].astype(np.float64), w.astype(np.float64), None, (2, 2), (1, 1), (1, 1))
    np.testing.assert_allclose(result.numpy(), expected, rtol=1e-5, atol=1e-5 * np.abs(expected).max())


def test_strided_conv2d_puts_non_finite_values_where_their_taps_land():
    x = np.zeros((1, 2, 7, 7), np.float32)
    x[0, 1, 2, 4] = np.inf
    x[0, 0, 5, 1] = np.nan
    w = np.ones((3, 2, 3, 3), np.float32)
    result = tp.nn.functional.conv2d(tp.tensor(x), tp.tensor(w), stride=2, padding=1).numpy()
    with np.errstate(invalid="ignore"):
        expected = _reference(x.astype(np.float64), w.astype(np.float64), None, (2, 2), (1, 1), (1, 1))
    np.testing.assert_array_equal(np.isnan(result), np.isnan(expected))
    np.testing.assert_array_equal(np.isinf(result), np.isinf(expected))
