"""RMSprop: scale by a running mean of squared gradients (optionally centered, with momentum)."""
from __future__ import annotations

from ..frontend import dtypes as _dt
from ..frontend.factories import tensor, zeros_like
from .optimizer import Optimizer, _use_grad, check_unsupported

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    """``torch.optim.RMSprop``: the same arguments, defaults, state and update.

    ``v = alpha * v + (1 - alpha) * g * g``; ``avg = sqrt(v - mean(g)**2 if centered else v) + eps``;
    ``p -= lr * g / avg``, or through a momentum buffer ``buf = momentum * buf + g / avg``.
    """

    def __init__(self, params, lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8, weight_decay: float = 0,
                 momentum: float = 0, centered: bool = False, capturable: bool = False, foreach=None,
                 maximize: bool = False, differentiable: bool = False) -> None:
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= momentum:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= alpha:
            raise ValueError(f"Invalid alpha value: {alpha}")
        check_unsupported("RMSprop", capturable=capturable, differentiable=differentiable)
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered, weight_decay=weight_decay,
                        capturable=capturable, foreach=foreach, maximize=maximize, differentiable=differentiable)
        super().__init__(params, defaults)

    @_use_grad
    def step(self, closure=None):
        loss = self._evaluate(closure)
        for group in self.param_groups:
            lr, alpha, eps = group["lr"], group["alpha"], group["eps"]
            weight_decay, momentum, centered = group["weight_decay"], group["momentum"], group["centered"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                self._check_dense(p.grad)
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = tensor(0.0, dtype=_dt.float32)
                    state["square_avg"] = zeros_like(p)
                    if momentum > 0:
                        state["momentum_buffer"] = zeros_like(p)
                    if centered:
                        state["grad_avg"] = zeros_like(p)
                grad = -p.grad if group["maximize"] else p.grad
                state["step"].add_(1)
                if weight_decay != 0:
                    grad = grad.add(p, alpha=weight_decay)
                square_avg = state["square_avg"]
                square_avg.mul_(alpha).add_(grad * grad, alpha=1 - alpha)
                if centered:
                    grad_avg = state["grad_avg"]
                    grad_avg.lerp_(grad, 1 - alpha)
                    avg = square_avg.add(grad_avg * grad_avg, alpha=-1).sqrt_()
                else:
                    avg = square_avg.sqrt()
                avg = avg.add_(eps)
                if momentum > 0:
                    buf = state["momentum_buffer"]
                    buf.mul_(momentum).add_(grad / avg)
                    p.add_(buf, alpha=-lr)
                else:
                    p.add_(grad / avg, alpha=-lr)
        return loss
