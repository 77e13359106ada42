"""Fused kernels for the whole-sequence recurrent ops on OpenCL (issue 14): ``lstm_sequence_*``,
``gru_sequence_*`` and ``rnn_sequence_*``, forward and backward (docs/backend-contract.md, the
fused-kernel table; the ops and their decompositions are in ``tensorplug/nn/_*_sequence.py``).

Each op is the packing of W_hh (``rnn_pack``) and one launch that walks every time step
(``_recurrent_source``: a work-item per pair of batch rows); backward adds grad_w_hh as one
blocked matmul over the stacked previous states (and the GRU's grad_b_hh as one column sum). Their
decompositions made 1345 launches for a 2-layer, 35-step LSTM forward. float32 and float64 run
here; other dtypes, and empty sequences, batches or hidden sizes, run the op's decomposition.
"""
from __future__ import annotations

from ...dispatcher import get_operator
from . import _recurrent_source
from .fused import _contiguous, _fk, _operand
from .kernels import _kernel, _state, gemm_blocked

__all__ = ["table"]

_FAMILY = "recurrent"
_PACK_GROUP = 64  # rnn_pack's work-group size


def _rk(state, dtype: str, name: str):
    return _kernel(state, _FAMILY, dtype, name)


def _covers(op: str, gates: int, steps: int, batch: int, hidden: int, named: dict) -> bool:
    """Whether the fused kernel runs: one float32/float64 dtype and nothing empty. Shapes that do
    not fit one another raise here, before any kernel could read past a buffer (the autograd
    Functions check them first; this guards a direct call of the op)."""
    expected = {"projected": (steps, batch, gates * hidden), "w_hh": (gates * hidden, hidden), "b_hh": (gates * hidden,),
                "hs": (steps, batch, hidden), "cs": (steps, batch, hidden), "grad_hs": (steps, batch, hidden),
                "acts": (steps, batch, (4 if gates >= 3 else gates) * hidden)}
    for name, t in named.items():
        want = expected.get(name, (batch, hidden))  # h0, c0, grad_hn, grad_cn
        if tuple(t.shape) != want:
            got = ", ".join(f"{n} {list(x.shape)}" for n, x in named.items())
            raise RuntimeError(f"{op}: shapes do not match (T={steps}, B={batch}, H={hidden}, {gates} gates): "
                               f"expected {name} {list(want)}, got {got}")
    dtype = next(iter(named.values())).dtype
    return (dtype.name in _recurrent_source.VECTOR and all(t.dtype is dtype for t in named.values())
            and steps * batch * hidden > 0)


def _forward_sizes(projected, w_hh) -> tuple:
    """(T, B, H) of a forward op's operands, 0 for what their ranks do not give (_covers then
    raises on the shapes)."""
    steps, batch = projected.shape[:2] if projected.ndim == 3 else (0, 0)
    return steps, batch, w_hh.shape[1] if w_hh.ndim == 2 else 0


