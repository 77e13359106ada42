"""Adagrad: per-coordinate learning rates from the sum of squared gradients."""
from __future__ import annotations

from ..frontend import dtypes as _dt
from ..frontend.factories import full_like, tensor
from ..frontend.tensor import Tensor
from .optimizer import Optimizer, _use_grad, check_unsupported

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    """``torch.optim.Adagrad``: the same arguments, defaults, state and update.

    ``clr = lr / (1 + (t - 1) * lr_decay)``, ``s += g * g``, ``p -= clr * g / (sqrt(s) + eps)``.
    State is created in the constructor (``sum`` starts at ``initial_accumulator_value``), as in
    PyTorch.
    """

    def __init__(self, params, lr: float = 1e-2, lr_decay: float = 0, weight_decay: float = 0,
                 initial_accumulator_value: float = 0, eps: float = 1e-10, foreach=None, *, maximize: bool = False,
                 differentiable: bool = False, fused=None) -> None:
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= lr_decay:
            raise ValueError(f"Invalid lr_decay value: {lr_decay}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= initial_accumulator_value:
            raise ValueError(f"Invalid initial_accumulator_value value: {initial_accumulator_value}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        check_unsupported("Adagrad", differentiable=differentiable, fused=fused)
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                state["step"] = tensor(0.0, dtype=_dt.float32)
                state["sum"] = full_like(p, group["initial_accumulator_value"])

    @_use_grad
    def step(self, closure=None):
        loss = self._evaluate(closure)
        for group in self.param_groups:
            lr, lr_decay, eps, weight_decay = group["lr"], group["lr_decay"], group["eps"], group["weight_decay"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = p.grad
                if not isinstance(grad, Tensor):
                    # A sparse gradient (nn.Embedding(sparse=True)): the update of a row it does not
                    # hold is 0, so its dense form gives PyTorch's sparse update.
                    if weight_decay != 0:
                        raise RuntimeError("weight_decay option is not compatible with sparse gradients")
                    grad = grad.to_dense()
                state = self.state[p]
                state["step"].add_(1)
                step = state["step"].item()
                grad = -grad if group["maximize"] else grad
                if weight_decay != 0:
                    grad = grad.add(p, alpha=weight_decay)
                clr = lr / (1 + (step - 1) * lr_decay)
                state["sum"].add_(grad * grad)
                std = state["sum"].sqrt().add_(eps)
                p.add_(grad / std, alpha=-clr)
        return loss
