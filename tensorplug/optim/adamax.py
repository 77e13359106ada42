"""Adamax: Adam with the infinity norm of past gradients in place of their second moment."""
from __future__ import annotations

from ..frontend.ops.elementwise import BINARY
from .adam import _check_adam_args
from .optimizer import Optimizer, _use_grad, check_unsupported

__all__ = ["Adamax"]

_maximum = BINARY["maximum"]


class Adamax(Optimizer):
    """``torch.optim.Adamax``: the same arguments, defaults, state and update.

    ``m = lerp(m, g, 1 - beta1)``; ``u = max(beta2 * u, |g| + eps)``;
    ``p -= lr / (1 - beta1**t) * m / u``.
    """

    def __init__(self, params, lr: float = 2e-3, betas=(0.9, 0.999), eps: float = 1e-8, weight_decay: float = 0,
                 foreach=None, *, maximize: bool = False, differentiable: bool = False, capturable: bool = False) -> None:
        _check_adam_args(lr, betas, eps, weight_decay)
        check_unsupported("Adamax", capturable=capturable, differentiable=differentiable)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    @_use_grad
    def step(self, closure=None):
        loss = self._evaluate(closure)
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            lr, eps, weight_decay = group["lr"], group["eps"], group["weight_decay"]
            for p, state, grad in self._counted_grads(group, "exp_avg", "exp_inf"):
                if weight_decay != 0:
                    grad = grad.add(p, alpha=weight_decay)
                exp_avg, exp_inf = state["exp_avg"], state["exp_inf"]
                exp_avg.lerp_(grad, 1 - beta1)
                exp_inf.copy_(_maximum(exp_inf * beta2, grad.abs().add_(eps)))
                clr = lr / (1 - beta1 ** state["step"].item())
                p.add_(exp_avg / exp_inf, alpha=-clr)
        return loss
