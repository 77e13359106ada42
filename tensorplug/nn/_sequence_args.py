"""What the whole-sequence recurrent ops (``_lstm_sequence``, ``_gru_sequence``, ``_rnn_sequence``)
share: the check of their operands before any kernel runs, and the call that dispatches them.

The CPU kernels read raw contiguous memory and the decompositions slice by the hidden size, so a
wrong shape would fail deep inside either (or read past a row); the check raises first, naming
the op and every shape.

Higher-order gradients: the ops' outputs are detached and their backward is not differentiable,
so under ``backward(create_graph=True)`` (the only time the engine runs a node's backward with
grad mode on) the gradient they give would carry no graph, and a second derivative would
silently miss every path through the recurrence. Each Function then runs the forward
decomposition again on its inputs themselves, recording a node per step, and the backward
decomposition on the results: both are written with differentiable ops, so the gradients lead
back to the inputs and to the incoming gradients. It costs the step loop's time, in that case only.
"""
from __future__ import annotations

from .. import dispatcher
from ..dispatcher import Operator
from ..frontend.tensor import Tensor

__all__ = ["call", "check_operands"]


def call(op: Operator, *args):
    """``op`` on ``args`` through the dispatch table (the op is not differentiable itself)."""
    return op.lookup(dispatcher.keyset_of(args, {}))(*args)


def check_operands(op_name: str, gates: int, projected, w_hh, states: dict, b_hh=None) -> None:
    """``projected (T, B, gates*H)``, ``w_hh (gates*H, H)``, each state ``(B, H)`` and ``b_hh``
    (when given) ``(gates*H,)``: one floating dtype, one device."""
    named = {"projected": projected, "w_hh": w_hh, **states}
    if b_hh is not None:
        named["b_hh"] = b_hh
    for name, t in named.items():
        if not isinstance(t, Tensor):
            raise TypeError(f"{op_name}: {name} must be a Tensor, got {type(t).__name__}")
    shapes = ", ".join(f"{name} {list(t.shape)}" for name, t in named.items())
    if projected.ndim != 3 or w_hh.ndim != 2:
        raise RuntimeError(f"{op_name}: expected projected (T, B, {gates}*H) and w_hh ({gates}*H, H), got {shapes}")
    steps, batch, width = projected.shape
    hidden = w_hh.shape[1]
    expected = {"projected": (steps, batch, gates * hidden), "w_hh": (gates * hidden, hidden),
                **{name: (batch, hidden) for name in states}}
    if b_hh is not None:
        expected["b_hh"] = (gates * hidden,)
    if any(tuple(t.shape) != expected[name] for name, t in named.items()):
        want = ", ".join(f"{name} {list(shape)}" for name, shape in expected.items())
        raise RuntimeError(f"{op_name}: shapes do not match (T={steps}, B={batch}, H={hidden}, {gates} gates): "
                           f"expected {want}, got {shapes}")
    dtypes = {t.dtype for t in named.values()}
    if len(dtypes) != 1 or not projected.dtype.is_floating_point:
        raise TypeError(f"{op_name}: expected operands of one floating dtype, got "
                        + ", ".join(f"{name} {t.dtype}" for name, t in named.items()))
    devices = {str(t.device) for t in named.values()}
    if len(devices) != 1:
        raise RuntimeError(f"{op_name}: expected operands on one device, got "
                           + ", ".join(f"{name} on {t.device}" for name, t in named.items()))

