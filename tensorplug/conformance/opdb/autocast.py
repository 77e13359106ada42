"""Autocast: the ops PyTorch's autocast runs in lower precision on every device (matrix products,
convolutions, the recurrent layers), plus two losses it runs in float32, each called inside
``tp.autocast(device, dtype=...)`` with float32 inputs.

The dtype column is the autocast dtype. Inputs are drawn exactly representable in it, passed as
float32, and cast back by autocast without loss, so the reference is NumPy's float64 result on
those values: the lower-precision ops must return the autocast dtype within its rounding, the
losses float32. An item is *declared* where the backend lists the dtype in
``Backend.autocast_dtypes``, *not supported* elsewhere (a device without autocast).
"""
from __future__ import annotations

import numpy as np

from ._core import Arg, OpEntry, Sample

_HALF = ("float16", "bfloat16")
# Products of a few dozen terms, accumulated in float32 and rounded once to 8 or 11 bits. The
# losses return float32 computed from such a product: its rounding decides their tolerance too.
_TOL = {"float16": (4e-3, 4e-3), "bfloat16": (2e-2, 3e-2), "float32": (2e-2, 3e-2)}


def _under_autocast(fn):
    def call(tp, *tensors, **kwargs):
        dtype, device = tensors[0].dtype, tensors[0].device.type
        with tp.autocast(device, dtype=dtype):
            return fn(tp, *(t.float() if t.is_floating_point() else t for t in tensors), **kwargs)

    return call


def _conv2d_ref(x, w):
    n, c, h, width = x.shape
    k, _, kh, kw = w.shape
    out = np.zeros((n, k, h - kh + 1, width - kw + 1))
    for i in range(kh):
        for j in range(kw):
            out += np.einsum("nchw,kc->nkhw", x[:, :, i:i + h - kh + 1, j:j + width - kw + 1], w[:, :, i, j])
    return out


def _conv_transpose2d_ref(x, w):
    n, c, h, width = x.shape
    _, k, kh, kw = w.shape
    out = np.zeros((n, k, h + kh - 1, width + kw - 1))
    for i in range(kh):
        for j in range(kw):
            out[:, :, i:i + h, j:j + width] += np.einsum("nchw,ck->nkhw", x, w[:, :, i, j])
    return out


def _lstm_ref(x, w_ih, w_hh):
    """One layer, no biases, zero initial state; the output sequence."""

    def sigmoid(v):
        return 1 / (1 + np.exp(-v))

    hidden = w_hh.shape[1]
    h = np.zeros((x.shape[1], hidden))
    c = np.zeros_like(h)
    outputs = []
    for step in x:
        gates = step @ w_ih.T + h @ w_hh.T
        i, f, g, o = np.split(gates, 4, axis=-1)
        c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
        h = sigmoid(o) * np.tanh(c)
        outputs.append(h)
    return np.stack(outputs)


def _lstm(tp, x, w_ih, w_hh):
    layer = tp.nn.LSTM(w_ih.shape[1], w_hh.shape[1], bias=False, device=x.device)
    with tp.no_grad():
        layer.weight_ih_l0.copy_(w_ih)
        layer.weight_hh_l0.copy_(w_hh)
    return layer(x)[0]


def _entry(name, call, ref, samples, out_dtype="same"):
    return OpEntry(f"autocast.{name}", "autocast", ref, samples, dtypes=_HALF, call=_under_autocast(call),
                   differentiable=False, tolerances=_TOL, out_dtype=out_dtype, needs_autocast=True)


def _one(*args, name="", **kwargs):
    return lambda dtype: iter([Sample(tuple(args), kwargs, name=name)])


def _cross_entropy_ref(logits, target):
    shifted = logits - logits.max(-1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
    return -log_probs[np.arange(len(target)), target.astype(int)].mean()


ENTRIES = [
    _entry("linear", lambda tp, x, w, b: tp.nn.functional.linear(x, w, b), lambda x, w, b: x @ w.T + b,
           _one(Arg((7, 24)), Arg((5, 24)), Arg((5,)), name="with bias")),
    _entry("matmul", lambda tp, a, b: a @ b, lambda a, b: a @ b,
           lambda dtype: iter([Sample((Arg((6, 20)), Arg((20, 9))), name="matrices"),
                               Sample((Arg((3, 4, 16)), Arg((3, 16, 5), layout="transposed")), name="batched, transposed")])),
    _entry("addmm", lambda tp, c, a, b: tp.addmm(c, a, b), lambda c, a, b: c + a @ b,
           _one(Arg((4, 6)), Arg((4, 12)), Arg((12, 6)), name="matrices")),
    _entry("einsum", lambda tp, a, b: tp.einsum("bij,bjk->bik", a, b), lambda a, b: a @ b,
           _one(Arg((2, 3, 10)), Arg((2, 10, 4)), name="batched product")),
    _entry("conv2d", lambda tp, x, w: tp.nn.functional.conv2d(x, w), _conv2d_ref,
           _one(Arg((2, 3, 7, 6)), Arg((4, 3, 3, 3)), name="3x3")),
    _entry("conv_transpose2d", lambda tp, x, w: tp.nn.functional.conv_transpose2d(x, w), _conv_transpose2d_ref,
           _one(Arg((2, 3, 4, 5)), Arg((3, 2, 3, 3)), name="3x3")),
    _entry("lstm", _lstm, _lstm_ref, _one(Arg((5, 2, 6)), Arg((12, 6)), Arg((12, 3)), name="one layer")),
    _entry("mse_loss", lambda tp, a, b: tp.nn.functional.mse_loss(a @ b, a @ b * 0.5), lambda a, b: np.mean((0.5 * a @ b) ** 2),
           _one(Arg((5, 8)), Arg((8, 3)), name="of a product"), out_dtype="float32"),
    _entry("cross_entropy", lambda tp, x, w, t: tp.nn.functional.cross_entropy(x @ w, t),
           lambda x, w, t: _cross_entropy_ref(x @ w, t),
           _one(Arg((6, 8)), Arg((8, 5)), Arg((6,), low=0, high=4, dtype="int64"), name="of a product"), out_dtype="float32"),
]