def _packed_weight(state, dtype: str, w_hh, k: int, groups: int, hidden: int, strides) -> object:
    """W_hh in the strips the sequence kernels read (see _recurrent_source.rnn_pack): k rows of
    ``groups`` gate groups of each strip's hidden units; ``strides`` (sk, sg, sj) read element
    (k, group, unit) of w_hh."""
    width = _recurrent_source.strip_width(dtype, groups)
    runs = -(-hidden // width) * k * groups  # of width lanes, one per work-item
    packed = state.allocate(runs * width * w_hh.dtype.itemsize)
    buf, off = _operand(w_hh)
    g = -(-runs // _PACK_GROUP) * _PACK_GROUP
    _rk(state, dtype, "rnn_pack")(state.queue, (g,), (_PACK_GROUP,), packed.buffer, buf, off, k, groups, hidden,
                                   *strides, width, runs)
    return packed


def _forward_weight(state, dtype: str, w_hh, gates: int):
    """W_hh^T packed for forward: row k of group g is column k of W_hh's rows g*H ..."""
    hidden = w_hh.shape[1]
    s0, s1 = w_hh.stride()
    return _packed_weight(state, dtype, w_hh, hidden, gates, hidden, (s1, hidden * s0, s0))


def _backward_weight(state, dtype: str, w_hh, gates: int):
    """W_hh packed for backward: (gates*H, H) as it is, one group."""
    s0, s1 = w_hh.stride()
    return _packed_weight(state, dtype, w_hh, gates * w_hh.shape[1], 1, w_hh.shape[1], (s0, 0, s1))


def _items(batch: int) -> tuple:
    """Global and local size of a sequence kernel: one work-item per ROWS batch rows, each its own
    work-group (PoCL hands work-groups to its threads)."""
    items = -(-batch // _recurrent_source.ROWS)
    return (items,), (1,), items


def _grad_w_hh(state, dtype: str, out, grads, hprev, steps: int, batch: int, width: int, hidden: int) -> None:
    """out (width, H) = grads (T*B, width)^T @ hprev (T*B, H): grad_w_hh in one blocked matmul."""
    gbuf, goff = grads
    gemm_blocked(state, dtype, 1, width, hidden, steps * batch, (*_operand(out), (0, hidden, 1)),
                 (gbuf, goff, (0, 1, width)), (hprev.buffer, 0, (0, hidden, 1)))


# --- LSTM ----------------------------------------------------------------------------------------

def _lstm_sequence_forward(projected, w_hh, h0, c0):
    steps, batch, hidden = _forward_sizes(projected, w_hh)
    named = {"projected": projected, "w_hh": w_hh, "h0": h0, "c0": c0}
    if not _covers("lstm_sequence_forward", 4, steps, batch, hidden, named):
        return get_operator("lstm_sequence_forward").decomposition(projected, w_hh, h0, c0)
    projected, h0, c0 = _contiguous(projected), _contiguous(h0), _contiguous(c0)
    state = _state(projected)
    dtype = projected.dtype.name
    hs = projected.new_empty((steps, batch, hidden))
    cs = projected.new_empty((steps, batch, hidden))
    acts = projected.new_empty((steps, batch, 4 * hidden))
    packed = _forward_weight(state, dtype, w_hh, 4)
    g, l, items = _items(batch)
    _rk(state, dtype, "lstm_forward")(state.queue, g, l, *_operand(projected), *_operand(c0), *_operand(cs),
                                       *_operand(acts), packed.buffer, *_operand(h0), *_operand(hs), steps, batch,
                                       hidden, items)
    return hs, cs, acts


def _lstm_sequence_backward(w_hh, h0, c0, hs, cs, acts, grad_hs, grad_hn, grad_cn):
    args = (w_hh, h0, c0, hs, cs, acts, grad_hs, grad_hn, grad_cn)
    steps, batch, hidden = hs.shape if hs.ndim == 3 else (0, 0, 0)
    named = dict(zip(("w_hh", "h0", "c0", "hs", "cs", "acts", "grad_hs", "grad_hn", "grad_cn"), args))
    if not _covers("lstm_sequence_backward", 4, steps, batch, hidden, named):
        return get_operator("lstm_sequence_backward").decomposition(*args)
    h0, c0, hs, cs, acts, grad_hs, grad_hn, grad_cn = (_contiguous(t) for t in args[1:])
    state = _state(hs)
    dtype = hs.dtype.name
    grad_projected = acts.new_empty(acts.shape)
    grad_w_hh, grad_h0, grad_c0 = w_hh.new_empty(w_hh.shape), h0.new_empty(h0.shape), c0.new_empty(c0.shape)
    hprev = state.allocate(steps * batch * hidden * hs.dtype.itemsize)
    packed = _backward_weight(state, dtype, w_hh, 4)
    g, l, items = _items(batch)
    _rk(state, dtype, "lstm_backward")(
        state.queue, g, l, *_operand(c0), *_operand(cs), *_operand(acts), *_operand(grad_cn), *_operand(grad_c0),
        *_operand(grad_projected), packed.buffer, *_operand(h0), *_operand(hs), *_operand(grad_hs),
        *_operand(grad_hn), *_operand(grad_h0), hprev.buffer, steps, batch, hidden, items)
    _grad_w_hh(state, dtype, grad_w_hh, _operand(grad_projected), hprev, steps, batch, 4 * hidden, hidden)
    return grad_projected, grad_w_hh, grad_h0, grad_c0


# --- GRU -----------------------------------------------------------------------------------------

def _gru_sequence_forward(projected, w_hh, b_hh, h0):
    steps, batch, hidden = _forward_sizes(projected, w_hh)
    named = {"projected": projected, "w_hh": w_hh, "b_hh": b_hh, "h0": h0}
    if not _covers("gru_sequence_forward", 3, steps, batch, hidden, named):
        return get_operator("gru_sequence_forward").decomposition(projected, w_hh, b_hh, h0)
    projected, b_hh, h0 = _contiguous(projected), _contiguous(b_hh), _contiguous(h0)
    state = _state(projected)
    dtype = projected.dtype.name
    hs = projected.new_empty((steps, batch, hidden))
    acts = projected.new_empty((steps, batch, 4 * hidden))
    packed = _forward_weight(state, dtype, w_hh, 3)
    g, l, items = _items(batch)
    _rk(state, dtype, "gru_forward")(state.queue, g, l, *_operand(projected), *_operand(b_hh), *_operand(acts),
                                      packed.buffer, *_operand(h0), *_operand(hs), steps, batch, hidden, items)
    return hs, acts


def _gru_sequence_backward(w_hh, h0, hs, acts, grad_hs, grad_hn):
    args = (w_hh, h0, hs, acts, grad_hs, grad_hn)
    steps, batch, hidden = hs.shape if hs.ndim == 3 else (0, 0, 0)
    named = dict(zip(("w_hh", "h0", "hs", "acts", "grad_hs", "grad_hn"), args))
    if not _covers("gru_sequence_backward", 3, steps, batch, hidden, named):
        return get_operator("gru_sequence_backward").decomposition(*args)
    h0, hs, acts, grad_hs, grad_hn = (_contiguous(t) for t in args[1:])
    state = _state(hs)
    dtype = hs.dtype.name
    itemsize = hs.dtype.itemsize
    grad_projected = hs.new_empty((steps, batch, 3 * hidden))
    grad_w_hh, grad_b_hh, grad_h0 = w_hh.new_empty(w_hh.shape), w_hh.new_empty((3 * hidden,)), h0.new_empty(h0.shape)
    # The gradient of every step's h W_hh^T + b_hh (grad_projected's, with r scaling the n part):
    # the next step's dh reads it, and grad_w_hh and grad_b_hh come from it at the end.
    drec = state.allocate(steps * batch * 3 * hidden * itemsize)
    hprev = state.allocate(steps * batch * hidden * itemsize)
    packed = _backward_weight(state, dtype, w_hh, 3)
    g, l, items = _items(batch)
    _rk(state, dtype, "gru_backward")(
        state.queue, g, l, *_operand(acts), *_operand(grad_projected), drec.buffer, packed.buffer, *_operand(h0),
        *_operand(hs), *_operand(grad_hs), *_operand(grad_hn), *_operand(grad_h0), hprev.buffer, steps, batch, hidden,
        items)
    _grad_w_hh(state, dtype, grad_w_hh, (drec.buffer, 0), hprev, steps, batch, 3 * hidden, hidden)
    n = 3 * hidden
    _fk(state, dtype, "sum_batches")(state.queue, (-(-n // _PACK_GROUP) * _PACK_GROUP,), (_PACK_GROUP,),
                                     *_operand(grad_b_hh), drec.buffer, steps * batch, n)
    return grad_projected, grad_w_hh, grad_b_hh, grad_h0


# --- Elman RNN -----------------------------------------------------------------------------------

def _rnn_sequence_forward(projected, w_hh, h0, nonlinearity):
    steps, batch, hidden = _forward_sizes(projected, w_hh)
    named = {"projected": projected, "w_hh": w_hh, "h0": h0}
    if nonlinearity not in ("tanh", "relu") or not _covers("rnn_sequence_forward", 1, steps, batch, hidden, named):
        return get_operator("rnn_sequence_forward").decomposition(projected, w_hh, h0, nonlinearity)
    projected, h0 = _contiguous(projected), _contiguous(h0)
    state = _state(projected)
    dtype = projected.dtype.name
    hs = projected.new_empty((steps, batch, hidden))
    packed = _forward_weight(state, dtype, w_hh, 1)
    g, l, items = _items(batch)
    _rk(state, dtype, "rnn_forward")(state.queue, g, l, *_operand(projected), int(nonlinearity == "tanh"),
                                      packed.buffer, *_operand(h0), *_operand(hs), steps, batch, hidden, items)
    return hs


def _rnn_sequence_backward(w_hh, h0, hs, grad_hs, grad_hn, nonlinearity):
    args = (w_hh, h0, hs, grad_hs, grad_hn)
    steps, batch, hidden = hs.shape if hs.ndim == 3 else (0, 0, 0)
    named = dict(zip(("w_hh", "h0", "hs", "grad_hs", "grad_hn"), args))
    if nonlinearity not in ("tanh", "relu") or not _covers("rnn_sequence_backward", 1, steps, batch, hidden, named):
        return get_operator("rnn_sequence_backward").decomposition(*args, nonlinearity)
    h0, hs, grad_hs, grad_hn = (_contiguous(t) for t in args[1:])
    state = _state(hs)
    dtype = hs.dtype.name
    grad_projected = hs.new_empty(hs.shape)
    grad_w_hh, grad_h0 = w_hh.new_empty(w_hh.shape), h0.new_empty(h0.shape)
    hprev = state.allocate(steps * batch * hidden * hs.dtype.itemsize)
    packed = _backward_weight(state, dtype, w_hh, 1)
    g, l, items = _items(batch)
    _rk(state, dtype, "rnn_backward")(
        state.queue, g, l, int(nonlinearity == "tanh"), *_operand(grad_projected), packed.buffer, *_operand(h0),
        *_operand(hs), *_operand(grad_hs), *_operand(grad_hn), *_operand(grad_h0), hprev.buffer, steps, batch, hidden,
        items)
    _grad_w_hh(state, dtype, grad_w_hh, _operand(grad_projected), hprev, steps, batch, hidden, hidden)
    return grad_projected, grad_w_hh, grad_h0


def table() -> dict:
    """Op name -> fused kernel for the recurrent sequence ops."""
    return {"lstm_sequence_forward": _lstm_sequence_forward, "lstm_sequence_backward": _lstm_sequence_backward,
            "gru_sequence_forward": _gru_sequence_forward, "gru_sequence_backward": _gru_sequence_backward,
            "rnn_sequence_forward": _rnn_sequence_forward, "rnn_sequence_backward": _rnn_sequence_backward}
