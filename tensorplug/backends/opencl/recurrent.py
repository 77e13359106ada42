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


def _prepare(op: str, gates: int, named: dict):
    """``(state, dtype, (T, B, H), operands)`` for the fused kernel: the operands by name, W_hh as
    given (the packing reads any strides), the others contiguous; None where the decomposition
    runs instead (a dtype other than float32/float64 for all, or an empty sequence, batch or hidden
    size). Shapes that do not fit one another raise here, before any kernel could read past a
    buffer (the autograd Functions check them first; this guards a direct call of the op)."""
    first, w_hh = named.get("projected", named.get("hs")), named["w_hh"]
    if "projected" in named:
        steps, batch = first.shape[:2] if first.ndim == 3 else (0, 0)
        hidden = w_hh.shape[1] if w_hh.ndim == 2 else 0
    else:
        steps, batch, hidden = first.shape if first.ndim == 3 else (0, 0, 0)
    expected = {"projected": (steps, batch, gates * hidden), "w_hh": (gates * hidden, hidden), "b_hh": (gates * hidden,),
                "hs": (steps, batch, hidden), "cs": (steps, batch, hidden), "grad_hs": (steps, batch, hidden),
                "acts": (steps, batch, 4 * hidden)}
    for name, t in named.items():
        want = expected.get(name, (batch, hidden))  # h0, c0, grad_hn, grad_cn
        if tuple(t.shape) != want:
            got = ", ".join(f"{n} {list(x.shape)}" for n, x in named.items())
            raise RuntimeError(f"{op}: shapes do not match (T={steps}, B={batch}, H={hidden}, {gates} gates): "
                               f"expected {name} {list(want)}, got {got}")
    dtype = first.dtype
    if dtype.name not in _recurrent_source.VECTOR or any(t.dtype is not dtype for t in named.values()):
        return None
    if steps * batch * hidden == 0:
        return None
    operands = {name: t if name == "w_hh" else _contiguous(t) for name, t in named.items()}
    return _state(first), dtype.name, (steps, batch, hidden), operands


def _adapter(op: str, gates: int, names: tuple):
    """The kernel of ``op`` made from ``launch(state, dtype, (T, B, H), operands, *rest)``, which
    launches the fused kernels on the operands _prepare gives (the op's tensor arguments, named
    ``names``; ``rest`` are those after them: the RNN's nonlinearity); the op's decomposition
    where _prepare gives None."""

    def wrap(launch):
        def kernel(*args):
            ready = _prepare(op, gates, dict(zip(names, args)))
            if ready is None:
                return get_operator(op).decomposition(*args)
            return launch(*ready, *args[len(names):])

        # Named as the launch, without functools.wraps: its __wrapped__ would give the kernel the
        # launch's signature, which is not the op's.
        kernel.__name__ = kernel.__qualname__ = launch.__name__
        return kernel

    return wrap


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

@_adapter("lstm_sequence_forward", 4, ("projected", "w_hh", "h0", "c0"))
def _lstm_sequence_forward(state, dtype, sizes, t):
    steps, batch, hidden = sizes
    hs = t["projected"].new_empty((steps, batch, hidden))
    cs = t["projected"].new_empty((steps, batch, hidden))
    acts = t["projected"].new_empty((steps, batch, 4 * hidden))
    packed = _forward_weight(state, dtype, t["w_hh"], 4)
    g, l, items = _items(batch)
    _rk(state, dtype, "lstm_forward")(state.queue, g, l, *_operand(t["projected"]), *_operand(t["c0"]),
                                       *_operand(cs), *_operand(acts), packed.buffer, *_operand(t["h0"]),
                                       *_operand(hs), steps, batch, hidden, items)
    return hs, cs, acts


@_adapter("lstm_sequence_backward", 4, ("w_hh", "h0", "c0", "hs", "cs", "acts", "grad_hs", "grad_hn", "grad_cn"))
def _lstm_sequence_backward(state, dtype, sizes, t):
    steps, batch, hidden = sizes
    grad_projected = t["acts"].new_empty(t["acts"].shape)
    grad_w_hh, grad_h0, grad_c0 = (t[name].new_empty(t[name].shape) for name in ("w_hh", "h0", "c0"))
    hprev = state.allocate(steps * batch * hidden * t["hs"].dtype.itemsize)
    packed = _backward_weight(state, dtype, t["w_hh"], 4)
    g, l, items = _items(batch)
    _rk(state, dtype, "lstm_backward")(
        state.queue, g, l, *_operand(t["c0"]), *_operand(t["cs"]), *_operand(t["acts"]), *_operand(t["grad_cn"]),
        *_operand(grad_c0), *_operand(grad_projected), packed.buffer, *_operand(t["h0"]), *_operand(t["hs"]),
        *_operand(t["grad_hs"]), *_operand(t["grad_hn"]), *_operand(grad_h0), hprev.buffer, steps, batch, hidden, items)
    _grad_w_hh(state, dtype, grad_w_hh, _operand(grad_projected), hprev, steps, batch, 4 * hidden, hidden)
    return grad_projected, grad_w_hh, grad_h0, grad_c0


# --- GRU -----------------------------------------------------------------------------------------

