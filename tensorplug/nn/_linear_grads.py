"""A linear layer's weight and bias gradients as one op, so that a backend can compute both in one
kernel (issue 14).

``_linear_backward`` (nn/functional.py) needs ``grad.T @ input`` for the weight and the column
sums of ``grad`` for the bias: a matrix product and a reduction, two kernel launches. On OpenCL a
launch costs tens of microseconds of host time, more than both computations of a small layer
(the small regression's Linear(4, 1) on 32 rows), so the OpenCL backend runs small layers as one
kernel. The op is not differentiable: the backward uses it only when it records nothing (no
create_graph).
"""
from __future__ import annotations

from ..dispatcher import Operator, local_state
from ..frontend.tensor import Tensor

__all__ = ["LINEAR_PARAM_GRADS", "linear_param_grads"]


def _linear_param_grads_decomposition(grad, input):
    return grad.t() @ input, grad.sum(0)


LINEAR_PARAM_GRADS = Operator("linear_param_grads", decomposition=_linear_param_grads_decomposition,
                              differentiable=False)


def linear_param_grads(grad: Tensor, input: Tensor) -> tuple:
    """``(grad.T @ input, grad.sum(0))`` for a (batch, out) ``grad`` and a (batch, in) ``input``."""
    keys = (grad._keys | input._keys | local_state.include) & local_state.mask
    return LINEAR_PARAM_GRADS.lookup(keys)(grad, input)
