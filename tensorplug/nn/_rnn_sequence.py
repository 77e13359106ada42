"""One Elman RNN layer direction (tanh or relu) over a whole sequence as two ops a backend can
fuse (issue 14), as ``_lstm_sequence`` does for the LSTM: ``h' = act(projected + h W_hh^T)``
with ``projected = x W_ih^T + b_ih + b_hh``.

- ``rnn_sequence_forward(projected, w_hh, h0, nonlinearity) -> hs``: every step's hidden state;
  backward needs nothing else (tanh' = 1 - h^2, relu' = [h > 0]).
- ``rnn_sequence_backward(w_hh, h0, hs, grad_hs, grad_hn, nonlinearity)
  -> (grad_projected, grad_w_hh, grad_h0)``.

``RNNSequence`` (an autograd Function) ties them together: one graph node per layer direction.
The decompositions below run on every backend; the CPU backend fuses each into one C++ call
(csrc/rnn.cpp), the OpenCL backend into one kernel over the whole sequence
(backends/opencl/recurrent.py).
"""
from __future__ import annotations

from ..dispatcher import Operator
from ..frontend.autograd.function import Function
from ..frontend.autograd.grad_mode import is_grad_enabled, no_grad
from ..frontend.ops.joining import cat, stack
from ._sequence_args import call, check_operands

__all__ = ["RNNSequence", "FORWARD", "BACKWARD", "NONLINEARITIES"]

NONLINEARITIES = ("tanh", "relu")


def _forward_decomposition(projected, w_hh, h0, nonlinearity):
    h = h0
    hs = []
    for t in range(projected.shape[0]):
        pre = projected[t] + h @ w_hh.t()
        h = pre.tanh() if nonlinearity == "tanh" else pre.relu()
        hs.append(h)
    return stack(hs, 0)


def _backward_decomposition(w_hh, h0, hs, grad_hs, grad_hn, nonlinearity):
    hidden = w_hh.shape[1]
    steps = hs.shape[0]
    dh = grad_hn
    grad_projected = [None] * steps
    for t in range(steps - 1, -1, -1):
        h = hs[t]
        dh = dh + grad_hs[t]
        # relu's derivative is taken as 0 at 0, as PyTorch's (its output is 0 there either way).
        grad_projected[t] = dh * (1 - h * h) if nonlinearity == "tanh" else dh * (h > 0).to(dh.dtype)
        dh = grad_projected[t] @ w_hh
    flat = stack(grad_projected, 0)
    h_prev = cat([h0.unsqueeze(0), hs[:-1]], 0)
    grad_w_hh = flat.reshape(-1, hidden).t() @ h_prev.reshape(-1, hidden)
    return flat, grad_w_hh, dh


FORWARD = Operator("rnn_sequence_forward", decomposition=_forward_decomposition, differentiable=False)
BACKWARD = Operator("rnn_sequence_backward", decomposition=_backward_decomposition, differentiable=False)


class RNNSequence(Function):
    """``(hs, h_n)`` of one layer direction; gradients for projected, w_hh and h0."""

    @staticmethod
    def forward(ctx, projected, w_hh, h0, nonlinearity):
        if nonlinearity not in NONLINEARITIES:
            raise ValueError(f"rnn_sequence_forward: nonlinearity must be 'tanh' or 'relu', got {nonlinearity!r}")
        check_operands("rnn_sequence_forward", 1, projected, w_hh, {"h0": h0})
        args = tuple(t.detach().contiguous() for t in (projected, w_hh, h0))
        with no_grad():
            hs = call(FORWARD, *args, nonlinearity)
        # The inputs themselves too, for a backward that builds a graph (see _sequence_args).
        ctx.save_for_backward(args[1], args[2], hs, projected, w_hh, h0)
        ctx.nonlinearity = nonlinearity
        return hs, hs[-1].clone()

    @staticmethod
    def backward(ctx, grad_hs, grad_hn):
        w_hh, h0, hs, *inputs = ctx.saved_tensors
        if is_grad_enabled():
            hs = _forward_decomposition(*inputs, ctx.nonlinearity)  # a graph for higher-order gradients (_sequence_args)
            return _backward_decomposition(*inputs[1:], hs, grad_hs, grad_hn, ctx.nonlinearity) + (None,)
        with no_grad():
            grads = call(BACKWARD, w_hh, h0, hs, grad_hs.contiguous(), grad_hn.contiguous(), ctx.nonlinearity)
        return grads + (None,)
