"""The CPU backend's Winograd F(4x4, 3x3) path for float32 3x3 stride-1 convolutions (forward,
input gradient, weight gradient; csrc/conv.cpp) against a float64 NumPy reference, and the
shapes around it that stay on im2col.

Tolerance: Winograd F(4x4, 3x3) in float32 rounds values that the transforms scale by up to
about 100 (B^T's 4s and 5s on both sides, A^T's 8s), so its error is 4e-6 to 1.5e-5 of the
largest output on random data with 32 channels (im2col: 2-6e-7; measured against float64, see
docs/performance.md). The tests allow 1e-4 of the largest reference value, 7x the worst seen and
still far below any indexing or transform mistake (of the order of the values themselves).
"""
import numpy as np
import pytest

import tensorplug as tp
import tensorplug.nn.functional as F


def _windows(xp, oh, ow, kh, kw, stride, dilation):
    """(N, C, KH, KW, OH, OW): the input value each tap sees at each output position."""
    sh, sw = stride
    dh, dw = dilation
    return np.stack([np.stack([xp[:, :, i * dh: i * dh + sh * (oh - 1) + 1: sh, j * dw: j * dw + sw * (ow - 1) + 1: sw]
                               for j in range(kw)], 2) for i in range(kh)], 2)


def reference(x, w, b, g, stride=(1, 1), padding=(0, 0), dilation=(1, 1)):
    """Forward, input gradient, weight gradient and bias gradient in float64 for the upstream gradient g."""
    x, w, g = x.astype(np.float64), w.astype(np.float64), g.astype(np.float64)
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    ph, pw = padding
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    oh, ow = g.shape[2:]
    cols = _windows(xp, oh, ow, kh, kw, stride, dilation)
    out = np.einsum("ncijyx,ocij->noyx", cols, w) + (0 if b is None else b.astype(np.float64)[None, :, None, None])
    grad_w = np.einsum("ncijyx,noyx->ocij", cols, g)
    # The input gradient: each tap's contribution added back at the pixels it read.
    gxp = np.zeros_like(xp)
    tap = np.einsum("ocij,noyx->ncijyx", w, g)
    sh, sw = stride
    dh, dw = dilation
    for i in range(kh):
        for j in range(kw):
            gxp[:, :, i * dh: i * dh + sh * (oh - 1) + 1: sh, j * dw: j * dw + sw * (ow - 1) + 1: sw] += tap[:, :, i, j]
    return out, gxp[:, :, ph: ph + h, pw: pw + wd], grad_w, g.sum((0, 2, 3))


def _run(x, w, b, g, dtype=tp.float32, x_layout=None, **kwargs):
    tx = tp.tensor(x, dtype=dtype) if x_layout is None else x_layout(x)
    tx.requires_grad_(True)
    tw = tp.tensor(w, dtype=dtype, requires_grad=True)
    tb = None if b is None else tp.tensor(b, dtype=dtype, requires_grad=True)
    out = F.conv2d(tx, tw, tb, **kwargs)
    out.backward(tp.tensor(g, dtype=dtype))
    return out.detach().numpy(), tx.grad.numpy(), tw.grad.numpy(), None if b is None else tb.grad.numpy()


def _close(got, expected, rel):
    scale = max(float(np.abs(expected).max()), 1e-30)
    np.testing.assert_allclose(got, expected, rtol=0, atol=rel * scale)


