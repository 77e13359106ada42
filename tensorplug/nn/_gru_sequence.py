"""One GRU layer direction over a whole sequence as two ops a backend can fuse (issue 14), as
``_lstm_sequence`` does for the LSTM.

PyTorch's gates (r, z, n), with ``projected = x W_ih^T + b_ih`` and ``hidden = h W_hh^T + b_hh``:
``r = sigmoid(projected_r + hidden_r)``, ``z = sigmoid(projected_z + hidden_z)``,
``n = tanh(projected_n + r * hidden_n)``, ``h' = (1 - z) * n + z * h``. Because r multiplies
``hidden_n`` (b_hn included) and not the input side, b_hh cannot be folded into ``projected`` as
the LSTM's is: the ops take it.

- ``gru_sequence_forward(projected, w_hh, b_hh, h0) -> (hs, acts)``: every step's hidden state and
  ``acts (T, B, 4H)``, per step ``(r, z, n, hidden_n)``: what backward needs besides the states.
- ``gru_sequence_backward(w_hh, h0, hs, acts, grad_hs, grad_hn)
  -> (grad_projected, grad_w_hh, grad_b_hh, grad_h0)``.

``GRUSequence`` (an autograd Function) ties them together: one graph node per layer direction.
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

__all__ = ["GRUSequence", "FORWARD", "BACKWARD"]


def _forward_decomposition(projected, w_hh, b_hh, h0):
    hidden = w_hh.shape[1]
    h = h0
    hs, acts = [], []
    for t in range(projected.shape[0]):
        p = projected[t]
        recurrent = h @ w_hh.t() + b_hh
        r = (p[:, :hidden] + recurrent[:, :hidden]).sigmoid()
        z = (p[:, hidden:2 * hidden] + recurrent[:, hidden:2 * hidden]).sigmoid()
        hidden_n = recurrent[:, 2 * hidden:]
        n = (p[:, 2 * hidden:] + r * hidden_n).tanh()
        h = (1 - z) * n + z * h
        hs.append(h)
        acts.append(cat([r, z, n, hidden_n], 1))
    return stack(hs, 0), stack(acts, 0)


def _backward_decomposition(w_hh, h0, hs, acts, grad_hs, grad_hn):
    hidden = w_hh.shape[1]
    steps = hs.shape[0]
    dh = grad_hn
    grad_projected, grad_recurrent = [None] * steps, [None] * steps
    for t in range(steps - 1, -1, -1):
        a = acts[t]
        r, z, n, hidden_n = (a[:, k * hidden:(k + 1) * hidden] for k in range(4))
        h_prev = hs[t - 1] if t else h0
        dh = dh + grad_hs[t]
        d_n = dh * (1 - z) * (1 - n * n)  # through n's tanh: the gradient of projected_n
        d_r = d_n * hidden_n * r * (1 - r)
        d_z = dh * (h_prev - n) * z * (1 - z)
        grad_projected[t] = cat([d_r, d_z, d_n], 1)
        # The recurrent side sees r and z as the input side does, but n only through r.
        grad_recurrent[t] = cat([d_r, d_z, d_n * r], 1)
        dh = dh * z + grad_recurrent[t] @ w_hh
    flat = stack(grad_recurrent, 0).reshape(-1, 3 * hidden)
    h_prev = cat([h0.unsqueeze(0), hs[:-1]], 0)
    grad_w_hh = flat.t() @ h_prev.reshape(-1, hidden)
    return stack(grad_projected, 0), grad_w_hh, flat.sum(0), dh


FORWARD = Operator("gru_sequence_forward", decomposition=_forward_decomposition, differentiable=False)
BACKWARD = Operator("gru_sequence_backward", decomposition=_backward_decomposition, differentiable=False)


class GRUSequence(Function):
    """``(hs, h_n)`` of one layer direction; gradients for projected, w_hh, b_hh and h0."""

    @staticmethod
    def forward(ctx, projected, w_hh, b_hh, h0):
        check_operands("gru_sequence_forward", 3, projected, w_hh, {"h0": h0}, b_hh)
        args = tuple(t.detach().contiguous() for t in (projected, w_hh, b_hh, h0))
        with no_grad():
            hs, acts = call(FORWARD, *args)
        # The inputs themselves too, for a backward that builds a graph (see _sequence_args).
        ctx.save_for_backward(args[1], args[3], hs, acts, projected, w_hh, b_hh, h0)
        return hs, hs[-1].clone()

    @staticmethod
    def backward(ctx, grad_hs, grad_hn):
        w_hh, h0, hs, acts, *inputs = ctx.saved_tensors
        if is_grad_enabled():
            hs, acts = _forward_decomposition(*inputs)  # a graph for higher-order gradients (_sequence_args)
            return _backward_decomposition(inputs[1], inputs[3], hs, acts, grad_hs, grad_hn)
        with no_grad():
            return call(BACKWARD, w_hh, h0, hs, acts, grad_hs.contiguous(), grad_hn.contiguous())
