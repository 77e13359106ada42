"""Rprop: resilient backpropagation, per-element step sizes driven by gradient signs only."""
from __future__ import annotations

from ..frontend import dtypes as _dt
from ..frontend.factories import full_like, tensor, zeros_like
from ..frontend.ops.elementwise import where
from .optimizer import Optimizer, _use_grad, check_unsupported

__all__ = ["Rprop"]


class Rprop(Optimizer):
    """``torch.optim.Rprop``: the same arguments, defaults, state and update.

    Where the gradient kept its sign, the element's step size grows by ``etaplus``; where it
    flipped, it shrinks by ``etaminus`` and that element does not move this step (its stored
    gradient becomes 0); step sizes stay within ``step_sizes``; ``p -= sign(g) * step_size``.
    """

    def __init__(self, params, lr: float = 1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *, capturable: bool = False,
                 foreach=None, maximize: bool = False, differentiable: bool = False) -> None:
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        check_unsupported("Rprop", capturable=capturable, differentiable=differentiable)
        defaults = dict(lr=lr, etas=etas, step_sizes=step_sizes, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    @_use_grad
    def step(self, closure=None):
        loss = self._evaluate(closure)
        for group in self.param_groups:
            etaminus, etaplus = group["etas"]
            step_size_min, step_size_max = group["step_sizes"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                self._check_dense(p.grad)
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = tensor(0.0, dtype=_dt.float32)
                    state["prev"] = zeros_like(p)
                    state["step_size"] = full_like(p.grad, group["lr"])
                grad = -p.grad if group["maximize"] else p.grad
                state["step"].add_(1)
                prev, step_size = state["prev"], state["step_size"]
                agreement = (grad * prev).sign()
                factor = where(agreement > 0, etaplus, where(agreement < 0, etaminus, 1.0))
                step_size.mul_(factor).clamp_(step_size_min, step_size_max)
                grad = where(agreement < 0, 0.0, grad)
                p.add_(grad.sign() * step_size, alpha=-1)
                prev.copy_(grad)
        return loss
