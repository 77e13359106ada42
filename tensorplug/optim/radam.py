"""RAdam: Adam whose adaptive step is rectified by the variance of the second moment's estimate."""
from __future__ import annotations

import math

from .adam import _check_adam_args
from .optimizer import Optimizer, _use_grad, check_unsupported

__all__ = ["RAdam"]


class RAdam(Optimizer):
    """``torch.optim.RAdam``: the same arguments, defaults, state and update.

    ``rho_inf = 2 / (1 - beta2) - 1``, ``rho_t = rho_inf - 2 t beta2**t / (1 - beta2**t)``. While
    ``rho_t <= 5`` the step is SGD with momentum on the bias-corrected ``m``; after, it is Adam's
    step times ``r_t = sqrt((rho_t - 4)(rho_t - 2) rho_inf / ((rho_inf - 4)(rho_inf - 2) rho_t))``.
    """

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8, weight_decay: float = 0,
                 decoupled_weight_decay: bool = False, *, foreach=None, maximize: bool = False,
                 capturable: bool = False, differentiable: bool = False) -> None:
        _check_adam_args(lr, betas, eps, weight_decay)
        check_unsupported("RAdam", capturable=capturable, differentiable=differentiable)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, maximize=maximize, foreach=foreach,
                        capturable=capturable, decoupled_weight_decay=decoupled_weight_decay,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    @_use_grad
    def step(self, closure=None):
        loss = self._evaluate(closure)
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            lr, eps, weight_decay = group["lr"], group["eps"], group["weight_decay"]
            rho_inf = 2 / (1 - beta2) - 1
            for p, state, grad in self._counted_grads(group, "exp_avg", "exp_avg_sq"):
                step = state["step"].item()
                if weight_decay != 0:
                    if group["decoupled_weight_decay"]:
                        p.mul_(1 - lr * weight_decay)
                    else:
                        grad = grad.add(p, alpha=weight_decay)
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                exp_avg.lerp_(grad, 1 - beta1)
                exp_avg_sq.mul_(beta2).add_(grad * grad, alpha=1 - beta2)
                bias_correction1 = 1 - beta1**step
                bias_correction2 = 1 - beta2**step
                corrected = exp_avg / bias_correction1
                rho_t = rho_inf - 2 * step * beta2**step / bias_correction2
                if rho_t > 5.0:
                    rect = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
                    adaptive = exp_avg_sq.sqrt().add_(eps).reciprocal_().mul_(bias_correction2**0.5)
                    p.add_(corrected * lr * adaptive * rect, alpha=-1.0)
                else:
                    p.add_(corrected * lr, alpha=-1.0)
        return loss