# (input shape, output channels, padding, bias): odd sizes, partial edge tiles, padding from 0
# to 3 (wider than the kernel's reach), channel counts off multiples of 8, batches that leave a
# task of images short, a 1x1 output.
CASES = [
    ((3, 5, 9, 7), 6, (1, 1), True),
    ((2, 13, 13, 11), 9, (0, 0), False),
    ((5, 8, 6, 6), 8, (2, 2), True),
    ((1, 4, 5, 8), 4, (3, 1), True),
    ((4, 7, 3, 3), 5, (0, 0), True),  # one output per image
    ((3, 4, 4, 17), 12, (1, 0), False),
    ((9, 32, 26, 26), 64, (0, 0), True),  # the CNN step's second layer, fewer images
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_winograd_matches_float64(case):
    shape, o, padding, with_bias = case
    rng = np.random.default_rng(11)
    x = rng.standard_normal(shape).astype(np.float32)
    w = (rng.standard_normal((o, shape[1], 3, 3)) / np.sqrt(9 * shape[1])).astype(np.float32)
    b = rng.standard_normal(o).astype(np.float32) if with_bias else None
    oh, ow = shape[2] + 2 * padding[0] - 2, shape[3] + 2 * padding[1] - 2
    g = rng.standard_normal((shape[0], o, oh, ow)).astype(np.float32)
    got = _run(x, w, b, g, padding=padding)
    expected = reference(x, w, b, g, padding=padding)
    for ours, theirs in zip(got, expected):
        if ours is not None:
            _close(ours, theirs, 1e-4)


def test_winograd_non_contiguous_input():
    """A channels-last input view and a sliced one read the same pixels as a contiguous one."""
    rng = np.random.default_rng(12)
    x = rng.standard_normal((3, 6, 10, 9)).astype(np.float32)
    w = (rng.standard_normal((5, 6, 3, 3)) / 7).astype(np.float32)
    g = rng.standard_normal((3, 5, 10, 9)).astype(np.float32)
    expected = reference(x, w, None, g, padding=(1, 1))

    def channels_last(a):
        return tp.tensor(np.ascontiguousarray(a.transpose(0, 2, 3, 1))).permute(0, 3, 1, 2)

    def sliced(a):
        wide = np.zeros(a.shape[:-1] + (2 * a.shape[-1],), a.dtype)
        wide[..., 1::2] = a
        return tp.tensor(wide)[..., 1::2]

    for layout in (channels_last, sliced):
        got = _run(x, w, None, g, x_layout=layout, padding=1)
        for ours, theirs in zip(got[:3], expected[:3]):
            _close(ours, theirs, 1e-4)


@pytest.mark.parametrize("kwargs", [dict(stride=2, padding=1), dict(dilation=2, padding=2), dict(groups=2, padding=1)],
                         ids=str)
def test_shapes_beside_winograd_stay_exact(kwargs):
    """Strided (the direct kernel), dilated and grouped (im2col) 3x3 convolutions keep a direct
    sum's accuracy."""
    rng = np.random.default_rng(13)
    groups = kwargs.get("groups", 1)
    x = rng.standard_normal((3, 8, 11, 10)).astype(np.float32)
    w = rng.standard_normal((6, 8 // groups, 3, 3)).astype(np.float32)
    out = F.conv2d(tp.tensor(x), tp.tensor(w), **kwargs).numpy()
    if groups == 1:
        stride = (kwargs.get("stride", 1),) * 2
        dilation = (kwargs.get("dilation", 1),) * 2
        padding = (kwargs["padding"],) * 2
        oh, ow = out.shape[2:]
        expected = reference(x, w, None, np.zeros((3, 6, oh, ow), np.float32), stride, padding, dilation)[0]
    else:
        halves = [reference(x[:, 4 * i: 4 * i + 4], w[3 * i: 3 * i + 3], None, np.zeros((3, 3, 11, 10), np.float32),
                            padding=(1, 1))[0] for i in range(2)]
        expected = np.concatenate(halves, 1)
    _close(out, expected, 2e-6)


def test_float64_stays_exact():
    """float64 3x3 convolutions take im2col: float64 accuracy, gradients included."""
    rng = np.random.default_rng(14)
    x, w, b = rng.standard_normal((3, 8, 9, 9)), rng.standard_normal((6, 8, 3, 3)), rng.standard_normal(6)
    g = rng.standard_normal((3, 6, 9, 9))
    got = _run(x, w, b, g, dtype=tp.float64, padding=1)
    for ours, theirs in zip(got, reference(x, w, b, g, padding=(1, 1))):
        _close(ours, theirs, 1e-12)


@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan])
def test_non_finite_values_land_where_direct_convolution_puts_them(bad):
    """An inf or NaN pixel spreads only to the outputs (and weight gradients) that read it, as in
    a direct convolution, not over whole Winograd tiles (the op reruns on im2col)."""
    rng = np.random.default_rng(15)
    x = rng.standard_normal((2, 8, 12, 12)).astype(np.float32)
    w = rng.standard_normal((8, 8, 3, 3)).astype(np.float32)
    x[1, 3, 5, 6] = bad
    out = F.conv2d(tp.tensor(x), tp.tensor(w), padding=1).numpy()
    finite = np.ones(out.shape, bool)
    finite[1, :, 4:7, 5:8] = False
    assert np.isfinite(out[finite]).all()
    assert not np.isfinite(out[~finite]).any()
    clean = x.copy()
    clean[1, 3, 5, 6] = 0
    expected = reference(clean, w, None, np.zeros((2, 8, 12, 12), np.float32), padding=(1, 1))[0]
    _close(out[finite], expected[finite], 2e-6)


def test_overflow_in_the_transforms_reruns_on_im2col():
    """Finite inputs near float32's largest value overflow in the Winograd domain (B^T scales by up
    to 25): the result is the direct convolution's, finite where it is."""
    x = np.full((1, 4, 6, 6), 1e37, np.float32)
    # Nearly the identity tap (out = sum of the 4 channels = 4e37): no exact zeros, which would
    # keep the weight off Winograd before anything overflowed.
    w = np.full((4, 4, 3, 3), 1e-12, np.float32)
    w[:, :, 1, 1] = 1.0
    out = F.conv2d(tp.tensor(x), tp.tensor(w), padding=1).numpy()
    np.testing.assert_allclose(out, np.full((1, 4, 6, 6), 4e37, np.float32), rtol=1e-6)


@pytest.mark.parametrize("mask_type", ["A", "B"])
def test_masked_weight_leaves_masked_inputs_out_exactly(mask_type):
    """A weight with exact zeros (PixelCNN's raster-order masks) stays on im2col: an output pixel's
    input gradient is exactly zero at every pixel its mask hides, as in the float64 reference,
    and changing those pixels leaves the output bit-identical. Winograd's transforms mix every
    tap into every transformed value and left ~1e-7 there (found by tests/programs/pixelcnn.py)."""
    rng = np.random.default_rng(17)
    x = rng.standard_normal((2, 8, 8, 8)).astype(np.float32)
    w = rng.standard_normal((8, 8, 3, 3)).astype(np.float32)
    w[:, :, 1, 1 + (mask_type == "B"):] = 0
    w[:, :, 2:] = 0
    g = np.zeros((2, 8, 8, 8), np.float32)
    g[:, :, 4, 4] = 1.0
    out, grad_x, grad_w, _ = _run(x, w, None, g, padding=1)
    ref_out, ref_grad_x, ref_grad_w, _ = reference(x, w, None, g, padding=(1, 1))
    np.testing.assert_array_equal(grad_x == 0, ref_grad_x == 0)
    for ours, theirs in ((out, ref_out), (grad_x, ref_grad_x), (grad_w, ref_grad_w)):
        _close(ours, theirs, 2e-6)
    hidden = x.copy()
    hidden[:, :, 5:] = 100.0  # rows below the centre row, which no output of row 4 may see
    hidden[:, :, 4, 5:] = 100.0
    assert np.array_equal(F.conv2d(tp.tensor(hidden), tp.tensor(w), padding=1).numpy()[:, :, 4, 4], out[:, :, 4, 4])


def test_winograd_results_do_not_depend_on_the_thread_count():
    """Tasks of images are fixed by the shape, so the forward and the input gradient are
    bit-identical on 1 and 2 threads (the weight gradient's partials follow tp.set_num_threads,
    as on im2col, never the load: tests/cpu/test_threads.py)."""
    rng = np.random.default_rng(16)
    x = rng.standard_normal((7, 12, 15, 13)).astype(np.float32)
    w = (rng.standard_normal((10, 12, 3, 3)) / 10).astype(np.float32)
    b = rng.standard_normal(10).astype(np.float32)
    g = rng.standard_normal((7, 10, 15, 13)).astype(np.float32)
    previous = tp.get_num_threads()
    results = []
    try:
        for threads in (1, 2):
            tp.set_num_threads(threads)
            results.append(_run(x, w, b, g, padding=1)[:2])
    finally:
        tp.set_num_threads(previous)
    for one, two in zip(*results):
        np.testing.assert_array_equal(one, two)
    for ours, theirs in zip(results[0], reference(x, w, b, g, padding=(1, 1))[:2]):
        _close(ours, theirs, 1e-4)