@_adapter("gru_sequence_forward", 3, ("projected", "w_hh", "b_hh", "h0"))
def _gru_sequence_forward(state, dtype, sizes, t):
    steps, batch, hidden = sizes
    hs = t["projected"].new_empty((steps, batch, hidden))
    acts = t["projected"].new_empty((steps, batch, 4 * hidden))
    packed = _forward_weight(state, dtype, t["w_hh"], 3)
    g, l, items = _items(batch)
    _rk(state, dtype, "gru_forward")(state.queue, g, l, *_operand(t["projected"]), *_operand(t["b_hh"]),
                                      *_operand(acts), packed.buffer, *_operand(t["h0"]), *_operand(hs), steps, batch,
                                      hidden, items)
    return hs, acts


@_adapter("gru_sequence_backward", 3, ("w_hh", "h0", "hs", "acts", "grad_hs", "grad_hn"))
def _gru_sequence_backward(state, dtype, sizes, t):
    steps, batch, hidden = sizes
    itemsize = t["hs"].dtype.itemsize
    grad_projected = t["hs"].new_empty((steps, batch, 3 * hidden))
    grad_w_hh, grad_h0 = t["w_hh"].new_empty(t["w_hh"].shape), t["h0"].new_empty(t["h0"].shape)
    grad_b_hh = t["w_hh"].new_empty((3 * hidden,))
    # The gradient of every step's h W_hh^T + b_hh (grad_projected's, with r scaling the n part):
    # the next step's dh reads it, and grad_w_hh and grad_b_hh come from it at the end.
    drec = state.allocate(steps * batch * 3 * hidden * itemsize)
    hprev = state.allocate(steps * batch * hidden * itemsize)
    packed = _backward_weight(state, dtype, t["w_hh"], 3)
    g, l, items = _items(batch)
    _rk(state, dtype, "gru_backward")(
        state.queue, g, l, *_operand(t["acts"]), *_operand(grad_projected), drec.buffer, packed.buffer,
        *_operand(t["h0"]), *_operand(t["hs"]), *_operand(t["grad_hs"]), *_operand(t["grad_hn"]), *_operand(grad_h0),
        hprev.buffer, steps, batch, hidden, items)
    _grad_w_hh(state, dtype, grad_w_hh, (drec.buffer, 0), hprev, steps, batch, 3 * hidden, hidden)
    n = 3 * hidden
    _fk(state, dtype, "sum_batches")(state.queue, (-(-n // _PACK_GROUP) * _PACK_GROUP,), (_PACK_GROUP,),
                                     *_operand(grad_b_hh), drec.buffer, steps * batch, n)
    return grad_projected, grad_w_hh, grad_b_hh, grad_h0


# --- Elman RNN -----------------------------------------------------------------------------------
# Any nonlinearity but "tanh" runs relu, as the decompositions do (RNNSequence refuses others).

@_adapter("rnn_sequence_forward", 1, ("projected", "w_hh", "h0"))
def _rnn_sequence_forward(state, dtype, sizes, t, nonlinearity):
    steps, batch, hidden = sizes
    hs = t["projected"].new_empty((steps, batch, hidden))
    packed = _forward_weight(state, dtype, t["w_hh"], 1)
    g, l, items = _items(batch)
    _rk(state, dtype, "rnn_forward")(state.queue, g, l, *_operand(t["projected"]), int(nonlinearity == "tanh"),
                                      packed.buffer, *_operand(t["h0"]), *_operand(hs), steps, batch, hidden, items)
    return hs


@_adapter("rnn_sequence_backward", 1, ("w_hh", "h0", "hs", "grad_hs", "grad_hn"))
def _rnn_sequence_backward(state, dtype, sizes, t, nonlinearity):
    steps, batch, hidden = sizes
    grad_projected = t["hs"].new_empty(t["hs"].shape)
    grad_w_hh, grad_h0 = t["w_hh"].new_empty(t["w_hh"].shape), t["h0"].new_empty(t["h0"].shape)
    hprev = state.allocate(steps * batch * hidden * t["hs"].dtype.itemsize)
    packed = _backward_weight(state, dtype, t["w_hh"], 1)
    g, l, items = _items(batch)
    _rk(state, dtype, "rnn_backward")(
        state.queue, g, l, int(nonlinearity == "tanh"), *_operand(grad_projected), packed.buffer, *_operand(t["h0"]),
        *_operand(t["hs"]), *_operand(t["grad_hs"]), *_operand(t["grad_hn"]), *_operand(grad_h0), hprev.buffer, steps,
        batch, hidden, items)
    _grad_w_hh(state, dtype, grad_w_hh, _operand(grad_projected), hprev, steps, batch, hidden, hidden)
    return grad_projected, grad_w_hh, grad_h0


def table() -> dict:
    """Op name -> fused kernel for the recurrent sequence ops."""
    return {"lstm_sequence_forward": _lstm_sequence_forward, "lstm_sequence_backward": _lstm_sequence_backward,
            "gru_sequence_forward": _gru_sequence_forward, "gru_sequence_backward": _gru_sequence_backward,
            "rnn_sequence_forward": _rnn_sequence_forward, "rnn_sequence_backward": _rnn_sequence_backward}
