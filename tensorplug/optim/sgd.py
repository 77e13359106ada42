"""Stochastic gradient descent, with momentum, dampening, Nesterov momentum and weight decay."""
from __future__ import annotations

from ..frontend.factories import empty_like
from ..frontend.tensor import Tensor
from ._fused import sgd_step_
from .optimizer import Optimizer, _use_grad, check_unsupported

__all__ = ["SGD"]


class SGD(Optimizer):
    """``torch.optim.SGD``: the same arguments, defaults and update.

    With momentum ``m`` and dampening ``d``: ``buf = m * buf + (1 - d) * g`` (``buf = g`` on the
    first step), then ``p -= lr * (g + m * buf if nesterov else buf)``.
    """

    def __init__(self, params, lr: float = 1e-3, momentum: float = 0, dampening: float = 0, weight_decay: float = 0,
                 nesterov: bool = False, *, maximize: bool = False, foreach=None, differentiable: bool = False,
                 fused=None) -> None:
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        check_unsupported("SGD", differentiable=differentiable, fused=fused)
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay, nesterov=nesterov,
                        maximize=maximize, foreach=foreach, differentiable=differentiable, fused=fused)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, defaults)

    @_use_grad
    def step(self, closure=None):
        loss = self._evaluate(closure)
        for group in self.param_groups:
            lr, momentum, dampening = group["lr"], group["momentum"], group["dampening"]
            weight_decay, nesterov, maximize = group["weight_decay"], group["nesterov"], group["maximize"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = p.grad
                if not isinstance(grad, Tensor):
                    # A sparse gradient (nn.Embedding(sparse=True)): the update is linear in it, so its
                    # dense form gives PyTorch's result (which refuses weight decay there).
                    if weight_decay != 0:
                        raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) instead.")
                    grad = grad.to_dense()
                buf = None
                first_step = False
                if momentum != 0:
                    state = self.state[p]
                    buf = state.get("momentum_buffer")
                    if buf is None:  # filled by the first step with the gradient (PyTorch's clone)
                        buf = empty_like(grad)
                        state["momentum_buffer"] = buf
                        first_step = True
                sgd_step_(p, grad, buf, lr, momentum, dampening, weight_decay, nesterov, maximize, first_step)
        return loss
