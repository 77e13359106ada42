"""One LSTM layer direction over a whole sequence as two ops a backend can fuse (issue 14).

A loop over time steps in Python made ~15 ops and autograd nodes per step. Here the recurrence is
two operators dispatched by name, like any composite op:

- ``lstm_sequence_forward(projected, w_hh, h0, c0) -> (hs, cs, acts)``: every step's hidden and
  cell state and activated gates (i, f, g, o); ``projected`` holds x W_ih^T + b_ih + b_hh.
- ``lstm_sequence_backward(w_hh, h0, c0, hs, cs, acts, grad_hs, grad_hn, grad_cn)
  -> (grad_projected, grad_w_hh, grad_h0, grad_c0)``.

Both return several tensors, which no derivative formula describes, so they are not
differentiable themselves (like ``max_pool2d_with_indices``); ``LSTMSequence``, an autograd
Function, ties them together: one graph node per layer direction. Their decompositions below
run on every backend; the CPU backend fuses each into one C++ call (csrc/rnn.cpp), the OpenCL
backend into one kernel over the whole sequence (backends/opencl/recurrent.py).
"""
from __future__ import annotations

from ..dispatcher import Operator
from ..frontend.autograd.function import Function
from ..frontend.autograd.grad_mode import is_grad_enabled, no_grad
from ..frontend.ops.joining import cat, stack
from ._sequence_args import call, check_operands

__all__ = ["LSTMSequence", "FORWARD", "BACKWARD"]


def _forward_decomposition(projected, w_hh, h0, c0):
    hidden = w_hh.shape[1]
    h, c = h0, c0
    hs, cs, acts = [], [], []
    for t in range(projected.shape[0]):
        gates = projected[t] + h @ w_hh.t()
        i = gates[:, :hidden].sigmoid()
        f = gates[:, hidden:2 * hidden].sigmoid()
        g = gates[:, 2 * hidden:3 * hidden].tanh()
        o = gates[:, 3 * hidden:].sigmoid()
        c = f * c + i * g
        h = o * c.tanh()
        hs.append(h)
        cs.append(c)
        acts.append(cat([i, f, g, o], 1))
    return stack(hs, 0), stack(cs, 0), stack(acts, 0)


def _backward_decomposition(w_hh, h0, c0, hs, cs, acts, grad_hs, grad_hn, grad_cn):
    hidden = w_hh.shape[1]
    steps = hs.shape[0]
    dh, dc = grad_hn, grad_cn
    grad_gates = [None] * steps
    for t in range(steps - 1, -1, -1):
        a = acts[t]
        i, f, g, o = a[:, :hidden], a[:, hidden:2 * hidden], a[:, 2 * hidden:3 * hidden], a[:, 3 * hidden:]
        c_prev = cs[t - 1] if t else c0
        tc = cs[t].tanh()
        dh = dh + grad_hs[t]
        dct = dc + dh * o * (1 - tc * tc)
        grad_gates[t] = cat([dct * g * i * (1 - i), dct * c_prev * f * (1 - f), dct * i * (1 - g * g),
                             dh * tc * o * (1 - o)], 1)
        dc = dct * f
        dh = grad_gates[t] @ w_hh
    grad_projected = stack(grad_gates, 0)
    h_prev = cat([h0.unsqueeze(0), hs[:-1]], 0)
    grad_w_hh = grad_projected.reshape(-1, 4 * hidden).t() @ h_prev.reshape(-1, hidden)
    return grad_projected, grad_w_hh, dh, dc


FORWARD = Operator("lstm_sequence_forward", decomposition=_forward_decomposition, differentiable=False)
BACKWARD = Operator("lstm_sequence_backward", decomposition=_backward_decomposition, differentiable=False)


class LSTMSequence(Function):
    """``(hs, h_n, c_n)`` of one layer direction; gradients for projected, w_hh, h0 and c0."""

    @staticmethod
    def forward(ctx, projected, w_hh, h0, c0):
        check_operands("lstm_sequence_forward", 4, projected, w_hh, {"h0": h0, "c0": c0})
        args = tuple(t.detach().contiguous() for t in (projected, w_hh, h0, c0))
        with no_grad():
            hs, cs, acts = call(FORWARD, *args)
        # The inputs themselves too, for a backward that builds a graph (see _sequence_args).
        ctx.save_for_backward(args[1], args[2], args[3], hs, cs, acts, projected, w_hh, h0, c0)
        return hs, hs[-1].clone(), cs[-1].clone()

    @staticmethod
    def backward(ctx, grad_hs, grad_hn, grad_cn):
        w_hh, h0, c0, hs, cs, acts, *inputs = ctx.saved_tensors
        if is_grad_enabled():
            hs, cs, acts = _forward_decomposition(*inputs)  # a graph for higher-order gradients (_sequence_args)
            return _backward_decomposition(*inputs[1:], hs, cs, acts, grad_hs, grad_hn, grad_cn)
        with no_grad():
            grads = call(BACKWARD, w_hh, h0, c0, hs, cs, acts, grad_hs.contiguous(), grad_hn.contiguous(),
                          grad_cn.contiguous())
        return grads
