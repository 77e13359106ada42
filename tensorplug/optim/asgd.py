"""ASGD: averaged stochastic gradient descent (Polyak and Juditsky, 1992)."""
from __future__ import annotations

from ..frontend import dtypes as _dt
from ..frontend.factories import tensor, zeros_like
from .optimizer import Optimizer, _use_grad, check_unsupported

__all__ = ["ASGD"]


class ASGD(Optimizer):
    """``torch.optim.ASGD``: the same arguments, defaults, state and update.

    ``p = p * (1 - lambd * eta) - eta * g``; the average ``ax`` follows ``p`` (``ax += mu * (p - ax)``,
    a copy while ``mu == 1``); then ``eta = lr / (1 + lambd * lr * t)**alpha`` and
    ``mu = 1 / max(1, t - t0)``. ``eta`` and ``mu`` are float32 tensors, as PyTorch keeps them.
    """

    def __init__(self, params, lr: float = 1e-2, lambd: float = 1e-4, alpha: float = 0.75, t0: float = 1e6,
                 weight_decay: float = 0, foreach=None, maximize: bool = False, differentiable: bool = False,
                 capturable: bool = False) -> None:
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        check_unsupported("ASGD", capturable=capturable, differentiable=differentiable)
        defaults = dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    @_use_grad
    def step(self, closure=None):
        loss = self._evaluate(closure)
        for group in self.param_groups:
            lr, lambd, alpha, t0 = group["lr"], group["lambd"], group["alpha"], group["t0"]
            weight_decay = group["weight_decay"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                self._check_dense(p.grad)
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = tensor(0.0, dtype=_dt.float32)
                    state["eta"] = tensor(float(lr), dtype=_dt.float32)
                    state["mu"] = tensor(1.0, dtype=_dt.float32)
                    state["ax"] = zeros_like(p)
                grad = -p.grad if group["maximize"] else p.grad
                state["step"].add_(1)
                step = state["step"].item()
                if weight_decay != 0:
                    grad = grad.add(p, alpha=weight_decay)
                eta = state["eta"].item()
                p.mul_(1 - lambd * eta)
                p.add_(grad, alpha=-eta)
                ax, mu = state["ax"], state["mu"].item()
                if mu != 1:
                    ax.add_((p - ax).mul_(mu))
                else:
                    ax.copy_(p)
                state["eta"].fill_(lr / ((1 + lambd * lr * step) ** alpha))
                state["mu"].fill_(1 / max(1, step - t0))
        return loss
