"""Optimizer updates as single ops, so that a backend can run each one as one fused kernel.

Written with tensor ops, Adam's update is about 15 kernels per parameter, each a pass over memory;
as one op (``adam_step_``) its decomposition still runs those ops on any backend, while a backend
may register one kernel that reads and writes each element once (the CPU does). SGD's update with
momentum is 4 kernels per parameter (``sgd_step_``; one on OpenCL, issue 14). Each op changes its
tensor arguments in place and returns ``param``; they are not differentiable (optimizers step
under no_grad).
"""
from __future__ import annotations

from .. import _hotpath, dispatcher
from ..dispatcher import Operator
from ..frontend.ops._common import bump_version
from ..frontend.ops.elementwise import BINARY

__all__ = ["adam_step_", "sgd_step_"]

_maximum = BINARY["maximum"]


def _adam_step_decomposition(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, lr, beta1, beta2, eps, weight_decay,
                             step, decoupled):
    if weight_decay != 0:
        if decoupled:
            param.mul_(1 - lr * weight_decay)
        else:
            grad = grad.add(param, alpha=weight_decay)
    exp_avg.lerp_(grad, 1 - beta1)
    exp_avg_sq.mul_(beta2).add_(grad * grad, alpha=1 - beta2)
    bias_correction1 = 1 - beta1**step
    bias_correction2_sqrt = (1 - beta2**step) ** 0.5
    second_moment = exp_avg_sq
    if max_exp_avg_sq is not None:  # amsgrad: the running maximum replaces the second moment
        max_exp_avg_sq.copy_(_maximum(max_exp_avg_sq, exp_avg_sq))
        second_moment = max_exp_avg_sq
    denom = (second_moment.sqrt() / bias_correction2_sqrt).add_(eps)
    param.add_(exp_avg / denom, alpha=-(lr / bias_correction1))
    return param


ADAM_STEP = Operator("adam_step_", decomposition=_adam_step_decomposition, differentiable=False)


def adam_step_(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, lr: float, beta1: float, beta2: float, eps: float,
               weight_decay: float, step: float, decoupled: bool):
    """One Adam (``decoupled``: AdamW) update of ``param`` and its moments, in place; ``step`` is
    the update's number (1 for the first), ``max_exp_avg_sq`` None without amsgrad, ``grad``
    already negated when the optimizer maximizes."""
    args = (param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, float(lr), float(beta1), float(beta2), float(eps),
            float(weight_decay), float(step), bool(decoupled))
    ADAM_STEP.lookup(dispatcher.keyset_of(args, {}))(*args)
    # A fused kernel writes memory directly: record the change as an in-place op would.
    for t in (param, exp_avg, exp_avg_sq, max_exp_avg_sq):
        if t is not None:
            bump_version(t)
    return param


def _plus_scaled(x, y, alpha):
    """``x.add(y, alpha=alpha)``; for one dtype written as the product and the sum it makes, which
    take the elementwise fast paths (add's alpha handling was a third of a small update)."""
    if x._dtype is not y._dtype:
        return x.add(y, alpha=alpha)
    return x + (y if alpha == 1 else y * alpha)


def _add_scaled_(target, y, alpha):
    """``target.add_(y, alpha=alpha)``, as ``_plus_scaled``."""
    if target._dtype is not y._dtype:
        return target.add_(y, alpha=alpha)
    return target.add_(y if alpha == 1 else y * alpha)


def _sgd_step_decomposition(param, grad, momentum_buffer, lr, momentum, dampening, weight_decay, nesterov, maximize,
                            first_step):
    # torch.optim.SGD's single-tensor update, op for op (so every rounding is PyTorch's).
    if maximize:
        grad = -grad
    if weight_decay != 0:
        grad = _plus_scaled(grad, param, weight_decay)
    if momentum_buffer is not None:
        if first_step:  # PyTorch clones the gradient: no momentum, no dampening
            momentum_buffer.copy_(grad)
        else:
            _add_scaled_(momentum_buffer.mul_(momentum), grad, 1 - dampening)
        grad = _plus_scaled(grad, momentum_buffer, momentum) if nesterov else momentum_buffer
    _add_scaled_(param, grad, -lr)
    return param


SGD_STEP = Operator("sgd_step_", decomposition=_sgd_step_decomposition, differentiable=False)
# The key set and the table lookup in C, as for composite ops (ops/_composite.py): this op runs
# once per parameter per step, where the decomposition's own kernels are a few microseconds.
_sgd_step_dispatch = _hotpath.CompositeOp(
    lambda *args: SGD_STEP.lookup(dispatcher.keyset_of(args, {}))(*args), SGD_STEP.table, SGD_STEP.lookup)


def sgd_step_(param, grad, momentum_buffer, lr: float, momentum: float, dampening: float, weight_decay: float,
              nesterov: bool, maximize: bool, first_step: bool):
    """One SGD update of ``param`` in place, as ``torch.optim.SGD`` does it for one tensor.

    ``grad`` is negated when ``maximize``, then gets ``weight_decay * param`` added. With a
    ``momentum_buffer`` (given exactly when ``momentum != 0``) the buffer becomes that gradient on
    the ``first_step`` and ``momentum * buf + (1 - dampening) * grad`` after it, and the step
    direction is ``grad + momentum * buf`` (``nesterov``) or ``buf``; then
    ``param -= lr * direction``. The buffer is updated in place (allocate it, e.g. with
    ``empty_like(grad)``, before the first step).

    >>> p, g, buf = tp.ones(2), tp.ones(2), tp.empty(2)
    >>> sgd_step_(p, g, buf, 0.1, 0.9, 0.0, 0.0, False, False, True)
    tensor([0.9000, 0.9000])
    """
    if (momentum_buffer is None) != (momentum == 0):
        raise ValueError("sgd_step_: momentum_buffer must be given exactly when momentum is not 0")
    _sgd_step_dispatch(param, grad, momentum_buffer, float(lr), float(momentum), float(dampening),
                       float(weight_decay), bool(nesterov), bool(maximize), bool(first_step))
    # A fused kernel writes memory directly: record the change as an in-place op would
    # (bump_version, inline: this runs per parameter per step).
    param._version_ref[0] += 1
    if momentum_buffer is not None:
        momentum_buffer._version_ref[0] += 1
    return param
