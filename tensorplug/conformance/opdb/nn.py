"""tp.nn.functional: activations, normalization, losses, linear, convolution and pooling."""
from __future__ import annotations

import numpy as np

from . import _refs
from ._core import LARGE, Arg, ErrorCase, OpEntry, Sample

DTYPES = ("float32", "float64", "float16", "bfloat16")
_TOL = {"float32": (1e-4, 1e-5), "float16": (5e-3, 2e-3), "bfloat16": (3e-2, 2e-2)}


def _tp():
    import tensorplug

    return tensorplug


def _fn(name):
    def call(tp, *args, **kwargs):
        return getattr(tp.nn.functional, name)(*args, **kwargs)

    return call


def _act_samples(dtype):
    yield Sample((Arg((4, 5)),), name="contiguous")
    yield Sample((Arg((5, 4), layout="transposed"),), name="transposed")
    yield Sample((Arg(()),), name="0-d")


def _act(name, ref, **kw):
    return OpEntry(name, "nn", ref, _act_samples, dtypes=DTYPES, func=None, call=_fn(name), tolerances=_TOL,
                   grad_samples=lambda: iter([Sample((Arg((2, 3)),), name="2x3")]), **kw)


def _conv2d(x, w, b=None, stride=1, padding=0):
    x = np.pad(x, [(0, 0), (0, 0), (padding, padding), (padding, padding)])
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    oh, ow = (h - kh) // stride + 1, (wd - kw) // stride + 1
    out = np.zeros((n, o, oh, ow))
    for i in range(oh):
        for j in range(ow):
            patch = x[:, :, i * stride:i * stride + kh, j * stride:j * stride + kw]
            out[:, :, i, j] = np.tensordot(patch, w, axes=([1, 2, 3], [1, 2, 3]))
    return out + (b.reshape(1, -1, 1, 1) if b is not None else 0)


def _conv3d(x, w, b=None, stride=1, padding=0):
    x = np.pad(x, [(0, 0), (0, 0)] + [(padding, padding)] * 3)
    n, c, d, h, wd = x.shape
    o, _, kd, kh, kw = w.shape
    od, oh, ow = (d - kd) // stride + 1, (h - kh) // stride + 1, (wd - kw) // stride + 1
    out = np.zeros((n, o, od, oh, ow))
    for i in range(od):
        for j in range(oh):
            for k in range(ow):
                patch = x[:, :, i * stride:i * stride + kd, j * stride:j * stride + kh, k * stride:k * stride + kw]
                out[:, :, i, j, k] = np.tensordot(patch, w, axes=([1, 2, 3, 4], [1, 2, 3, 4]))
    return out + (b.reshape(1, -1, 1, 1, 1) if b is not None else 0)


