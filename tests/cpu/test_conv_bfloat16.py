"""bfloat16 conv2d on the CPU (autocast's convolutions): on a CPU with bf16 dot products it runs
the direct kernel (one group, AVX-512) or im2col and the native bf16 GEMM, elsewhere the float32
kernels on widened copies (TENSORPLUG_CPU_LANES=8 or 1 reach the last two); either way each
result is the float64 convolution of the bf16 operands rounded once, within float32 summation."""
import numpy as np
import pytest

import tensorplug as tp


def _bf16_values(rng, shape):
    """float64 values exactly representable in bfloat16 (rounded through the library itself)."""
    return tp.tensor(rng.uniform(-1, 1, shape), dtype=tp.float32).to(tp.bfloat16).double().numpy()


def _reference(x, w, b, stride, padding, dilation, groups):
    """The float64 convolution, one output channel group at a time, from sliding windows."""
    (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
    n, c, _, _ = x.shape
    o, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    windows = np.lib.stride_tricks.sliding_window_view(xp, ((kh - 1) * dh + 1, (kw - 1) * dw + 1), axis=(2, 3))
    windows = windows[:, :, ::sh, ::sw, ::dh, ::dw]  # (n, c, oh, ow, kh, kw)
    og = o // groups
    outs = [np.einsum("ncyxij,ocij->noyx", windows[:, g * cg:(g + 1) * cg], w[g * og:(g + 1) * og])
            for g in range(groups)]
    out = np.concatenate(outs, axis=1)
    return out if b is None else out + b[None, :, None, None]


@pytest.mark.parametrize("shape, weight, kwargs", [
    ((4, 16, 14, 14), (32, 16, 3, 3), dict(padding=(1, 1))),
    ((3, 5, 9, 11), (7, 5, 3, 2), dict(stride=(2, 1), padding=(1, 0))),
    ((2, 4, 8, 8), (6, 2, 3, 3), dict(padding=(2, 2), dilation=(2, 2), groups=2)),
    ((2, 3, 5, 5), (4, 3, 1, 1), dict()),
], ids=["3x3", "stride-2x1", "grouped-dilated", "1x1"])
@pytest.mark.parametrize("with_bias", [False, True], ids=["no-bias", "bias"])
def test_bfloat16_conv2d_rounds_once(shape, weight, kwargs, with_bias):
    rng = np.random.default_rng(5)
    x, w = _bf16_values(rng, shape), _bf16_values(rng, weight)
    b = _bf16_values(rng, weight[0]) if with_bias else None
    args = dict(stride=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1)
    args.update(kwargs)
    expected = _reference(x, w, b, **args)
    bias = None if b is None else tp.tensor(b, dtype=tp.bfloat16)
    result = tp.nn.functional.conv2d(tp.tensor(x, dtype=tp.bfloat16), tp.tensor(w, dtype=tp.bfloat16), bias, **args)
    assert result.dtype is tp.bfloat16 and tuple(result.shape) == expected.shape
    magnitude = _reference(np.abs(x), np.abs(w), None if b is None else np.abs(b), **args)
    np.testing.assert_array_less(np.abs(result.double().numpy() - expected),
                                 2.0 ** -8 * np.abs(expected) + 1e-6 * magnitude + 1e-7)


def test_bfloat16_conv2d_reads_a_strided_input():
    """A channel-sliced (non-contiguous) input is read at its strides."""
    rng = np.random.default_rng(6)
    x = tp.tensor(_bf16_values(rng, (2, 12, 10, 10)), dtype=tp.bfloat16)[:, ::2]
    w = tp.tensor(_bf16_values(rng, (8, 6, 3, 3)), dtype=tp.bfloat16)
    strided = tp.nn.functional.conv2d(x, w, stride=2, padding=1)
    expected = _reference(x.double().numpy(), w.double().numpy(), None, (2, 2), (1, 1), (1, 1), 1)
    np.testing.assert_allclose(strided.double().numpy(), expected, rtol=2.0 ** -8, atol=1e-5)
