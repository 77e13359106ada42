"""Optimizer updates as single ops, so that a backend can run each one as one fused kernel.

Written with tensor ops, Adam's update is about 15 kernels per parameter, each a pass over memory;
as one op (``adam_step_``) its decomposition still runs those ops on any backend, while a backend
may register one kernel that reads and writes each element once (the CPU does). The op changes
its tensor arguments in place and returns ``param``; it is not differentiable (optimizers step
under no_grad).
"""
from __future__ import annotations

from .. import dispatcher
from ..dispatcher import Operator
from ..frontend.ops._common import bump_version
from ..frontend.ops.elementwise import BINARY

__all__ = ["adam_step_"]

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