def _pool3d(x, k, reduce):
    n, c, d, h, w = x.shape
    x = x[:, :, : d // k * k, : h // k * k, : w // k * k]
    return reduce(x.reshape(n, c, d // k, k, h // k, k, w // k, k), axis=(3, 5, 7))


def _pool(x, k, reduce):
    n, c, h, w = x.shape
    return reduce(x[:, :, : h // k * k, : w // k * k].reshape(n, c, h // k, k, w // k, k), axis=(3, 5))


def _layer_norm(x, shape, w, b, eps=1e-5):
    axes = tuple(range(x.ndim - len(shape), x.ndim))
    mean = x.mean(axis=axes, keepdims=True)
    var = x.var(axis=axes, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * w + b


def _cross_entropy(x, target):
    logp = _refs.log_softmax(x, 1)
    return -logp[np.arange(x.shape[0]), target.astype(np.int64)].mean()


def _gelu(x):
    return 0.5 * x * (1 + _refs.erf(x / np.sqrt(2)))



def _grid_ref_coords(v, size, padding_mode, align_corners):
    """Pixel positions of normalized coordinates, folded by padding_mode (a second formulation,
    independent of tensorplug's: reflection as a periodic triangle wave)."""
    v = (v + 1) / 2 * (size - 1) if align_corners else ((v + 1) * size - 1) / 2
    if padding_mode == "reflection":
        low, span = (0.0, size - 1.0) if align_corners else (-0.5, float(size))
        if span > 0:
            phase = np.mod(v - low, 2 * span)
            v = low + np.where(phase > span, 2 * span - phase, phase)
        else:
            v = np.zeros_like(v)
    if padding_mode in ("border", "reflection"):
        v = np.clip(v, 0, size - 1)
    return v


def _grid_sample(x, grid, mode="bilinear", padding_mode="zeros", align_corners=False):
    n, c, h, w = x.shape
    ix = _grid_ref_coords(grid[..., 0], w, padding_mode, align_corners)
    iy = _grid_ref_coords(grid[..., 1], h, padding_mode, align_corners)
    out = np.zeros((n, c) + grid.shape[1:3])

    def tap(rows, cols, weight):
        inside = (rows >= 0) & (rows < h) & (cols >= 0) & (cols < w)
        r, q = np.clip(rows, 0, h - 1), np.clip(cols, 0, w - 1)
        for b in range(n):
            out[b] += x[b][:, r[b], q[b]] * (weight[b] * inside[b])

    if mode == "nearest":
        tap(np.rint(iy).astype(np.int64), np.rint(ix).astype(np.int64), np.ones_like(ix))
        return out
    x0, y0 = np.floor(ix), np.floor(iy)
    fx, fy = ix - x0, iy - y0
    x0, y0 = x0.astype(np.int64), y0.astype(np.int64)
    for dy, wy in ((0, 1 - fy), (1, fy)):
        for dx, wx in ((0, 1 - fx), (1, fx)):
            tap(y0 + dy, x0 + dx, wy * wx)
    return out


def _affine_grid(theta, size, align_corners=False):
    n, _, h, w = size

    def base(steps):
        if steps == 1:
            return np.zeros(1)
        pixels = np.arange(steps, dtype=np.float64)
        return pixels * 2 / (steps - 1) - 1 if align_corners else (2 * pixels + 1) / steps - 1

    xs, ys = np.meshgrid(base(w), base(h))
    points = np.stack([xs, ys, np.ones_like(xs)], axis=-1)
    return np.einsum("hwk,nik->nhwi", points, theta)


def _grid_sample_samples(dtype):
    grid = Arg((2, 4, 7, 2), low=-1.3, high=1.3)
    for mode in ("bilinear", "nearest"):
        for padding_mode in ("zeros", "border", "reflection"):
            for align in (False, True):
                yield Sample((Arg((2, 3, 5, 6)), grid), {"mode": mode, "padding_mode": padding_mode, "align_corners": align},
                             name=f"{mode} {padding_mode} align_corners={align}")


def _adaptive_max_pool2d(x, output_size):
    out_h, out_w = (output_size, output_size) if isinstance(output_size, int) else output_size
    n, c, h, w = x.shape
    out = np.zeros((n, c, out_h, out_w), dtype=x.dtype)
    for i in range(out_h):
        for j in range(out_w):
            rows = slice(i * h // out_h, -(-(i + 1) * h // out_h))
            cols = slice(j * w // out_w, -(-(j + 1) * w // out_w))
            out[:, :, i, j] = x[:, :, rows, cols].max(axis=(2, 3))
    return out

def _fractional_starts(size, out, kernel, sample, scalar):
    """PyTorch's window starts along one dim (in the input's dtype, as its kernel computes them)."""
    if out == 1:
        return [size - kernel]
    alpha = scalar(size - kernel) / scalar(out - 1)
    sample = scalar(sample)
    return [int(scalar((i + sample) * alpha)) - int(scalar(sample * alpha)) for i in range(out - 1)] + [size - kernel]


def _fractional_max_pool2d(x, samples, kernel_size, output_size):
    """Each plane's windows from its own samples (width's first, height's second), their maxima."""
    (kh, kw), (oh, ow) = kernel_size, output_size
    n, c, h, w = x.shape
    out = np.empty((n, c, oh, ow), dtype=x.dtype)
    for b in range(n):
        for ch in range(c):
            rows = _fractional_starts(h, oh, kh, samples[b, ch, 1], x.dtype.type)
            cols = _fractional_starts(w, ow, kw, samples[b, ch, 0], x.dtype.type)
            for i, r in enumerate(rows):
                for j, q in enumerate(cols):
                    out[b, ch, i, j] = x[b, ch, r:r + kh, q:q + kw].max()
    return out


def _fractional_call(tp, x, samples, kernel_size, output_size):
    return tp.nn.functional.fractional_max_pool2d(x, kernel_size, output_size=output_size, _random_samples=samples)


_SAMPLES = Arg((2, 3, 2), low=0.0, high=0.999, grad=False)

_TARGET = Arg((4,), dtype="int64", values=[0, 2, 1, 2], grad=False)


def _reduced(loss, reduction="mean"):
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    return loss.sum() / loss.size if loss.size else np.float64("nan")  # the mean of nothing


def _smooth_l1_loss(a, b, reduction="mean", beta=1.0):
    z = np.abs(a - b)
    if beta == 0:  # L1 (the quadratic branch would divide by zero)
        return _reduced(z, reduction)
    return _reduced(np.where(z < beta, 0.5 * z * z / beta, z - 0.5 * beta), reduction)


def _huber_loss(a, b, reduction="mean", delta=1.0):
    z = np.abs(a - b)
    return _reduced(np.where(z < delta, 0.5 * z * z, delta * (z - 0.5 * delta)), reduction)


def _regression_loss_samples(parameter):
    def samples(dtype):
        yield Sample((Arg((3, 4)), Arg((3, 4))), name="mean")
        yield Sample((Arg((3, 4), layout="transposed"), Arg((3, 4))), {"reduction": "sum", parameter: 0.5},
                     name=f"sum, {parameter}=0.5, transposed input")
        yield Sample((Arg((2, 5)), Arg((2, 5), layout="strided")), {"reduction": "none", parameter: 2.0},
                     name=f"none, {parameter}=2, strided target")
        yield Sample((Arg((0, 3)), Arg((0, 3))), name="empty (mean is NaN)")
        yield Sample((Arg((0, 3)), Arg((0, 3))), {"reduction": "sum"}, name="empty sum")
        yield Sample((Arg((LARGE,)), Arg((LARGE,))), name="large", large=True, grad=False)
        if parameter == "beta":
            yield Sample((Arg((3, 4)), Arg((3, 4))), {"beta": 0.0}, name="beta=0 (L1)")
            yield Sample((Arg((3, 4)), Arg((3, 4))), {"beta": 1e-3}, name="beta=1e-3 (nearly L1)")
            yield Sample((Arg((LARGE,)), Arg((LARGE,))), {"reduction": "none", "beta": 0.5}, name="large, none",
                         large=True, grad=False)

    return samples


def _regression_loss_grad_samples(parameter):
    return lambda: iter([Sample((Arg((2, 3)), Arg((2, 3))), name="mean"),
                         Sample((Arg((2, 3)), Arg((2, 3))), {"reduction": "none", parameter: 0.7}, name="none"),
                         Sample((Arg((2, 3)), Arg((2, 3))), {"reduction": "sum", parameter: 4.0}, name="sum")]
                        + ([Sample((Arg((2, 3)), Arg((2, 3))), {"beta": 0.0}, name="beta=0")] if parameter == "beta" else []))


def _regression_loss(name, ref, parameter, bad_value, message):
    def bad_parameter(device):
        x = _tp().ones(2, 3, device=device)
        return getattr(_tp().nn.functional, name)(x, x, **{parameter: bad_value})

    def bad_reduction(device):
        x = _tp().ones(2, 3, device=device)
        return getattr(_tp().nn.functional, name)(x, x, reduction="average")

    return OpEntry(name, "nn", ref, _regression_loss_samples(parameter), dtypes=DTYPES, func=None, call=_fn(name),
                   tolerances=_TOL, grad_samples=_regression_loss_grad_samples(parameter),
                   errors=(ErrorCase(bad_parameter, RuntimeError, message, name=f"{parameter}={bad_value}"),
                           ErrorCase(bad_reduction, ValueError, "average is not a valid value for reduction",
                                     name="unknown reduction")))


def _ctc_loss(logits, targets, input_lengths, target_lengths, blank=0, reduction="mean", zero_infinity=False):
    """F.ctc_loss of log_softmax(logits) over dim 2, by the textbook recursion one sample at a time."""
    shifted = logits - logits.max(axis=2, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=2, keepdims=True))
    if targets.ndim == 1:  # concatenated: cut into rows
        ends = np.cumsum((0,) + tuple(target_lengths))
        targets = [targets[ends[n]:ends[n + 1]] for n in range(len(target_lengths))]
    losses = []
    for n, (frames, length) in enumerate(zip(input_lengths, target_lengths)):
        labels = [blank]
        for label in np.asarray(targets[n][:length]).astype(np.int64):
            labels += [int(label), blank]
        alpha = np.full(len(labels), -np.inf)
        if frames:
            alpha[:2] = log_probs[0, n, labels[:2]]
        for t in range(1, frames):
            previous = alpha.copy()
            for s in range(len(labels)):
                terms = [previous[s]] + ([previous[s - 1]] if s >= 1 else [])
                if s >= 2 and labels[s] != blank and labels[s] != labels[s - 2]:
                    terms.append(previous[s - 2])
                alpha[s] = np.logaddexp.reduce(terms) + log_probs[t, n, labels[s]]
        if frames:
            loss = -np.logaddexp.reduce(alpha[-2:] if length else alpha[-1:])
        else:
            loss = 0.0 if length == 0 else np.inf
        losses.append(0.0 if zero_infinity and loss == np.inf else loss)
    losses = np.array(losses)
    if reduction == "mean":
        return (losses / np.maximum(target_lengths, 1)).mean()
    return losses.sum() if reduction == "sum" else losses


def _ctc_call(tp, logits, targets, input_lengths, target_lengths, **kwargs):
    # Through log_softmax: ctc_loss's gradient is PyTorch's, the derivative of the loss with
    # respect to the logits of a log_softmax (not of unnormalized log_probs), which finite
    # differences then see.
    return tp.nn.functional.ctc_loss(tp.nn.functional.log_softmax(logits, 2), targets, input_lengths,
                                     target_lengths, **kwargs)


def _softmax_last(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _mha_forward(query, key, value, in_proj_weight, in_proj_bias, out_proj_weight, out_proj_bias, num_heads,
                 attn_mask=None):
    """Attention output of (L, N, E) inputs: per head softmax(q k^T / sqrt(d) + mask) v, heads
    joined, then the output projection (PyTorch's multi_head_attention_forward, eval mode)."""
    steps, batch, embed = query.shape
    head = embed // num_heads
    w_q, w_k, w_v = np.split(in_proj_weight, 3)
    b_q, b_k, b_v = np.split(in_proj_bias, 3)

    def heads(x, w, b):  # (S, N, E) -> (N, H, S, d)
        return (x @ w.T + b).reshape(x.shape[0], batch, num_heads, head).transpose(1, 2, 0, 3)

    q, k, v = heads(query, w_q, b_q), heads(key, w_k, b_k), heads(value, w_v, b_v)
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(head)
    if attn_mask is not None:
        scores = scores + attn_mask
    joined = (_softmax_last(scores) @ v).transpose(2, 0, 1, 3).reshape(steps, batch, embed)
    return joined @ out_proj_weight.T + out_proj_bias


def _mha_call(tp, query, key, value, in_proj_weight, in_proj_bias, out_proj_weight, out_proj_bias, num_heads,
              attn_mask=None):
    out, weights = tp.nn.functional.multi_head_attention_forward(
        query, key, value, query.shape[-1], num_heads, in_proj_weight, in_proj_bias, None, None, False, 0.0,
        out_proj_weight, out_proj_bias, training=False, need_weights=False, attn_mask=attn_mask)
    assert weights is None
    return out


def _mha_samples(dtype):
    projections = (Arg((12, 4), low=-0.5, high=0.5), Arg((12,), low=-0.5, high=0.5),
                   Arg((4, 4), low=-0.5, high=0.5), Arg((4,), low=-0.5, high=0.5))
    yield Sample((Arg((3, 2, 4)), Arg((5, 2, 4)), Arg((5, 2, 4))) + projections + (2,), name="2 heads, cross")
    yield Sample((Arg((5, 2, 4), layout="transposed"),) * 3 + projections + (1,), name="1 head, transposed")
    yield Sample((Arg((3, 2, 4)), Arg((5, 2, 4)), Arg((5, 2, 4))) + projections
                 + (2, Arg((3, 5), low=-1.0, high=0.0, grad=False)), name="additive mask")


_CTC_TARGETS = Arg((3, 4), dtype="int64", values=[[1, 2, 2, 3], [3, 3, 0, 0], [2, 1, 3, 4]], grad=False)


def _ctc_loss_samples(dtype):
    lengths = ((9, 6, 7), (4, 2, 3))
    yield Sample((Arg((9, 3, 5)), _CTC_TARGETS) + lengths, name="padded, mean")
    yield Sample((Arg((9, 3, 5), layout="transposed"), _CTC_TARGETS) + lengths, {"reduction": "sum"},
                 name="padded, sum, transposed logits")
    yield Sample((Arg((9, 3, 5)), Arg((9,), dtype="int64", values=[1, 2, 2, 3, 3, 3, 2, 1, 3], grad=False)) + lengths,
                 {"reduction": "none"}, name="concatenated, none")
    yield Sample((Arg((9, 3, 5)), _CTC_TARGETS, (9, 3, 7), (4, 2, 3)), {"reduction": "none"},
                 name="too few frames for a repeated label (inf)")
    yield Sample((Arg((9, 3, 5)), _CTC_TARGETS, (9, 3, 7), (4, 2, 3)), {"zero_infinity": True},
                 name="zero_infinity")
    yield Sample((Arg((9, 3, 5)), _CTC_TARGETS, (9, 6, 7), (4, 0, 3)), {"blank": 0, "reduction": "sum"},
                 name="an empty target")


def _ctc_loss_errors():
    def call(device, **change):
        args = dict(log_probs=_tp().zeros(6, 2, 4, device=device), targets=_tp().tensor([[1, 2, 3], [1, 1, 0]]),
                    input_lengths=(6, 5), target_lengths=(3, 2))
        args.update(change)
        return _tp().nn.functional.ctc_loss(**args)

    return (ErrorCase(lambda d: call(d, input_lengths=(7, 5)), RuntimeError, "input_lengths must be at most",
                      name="input length beyond T"),
            ErrorCase(lambda d: call(d, targets=_tp().tensor([[1, 0, 3], [1, 1, 0]])), RuntimeError,
                      "contains the blank label", name="blank in a target"),
            ErrorCase(lambda d: call(d, targets=_tp().tensor([[1, 4, 3], [1, 1, 0]])), IndexError,
                      "target 4 of sample 0 is out of bounds for 4 classes", name="target out of range"),
            ErrorCase(lambda d: call(d, blank=4), RuntimeError, "blank must be in label range", name="blank out of range"))


ENTRIES = [
    _act("gelu", _gelu),
    _act("silu", lambda x: x * _refs.sigmoid(x)),
    _act("softplus", lambda x: np.log1p(np.exp(x))),
    _act("elu", lambda x: np.where(x > 0, x, np.expm1(x))),
    _act("leaky_relu", lambda x: np.where(x > 0, x, 0.01 * x)),
    _act("hardtanh", lambda x: np.clip(x, -1, 1)),
    _act("logsigmoid", lambda x: -np.log1p(np.exp(-x))),
    OpEntry("softmax", "nn", lambda x, dim: _refs.softmax(x, dim),
            lambda dtype: iter([Sample((Arg((4, 5)), 1), name="dim=1"), Sample((Arg((5, 4), layout="transposed"), 0), name="transposed"),
                                Sample((Arg((0, 5)), 1), name="empty batch"), Sample((Arg((3, 0)), 1), name="empty dim")]),
            dtypes=DTYPES, func=None, call=_fn("softmax"), tolerances=_TOL,
            grad_samples=lambda: iter([Sample((Arg((2, 3)), 1), name="dim=1")])),
    OpEntry("log_softmax", "nn", lambda x, dim: _refs.log_softmax(x, dim),
            lambda dtype: iter([Sample((Arg((4, 5)), 1), name="dim=1"), Sample((Arg((5, 4), layout="transposed"), 0), name="transposed"),
                                Sample((Arg((0, 5)), 1), name="empty batch"), Sample((Arg((3, 0)), 1), name="empty dim")]),
            dtypes=DTYPES, func=None, call=_fn("log_softmax"), tolerances=_TOL,
            grad_samples=lambda: iter([Sample((Arg((2, 3)), 1), name="dim=1")])),
    OpEntry("linear", "nn", lambda x, w, b: x @ w.T + b,
            lambda dtype: iter([Sample((Arg((4, 3)), Arg((5, 3)), Arg((5,))), name="with bias")]),
            dtypes=DTYPES, func=None, call=_fn("linear"), tolerances=_TOL,
            grad_samples=lambda: iter([Sample((Arg((2, 3)), Arg((2, 3)), Arg((2,))), name="with bias")])),
    OpEntry("layer_norm", "nn", lambda x, shape, w, b: _layer_norm(x, shape, w, b),
            lambda dtype: iter([Sample((Arg((3, 6)), (6,), Arg((6,)), Arg((6,))), name="last dim")]),
            dtypes=DTYPES, func=None, call=_fn("layer_norm"), tolerances={**_TOL, "float32": (1e-4, 1e-4)},
            grad_samples=lambda: iter([Sample((Arg((2, 4)), (4,), Arg((4,)), Arg((4,))), name="last dim")])),
    OpEntry("conv2d", "nn", _conv2d,
            lambda dtype: iter([Sample((Arg((2, 3, 6, 5)), Arg((4, 3, 3, 3)), Arg((4,))), name="3x3 with bias"),
                                Sample((Arg((1, 2, 5, 5)), Arg((3, 2, 2, 2))), {"stride": 2, "padding": 1}, name="stride 2, padding 1")]),
            dtypes=DTYPES, func=None, call=_fn("conv2d"), tolerances={"float32": (1e-4, 1e-4), "float16": (5e-3, 2e-2), "bfloat16": (3e-2, 2e-1)},
            grad_samples=lambda: iter([Sample((Arg((1, 2, 4, 4)), Arg((2, 2, 2, 2)), Arg((2,))), name="2x2")])),
    OpEntry("max_pool2d", "nn", lambda x, k: _pool(x, k, np.max), lambda dtype: iter([Sample((Arg((2, 3, 6, 5)), 2), name="2x2")]),
            dtypes=DTYPES, func=None, call=_fn("max_pool2d"), exact=True,
            grad_samples=lambda: iter([Sample((Arg((1, 1, 4, 4)), 2), name="2x2")])),
    OpEntry("avg_pool2d", "nn", lambda x, k: _pool(x, k, np.mean), lambda dtype: iter([Sample((Arg((2, 3, 6, 5)), 2), name="2x2")]),
            dtypes=DTYPES, func=None, call=_fn("avg_pool2d"), tolerances=_TOL,
            grad_samples=lambda: iter([Sample((Arg((1, 1, 4, 4)), 2), name="2x2")])),
    OpEntry("conv3d", "nn", _conv3d,
            lambda dtype: iter([Sample((Arg((2, 3, 4, 5, 4)), Arg((4, 3, 2, 3, 2)), Arg((4,))), name="2x3x2 with bias"),
                                Sample((Arg((1, 2, 4, 4, 3)), Arg((3, 2, 2, 2, 2))), {"stride": 2, "padding": 1}, name="stride 2, padding 1")]),
            dtypes=DTYPES, func=None, call=_fn("conv3d"), tolerances={"float32": (1e-4, 1e-4), "float16": (5e-3, 2e-2), "bfloat16": (3e-2, 2e-1)},
            grad_samples=lambda: iter([Sample((Arg((1, 2, 3, 3, 3)), Arg((2, 2, 2, 2, 2)), Arg((2,))), name="2x2x2")])),
    OpEntry("max_pool3d", "nn", lambda x, k: _pool3d(x, k, np.max), lambda dtype: iter([Sample((Arg((2, 3, 4, 6, 5)), 2), name="2x2x2")]),
            dtypes=DTYPES, func=None, call=_fn("max_pool3d"), exact=True,
            grad_samples=lambda: iter([Sample((Arg((1, 1, 4, 4, 4)), 2), name="2x2x2")])),
    OpEntry("avg_pool3d", "nn", lambda x, k: _pool3d(x, k, np.mean), lambda dtype: iter([Sample((Arg((2, 3, 4, 6, 5)), 2), name="2x2x2")]),
            dtypes=DTYPES, func=None, call=_fn("avg_pool3d"), tolerances=_TOL,
            grad_samples=lambda: iter([Sample((Arg((1, 1, 4, 4, 4)), 2), name="2x2x2")])),
    OpEntry("cross_entropy", "nn", _cross_entropy, lambda dtype: iter([Sample((Arg((4, 3)), _TARGET), name="class indices")]),
            dtypes=DTYPES, func=None, call=_fn("cross_entropy"), tolerances=_TOL,
            grad_samples=lambda: iter([Sample((Arg((4, 3)), _TARGET), name="class indices")])),
    OpEntry("mse_loss", "nn", lambda a, b: np.mean((a - b) ** 2), lambda dtype: iter([Sample((Arg((3, 4)), Arg((3, 4))), name="mean")]),
            dtypes=DTYPES, func=None, call=_fn("mse_loss"), tolerances=_TOL,
            grad_samples=lambda: iter([Sample((Arg((2, 3)), Arg((2, 3))), name="mean")])),
    _regression_loss("smooth_l1_loss", _smooth_l1_loss, "beta", -1.0, "does not support negative values for beta"),
    _regression_loss("huber_loss", _huber_loss, "delta", 0.0, "does not support non-positive values for delta"),
    OpEntry("embedding", "nn", lambda i, w: w[i.astype(np.int64)],
            lambda dtype: iter([Sample((Arg((2, 3), dtype="int64", values=[[0, 4, 2], [4, 4, 1]], grad=False), Arg((5, 3))), name="2-d ids")]),
            dtypes=DTYPES, func=None, call=_fn("embedding"), exact=True,
            grad_samples=lambda: iter([Sample((Arg((3,), dtype="int64", values=[0, 2, 0], grad=False), Arg((3, 2))), name="repeated ids")])),
    OpEntry("one_hot", "nn", lambda i, n: np.eye(n)[i.astype(np.int64)],
            lambda dtype: iter([Sample((Arg((4,), dtype="int64", values=[0, 3, 1, 3], grad=False), 4), name="4 classes")]),
            dtypes=("int64",), func=None, call=_fn("one_hot"), exact=True, differentiable=False, out_dtype="int64"),
    OpEntry("grid_sample", "nn", _grid_sample, _grid_sample_samples, dtypes=("float32", "float64"), func=None,
            call=_fn("grid_sample"), tolerances=_TOL,
            grad_samples=lambda: iter([Sample((Arg((1, 2, 3, 4)), Arg((1, 2, 3, 2), low=-0.9, high=0.9)),
                                              {"align_corners": False}, name="bilinear zeros")])),
    OpEntry("adaptive_max_pool2d", "nn", _adaptive_max_pool2d,
            lambda dtype: iter([Sample((Arg((2, 3, 7, 5)), (3, 2)), name="7x5 to 3x2"),
                                Sample((Arg((1, 2, 4, 4)), (6, 5)), name="upsampling windows")]),
            dtypes=DTYPES, func=None, call=_fn("adaptive_max_pool2d"), exact=True,
            grad_samples=lambda: iter([Sample((Arg((1, 2, 5, 4)), (2, 3)), name="5x4 to 2x3")])),
    OpEntry("fractional_max_pool2d", "nn", _fractional_max_pool2d,
            lambda dtype: iter([Sample((Arg((2, 3, 9, 11)), _SAMPLES, (2, 3), (4, 5)), name="9x11 to 4x5, kernel 2x3"),
                                Sample((Arg((2, 3, 6, 6), layout="transposed"), _SAMPLES, (2, 2), (5, 1)),
                                       name="transposed, one column out")]),
            dtypes=("float32", "float64"), func=None, call=_fractional_call, exact=True,
            grad_samples=lambda: iter([Sample((Arg((1, 2, 7, 7)), Arg((1, 2, 2), low=0.0, high=0.999, grad=False),
                                               (2, 2), (3, 3)), name="7x7 to 3x3")])),
    OpEntry("affine_grid", "nn", _affine_grid,
            lambda dtype: iter([Sample((Arg((2, 2, 3)), (2, 3, 4, 5)), {"align_corners": align}, name=f"align_corners={align}")
                                for align in (False, True)]),
            dtypes=("float32", "float64"), func=None, call=_fn("affine_grid"), tolerances=_TOL,
            grad_samples=lambda: iter([Sample((Arg((1, 2, 3)), (1, 1, 3, 2)), {"align_corners": False}, name="3x2")])),
    OpEntry("multi_head_attention_forward", "nn", _mha_forward, _mha_samples, dtypes=("float32", "float64"),
            func=None, call=_mha_call, tolerances=_TOL,
            grad_samples=lambda: iter([Sample((Arg((2, 1, 4)), Arg((3, 1, 4)), Arg((3, 1, 4)),
                                               Arg((12, 4), low=-0.5, high=0.5), Arg((12,), low=-0.5, high=0.5),
                                               Arg((4, 4), low=-0.5, high=0.5), Arg((4,), low=-0.5, high=0.5), 2),
                                              name="2 heads")])),
    OpEntry("ctc_loss", "nn", _ctc_loss, _ctc_loss_samples, dtypes=("float32", "float64"), func=None, call=_ctc_call,
            tolerances=_TOL, errors=_ctc_loss_errors(),
            grad_samples=lambda: iter([Sample((Arg((4, 2, 3)), Arg((2, 2), dtype="int64", values=[[1, 1], [2, 0]], grad=False),
                                               (4, 3), (2, 1)), {"reduction": reduction}, name=reduction)
                                       for reduction in ("mean", "none")])),
]
