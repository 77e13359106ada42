"""Adadelta: step sizes from running averages of squared gradients and squared updates."""
from __future__ import annotations

from .optimizer import Optimizer, _use_grad, check_unsupported

__all__ = ["Adadelta"]


class Adadelta(Optimizer):
    """``torch.optim.Adadelta``: the same arguments, defaults, state and update.

    ``v = rho * v + (1 - rho) * g * g``; ``delta = sqrt(u + eps) / sqrt(v + eps) * g``;
    ``u = rho * u + (1 - rho) * delta * delta``; ``p -= lr * delta``.
    """

    def __init__(self, params, lr: float = 1.0, rho: float = 0.9, eps: float = 1e-6, weight_decay: float = 0,
                 foreach=None, *, capturable: bool = False, maximize: bool = False, differentiable: bool = False) -> None:
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        check_unsupported("Adadelta", capturable=capturable, differentiable=differentiable)
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize, capturable=capturable,
                        foreach=foreach, differentiable=differentiable)
        super().__init__(params, defaults)

    @_use_grad
    def step(self, closure=None):
        loss = self._evaluate(closure)
        for group in self.param_groups:
            lr, rho, eps, weight_decay = group["lr"], group["rho"], group["eps"], group["weight_decay"]
            for p, state, grad in self._counted_grads(group, "square_avg", "acc_delta"):
                if weight_decay != 0:
                    grad = grad.add(p, alpha=weight_decay)
                square_avg, acc_delta = state["square_avg"], state["acc_delta"]
                square_avg.mul_(rho).add_(grad * grad, alpha=1 - rho)
                std = square_avg.add(eps).sqrt_()
                delta = acc_delta.add(eps).sqrt_().div_(std).mul_(grad)
                acc_delta.mul_(rho).add_(delta * delta, alpha=1 - rho)
                p.add_(delta, alpha=-lr)
        return loss
