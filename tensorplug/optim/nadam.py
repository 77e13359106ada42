"""NAdam: Adam with Nesterov momentum (Dozat, 2016) and a momentum-decay schedule."""
from __future__ import annotations

from ..frontend import dtypes as _dt
from ..frontend.factories import tensor, zeros_like
from .adam import _check_adam_args
from .optimizer import Optimizer, _use_grad, check_unsupported

__all__ = ["NAdam"]


class NAdam(Optimizer):
    """``torch.optim.NAdam``: the same arguments, defaults, state and update.

    ``mu_t = beta1 * (1 - 0.5 * 0.96**(t * momentum_decay))``; with ``P_t`` the product of the
    ``mu``s so far and ``denom = sqrt(v / (1 - beta2**t)) + eps``:
    ``p -= lr * (1 - mu_t) / (1 - P_t) * g / denom + lr * mu_{t+1} / (1 - P_t * mu_{t+1}) * m / denom``.
    """

    def __init__(self, params, lr: float = 2e-3, betas=(0.9, 0.999), eps: float = 1e-8, weight_decay: float = 0,
                 momentum_decay: float = 4e-3, decoupled_weight_decay: bool = False, *, foreach=None,
                 maximize: bool = False, capturable: bool = False, differentiable: bool = False) -> None:
        _check_adam_args(lr, betas, eps, weight_decay)
        if not 0.0 <= momentum_decay:
            raise ValueError(f"Invalid momentum_decay value: {momentum_decay}")
        check_unsupported("NAdam", capturable=capturable, differentiable=differentiable)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, momentum_decay=momentum_decay,
                        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize, foreach=foreach,
                        capturable=capturable, differentiable=differentiable)
        super().__init__(params, defaults)

    @_use_grad
    def step(self, closure=None):
        loss = self._evaluate(closure)
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            lr, eps, weight_decay = group["lr"], group["eps"], group["weight_decay"]
            momentum_decay = group["momentum_decay"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                self._check_dense(p.grad)
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = tensor(0.0, dtype=_dt.float32)
                    # A float32 tensor, as PyTorch's: the product is rounded to float32 each step.
                    state["mu_product"] = tensor(1.0, dtype=_dt.float32)
                    state["exp_avg"] = zeros_like(p)
                    state["exp_avg_sq"] = zeros_like(p)
                grad = -p.grad if group["maximize"] else p.grad
                state["step"].add_(1)
                step = state["step"].item()
                bias_correction2 = 1 - beta2**step
                if weight_decay != 0:
                    if group["decoupled_weight_decay"]:
                        p.mul_(1 - lr * weight_decay)
                    else:
                        grad = grad.add(p, alpha=weight_decay)
                mu = beta1 * (1.0 - 0.5 * 0.96 ** (step * momentum_decay))
                mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((step + 1) * momentum_decay))
                state["mu_product"].mul_(mu)
                mu_product = state["mu_product"].item()
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                exp_avg.lerp_(grad, 1 - beta1)
                exp_avg_sq.mul_(beta2).add_(grad * grad, alpha=1 - beta2)
                denom = exp_avg_sq.div(bias_correction2).sqrt_().add_(eps)
                p.add_(grad / denom, alpha=-lr * (1.0 - mu) / (1.0 - mu_product))
                p.add_(exp_avg / denom, alpha=-lr * mu_next / (1.0 - mu_product * mu_next))
        return loss
